/* A batch slot's drafter context, deferred (spec_impl.h's lazy fields): a calibrated adaptive
 * slot keeps its prompt's rows and the rows its plain steps commit, with their taps, instead of
 * handing them to the drafter, until its first draft; then the drafter begins on all of them in
 * one context build. A slot that never drafts never builds it. The drafter's context rows do not
 * depend on how the rows were split over begin and commit calls, so the drafts are the same. */
#include "verify/spec_impl.h"

#include <stdlib.h>
#include <string.h>

#include "engine/clock.h"

/* The most rows kept waiting: past them the context is built (a long sequence's taps would
 * otherwise grow with the context). */
#define LAZY_ROWS_MAX 1024

static size_t lazy_row(const pf_spec *sp) { return (size_t)sp->d->n_taps * sp->s->model->hp.n_embd; }

/* Room for n more waiting rows; 0, or -1 out of memory (the rows kept so far stay). */
static int lazy_room(pf_spec *sp, int n) {
    if (sp->n_lz + n <= sp->cap_lz) return 0;
    int cap = sp->cap_lz ? sp->cap_lz : 64;
    while (cap < sp->n_lz + n) cap *= 2;
    int32_t *t = realloc(sp->lz_tok, (size_t)cap * sizeof *t);
    if (t) sp->lz_tok = t;
    float *f = t ? realloc(sp->lz_taps, (size_t)cap * lazy_row(sp) * sizeof *f) : NULL;
    if (!f) return -1;
    sp->lz_taps = f;
    sp->cap_lz = cap;
    return 0;
}

/* n rows wait: each its token and the first lazy_row floats of its taps (rows `stride` floats
 * apart); 0, or -1 (not kept: too many, or out of memory). */
static int lazy_keep_rows(pf_spec *sp, const int32_t *tok, int n, const float *taps, size_t stride) {
    if (sp->n_lz + n > LAZY_ROWS_MAX || lazy_room(sp, n) < 0) return -1;
    size_t row = lazy_row(sp);
    memcpy(sp->lz_tok + sp->n_lz, tok, (size_t)n * sizeof *tok);
    for (int r = 0; r < n; r++)
        memcpy(sp->lz_taps + (sp->n_lz + (size_t)r) * row, taps + (size_t)r * stride, row * sizeof(float));
    sp->n_lz += n;
    return 0;
}

int pf_spec_lazy_begin(pf_spec *sp, const int32_t *prompt, int n, const float *taps) {
    if (!sp->lazy_ok || !sp->ad || !sp->calibrated || sp->log || !sp->d->n_taps || !sp->d->begin || !taps)
        return 0;
    sp->n_lz = 0;
    if (lazy_keep_rows(sp, prompt, n, taps, (size_t)sp->n_taps * sp->s->model->hp.n_embd) < 0) return 0;
    sp->lazy = 1;
    return 1;
}

pf_rc pf_spec_lazy_flush(pf_spec *sp, char err[PF_ERR_LEN]) {
    if (!sp->lazy) return PF_RC_OK;
    double t0 = pf_now_s();
    sp->lazy = 0;
    pf_rc rc = sp->d->begin(sp->d->state, sp->lz_tok, sp->n_lz, sp->lz_taps, err);
    double dt = pf_now_s() - t0;
    sp->lz_s = dt, sp->lz_rows = sp->n_lz;
    sp->n_lz = 0;
    return rc;
}

int pf_spec_lazy_add(pf_spec *sp, const int32_t *tok, int n, const float *taps, size_t stride) {
    return sp->lazy && lazy_keep_rows(sp, tok, n, taps, stride) == 0;
}

int pf_spec_lazy_truncate(pf_spec *sp, int n_keep) {
    if (n_keep > sp->n_lz) return -1;
    sp->n_lz = n_keep;
    return 0;
}

void pf_spec_lazy_free(pf_spec *sp) {
    free(sp->lz_tok), free(sp->lz_taps);
    sp->lz_tok = NULL, sp->lz_taps = NULL;
    sp->n_lz = sp->cap_lz = 0;
}
