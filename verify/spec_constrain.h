/* A speculative round under structured output (engine/constraint.h): the drafted path is walked
 * through the constraint, cut at the first token it forbids, runs of forced tokens (the only token
 * a position allows) are appended without asking the draft, and each verified row's logits are
 * masked with the state reached along the path before acceptance (greedy acceptance masks a row only
 * when it reads it and its argmax is refused, which gives the same tokens), so greedy output is
 * constrained plain decoding token for token and sampled output keeps its distribution. */
#ifndef PF_SPEC_CONSTRAIN_H
#define PF_SPEC_CONSTRAIN_H

#include "verify/spec_impl.h"

/* The path after `last`: rows[1..nd] hold the drafts. Returns the drafts to verify: the allowed
 * prefix (stochastic proposals also keep the first forbidden draft, which the acceptance test then
 * rejects with its residual), then forced tokens while the rows stay within cap (q gets a point
 * mass at each when stochastic). *n_forced: the forced tokens appended; *n_masked: rows 0.. whose
 * masks are kept. The constraint is left at its entry position. */
int pf_spec_constrain_path(pf_spec *sp, pf_constraint *c, int nd, int cap, int stochastic, int *n_forced,
                           int *n_masked);
/* forced[k] = 1 where drafts[k] is the only token its position allows along the drafted path (0
 * after a token the constraint refuses); the constraint is left where it was. */
void pf_spec_mark_forced(pf_constraint *c, const int32_t *drafts, int n, unsigned char *forced);
/* The filter a drafter proposes through (draft/drafter.h): the constraint advanced along the
 * drafted path; the caller rolls it back to the round's start after proposing. */
pf_draft_filter pf_spec_draft_filter(pf_constraint *c);
/* Mask the verified logits rows 0..n_masked-1 with their kept masks (sampled acceptance). */
void pf_spec_constrain_rows(pf_spec *sp, const pf_constraint *c, int n_masked);
/* Greedy acceptance (verify/accept.h pf_accept_greedy) over the rows as pf_spec_constrain_rows
 * would leave them, each row masked only when it is read and its own argmax is refused
 * (pf_constraint_greedy_bits): the accepted drafts, *bonus the target's next token. */
int pf_spec_accept_greedy_constrained(pf_spec *sp, const pf_constraint *c, int nd, int n_masked, int32_t *bonus);

#endif
