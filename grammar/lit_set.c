#include "grammar/lit_set.h"
#include "grammar/bytes_order.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef struct {
    char *s;
    uint32_t len;
} lit;

/* Byte order, a prefix before its extensions. */
static int lit_cmp(const void *a, const void *b) {
    const lit *x = a, *y = b;
    return pf_bytes_cmp(x->s, x->len, y->s, y->len);
}

int pf_lit_set_take(pf_lit_set *set, char **s, uint32_t *len, int n) {
    memset(set, 0, sizeof *set);
    lit *l = malloc((size_t)(n ? n : 1) * sizeof *l);
    set->s = malloc((size_t)(n ? n : 1) * sizeof *set->s);
    set->len = malloc((size_t)(n ? n : 1) * sizeof *set->len);
    if (!l || !set->s || !set->len) {
        for (int i = 0; i < n; i++) free(s[i]);
        free(l);
        pf_lit_set_free(set);
        return -1;
    }
    for (int i = 0; i < n; i++) l[i] = (lit){s[i], len[i]};
    qsort(l, (size_t)n, sizeof *l, lit_cmp);
    for (int i = 0; i < n; i++) {
        if (set->n && !lit_cmp(&l[i], &(lit){set->s[set->n - 1], set->len[set->n - 1]})) {
            free(l[i].s);
            continue;
        }
        set->s[set->n] = l[i].s;
        set->len[set->n++] = l[i].len;
    }
    free(l);
    return 0;
}

void pf_lit_set_free(pf_lit_set *set) {
    for (int i = 0; set->s && i < set->n; i++) free(set->s[i]);
    free(set->s);
    free(set->len);
    memset(set, 0, sizeof *set);
}

/* Entry i's byte at off, -1 when it ends there. */
static int byte_at(const pf_lit_set *set, int32_t i, int32_t off) {
    return set->len[i] > (uint32_t)off ? (unsigned char)set->s[i][off] : -1;
}

/* First index in [lo, hi) whose byte at off is >= c (the bytes are sorted there). */
static int32_t lower(const pf_lit_set *set, int32_t lo, int32_t hi, int32_t off, int c) {
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (byte_at(set, mid, off) < c) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

void pf_lit_narrow(const pf_lit_set *set, int32_t *lo, int32_t *hi, int32_t off, uint8_t c) {
    int32_t a = lower(set, *lo, *hi, off, c), b = lower(set, a, *hi, off, c + 1);
    *lo = a;
    *hi = b;
}
