#include "formats/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *pf_grow(void *p, size_t *cap, size_t need, size_t elem, size_t first) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : first;
    while (c < need) {
        if (c > SIZE_MAX / 2) return NULL;
        c *= 2;
    }
    if (elem && c > SIZE_MAX / elem) return NULL;
    void *q = realloc(p, c * elem);
    if (!q) return NULL;
    *cap = c;
    return q;
}

void pf_sbuf_put(pf_sbuf *b, const void *p, size_t n) {
    if (b->oom) return;
    char *q = pf_grow(b->p, &b->cap, b->n + n + 1, 1, 64);
    if (!q) {
        b->oom = 1;
        return;
    }
    b->p = q;
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
}
