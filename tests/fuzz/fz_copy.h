/* The byte-string fuzz targets parse a copy of the input: exactly its size on the heap (one byte
 * for an empty input), so ASan catches any read past its end. fz_on_copy is such a target's whole
 * LLVMFuzzerTestOneInput: parse runs on the copy (not at all when out of memory), which is freed
 * after it. */
#ifndef PF_FUZZ_FZ_COPY_H
#define PF_FUZZ_FZ_COPY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int fz_on_copy(const uint8_t *data, size_t size, void (*parse)(uint8_t *buf, size_t size)) {
    uint8_t *buf = malloc(size ? size : 1);
    if (buf) {
        if (size) memcpy(buf, data, size);
        parse(buf, size);
    }
    free(buf);
    return 0;
}

#endif
