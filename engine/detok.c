/* Stream decoding: token bytes to complete UTF-8 text (tokenizer.h has the contract). */
#include "engine/tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

#include "engine/unicode.h"

void pf_detok_init(pf_detok *d, const pf_tokenizer *t, bool replace_invalid) {
    memset(d, 0, sizeof *d);
    d->t = t;
    d->replace_invalid = replace_invalid;
}

void pf_detok_free(pf_detok *d) {
    free(d->buf);
    d->buf = NULL;
    d->cap = 0;
}

static bool detok_reserve(pf_detok *d, size_t need) {
    if (need <= d->cap) return true;
    size_t nc = need * 2 > 256 ? need * 2 : 256;
    char *p = realloc(d->buf, nc);
    if (!p) return false;
    d->buf = p;
    d->cap = nc;
    return true;
}

/* Copies in[0..n) to out, replacing ill-formed subparts by U+FFFD if asked; returns bytes written
 * (out has room for 3n). */
static int replace_invalid(uint32_t cp, char *at) {
    if (cp != PF_UTF8_INVALID) return -1;
    memcpy(at, "\xEF\xBF\xBD", 3);
    return 3;
}

static size_t emit(const pf_detok *d, const char *in, size_t n, char *out) {
    if (!d->replace_invalid) {
        memcpy(out, in, n);
        return n;
    }
    return pf_utf8_rewrite(in, n, replace_invalid, out);
}

const char *pf_detok_push(pf_detok *d, int32_t id, size_t *len) {
    *len = 0;
    size_t n;
    const char *b = pf_token_bytes(d->t, id, &n);
    if (!b) return NULL;
    size_t m = d->n_pend + n;
    /* Layout: [output: up to 3m bytes][input copy: m bytes]. */
    if (!detok_reserve(d, 4 * m + 4)) return NULL;
    char *in = d->buf + 3 * m;
    memcpy(in, d->pend, d->n_pend);
    memcpy(in + d->n_pend, b, n);
    size_t tail = pf_utf8_incomplete_tail(in, m);
    *len = emit(d, in, m - tail, d->buf);
    memcpy(d->pend, in + m - tail, tail);
    d->n_pend = tail;
    return d->buf;
}

const char *pf_detok_flush(pf_detok *d, size_t *len) {
    *len = 0;
    if (!detok_reserve(d, 16)) return NULL;
    if (d->n_pend) {
        if (d->replace_invalid) {
            memcpy(d->buf, "\xEF\xBF\xBD", 3); /* an incomplete sequence is one maximal subpart */
            *len = 3;
        } else {
            memcpy(d->buf, d->pend, d->n_pend);
            *len = d->n_pend;
        }
    }
    d->n_pend = 0;
    return d->buf;
}
