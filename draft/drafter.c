#include "draft/drafter.h"

#include <stdio.h>
#include <stdlib.h>

void pf_drafter_free(pf_drafter *d) {
    if (!d) return;
    if (d->free) d->free(d->state);
    free(d);
}

int pf_drafter_set_head(pf_drafter *d, int draft_head, char err[PF_ERR_LEN]) {
    if (draft_head == 0) return 0;
    if (!d || !d->set_head) {
        snprintf(err, PF_ERR_LEN, "--draft-head applies to DFlash drafts only");
        return PF_DRAFT_BAD_VALUE;
    }
    return d->set_head(d->state, draft_head < 0 ? 0 : draft_head, err);
}
