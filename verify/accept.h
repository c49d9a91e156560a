/* Acceptance rules of one speculative round (docs/speculation.md, "The round"). Given the target's
 * logits for the B rows [bonus, d1..d(nd)] and the nd draft tokens, decide how many drafts are kept
 * (a) and the target's own next token (the new bonus). */
#ifndef PF_ACCEPT_H
#define PF_ACCEPT_H

#include <stdint.h>

#include "engine/sampler.h"

/* Greedy: a = longest prefix with d[k] == argmax(row k); bonus = argmax(row a). */
int pf_accept_greedy(const float *logits, int n_vocab, const int32_t *draft, int nd, int32_t *bonus);
/* The same rule with row k's greedy token given by token(ctx, k) (rows read in order, up to the
 * first mismatch). */
int pf_accept_greedy_by(int32_t (*token)(void *ctx, int k), void *ctx, const int32_t *draft, int nd, int32_t *bonus);

/* Sampled, lossless. p_k = pf_sampling_probs(samp, row k). For a point-mass draft
 * (deterministic != 0) the target samples its own token from p_k with the same single uniform that
 * plain sampling would use and keeps d[k] iff they agree, so a fixed seed reproduces plain
 * sampling token for token. Otherwise: keep d[k] with probability min(1, p(d)/q(d)); on the first
 * rejection draw from normalize(max(p - q, 0)); if all are kept, draw from p of row nd.
 * p (scratch, vocabulary capacity) and resid (scratch, vocabulary capacity) are work areas. */
int pf_accept_sampled(const float *logits, int n_vocab, const int32_t *draft, const pf_dist *q, int nd,
                      int deterministic, const pf_sampling *samp, pf_rng *rng, pf_dist *p, pf_dist *resid,
                      int32_t *bonus);

#endif
