#include "verify/strategies.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "draft/block.h"
#include "draft/dflash_drafter.h"
#include "draft/draft_open.h"
#include "draft/hybrid.h"
#include "draft/ngram.h"

/* The DFlash drafter over w; with own_weights it frees w, also when this fails. */
static pf_rc dflash_drafter(const pf_dflash *w, int own_weights, pf_engine_session *s, pf_drafter **out,
                            char err[PF_ERR_LEN]) {
    pf_rc rc = pf_dflash_drafter_new(w, s, out, err);
    if (own_weights) {
        if (rc == PF_RC_OK) pf_dflash_drafter_own_weights(*out);
        else pf_dflash_free((pf_dflash *)w);
    }
    return rc;
}

/* A prompt-lookup drafter; its only failure is memory. */
static pf_rc ngram_drafter(int min_n, int max_n, pf_drafter **out, char err[PF_ERR_LEN]) {
    if ((*out = pf_ngram_drafter_new(min_n, max_n))) return PF_RC_OK;
    snprintf(err, PF_ERR_LEN, "out of memory");
    return PF_RC_OOM;
}

/* The plan's drafter without its head vocabulary. */
static pf_rc new_drafter(const pf_strategy_plan *plan, const pf_dflash *w, int own_weights, pf_engine_session *s,
                         pf_drafter **out, char err[PF_ERR_LEN]) {
    if (plan->kind == PF_KIND_NGRAM) return ngram_drafter(1, plan->ngram_n, out, err);
    pf_drafter *model = NULL, *lookup = NULL;
    pf_rc rc = dflash_drafter(w, own_weights, s, &model, err);
    if (rc != PF_RC_OK || plan->kind != PF_KIND_HYBRID) {
        *out = model;
        return rc;
    }
    int max_n = plan->ngram_n > PF_HYBRID_MIN_MATCH ? plan->ngram_n : PF_HYBRID_MIN_MATCH;
    rc = ngram_drafter(PF_HYBRID_MIN_MATCH, max_n, &lookup, err);
    if (rc != PF_RC_OK) {
        pf_drafter_free(model);
        return rc;
    }
    return pf_hybrid_drafter_new(lookup, model, PF_HYBRID_MIN_TOKENS, out, err);
}

pf_rc pf_drafter_for(const pf_strategy_plan *plan, const pf_dflash *w, int own_weights, pf_engine_session *s,
                         pf_drafter **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    pf_drafter *d = NULL;
    pf_rc rc = new_drafter(plan, w, own_weights, s, &d, err);
    if (rc == PF_RC_OK) rc = pf_drafter_set_head(d, plan->draft_head, err);
    if (rc != PF_RC_OK) {
        pf_drafter_free(d);
        return rc;
    }
    *out = d;
    return PF_RC_OK;
}

pf_rc pf_strategy_build(pf_engine_session *s, const pf_strategy_plan *plan, pf_drafter *d, const pf_dec *dec,
                            pf_spec **out, char err[PF_ERR_LEN]) {
    assert(plan->block >= 2 && plan->block <= PF_MAX_BLOCK); /* resolved by pf_strategy_plan_make */
    *out = NULL;
    if (plan->kind == PF_KIND_DEC && (!dec || !d->hidden)) {
        snprintf(err, PF_ERR_LEN, !dec ? "strategy dec needs a draft with a Dec head (dec.* tensors)"
                                       : "Dec gating needs a drafter with hidden rows (dflash)");
        return PF_RC_ARG;
    }
    pf_spec *sp = pf_spec_new(s, d, plan->block, err);
    if (!sp) return PF_RC_OOM; /* its only failure */
    pf_spec_prior prior;
    pf_rc rc = PF_RC_OK;
    if (plan->kind == PF_KIND_DEC || plan->kind == PF_KIND_ADAPTIVE)
        rc = pf_spec_set_adaptive(sp, plan->kind == PF_KIND_DEC ? dec : NULL, pf_plan_prior(plan, &prior), err);
    if (rc != PF_RC_OK) {
        pf_spec_free(sp);
        return rc;
    }
    *out = sp;
    return PF_RC_OK;
}

int pf_draft_at_hand(const pf_engine_session *s, const char *draft_path) {
    return draft_path || pf_model_bundles_draft(s->model);
}

void pf_strategy_desc_draft(pf_strategy_desc *d, const pf_dflash *w, const pf_dec *dec) {
    d->has_draft = w != NULL;
    d->draft_block = w ? pf_dflash_block_size(w) : 0;
    d->draft_has_dec = dec != NULL;
}

pf_rc pf_drafter_open(const char *name, const char *draft_path, pf_engine_session *s, int ngram_n, int *draft_block,
                      pf_drafter **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    pf_strategy_plan plan = {.ngram_n = ngram_n};
    if (pf_kind_parse(name, &plan.kind, err) < 0) return PF_RC_ARG;
    if (plan.kind != PF_KIND_DFLASH && plan.kind != PF_KIND_NGRAM && plan.kind != PF_KIND_HYBRID) {
        snprintf(err, PF_ERR_LEN, "no drafter is named '%s' (dflash, ngram, hybrid)", name);
        return PF_RC_ARG;
    }
    *draft_block = PF_NGRAM_BLOCK;
    pf_dflash *w = NULL;
    if (plan.kind != PF_KIND_NGRAM) {
        if (!pf_draft_at_hand(s, draft_path)) {
            snprintf(err, PF_ERR_LEN, "--spec %s needs a draft: -d DRAFT.gguf, or a bundle that holds one", name);
            return PF_RC_ARG;
        }
        pf_rc rc = pf_draft_open(s->model, draft_path, &w, NULL, err);
        if (rc != PF_RC_OK) return rc;
        *draft_block = pf_dflash_block_size(w);
    }
    return pf_drafter_for(&plan, w, 1, s, out, err);
}
