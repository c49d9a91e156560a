/* Growable memory: the one place that doubles a buffer's capacity. Every layer above builds its
 * arrays and byte buffers on these, so the overflow check and the out-of-memory rule (the old
 * block stays valid and owned by the caller) are written once. */
#ifndef PF_GROW_H
#define PF_GROW_H

#include <stddef.h>

/* Room for `need` elements of `elem` bytes in p, whose capacity is *cap elements: the capacity
 * doubles, starting from `first`, until it holds need. Returns p itself when it already fits, else
 * the reallocated block (and sets *cap). NULL when out of memory or the size overflows: p is still
 * valid, *cap unchanged. */
void *pf_grow(void *p, size_t *cap, size_t need, size_t elem, size_t first);

/* A growable byte buffer, NUL-terminated after every put while !oom. */
typedef struct {
    char *p;
    size_t n, cap;
    int oom; /* an allocation failed: later puts do nothing */
} pf_sbuf;

void pf_sbuf_put(pf_sbuf *b, const void *p, size_t n);

#endif
