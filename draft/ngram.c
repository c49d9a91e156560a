#include "draft/ngram.h"
#include "formats/grow.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int min_n, max_n;
    int32_t *hist;
    int64_t n;
    size_t cap;
} ngram_state;

static int push(ngram_state *s, const int32_t *t, int64_t n) {
    int32_t *h = pf_grow(s->hist, &s->cap, (size_t)(s->n + n + 1), sizeof *h, 1024);
    if (!h) return -1;
    s->hist = h;
    memcpy(s->hist + s->n, t, (size_t)n * sizeof *t);
    s->n += n;
    return 0;
}

static pf_rc ng_begin(void *st, const int32_t *prompt, int n, const float *taps, char err[PF_ERR_LEN]) {
    ngram_state *s = st;
    (void)taps;
    s->n = 0;
    if (push(s, prompt, n) < 0) {
        strcpy(err, "out of memory");
        return PF_RC_OOM;
    }
    return PF_RC_OK;
}

static pf_rc ng_propose(void *st, int32_t bonus, int64_t pos, int B, const pf_sampling *samp, pf_rng *rng,
                        int32_t *draft, pf_dist *q, int *n_drafted, char err[PF_ERR_LEN]) {
    ngram_state *s = st;
    (void)pos; (void)samp; (void)rng;
    *n_drafted = 0;
    /* the bonus sits at hist[n] temporarily: the pattern ends with it */
    if (push(s, &bonus, 1) < 0) {
        strcpy(err, "out of memory");
        return PF_RC_OOM;
    }
    int64_t n = s->n;
    s->n--;
    const int32_t *h = s->hist;
    int got = 0;
    for (int len = s->max_n; len >= s->min_n && !got; len--) {
        if (len > n - 1) continue;
        const int32_t *pat = h + n - len;
        /* most recent earlier occurrence whose continuation exists */
        for (int64_t i = n - len - 1; i >= 0; i--) {
            if (memcmp(h + i, pat, (size_t)len * sizeof *h) != 0) continue;
            int64_t from = i + len;
            while (got < B - 1 && from + got < n) {
                draft[got] = h[from + got];
                got++;
            }
            break;
        }
    }
    if (q)
        for (int k = 0; k < got; k++) {
            q[k].ids[0] = draft[k];
            q[k].p[0] = 1.0f;
            q[k].n = 1;
        }
    *n_drafted = got;
    return PF_RC_OK;
}

static pf_rc ng_commit(void *st, const int32_t *tokens, int n, const float *taps, char err[PF_ERR_LEN]) {
    (void)taps;
    if (push(st, tokens, n) < 0) {
        strcpy(err, "out of memory");
        return PF_RC_OOM;
    }
    return PF_RC_OK;
}

static int ng_truncate(void *st, int64_t n) {
    ngram_state *s = st;
    if (n < 0 || n > s->n) return -1;
    s->n = n;
    return 0;
}

static void ng_free(void *st) {
    ngram_state *s = st;
    free(s->hist);
    free(s);
}

pf_drafter *pf_ngram_drafter_new(int min_n, int max_n) {
    pf_drafter *d = calloc(1, sizeof *d);
    ngram_state *s = calloc(1, sizeof *s);
    if (!d || !s) {
        free(d);
        free(s);
        return NULL;
    }
    s->min_n = min_n < 1 ? 1 : min_n;
    s->max_n = max_n < s->min_n ? s->min_n : max_n;
    *d = (pf_drafter){.name = "ngram", .state = s, .begin = ng_begin, .propose = ng_propose,
                      .commit = ng_commit, .truncate = ng_truncate, .deterministic = 1, .free = ng_free};
    return d;
}
