#include "verify/strategies.h"

#include <stdio.h>
#include <string.h>

#include "draft/dflash_drafter.h"
#include "draft/hybrid.h"
#include "draft/ngram.h"
#include "formats/gguf.h"
#include "formats/pfb.h"

/* The draft a bundled target carries; its weights point into the target's bundle. */
static pf_dflash *bundled_dflash(const pf_model *target, char err[PF_ERR_LEN]) {
    if (!target->bundle || !pfb_has_model(target->bundle, PFB_OWNER_DRAFT)) {
        snprintf(err, PF_ERR_LEN, "--spec dflash needs a draft: -d DRAFT.gguf, or a bundle that holds one");
        return NULL;
    }
    gguf_file *f = pfb_gguf(target->bundle, PFB_OWNER_DRAFT, err);
    return f ? pf_dflash_from_gguf(f, 1, target, err) : NULL;
}

static pf_drafter *open_dflash(const char *path, pf_session *s, int *block, char err[PF_ERR_LEN]) {
    pf_dflash *w = path ? pf_dflash_load(path, s->model, err) : bundled_dflash(s->model, err);
    if (!w) return NULL;
    if (*block <= 0) *block = pf_dflash_block_size(w);
    pf_drafter *d = pf_dflash_drafter_new(w, s, err);
    if (!d) {
        pf_dflash_free(w);
        return NULL;
    }
    pf_dflash_drafter_own_weights(d);
    return d;
}

pf_drafter *pf_drafter_open(const char *spec, const char *draft_path, pf_session *s, int ngram_n, int *block,
                            char err[PF_ERR_LEN]) {
    if (!strcmp(spec, "dflash")) return open_dflash(draft_path, s, block, err);
    if (!strcmp(spec, "ngram")) {
        if (*block <= 0) *block = 8;
        pf_drafter *d = pf_ngram_drafter_new(1, ngram_n);
        if (!d) snprintf(err, PF_ERR_LEN, "out of memory");
        return d;
    }
    if (!strcmp(spec, "hybrid")) {
        pf_drafter *model = open_dflash(draft_path, s, block, err);
        if (!model) return NULL;
        int max_n = ngram_n > PF_HYBRID_MIN_MATCH ? ngram_n : PF_HYBRID_MIN_MATCH;
        pf_drafter *lookup = pf_ngram_drafter_new(PF_HYBRID_MIN_MATCH, max_n);
        if (!lookup) {
            snprintf(err, PF_ERR_LEN, "out of memory");
            pf_drafter_free(model);
            return NULL;
        }
        return pf_hybrid_drafter_new(lookup, model, PF_HYBRID_MIN_TOKENS, err);
    }
    snprintf(err, PF_ERR_LEN, "unknown speculative strategy '%s'", spec);
    return NULL;
}

int pf_drafter_apply_head(pf_drafter *d, int draft_head, char err[PF_ERR_LEN]) {
    if (draft_head == 0) return 0;
    pf_drafter *inner = pf_hybrid_drafter_model(d); /* a hybrid's DFlash draft */
    return pf_dflash_drafter_set_head(inner ? inner : d, draft_head < 0 ? 0 : draft_head, err);
}

int pf_default_block(const char *spec, int drafter_block) {
    if ((!strcmp(spec, "dflash") || !strcmp(spec, "hybrid")) && drafter_block > PF_FIXED_BLOCK_DEFAULT)
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

pf_spec *pf_spec_default(pf_session *s, const char *draft_path, int draft_head, char err[PF_ERR_LEN]) {
    int block = 0;
    pf_dec *dec = NULL;
    pf_spec *sp = NULL;
    pf_drafter *d = pf_drafter_open("dflash", draft_path, s, 0, &block, err);
    if (!d || pf_drafter_apply_head(d, draft_head, err) < 0 || pf_draft_dec_open(s, draft_path, &dec, err) < 0 ||
        !(sp = pf_spec_new(s, d, block, err)) || pf_spec_set_adaptive(sp, dec, NULL, err) < 0) {
        pf_spec_free(sp);
        pf_dec_free(dec);
        pf_drafter_free(d);
        return NULL;
    }
    pf_spec_own(sp, d, dec);
    return sp;
}
