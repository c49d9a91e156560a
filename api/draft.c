/* pf_load_draft: a draft GGUF, the draft of a .pfb file, or the draft bundled with the target. */
#include "api/draft.h"

#include <stdio.h>
#include <stdlib.h>

#include "engine/model.h"

/* Weights and Dec head from a parsed draft file (f is owned by the weights from here on). */
static int from_gguf(pf_draft *d, gguf_file *f, char err[PF_ERR_LEN]) {
    char why[PF_ERR_LEN];
    d->dec = pf_dec_load(f, d->target->hp.n_embd, why); /* optional: NULL when there is none */
    d->weights = pf_dflash_from_gguf(f, 1, d->target, err);
    return d->weights ? 0 : -1;
}

pf_draft *pf_load_draft(const pf_model *m, const char *path, char err[PF_ERR_LEN]) {
    if (!m) {
        snprintf(err, PF_ERR_LEN, "pf_load_draft: no target model");
        return NULL;
    }
    pf_draft *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return NULL;
    }
    d->target = m;
    int rc = -1;
    if (!path) { /* the draft inside the target's own bundle */
        gguf_file *f = NULL;
        if (!pf_model_bundles_draft(m))
            snprintf(err, PF_ERR_LEN, "pf_load_draft: the target was not loaded from a .pfb bundle that holds a draft");
        else if ((f = pfb_gguf(m->bundle, PFB_OWNER_DRAFT, err)))
            rc = from_gguf(d, f, err);
    } else if (pfb_sniff(path)) { /* the draft of another bundle, kept open while the draft lives */
        gguf_file *f = NULL;
        if (!(d->bundle = pfb_open(path, err))) {
        } else if (!pfb_has_model(d->bundle, PFB_OWNER_DRAFT)) {
            snprintf(err, PF_ERR_LEN, "%s: the bundle holds no draft", path);
        } else if ((f = pfb_gguf(d->bundle, PFB_OWNER_DRAFT, err))) {
            rc = from_gguf(d, f, err);
        }
    } else {
        gguf_file *f = gguf_open(path, err);
        if (f) rc = from_gguf(d, f, err);
    }
    if (rc < 0) {
        pf_free_draft(d);
        return NULL;
    }
    return d;
}

void pf_free_draft(pf_draft *d) {
    if (!d) return;
    pf_dflash_free(d->weights);
    pf_dec_free(d->dec);
    pfb_close(d->bundle);
    free(d);
}

int pf_draft_block_size(const pf_draft *d) { return d ? pf_dflash_block_size(d->weights) : 0; }
bool pf_draft_has_dec(const pf_draft *d) { return d && d->dec; }
