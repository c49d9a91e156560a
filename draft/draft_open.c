#include "draft/draft_open.h"

#include <stdio.h>

#include "formats/pfb.h"

/* The draft the target's bundle holds; its weights point into the target's bundle. */
static pf_rc bundled(const pf_model *target, pf_dflash **out, char err[PF_ERR_LEN]) {
    if (!pf_model_bundles_draft(target)) {
        snprintf(err, PF_ERR_LEN, "no draft: the target was not loaded from a .pfb bundle that holds one");
        return PF_RC_ARG;
    }
    gguf_file *f;
    pf_rc rc = pfb_gguf(target->bundle, PFB_OWNER_DRAFT, &f, err);
    return rc != PF_RC_OK ? rc : pf_dflash_from_gguf(f, 1, target, out, err);
}

pf_rc pf_draft_open(const pf_model *target, const char *path, pf_dflash **weights, pf_dec **dec, char err[PF_ERR_LEN]) {
    *weights = NULL;
    if (dec) *dec = NULL;
    pf_dflash *w = NULL;
    pf_rc rc = path ? pf_dflash_open(path, target, &w, err) : bundled(target, &w, err);
    if (rc != PF_RC_OK) return rc;
    const gguf_file *f = pf_dflash_file(w);
    if (dec && gguf_find_tensor(f, "dec.weight") && (rc = pf_dec_load(f, target->hp.n_embd, dec, err)) != PF_RC_OK) {
        pf_dflash_free(w);
        return rc;
    }
    *weights = w;
    return PF_RC_OK;
}
