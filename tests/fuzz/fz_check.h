/* The set-up of the fuzz targets that build models and drafts: a step that fails aborts, naming the
 * step and why, since no input can be fuzzed without what it builds. */
#ifndef PF_FUZZ_FZ_CHECK_H
#define PF_FUZZ_FZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static void fz_check(int ok, const char *what, const char *detail) {
    if (!ok) {
        fprintf(stderr, "%s: %s\n", what, detail);
        abort();
    }
}

#endif
