/* Building a speculation object and configuring it: adaptive planning (Dec gating or the
 * adaptive block), round logging, and the taps the verify forward needs for them. */
#include "verify/spec_impl.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pf_spec *pf_spec_new(pf_engine_session *s, pf_drafter *d, int block, char err[PF_ERR_LEN]) {
    assert(block >= 2 && block <= PF_MAX_BLOCK); /* a plan's block (verify/plan.h) */
    const pf_hparams *hp = &s->model->hp;
    pf_spec *sp = calloc(1, sizeof *sp);
    if (!sp) goto oom;
    sp->s = s;
    sp->d = d;
    sp->block = block;
    sp->rows = malloc((size_t)block * sizeof *sp->rows);
    sp->logits = malloc((size_t)block * hp->n_vocab * sizeof(float));
    sp->taps = d->n_taps ? malloc((size_t)block * d->n_taps * hp->n_embd * sizeof(float)) : NULL;
    sp->q = calloc((size_t)block, sizeof *sp->q);
    if (!sp->rows || !sp->logits || (d->n_taps && !sp->taps) || !sp->q) goto oom;
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
    if (sp->q)
        for (int k = 0; k < sp->block; k++) pf_dist_free(&sp->q[k]);
    free(sp->q);
    pf_dist_free(&sp->p);
    pf_dist_free(&sp->resid);
    free(sp->rows);
    free(sp->logits);
    free(sp->taps);
    free(sp->dtaps);
    free(sp->tap_list);
    free(sp->h_target);
    free(sp->pend_taps);
    free(sp->cmask);
    free(sp->ad);
    pf_dec_free(sp->own_dec);
    pf_drafter_free(sp->own_d);
    free(sp);
}

void pf_spec_own(pf_spec *sp, pf_drafter *d, pf_dec *dec) {
    sp->own_d = d;
    sp->own_dec = dec;
}

pf_strategy *pf_spec_strategy(pf_spec *sp) { return &sp->strat; }
const pf_spec_stats *pf_spec_stats_get(const pf_spec *sp) { return &sp->st; }

/* Re-plan the taps: the drafter's, plus the target's last layer when Dec or logging needs it. */
static pf_rc retap(pf_spec *sp, char err[PF_ERR_LEN]) {
    const pf_hparams *hp = &sp->s->model->hp;
    int n = sp->d->n_taps + (needs_final_tap(sp) ? 1 : 0);
    free(sp->tap_list);
    free(sp->taps);
    free(sp->dtaps);
    free(sp->h_target);
    sp->tap_list = malloc((size_t)(n ? n : 1) * sizeof(int));
    sp->taps = n ? malloc((size_t)sp->block * n * hp->n_embd * sizeof(float)) : NULL;
    sp->dtaps = malloc((size_t)sp->block * (sp->d->n_taps ? sp->d->n_taps : 1) * hp->n_embd * sizeof(float));
    sp->h_target = calloc((size_t)hp->n_embd, sizeof(float));
    if (!sp->tap_list || (n && !sp->taps) || !sp->dtaps || !sp->h_target) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    for (int i = 0; i < sp->d->n_taps; i++) sp->tap_list[i] = sp->d->tap_layers[i];
    if (needs_final_tap(sp)) sp->tap_list[n - 1] = hp->n_layer - 1;
    sp->n_taps = n;
    sp->strat.tap_layers = sp->tap_list;
    sp->strat.n_taps = n;
    return PF_RC_OK;
}

pf_rc pf_spec_set_adaptive(pf_spec *sp, const pf_dec *dec, const pf_spec_prior *prior, char err[PF_ERR_LEN]) {
    if (dec && !sp->d->hidden) {
        snprintf(err, PF_ERR_LEN, "Dec gating needs a drafter with hidden rows (dflash)");
        return PF_RC_ARG;
    }
    if (!sp->ad && !(sp->ad = malloc(sizeof *sp->ad))) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    pf_adapt_init(sp->ad, sp->block, dec, prior ? prior->alpha : NULL, prior ? prior->n_alpha : 0);
    if (!sp->pend_taps && sp->d->n_taps &&
        !(sp->pend_taps = malloc((size_t)PF_MAX_BLOCK * sp->d->n_taps * sp->s->model->hp.n_embd * sizeof(float)))) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
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
    return dec ? retap(sp, err) : PF_RC_OK;
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
    return retap(sp, err);
}
