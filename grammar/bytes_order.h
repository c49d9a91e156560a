/* The one byte-string order the grammar sorts by (literal sets, property names, the vocabulary
 * trie): memcmp over the common length, then a prefix before its extensions. */
#ifndef PF_BYTES_ORDER_H
#define PF_BYTES_ORDER_H

#include <stdint.h>
#include <string.h>

static inline int pf_bytes_cmp(const void *a, uint32_t alen, const void *b, uint32_t blen) {
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c) return c;
    return (alen > blen) - (alen < blen);
}

#endif
