#include "formats/map_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/errf.h"

/* A failed system call's kind: memory (the kernel's ENOMEM), else I/O. */
static pf_rc errno_rc(int e) { return e == ENOMEM ? PF_RC_OOM : PF_RC_IO; }

pf_rc pf_map_file(const char *path, size_t min_size, const uint8_t **base, size_t *size, char *err) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        int e = errno;
        pf_errf(err, "%s: cannot open: %s", path, strerror(e));
        return errno_rc(e);
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        pf_errf(err, "%s: not a regular file", path);
        return PF_RC_IO;
    }
    *size = (size_t)st.st_size;
    if (*size < min_size) { /* an empty file cannot be mapped at all */
        close(fd);
        pf_errf(err, "%s: header: truncated file (%zu bytes)", path, *size);
        return PF_RC_FORMAT;
    }
    void *map = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED) {
        pf_errf(err, "%s: mmap failed: %s", path, strerror(e));
        return errno_rc(e);
    }
    *base = map;
    return PF_RC_OK;
}

void pf_unmap_file(const uint8_t *base, size_t size) { munmap((void *)base, size); }
