/* pf_load_draft: a draft GGUF, the draft of a .pfb file, or the draft bundled with the target,
 * opened the one way every front end opens a draft (draft/draft_open.h). */
#include "api/draft.h"

#include <stdio.h>
#include <stdlib.h>

#include "api/status.h"
#include "draft/draft_open.h"

pf_status pf_load_draft(const pf_model *m, const char *path, pf_draft **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    if (!m) {
        snprintf(err, PF_ERR_LEN, "pf_load_draft: no target model");
        return PF_ERR_ARG;
    }
    if (!path && !pf_model_bundles_draft(m)) {
        snprintf(err, PF_ERR_LEN, "pf_load_draft: the target was not loaded from a .pfb bundle that holds a draft");
        return PF_ERR_ARG;
    }
    pf_draft *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_ERR_OOM;
    }
    d->target = m;
    pf_rc rc = pf_draft_open(m, path, &d->weights, &d->dec, err);
    if (rc != PF_RC_OK) {
        free(d);
        return pf_api_status(rc);
    }
    *out = d;
    return PF_OK;
}

void pf_free_draft(pf_draft *d) {
    if (!d) return;
    pf_dec_free(d->dec);
    pf_dflash_free(d->weights);
    free(d);
}

int pf_draft_block_size(const pf_draft *d) { return d ? pf_dflash_block_size(d->weights) : 0; }
bool pf_draft_has_dec(const pf_draft *d) { return d && d->dec; }
