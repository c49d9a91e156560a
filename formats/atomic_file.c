/* Whole-or-nothing file writes through a temporary and rename (see atomic_file.h). */
#include "formats/atomic_file.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

FILE *atomic_file_open(atomic_file *a, const char *path, const char *mode) {
    memset(a, 0, sizeof *a);
    int pid = (int)getpid(), tid = (int)syscall(SYS_gettid);
    int n = tid == pid ? snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%d", path, pid)
                       : snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%d.%d", path, pid, tid);
    if (n < 0 || (size_t)n >= sizeof a->tmp) {
        a->tmp[0] = 0;
        errno = a->err = ENAMETOOLONG;
        return NULL;
    }
    if (!(a->fp = fopen(a->tmp, mode))) {
        a->err = errno;
        a->tmp[0] = 0;
    }
    return a->fp;
}

void atomic_file_failed(atomic_file *a) {
    if (!a->err) a->err = errno ? errno : EIO;
}

int atomic_file_commit(atomic_file *a, const char *path, int sync) {
    if (!a->fp) {
        errno = a->err ? a->err : EBADF;
        return -1;
    }
    if (fflush(a->fp) != 0 || (sync && fsync(fileno(a->fp)) != 0)) atomic_file_failed(a);
    /* a write that failed earlier leaves the stream's error flag set even when this flush had
     * nothing left to write */
    if (ferror(a->fp) && !a->err) a->err = EIO;
    int closed = fclose(a->fp);
    a->fp = NULL;
    if (closed != 0) atomic_file_failed(a);
    if (!a->err && rename(a->tmp, path) != 0) atomic_file_failed(a);
    if (a->err) {
        unlink(a->tmp);
        a->tmp[0] = 0;
        errno = a->err;
        return -1;
    }
    a->tmp[0] = 0;
    return 0;
}

void atomic_file_abort(atomic_file *a) {
    int e = errno;
    if (a->fp) fclose(a->fp);
    a->fp = NULL;
    if (a->tmp[0]) unlink(a->tmp);
    a->tmp[0] = 0;
    errno = e;
}
