#include "draft/hybrid.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    pf_drafter *lookup, *model;
    int min_tokens;
    int64_t n_lookup, n_rounds;
} hybrid_state;

static pf_rc hy_begin(void *p, const int32_t *prompt, int n, const float *taps, char err[PF_ERR_LEN]) {
    hybrid_state *s = p;
    s->n_lookup = s->n_rounds = 0;
    pf_rc rc = s->lookup->begin(s->lookup->state, prompt, n, NULL, err);
    return rc != PF_RC_OK ? rc : s->model->begin(s->model->state, prompt, n, taps, err);
}

static pf_rc hy_propose(void *p, int32_t bonus, int64_t pos, int B, const pf_sampling *samp, pf_rng *rng,
                        int32_t *draft, pf_dist *q, int *n_drafted, char err[PF_ERR_LEN]) {
    hybrid_state *s = p;
    s->n_rounds++;
    /* lookup never draws from rng, so asking it first leaves the model's random stream unchanged */
    int got = 0;
    pf_rc rc = s->lookup->propose(s->lookup->state, bonus, pos, B, samp, rng, draft, q, &got, err);
    *n_drafted = got;
    if (rc != PF_RC_OK) return rc;
    if (got > 0 && (got >= s->min_tokens || got >= B - 1)) {
        s->n_lookup++;
        return PF_RC_OK;
    }
    return s->model->propose(s->model->state, bonus, pos, B, samp, rng, draft, q, n_drafted, err);
}

/* The filter reaches the draft model; lookup's proposals are cut by the round. */
static void hy_set_filter(void *p, const pf_draft_filter *f) {
    hybrid_state *s = p;
    if (s->model->set_filter) s->model->set_filter(s->model->state, f);
}

/* The head vocabulary is the draft model's. */
static pf_rc hy_set_head(void *p, int n, char err[PF_ERR_LEN]) {
    hybrid_state *s = p;
    return s->model->set_head(s->model->state, n, err);
}

static pf_rc hy_commit(void *p, const int32_t *tokens, int n, const float *taps, char err[PF_ERR_LEN]) {
    hybrid_state *s = p;
    pf_rc rc = s->lookup->commit(s->lookup->state, tokens, n, NULL, err);
    return rc != PF_RC_OK ? rc : s->model->commit(s->model->state, tokens, n, taps, err);
}

static void hy_counts(const void *p, int64_t *lookup_rounds, int64_t *rounds) {
    const hybrid_state *s = p;
    *lookup_rounds = s->n_lookup;
    *rounds = s->n_rounds;
}

static void hy_free(void *p) {
    hybrid_state *s = p;
    pf_drafter_free(s->lookup);
    pf_drafter_free(s->model);
    free(s);
}

pf_rc pf_hybrid_drafter_new(pf_drafter *lookup, pf_drafter *model, int min_tokens, pf_drafter **out,
                            char err[PF_ERR_LEN]) {
    pf_drafter *d = NULL;
    hybrid_state *s = NULL;
    pf_rc rc = PF_RC_ARG;
    *out = NULL;
    if (!lookup || !model || min_tokens < 1 || lookup->n_taps) {
        snprintf(err, PF_ERR_LEN, "hybrid drafter: needs a lookup drafter without taps, a model drafter and min_tokens >= 1");
        goto fail;
    }
    d = calloc(1, sizeof *d);
    s = calloc(1, sizeof *s);
    if (!d || !s) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        rc = PF_RC_OOM;
        goto fail;
    }
    s->lookup = lookup;
    s->model = model;
    s->min_tokens = min_tokens;
    /* no hidden rows: a round's proposal may come from lookup, which has none (no Dec gating) */
    *d = (pf_drafter){.name = "hybrid", .state = s, .tap_layers = model->tap_layers, .n_taps = model->n_taps,
                      .begin = hy_begin, .propose = hy_propose, .commit = hy_commit, .set_filter = hy_set_filter,
                      .set_head = model->set_head ? hy_set_head : NULL,
                      .lookup_counts = hy_counts, .deterministic = model->deterministic && lookup->deterministic,
                      .free = hy_free};
    *out = d;
    return PF_RC_OK;
fail:
    free(d);
    free(s);
    pf_drafter_free(lookup);
    pf_drafter_free(model);
    return rc;
}

