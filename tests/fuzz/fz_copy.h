/* The byte-string fuzz targets parse a copy of the input: exactly its size on the heap (one byte
 * for an empty input), so ASan catches any read past its end. NULL when out of memory. */
#ifndef PF_FUZZ_FZ_COPY_H
#define PF_FUZZ_FZ_COPY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *fz_copy(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size ? size : 1);
    if (buf && size) memcpy(buf, data, size);
    return buf;
}

#endif
