#include "verify/strategies.h"

#include <stdio.h>
#include <string.h>

#include "draft/dflash_drafter.h"
#include "draft/hybrid.h"
#include "draft/ngram.h"
#include "formats/gguf.h"
#include "formats/pfb.h"

static const char *const k_kind_names[] = {"default", "ar", "dflash", "ngram", "hybrid", "dec", "adaptive"};
#define N_KINDS (int)(sizeof k_kind_names / sizeof *k_kind_names)

int pf_kind_parse(const char *name, pf_kind *kind, char err[PF_ERR_LEN]) {
    for (int k = 0; k < N_KINDS; k++)
        if (!strcmp(name, k_kind_names[k])) {
            *kind = (pf_kind)k;
            return 0;
        }
    snprintf(err, PF_ERR_LEN, "unknown strategy '%.40s' (ar, dflash, ngram, hybrid, dec, adaptive, default)", name);
    return -1;
}

const char *pf_kind_name(pf_kind kind) { return (int)kind >= 0 && (int)kind < N_KINDS ? k_kind_names[kind] : "?"; }

static int uses_draft(pf_kind k) { return k == PF_KIND_DFLASH || k == PF_KIND_HYBRID || k == PF_KIND_DEC || k == PF_KIND_ADAPTIVE; }

int pf_strategy_plan_make(const pf_strategy_desc *d, pf_strategy_plan *plan, char err[PF_ERR_LEN]) {
    memset(plan, 0, sizeof *plan);
    pf_kind kind = d->kind;
    int block = d->block;
    if (d->profile) {
        const pf_profile_task *t = d->task ? pf_profile_find(d->profile, d->task) : NULL;
        if (d->task && !t) {
            snprintf(err, PF_ERR_LEN, "task '%.60s' is not in the profile %.150s", d->task,
                     d->profile_name ? d->profile_name : "");
            return -1;
        }
        pf_kind k;
        if (pf_kind_parse(t ? t->spec : d->profile->spec, &k, err) < 0) return -1;
        plan->profile_block = t ? t->block : d->profile->block;
        if (kind == PF_KIND_DEFAULT && block == 0 && !d->profile_fixed && uses_draft(k) && k != PF_KIND_HYBRID) {
            /* the tuned choice as the prior: the draft's Dec head decides when it has one */
            kind = d->draft_has_dec ? PF_KIND_DEC : PF_KIND_ADAPTIVE;
            pf_profile_prior(d->profile, d->task, &plan->prior);
            plan->use_prior = 1;
        } else {
            if (kind == PF_KIND_DEFAULT) kind = k;
            if (block == 0) block = plan->profile_block;
        }
    } else if (d->task) {
        snprintf(err, PF_ERR_LEN, "task '%.60s' needs a profile", d->task);
        return -1;
    }
    if (kind == PF_KIND_DEFAULT) kind = !d->has_draft ? PF_KIND_AR : d->draft_has_dec ? PF_KIND_DEC : PF_KIND_ADAPTIVE;
    if (uses_draft(kind) && !d->has_draft) {
        snprintf(err, PF_ERR_LEN, "strategy %s needs a draft", pf_kind_name(kind));
        return -1;
    }
    if (kind == PF_KIND_DEC && !d->draft_has_dec) {
        snprintf(err, PF_ERR_LEN, "strategy dec needs a draft with a Dec head (dec.* tensors)");
        return -1;
    }
    plan->kind = kind;
    plan->block = block;
    return 0;
}

pf_drafter *pf_drafter_for(pf_kind kind, const pf_dflash *w, pf_session *s, int ngram_n, char err[PF_ERR_LEN]) {
    if (kind == PF_KIND_NGRAM) {
        pf_drafter *d = pf_ngram_drafter_new(1, ngram_n);
        if (!d) snprintf(err, PF_ERR_LEN, "out of memory");
        return d;
    }
    pf_drafter *model = pf_dflash_drafter_new(w, s, err);
    if (!model || kind != PF_KIND_HYBRID) return model;
    int max_n = ngram_n > PF_HYBRID_MIN_MATCH ? ngram_n : PF_HYBRID_MIN_MATCH;
    pf_drafter *lookup = pf_ngram_drafter_new(PF_HYBRID_MIN_MATCH, max_n);
    if (!lookup) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        pf_drafter_free(model);
        return NULL;
    }
    return pf_hybrid_drafter_new(lookup, model, PF_HYBRID_MIN_TOKENS, err);
}

pf_spec *pf_strategy_build(pf_session *s, const pf_strategy_plan *plan, pf_drafter *d, int drafter_block,
                           const pf_dec *dec, char err[PF_ERR_LEN]) {
    int block = plan->block ? plan->block : pf_default_block(plan->kind, drafter_block);
    if (block < 2) block = 2;
    if (block > PF_MAX_BLOCK) block = PF_MAX_BLOCK;
    if (plan->kind == PF_KIND_DEC && !dec) {
        snprintf(err, PF_ERR_LEN, "strategy dec needs a draft with a Dec head (dec.* tensors)");
        return NULL;
    }
    pf_spec *sp = pf_spec_new(s, d, block, err);
    if (sp && (plan->kind == PF_KIND_DEC || plan->kind == PF_KIND_ADAPTIVE) &&
        pf_spec_set_adaptive(sp, plan->kind == PF_KIND_DEC ? dec : NULL, plan->use_prior ? &plan->prior : NULL, err) < 0) {
        pf_spec_free(sp);
        return NULL;
    }
    return sp;
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

int pf_draft_at_hand(const pf_session *s, const char *draft_path) {
    return draft_path || (s->model->bundle && pfb_has_model(s->model->bundle, PFB_OWNER_DRAFT));
}

/* A drafter of `kind` that owns what it opened: the DFlash weights from draft_path or the bundle. */
static pf_drafter *open_kind(pf_kind kind, const char *draft_path, pf_session *s, int ngram_n, int *block,
                             char err[PF_ERR_LEN]) {
    if (kind == PF_KIND_NGRAM) {
        if (*block <= 0) *block = PF_NGRAM_BLOCK;
        return pf_drafter_for(kind, NULL, s, ngram_n, err);
    }
    pf_dflash *w = draft_path ? pf_dflash_load(draft_path, s->model, err) : bundled_dflash(s->model, err);
    if (!w) return NULL;
    if (*block <= 0) *block = pf_dflash_block_size(w);
    pf_drafter *d = pf_drafter_for(kind, w, s, ngram_n, err);
    if (!d) {
        pf_dflash_free(w);
        return NULL;
    }
    pf_drafter *inner = pf_hybrid_drafter_model(d);
    pf_dflash_drafter_own_weights(inner ? inner : d);
    return d;
}

pf_drafter *pf_drafter_open(const char *spec, const char *draft_path, pf_session *s, int ngram_n, int *block,
                            char err[PF_ERR_LEN]) {
    pf_kind kind;
    if (pf_kind_parse(spec, &kind, err) < 0) return NULL;
    if (kind != PF_KIND_DFLASH && kind != PF_KIND_NGRAM && kind != PF_KIND_HYBRID) {
        snprintf(err, PF_ERR_LEN, "no drafter is named '%s' (dflash, ngram, hybrid)", spec);
        return NULL;
    }
    return open_kind(kind, draft_path, s, ngram_n, block, err);
}

int pf_drafter_apply_head(pf_drafter *d, int draft_head, char err[PF_ERR_LEN]) {
    if (draft_head == 0) return 0;
    pf_drafter *inner = pf_hybrid_drafter_model(d); /* a hybrid's DFlash draft */
    return pf_dflash_drafter_set_head(inner ? inner : d, draft_head < 0 ? 0 : draft_head, err);
}

int pf_default_block(pf_kind kind, int drafter_block) {
    if ((kind == PF_KIND_DFLASH || kind == PF_KIND_HYBRID) && drafter_block > PF_FIXED_BLOCK_DEFAULT)
        return PF_FIXED_BLOCK_DEFAULT;
    return drafter_block;
}

int pf_draft_dec_open(const pf_session *s, const char *draft_path, pf_dec **dec, char err[PF_ERR_LEN]) {
    *dec = NULL;
    const pf_model *m = s->model;
    gguf_file *f = draft_path ? gguf_open(draft_path, err)
                              : m->bundle && pfb_has_model(m->bundle, PFB_OWNER_DRAFT) ? pfb_gguf(m->bundle, PFB_OWNER_DRAFT, err)
                                                                                      : NULL;
    if (!f) {
        if (!draft_path) snprintf(err, PF_ERR_LEN, "no draft: -d DRAFT.gguf, or a bundle that holds one");
        return -1;
    }
    int rc = 0;
    if (gguf_find_tensor(f, "dec.weight")) rc = (*dec = pf_dec_load(f, m->hp.n_embd, err)) ? 1 : -1;
    gguf_close(f);
    return rc;
}

int pf_strategy_open(pf_session *s, const pf_strategy_desc *desc, const char *draft_path, int draft_head, int ngram_n,
                     pf_spec **spec, pf_strategy_plan *plan_out, char err[PF_ERR_LEN]) {
    *spec = NULL;
    pf_strategy_desc d = *desc;
    pf_strategy_plan plan;
    pf_dec *dec = NULL;
    pf_drafter *dr = NULL;
    int trained = 0;
    d.has_draft = pf_draft_at_hand(s, draft_path);
    /* the Dec head is read when the description may resolve to dec */
    if (d.has_draft && (d.kind == PF_KIND_DEFAULT || d.kind == PF_KIND_DEC)) {
        int h = pf_draft_dec_open(s, draft_path, &dec, err);
        if (h < 0) return -1;
        d.draft_has_dec = h;
    }
    if (d.kind == PF_KIND_DEC && d.has_draft && !d.draft_has_dec) {
        snprintf(err, PF_ERR_LEN, "%.200s: no Dec head in this draft (dec.* tensors)",
                 draft_path ? draft_path : "the bundled draft");
        return -1;
    }
    if (pf_strategy_plan_make(&d, &plan, err) < 0) goto fail;
    if (plan_out) *plan_out = plan;
    if (plan.kind == PF_KIND_AR) {
        pf_dec_free(dec);
        return 0;
    }
    if (plan.kind != PF_KIND_DEC) {
        pf_dec_free(dec);
        dec = NULL;
    }
    if (!(dr = open_kind(plan.kind, draft_path, s, ngram_n, &trained, err))) goto fail;
    if (plan.kind != PF_KIND_NGRAM && pf_drafter_apply_head(dr, draft_head, err) < 0) goto fail;
    if (!(*spec = pf_strategy_build(s, &plan, dr, trained, dec, err))) goto fail;
    pf_spec_own(*spec, dr, dec);
    return 0;
fail:
    pf_drafter_free(dr);
    pf_dec_free(dec);
    return -1;
}

pf_spec *pf_spec_default(pf_session *s, const char *draft_path, int draft_head, char err[PF_ERR_LEN]) {
    pf_strategy_desc d = {.kind = PF_KIND_DEFAULT};
    pf_spec *sp = NULL;
    if (pf_strategy_open(s, &d, draft_path, draft_head, 0, &sp, NULL, err) < 0) return NULL;
    if (!sp) snprintf(err, PF_ERR_LEN, "no draft: -d DRAFT.gguf, or a bundle that holds one");
    return sp;
}
