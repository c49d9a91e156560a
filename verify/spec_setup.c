/* Building a speculation object and configuring it: adaptive planning (Dec gating or the
 * adaptive block), round logging, and the taps the verify forward needs for them. */
#include "verify/spec_impl.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A part of the block, rounded up to a cache line: each part starts as aligned as the block. */
static size_t part(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

pf_spec *pf_spec_new(pf_engine_session *s, pf_drafter *d, int block, char err[PF_ERR_LEN]) {
    assert(block >= 2 && block <= PF_MAX_BLOCK); /* a plan's block (verify/plan.h) */
    const pf_hparams *hp = &s->model->hp;
    /* the struct and its arrays in one block: rows, logits, q, the taps (with room for the target's
     * final layer, which Dec and logging add), the drafter's taps alone, h_target, the plain steps'
     * taps (adaptive planning), the masks of a round's rows (structured output), the tap list */
    size_t B = (size_t)block, E = (size_t)hp->n_embd, nt = (size_t)d->n_taps, words = ((size_t)hp->n_vocab + 31) / 32;
    size_t head = part(sizeof(pf_spec)), rows = part(B * sizeof(int32_t)), logits = part(B * (size_t)hp->n_vocab * sizeof(float));
    size_t q = part(B * sizeof(pf_dist)), taps = part(B * (nt + 1) * E * sizeof(float));
    size_t dtaps = part(B * (nt ? nt : 1) * E * sizeof(float)), h = part(E * sizeof(float));
    size_t pend = part(PF_MAX_BLOCK * nt * E * sizeof(float)), cmask = part(PF_MAX_BLOCK * words * sizeof(uint32_t));
    char *mem = malloc(head + rows + logits + q + taps + dtaps + h + pend + cmask + (nt + 1) * sizeof(int));
    pf_spec *sp = (pf_spec *)mem;
    if (!sp) goto oom;
    memset(sp, 0, sizeof *sp);
    sp->rows = (int32_t *)(mem += head);
    sp->logits = (float *)(mem += rows);
    sp->q = memset(mem += logits, 0, B * sizeof *sp->q); /* each pf_dist_free'd, initialized or not */
    sp->tap_room = (float *)(mem += q);
    sp->dtaps = (float *)(mem += taps);
    sp->h_target = memset(mem += dtaps, 0, E * sizeof(float));
    sp->pend_taps = (float *)(mem += h);
    sp->cmask = (uint32_t *)(mem += pend);
    sp->cmask_words = words;
    sp->tap_list = (int *)(mem += cmask);
    sp->s = s;
    sp->d = d;
    sp->block = block;
    sp->taps = d->n_taps ? sp->tap_room : NULL;
    if (!d->deterministic)
        for (int k = 0; k < block; k++)
            if (pf_dist_init(&sp->q[k], hp->n_vocab) < 0) goto oom;
    if (pf_dist_init(&sp->p, hp->n_vocab) < 0 || pf_dist_init(&sp->resid, hp->n_vocab) < 0) goto oom;
    sp->strat = pf_spec_round(sp);
    return sp;
oom:
    snprintf(err, PF_ERR_LEN, "out of memory");
    pf_spec_free(sp);
    return NULL;
}

void pf_spec_free(pf_spec *sp) {
    if (!sp) return;
    for (int k = 0; k < sp->block; k++) pf_dist_free(&sp->q[k]);
    pf_dist_free(&sp->p);
    pf_dist_free(&sp->resid);
    pf_dec_free(sp->own_dec);
    pf_drafter_free(sp->own_d);
    pf_spec_lazy_free(sp);
    free(sp);
}

void pf_spec_own(pf_spec *sp, pf_drafter *d, pf_dec *dec) {
    sp->own_d = d;
    sp->own_dec = dec;
}

pf_strategy *pf_spec_strategy(pf_spec *sp) { return &sp->strat; }
const pf_spec_stats *pf_spec_stats_get(const pf_spec *sp) { return &sp->st; }

/* Re-plan the taps: the drafter's, plus the target's last layer when Dec or logging needs it (the
 * block has room for it); h_target starts over at zero. */
static void retap(pf_spec *sp) {
    const pf_hparams *hp = &sp->s->model->hp;
    int n = sp->d->n_taps + (needs_final_tap(sp) ? 1 : 0);
    sp->taps = n ? sp->tap_room : NULL;
    memset(sp->h_target, 0, (size_t)hp->n_embd * sizeof(float));
    for (int i = 0; i < sp->d->n_taps; i++) sp->tap_list[i] = sp->d->tap_layers[i];
    if (needs_final_tap(sp)) sp->tap_list[n - 1] = hp->n_layer - 1;
    sp->n_taps = n;
    sp->strat.tap_layers = sp->tap_list;
    sp->strat.n_taps = n;
}

pf_rc pf_spec_set_adaptive(pf_spec *sp, const pf_dec *dec, const pf_spec_prior *prior, char err[PF_ERR_LEN]) {
    if (dec && !sp->d->hidden) {
        snprintf(err, PF_ERR_LEN, "Dec gating needs a drafter with hidden rows (dflash)");
        return PF_RC_ARG;
    }
    sp->ad = &sp->adapt;
    pf_adapt_init(sp->ad, sp->block, dec, prior ? prior->alpha : NULL, prior ? prior->n_alpha : 0);
    sp->dec = dec;
    sp->calibrated = 0;
    sp->have_prior = prior && prior->c && prior->n > 1;
    sp->prior_fixed = sp->have_prior && prior->fixed;
    memset(sp->prior_c, 0, sizeof sp->prior_c);
    memset(sp->prior_d, 0, sizeof sp->prior_d);
    if (sp->have_prior)
        for (int n = 1; n < prior->n && n <= PF_MAX_BLOCK; n++) {
            sp->prior_c[n] = prior->c[n];
            if (prior->draft) sp->prior_d[n] = prior->draft[n];
        }
    if (dec) retap(sp);
    return PF_RC_OK;
}

pf_rc pf_spec_set_dec(pf_spec *sp, const pf_dec *dec, const double *cost, int n_cost, char err[PF_ERR_LEN]) {
    if (!sp->d->hidden) {
        snprintf(err, PF_ERR_LEN, "Dec gating needs a drafter with hidden rows (dflash)");
        return PF_RC_ARG;
    }
    pf_spec_prior prior = {.c = cost, .n = n_cost};
    return pf_spec_set_adaptive(sp, dec, cost ? &prior : NULL, err);
}

int pf_spec_block(const pf_spec *sp) { return sp->block; }
int pf_spec_is_adaptive(const pf_spec *sp) { return sp->ad != NULL; }
const pf_cost_model *pf_spec_cost(const pf_spec *sp) { return sp->ad ? &sp->ad->cost : NULL; }

pf_rc pf_spec_set_log(pf_spec *sp, FILE *log, char err[PF_ERR_LEN]) {
    if (!sp->d->hidden) {
        snprintf(err, PF_ERR_LEN, "round logging needs a drafter with hidden rows (dflash)");
        return PF_RC_ARG;
    }
    sp->log = log;
    retap(sp);
    return PF_RC_OK;
}
