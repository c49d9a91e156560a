/* A DFlash / DFlash2 draft behind the drafter interface: its context is the target's tapped rows of
 * every committed position; each round is one non-causal block forward. */
#ifndef PF_DFLASH_DRAFTER_H
#define PF_DFLASH_DRAFTER_H

#include "draft/dflash.h"
#include "draft/drafter.h"
#include "engine/generate.h"

/* The drafter into *out. The draft (borrowed) runs on the session's thread pool and kernels; it
 * starts with the draft's default head vocabulary (set_head changes it, pf_dflash_set_head).
 * PF_RC_OK, or PF_RC_OOM / PF_RC_ARG (a default head vocabulary the draft's selector cannot take)
 * with err. */
pf_rc pf_dflash_drafter_new(const pf_dflash *d, pf_engine_session *s, pf_drafter **out, char err[PF_ERR_LEN]);
/* From now on pf_drafter_free(dr) also frees the draft weights it was made with. */
void pf_dflash_drafter_own_weights(pf_drafter *dr);

/* 1 when dr is a DFlash drafter over the weights w, whose proposals pf_dflash_drafters_propose
 * can batch. */
int pf_dflash_drafter_of(const pf_drafter *dr, const pf_dflash *w);
/* The proposals of n calls to DFlash drafters of bt's draft (pf_dflash_drafter_of, distinct, on
 * one session's kernels) in one batched draft forward (pf_dflash_propose_batch): each call's
 * drafts, n_drafted and hidden rows are its drafter's own propose's, bit for bit. PF_RC_OK, or
 * the first failure's code with err. */
pf_rc pf_dflash_drafters_propose(pf_dflash_batch *bt, pf_draft_call *const *c, int n, char err[PF_ERR_LEN]);

#endif
