#include "verify/strategies.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "draft/dflash_drafter.h"
#include "draft/hybrid.h"
#include "draft/ngram.h"
#include "formats/gguf.h"
#include "formats/pfb.h"

/* The DFlash drafter over w; with own_weights it frees w, also when this fails. Its session's
 * context is never too small for it, so a failure is memory. */
static pf_drafter *dflash_drafter(const pf_dflash *w, int own_weights, pf_session *s, char err[PF_ERR_LEN]) {
    pf_drafter *d = pf_dflash_drafter_new(w, s, err);
    if (own_weights) {
        if (d) pf_dflash_drafter_own_weights(d);
        else pf_dflash_free((pf_dflash *)w);
    }
    return d;
}

/* The plan's drafter without its head vocabulary; NULL is out of memory. */
static pf_drafter *new_drafter(const pf_strategy_plan *plan, const pf_dflash *w, int own_weights, pf_session *s,
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

pf_rc pf_drafter_for(const pf_strategy_plan *plan, const pf_dflash *w, int own_weights, pf_session *s,
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

pf_rc pf_strategy_build(pf_session *s, const pf_strategy_plan *plan, pf_drafter *d, const pf_dec *dec,
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

/* The draft file at hand: draft_path, or the draft of the session's bundled target; NULL with err. */
static gguf_file *draft_file(const pf_session *s, const char *draft_path, char err[PF_ERR_LEN]) {
    const pf_model *m = s->model;
    if (draft_path) return gguf_open(draft_path, err);
    if (m->bundle && pfb_has_model(m->bundle, PFB_OWNER_DRAFT)) return pfb_gguf(m->bundle, PFB_OWNER_DRAFT, err);
    snprintf(err, PF_ERR_LEN, "no draft: -d DRAFT.gguf, or a bundle that holds one");
    return NULL;
}

int pf_draft_at_hand(const pf_session *s, const char *draft_path) {
    return draft_path || (s->model->bundle && pfb_has_model(s->model->bundle, PFB_OWNER_DRAFT));
}

int pf_draft_probe(const pf_session *s, const char *draft_path, pf_strategy_desc *d, pf_dec **dec,
                   char err[PF_ERR_LEN]) {
    if (dec) *dec = NULL;
    d->has_draft = pf_draft_at_hand(s, draft_path);
    d->draft_has_dec = d->draft_block = 0;
    if (!d->has_draft) return 0;
    gguf_file *f = draft_file(s, draft_path, err);
    if (!f) return -1;
    int rc = pf_dflash_read_block(f, &d->draft_block, err);
    d->draft_has_dec = gguf_find_tensor(f, "dec.weight") != NULL;
    if (rc == 0 && dec && d->draft_has_dec && !(*dec = pf_dec_load(f, s->model->hp.n_embd, err))) rc = -1;
    gguf_close(f);
    return rc;
}

/* The draft a bundled target carries; its weights point into the target's bundle. */
static pf_dflash *bundled_dflash(const pf_model *target, char err[PF_ERR_LEN]) {
    if (!target->bundle || !pfb_has_model(target->bundle, PFB_OWNER_DRAFT)) {
        snprintf(err, PF_ERR_LEN, "--spec dflash needs a draft: -d DRAFT.gguf, or a bundle that holds one");
        return NULL;
    }
    gguf_file *f = pfb_gguf(target->bundle, PFB_OWNER_DRAFT, err);
    return f ? pf_dflash_from_gguf(f, 1, target, err) : NULL;
}

/* The plan's drafter, owning the DFlash weights it opens from draft_path or the bundle. */
static pf_drafter *open_plan(const pf_strategy_plan *plan, const char *draft_path, pf_session *s, int *draft_block,
                             char err[PF_ERR_LEN]) {
    *draft_block = PF_NGRAM_BLOCK;
    pf_drafter *d = NULL;
    if (plan->kind == PF_KIND_NGRAM) return pf_drafter_for(plan, NULL, 0, s, &d, err) == PF_RC_OK ? d : NULL;
    pf_dflash *w = draft_path ? pf_dflash_load(draft_path, s->model, err) : bundled_dflash(s->model, err);
    if (!w) return NULL;
    *draft_block = pf_dflash_block_size(w);
    return pf_drafter_for(plan, w, 1, s, &d, err) == PF_RC_OK ? d : NULL;
}

pf_drafter *pf_drafter_open(const char *name, const char *draft_path, pf_session *s, int ngram_n, int *draft_block,
                            char err[PF_ERR_LEN]) {
    pf_strategy_plan plan = {.ngram_n = ngram_n};
    if (pf_kind_parse(name, &plan.kind, err) < 0) return NULL;
    if (plan.kind != PF_KIND_DFLASH && plan.kind != PF_KIND_NGRAM && plan.kind != PF_KIND_HYBRID) {
        snprintf(err, PF_ERR_LEN, "no drafter is named '%s' (dflash, ngram, hybrid)", name);
        return NULL;
    }
    return open_plan(&plan, draft_path, s, draft_block, err);
}

int pf_strategy_open(pf_session *s, const pf_strategy_desc *desc, const char *draft_path, pf_spec **spec,
                     pf_strategy_plan *plan_out, char err[PF_ERR_LEN]) {
    *spec = NULL;
    pf_strategy_desc d = *desc;
    pf_strategy_plan plan;
    pf_dec *dec = NULL;
    pf_drafter *dr = NULL;
    int draft_block;
    /* the draft is probed when the description may draft with it, its Dec head read when it may be dec */
    int may_dec = d.kind == PF_KIND_DEFAULT || d.kind == PF_KIND_DEC;
    if (d.kind != PF_KIND_NGRAM && d.kind != PF_KIND_AR && pf_draft_probe(s, draft_path, &d, may_dec ? &dec : NULL, err) < 0)
        return -1;
    if (d.kind == PF_KIND_DEC && d.has_draft && !d.draft_has_dec) {
        snprintf(err, PF_ERR_LEN, "%.200s: no Dec head in this draft (dec.* tensors)",
                 draft_path ? draft_path : "the bundled draft");
        return -1;
    }
    if (pf_strategy_plan_make(&d, &plan, err) < 0) goto fail;
    if (plan_out) *plan_out = plan;
    if (plan.kind != PF_KIND_DEC) {
        pf_dec_free(dec);
        dec = NULL;
    }
    if (plan.kind == PF_KIND_AR) return 0;
    if (!(dr = open_plan(&plan, draft_path, s, &draft_block, err))) goto fail;
    if (pf_strategy_build(s, &plan, dr, dec, spec, err) != PF_RC_OK) goto fail;
    pf_spec_own(*spec, dr, dec);
    return 0;
fail:
    pf_drafter_free(dr);
    pf_dec_free(dec);
    return -1;
}

pf_spec *pf_spec_default(pf_session *s, const char *draft_path, int draft_head, char err[PF_ERR_LEN]) {
    pf_strategy_desc d = {.kind = PF_KIND_DEFAULT, .draft_head = draft_head};
    pf_spec *sp = NULL;
    if (pf_strategy_open(s, &d, draft_path, &sp, NULL, err) < 0) return NULL;
    if (!sp) snprintf(err, PF_ERR_LEN, "no draft: -d DRAFT.gguf, or a bundle that holds one");
    return sp;
}
