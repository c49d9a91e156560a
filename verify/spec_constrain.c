#include "verify/spec_constrain.h"

#include <assert.h>
#include <string.h>

#include "draft/block.h"
#include "engine/sampler.h"
#include "verify/accept.h"

/* Row k's mask: the constraint's current one, copied (the next advance replaces it). */
static const uint32_t *keep_mask(pf_spec *sp, pf_constraint *c, int k) {
    size_t words = (size_t)pf_constraint_words(c);
    const uint32_t *bits = pf_constraint_mask(c, NULL);
    memcpy(sp->cmask + (size_t)k * words, bits, words * sizeof *bits);
    return sp->cmask + (size_t)k * words;
}

/* The drafts' allowed prefix; *open: the path may go on (no forbidden or end token in it). */
static int allowed_prefix(pf_spec *sp, pf_constraint *c, int nd, int stochastic, int *open, int *n_masked) {
    *open = 1;
    for (int k = 0; k < nd; k++) {
        const uint32_t *bits = keep_mask(sp, c, k);
        *n_masked = k + 1;
        int32_t t = sp->rows[1 + k];
        int r = pf_mask_has(bits, t) ? pf_constraint_advance(c, t) : -1;
        if (r != 0) {
            *open = 0;
            /* an end token ends the document; a forbidden one stays only for the rejection test */
            return r > 0 || stochastic ? k + 1 : k;
        }
    }
    return nd;
}

void pf_spec_mark_forced(pf_constraint *c, const int32_t *drafts, int n, unsigned char *forced) {
    size_t pos0 = pf_constraint_pos(c);
    int k = 0;
    for (; k < n; k++) {
        forced[k] = pf_constraint_forced(c) == drafts[k];
        if (pf_constraint_advance(c, drafts[k]) != 0) break;
    }
    for (k++; k < n; k++) forced[k] = 0;
    pf_constraint_rollback(c, pos0);
}

static const uint32_t *filter_mask(void *ctx) { return pf_constraint_mask(ctx, NULL); }
static int filter_take(void *ctx, int32_t tok) { return pf_constraint_advance(ctx, tok) != 0; }
static int32_t filter_align(void *ctx, int32_t tok) { return pf_constraint_align(ctx, tok); }

pf_draft_filter pf_spec_draft_filter(pf_constraint *c) {
    return (pf_draft_filter){.ctx = c, .mask = filter_mask, .take = filter_take, .align = filter_align};
}

int pf_spec_constrain_path(pf_spec *sp, pf_constraint *c, int nd, int cap, int stochastic, int *n_forced,
                           int *n_masked) {
    *n_forced = *n_masked = 0;
    assert((size_t)pf_constraint_words(c) == sp->cmask_words); /* the session's vocabulary */
    size_t pos0 = pf_constraint_pos(c);
    int open;
    nd = allowed_prefix(sp, c, nd, stochastic, &open, n_masked);
    while (open) {
        keep_mask(sp, c, nd);
        *n_masked = nd + 1;
        int32_t f = nd + 1 < cap ? pf_constraint_forced(c) : -1;
        if (f < 0 || pf_constraint_advance(c, f) != 0) break;
        sp->rows[++nd] = f;
        (*n_forced)++;
        if (stochastic) { /* the draft "proposed" it with certainty */
            sp->q[nd - 1].ids[0] = f;
            sp->q[nd - 1].p[0] = 1;
            sp->q[nd - 1].n = 1;
        }
    }
    pf_constraint_rollback(c, pos0);
    return nd;
}

typedef struct {
    pf_spec *sp;
    const pf_constraint *c;
    int n_masked;
} masked_rows;

/* Row k's greedy token, under its kept mask when it has one. */
static int32_t masked_row_token(void *ctx, int k) {
    const masked_rows *m = ctx;
    const int V = m->sp->s->model->hp.n_vocab;
    float *row = m->sp->logits + (size_t)k * V;
    return k < m->n_masked ? pf_constraint_greedy_bits(m->c, m->sp->cmask + (size_t)k * m->sp->cmask_words, row)
                           : pf_argmax(row, V);
}

int pf_spec_accept_greedy_constrained(pf_spec *sp, const pf_constraint *c, int nd, int n_masked, int32_t *bonus) {
    masked_rows m = {sp, c, n_masked};
    return pf_accept_greedy_by(masked_row_token, &m, sp->rows + 1, nd, bonus);
}

void pf_spec_constrain_rows(pf_spec *sp, const pf_constraint *c, int n_masked) {
    const int V = sp->s->model->hp.n_vocab;
    for (int k = 0; k < n_masked; k++)
        pf_constraint_apply_bits(c, sp->cmask + (size_t)k * sp->cmask_words, sp->logits + (size_t)k * V);
}
