#include "draft/dflash_drafter.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "draft/block.h"

typedef struct {
    pf_dflash_state *st;
    int64_t n_ctx;
    const pf_dflash *weights;
    int own_weights;
    float *hidden; /* PF_MAX_BLOCK x n_embd: rows of the last proposal */
    int n_hidden;
} df_state;


static pf_rc df_begin(void *p, const int32_t *prompt, int n, const float *taps, char err[PF_ERR_LEN]) {
    df_state *s = p;
    (void)prompt;
    pf_dflash_reset(s->st);
    return pf_dflash_append_context(s->st, taps, n, err);
}

/* The rows a proposal at pos drafts: B, or less at the context's end (< 2: none). */
static pf_rc block_at(const df_state *s, int64_t pos, int *B, char err[PF_ERR_LEN]) {
    if (pf_dflash_context_len(s->st) != pos) { /* the round loop keeps them in step: a bug */
        snprintf(err, PF_ERR_LEN, "internal: draft context (%lld rows) out of step with the target (position %lld)",
                 (long long)pf_dflash_context_len(s->st), (long long)pos);
        return PF_RC_INTERNAL;
    }
    if (pos + *B > s->n_ctx) *B = (int)(s->n_ctx - pos);
    assert(*B <= PF_MAX_BLOCK);
    return PF_RC_OK;
}

static pf_rc df_propose(void *p, int32_t bonus, int64_t pos, int B, const pf_sampling *samp, pf_rng *rng,
                        int32_t *draft, pf_dist *q, int *n_drafted, char err[PF_ERR_LEN]) {
    df_state *s = p;
    *n_drafted = 0;
    pf_rc rc = block_at(s, pos, &B, err);
    if (rc != PF_RC_OK || B < 2) return rc; /* B < 2: the context ends here */
    rc = pf_dflash_propose(s->st, bonus, B, samp, rng, draft, q, s->hidden, err);
    if (rc != PF_RC_OK) return rc;
    s->n_hidden = B;
    *n_drafted = pf_dflash_n_proposed(s->st);
    return PF_RC_OK;
}

static void df_set_filter(void *p, const pf_draft_filter *f) { pf_dflash_set_filter(((df_state *)p)->st, f); }

static pf_rc df_commit(void *p, const int32_t *tokens, int n, const float *taps, char err[PF_ERR_LEN]) {
    df_state *s = p;
    (void)tokens;
    return pf_dflash_append_context(s->st, taps, n, err);
}

static int df_truncate(void *p, int64_t n) {
    df_state *s = p;
    if (n < 0 || n > pf_dflash_context_len(s->st)) return -1;
    pf_dflash_truncate(s->st, n);
    return 0;
}

static const float *df_hidden(void *p, int *n_rows, int *dim) {
    df_state *s = p;
    *n_rows = s->n_hidden;
    *dim = pf_dflash_n_embd(s->weights);
    return s->hidden;
}

static pf_rc df_set_head(void *p, int n, char err[PF_ERR_LEN]) { return pf_dflash_set_head(((df_state *)p)->st, n, err); }

static void df_free(void *p) {
    df_state *s = p;
    pf_dflash_state_free(s->st);
    free(s->hidden);
    if (s->own_weights) pf_dflash_free((pf_dflash *)s->weights);
    free(s);
}

/* What a half-made drafter holds, freed. */
static void df_discard(pf_drafter *dr, df_state *s) {
    if (s) {
        pf_dflash_state_free(s->st);
        free(s->hidden);
    }
    free(s);
    free(dr);
}

pf_rc pf_dflash_drafter_new(const pf_dflash *d, pf_engine_session *sess, pf_drafter **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    pf_drafter *dr = calloc(1, sizeof *dr);
    df_state *s = calloc(1, sizeof *s);
    if (!dr || !s) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        df_discard(dr, s);
        return PF_RC_OOM;
    }
    /* room for the whole target context plus one block drafted past its end (so n_ctx >= 2, the
     * only other reason pf_dflash_state_new fails) */
    s->n_ctx = sess->ctx->kv->n_ctx + PF_MAX_BLOCK;
    s->weights = d;
    s->hidden = malloc((size_t)PF_MAX_BLOCK * pf_dflash_n_embd(d) * sizeof(float));
    s->st = pf_dflash_state_new(d, s->n_ctx, sess->ctx->pool, sess->ctx->k, err);
    if (!s->st || !s->hidden) {
        if (!s->hidden) snprintf(err, PF_ERR_LEN, "out of memory");
        df_discard(dr, s);
        return PF_RC_OOM;
    }
    pf_rc rc = pf_dflash_set_head(s->st, -1, err); /* the draft's default head vocabulary */
    if (rc != PF_RC_OK) {
        df_discard(dr, s);
        return rc;
    }
    int n_taps;
    const int *taps = pf_dflash_tap_layers(d, &n_taps);
    *dr = (pf_drafter){.name = pf_dflash_version(d) == 2 ? "dflash2" : "dflash", .state = s, .tap_layers = taps,
                       .n_taps = n_taps, .begin = df_begin, .propose = df_propose, .commit = df_commit,
                       .hidden = df_hidden, .truncate = df_truncate, .set_filter = df_set_filter, .set_head = df_set_head,
                       .deterministic = 0,
                       .free = df_free};
    *out = dr;
    return PF_RC_OK;
}

void pf_dflash_drafter_own_weights(pf_drafter *dr) { ((df_state *)dr->state)->own_weights = 1; }


int pf_dflash_drafter_of(const pf_drafter *dr, const pf_dflash *w) {
    return dr && dr->propose == df_propose && ((const df_state *)dr->state)->weights == w;
}

pf_rc pf_dflash_drafters_propose(pf_dflash_batch *bt, pf_draft_call *const *c, int n, char err[PF_ERR_LEN]) {
    pf_dflash_block *blk = calloc((size_t)(n > 0 ? n : 1), sizeof *blk);
    int *of = malloc((size_t)(n > 0 ? n : 1) * sizeof *of); /* blk[m] is call of[m]'s */
    if (!blk || !of) {
        free(blk), free(of);
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    pf_rc rc = PF_RC_OK;
    int m = 0;
    for (int i = 0; i < n && rc == PF_RC_OK; i++) {
        df_state *s = c[i]->d->state;
        int B = c[i]->B;
        c[i]->n_drafted = 0;
        rc = block_at(s, c[i]->pos, &B, err);
        if (rc != PF_RC_OK || B < 2) continue;
        blk[m] = (pf_dflash_block){.s = s->st, .bonus = c[i]->bonus, .B = B, .samp = c[i]->samp, .rng = c[i]->rng,
                                   .draft = c[i]->draft, .q = c[i]->q, .hidden = s->hidden};
        of[m++] = i;
    }
    if (rc == PF_RC_OK) rc = pf_dflash_propose_batch(bt, blk, m, err);
    for (int j = 0; j < m && rc == PF_RC_OK; j++) {
        df_state *s = c[of[j]]->d->state;
        s->n_hidden = blk[j].B;
        c[of[j]]->n_drafted = pf_dflash_n_proposed(s->st);
    }
    free(blk), free(of);
    return rc;
}
