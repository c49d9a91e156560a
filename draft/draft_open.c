#include "draft/draft_open.h"

#include <stdio.h>

#include "formats/pfb.h"

/* The draft the target's bundle holds; its weights point into the target's bundle. */
static pf_dflash *bundled(const pf_model *target, char err[PF_ERR_LEN]) {
    if (!pf_model_bundles_draft(target)) {
        snprintf(err, PF_ERR_LEN, "no draft: the target was not loaded from a .pfb bundle that holds one");
        return NULL;
    }
    gguf_file *f = pfb_gguf(target->bundle, PFB_OWNER_DRAFT, err);
    return f ? pf_dflash_from_gguf(f, 1, target, err) : NULL;
}

int pf_draft_open(const pf_model *target, const char *path, pf_dflash **weights, pf_dec **dec, char err[PF_ERR_LEN]) {
    *weights = NULL;
    if (dec) *dec = NULL;
    pf_dflash *w = path ? pf_dflash_load(path, target, err) : bundled(target, err);
    if (!w) return -1;
    const gguf_file *f = pf_dflash_file(w);
    if (dec && gguf_find_tensor(f, "dec.weight") && !(*dec = pf_dec_load(f, target->hp.n_embd, err))) {
        pf_dflash_free(w);
        return -1;
    }
    *weights = w;
    return 0;
}
