/* Hybrid drafting for copy-heavy text: a drafter that wraps two drafters. Each round it asks the
 * lookup drafter (prompt lookup, draft/ngram.c, built to match only patterns of at least the hybrid's
 * match length) first and keeps its proposal when it has at least min_tokens tokens; otherwise the model
 * drafter (DFlash) proposes. Both see every committed row, so either can propose in any round. The
 * choice depends only on the committed sequence, and each proposal comes with the exact distribution it
 * was drawn from (a point mass for lookup), so greedy and sampled verification stay lossless. */
#ifndef PF_HYBRID_H
#define PF_HYBRID_H

#include "draft/drafter.h"

/* The hybrid into *out. Takes ownership of both (freed with the hybrid, also when this fails).
 * min_tokens >= 1; the lookup proposal is also kept when it fills the whole block (B - 1 tokens)
 * with fewer than min_tokens rows. PF_RC_OK, or PF_RC_ARG (a missing drafter, a lookup with taps,
 * min_tokens < 1) / PF_RC_OOM with err. */
pf_rc pf_hybrid_drafter_new(pf_drafter *lookup, pf_drafter *model, int min_tokens, pf_drafter **out,
                            char err[PF_ERR_LEN]);
/* The wrapped model drafter's set_head and taps are the hybrid's own; pf_drafter_lookup_counts tells
 * how many rounds the lookup drafter proposed. */

#endif
