/* A file written whole or not at all: the bytes go to a temporary beside the target
 * ("PATH.tmp.PID", ".TID" added off the main thread) that is renamed over PATH only when every
 * write, the flush and the close succeeded. On any failure the temporary is removed, so a full
 * disk, a file-size limit or an interrupted writer never leaves a partial file or a stray
 * temporary. Every writer of the engine and the CLI goes through it. */
#ifndef PF_ATOMIC_FILE_H
#define PF_ATOMIC_FILE_H

#include <stdio.h>

typedef struct {
    FILE *fp;       /* write here between open and commit/abort */
    char tmp[4096]; /* the temporary's path */
    int err;        /* first errno seen by atomic_file_failed */
} atomic_file;

/* Create the temporary for PATH with fopen MODE ("w" / "wb"). Returns the stream, or NULL with
 * errno and a->err set (nothing is left behind). */
FILE *atomic_file_open(atomic_file *a, const char *path, const char *mode);

/* Record that a write through a->fp failed (keeps the first errno for commit's report). */
void atomic_file_failed(atomic_file *a);

/* Flush (fsync too when SYNC), close and rename over PATH. Returns 0, or -1 with errno set to the
 * first failure (a->err, a stream error, the close or the rename) after removing the temporary. */
int atomic_file_commit(atomic_file *a, const char *path, int sync);

/* Close and remove the temporary (no-op when none is open). Keeps errno. */
void atomic_file_abort(atomic_file *a);

#endif
