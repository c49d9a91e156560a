#include "verify/strategies.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "draft/block.h"
#include "draft/dflash_drafter.h"
#include "draft/draft_open.h"
#include "draft/hybrid.h"
#include "draft/ngram.h"

/* The DFlash drafter over w; with own_weights it frees w, also when this fails. Its session's
 * context is never too small for it, so a failure is memory. */
static pf_drafter *dflash_drafter(const pf_dflash *w, int own_weights, pf_engine_session *s, char err[PF_ERR_LEN]) {
    pf_drafter *d = pf_dflash_drafter_new(w, s, err);
    if (own_weights) {
        if (d) pf_dflash_drafter_own_weights(d);
        else pf_dflash_free((pf_dflash *)w);
    }
    return d;
}

/* The plan's drafter without its head vocabulary; NULL is out of memory. */
static pf_drafter *new_drafter(const pf_strategy_plan *plan, const pf_dflash *w, int own_weights, pf_engine_session *s,
                               char err[PF_ERR_LEN]) {
    if (plan->kind == PF_KIND_NGRAM) {
        pf_drafter *d = pf_ngram_drafter_new(1, plan->ngram_n);
        if (!d) snprintf(err, PF_ERR_LEN, "out of memory");
        return d;
    }
    pf_drafter *model = dflash_drafter(w, own_weights, s, err);
    if (!model || plan->kind != PF_KIND_HYBRID) return model;
    int max_n = plan->ngram_n > PF_HYBRID_MIN_MATCH ? plan->ngram_n : PF_HYBRID_MIN_MATCH;
    pf_drafter *lookup = pf_ngram_drafter_new(PF_HYBRID_MIN_MATCH, max_n);
    if (!lookup) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        pf_drafter_free(model);
        return NULL;
    }
    return pf_hybrid_drafter_new(lookup, model, PF_HYBRID_MIN_TOKENS, err); /* its only other failure: bad arguments */
}

pf_rc pf_drafter_for(const pf_strategy_plan *plan, const pf_dflash *w, int own_weights, pf_engine_session *s,
                         pf_drafter **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    pf_drafter *d = new_drafter(plan, w, own_weights, s, err);
    if (!d) return PF_RC_OOM;
    int rc = pf_drafter_set_head(d, plan->draft_head, err);
    if (rc < 0) {
        pf_drafter_free(d);
        return rc == PF_DRAFT_NO_MEMORY ? PF_RC_OOM : PF_RC_ARG;
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
    /* past the checks above, building fails only for memory */
    pf_spec *sp = pf_spec_new(s, d, plan->block, err);
    pf_spec_prior prior;
    if (sp && (plan->kind == PF_KIND_DEC || plan->kind == PF_KIND_ADAPTIVE) &&
        pf_spec_set_adaptive(sp, plan->kind == PF_KIND_DEC ? dec : NULL, pf_plan_prior(plan, &prior), err) < 0) {
        pf_spec_free(sp);
        return PF_RC_OOM;
    }
    *out = sp;
    return sp ? PF_RC_OK : PF_RC_OOM;
}

int pf_draft_at_hand(const pf_engine_session *s, const char *draft_path) {
    return draft_path || pf_model_bundles_draft(s->model);
}

void pf_strategy_desc_draft(pf_strategy_desc *d, const pf_dflash *w, const pf_dec *dec) {
    d->has_draft = w != NULL;
    d->draft_block = w ? pf_dflash_block_size(w) : 0;
    d->draft_has_dec = dec != NULL;
}

pf_drafter *pf_drafter_open(const char *name, const char *draft_path, pf_engine_session *s, int ngram_n, int *draft_block,
                            char err[PF_ERR_LEN]) {
    pf_strategy_plan plan = {.ngram_n = ngram_n};
    if (pf_kind_parse(name, &plan.kind, err) < 0) return NULL;
    if (plan.kind != PF_KIND_DFLASH && plan.kind != PF_KIND_NGRAM && plan.kind != PF_KIND_HYBRID) {
        snprintf(err, PF_ERR_LEN, "no drafter is named '%s' (dflash, ngram, hybrid)", name);
        return NULL;
    }
    *draft_block = PF_NGRAM_BLOCK;
    pf_dflash *w = NULL;
    if (plan.kind != PF_KIND_NGRAM) {
        if (!pf_draft_at_hand(s, draft_path)) {
            snprintf(err, PF_ERR_LEN, "--spec %s needs a draft: -d DRAFT.gguf, or a bundle that holds one", name);
            return NULL;
        }
        if (pf_draft_open(s->model, draft_path, &w, NULL, err) < 0) return NULL;
        *draft_block = pf_dflash_block_size(w);
    }
    pf_drafter *d = NULL;
    return pf_drafter_for(&plan, w, 1, s, &d, err) == PF_RC_OK ? d : NULL;
}
