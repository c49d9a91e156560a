#include "draft/drafter.h"

#include <stdio.h>
#include <stdlib.h>

void pf_drafter_free(pf_drafter *d) {
    if (!d) return;
    if (d->free) d->free(d->state);
    free(d);
}

pf_rc pf_drafter_set_head(pf_drafter *d, int draft_head, char err[PF_ERR_LEN]) {
    if (draft_head == 0) return PF_RC_OK;
    if (!d || !d->set_head) {
        snprintf(err, PF_ERR_LEN, "--draft-head applies to DFlash drafts only");
        return PF_RC_ARG;
    }
    return d->set_head(d->state, draft_head < 0 ? 0 : draft_head, err);
}

void pf_drafter_lookup_counts(const pf_drafter *d, int64_t *lookup_rounds, int64_t *rounds) {
    *lookup_rounds = *rounds = 0;
    if (d && d->lookup_counts) d->lookup_counts(d->state, lookup_rounds, rounds);
}

pf_rc pf_drafter_call(pf_draft_call *c, char err[PF_ERR_LEN]) {
    return c->d->propose(c->d->state, c->bonus, c->pos, c->B, c->samp, c->rng, c->draft, c->q, &c->n_drafted, err);
}
