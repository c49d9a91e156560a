/* The interface every draft source implements for the speculative round loop (verify/).
 * A drafter sees the committed sequence through begin/commit and proposes tokens that follow a
 * "bonus" token: the last committed token, not yet in the target's cache. */
#ifndef PF_DRAFTER_H
#define PF_DRAFTER_H

#include <stdint.h>

#include "engine/sampler.h"
#include "formats/gguf.h"
#include "formats/status.h"

/* Structured output: what a drafted path may hold. mask() gives the tokens allowed after the path
 * drafted so far (32 per uint32 word); take(tok) extends the path by an allowed token and returns 0,
 * or 1 when nothing may follow it (an end token). align(tok), optional, gives a refused token's
 * longest allowed prefix token (-1: none), the one the target's masked logits give its score
 * (pf_mask_apply_aligned), so a greedy drafter can propose what the target will choose there. The
 * round sets it on a drafter that takes one. */
typedef struct {
    void *ctx;
    const uint32_t *(*mask)(void *ctx);
    int (*take)(void *ctx, int32_t tok);
    int32_t (*align)(void *ctx, int32_t tok);
} pf_draft_filter;

typedef struct pf_drafter {
    const char *name;
    void *state;
    /* Target layers whose residual rows the drafter needs for every committed row (0 = none). */
    const int *tap_layers;
    int n_taps;
    /* Every call that can fail returns a pf_rc with err (PF_RC_OOM, PF_RC_ARG, PF_RC_CONTEXT, ...):
     * the kind travels up to the caller as it is. */
    /* The prompt was prefilled; taps holds its rows (n * n_taps * n_embd floats, or NULL). */
    pf_rc (*begin)(void *state, const int32_t *prompt, int n, const float *taps, char err[PF_ERR_LEN]);
    /* Propose up to B-1 tokens following `bonus` (at position `pos`) into draft, how many into
     * *n_drafted (0 allowed). Greedy when samp is NULL or samp->temp <= 0. When q is given, q[k]
     * receives the exact distribution draft[k] was drawn from (a point mass for deterministic drafts). */
    pf_rc (*propose)(void *state, int32_t bonus, int64_t pos, int B, const pf_sampling *samp, pf_rng *rng,
                     int32_t *draft, pf_dist *q, int *n_drafted, char err[PF_ERR_LEN]);
    /* n rows were committed: tokens[0] is the bonus, then the accepted drafts; taps are their rows. */
    pf_rc (*commit)(void *state, const int32_t *tokens, int n, const float *taps, char err[PF_ERR_LEN]);
    /* Optional: the drafter's hidden rows of its last proposal (row 0 = the bonus row, then one per
     * drafted position), for a decision head; NULL when the drafter has none. */
    const float *(*hidden)(void *state, int *n_rows, int *dim);
    /* Optional, multi-turn reuse: keep only the first n committed rows of the context (the target
     * cache was cut to them). Returns 0, or -1 when the drafter holds fewer (nothing changed). */
    int (*truncate)(void *state, int64_t n);
    /* Optional: proposals from now on come only from what f allows (NULL: no filter), and stop
     * where it allows nothing the draft can propose. */
    void (*set_filter)(void *state, const pf_draft_filter *f);
    /* Optional: the draft's head vocabulary (0 the whole vocabulary, N > 0 the N most frequent
     * ranked tokens): PF_RC_OK, or PF_RC_ARG / PF_RC_OOM with err; NULL for a drafter without one. */
    pf_rc (*set_head)(void *state, int n, char err[PF_ERR_LEN]);
    /* Optional, for a drafter that wraps a lookup (the hybrid): of the last generation's rounds, how
     * many proposals came from the lookup, and all rounds. */
    void (*lookup_counts)(const void *state, int64_t *lookup_rounds, int64_t *rounds);
    /* True when every proposal is a point mass (q need not be kept). */
    int deterministic;
    void (*free)(void *state);
} pf_drafter;

/* One propose call: its arguments and, after it, how many tokens it drafted. */
typedef struct {
    pf_drafter *d;
    int32_t bonus;
    int64_t pos;
    int B;
    const pf_sampling *samp;
    pf_rng *rng;
    int32_t *draft;
    pf_dist *q;
    int n_drafted;
} pf_draft_call;

/* c->d->propose with c's arguments, into c->n_drafted. */
pf_rc pf_drafter_call(pf_draft_call *c, char err[PF_ERR_LEN]);
/* Calls d->free(d->state) and frees d. */
void pf_drafter_free(pf_drafter *d);
/* A front end's head vocabulary setting: 0 leaves the draft's default, -1 the whole vocabulary, N > 0
 * the N most frequent ranked tokens. PF_RC_OK, or set_head's code with err (PF_RC_ARG also for a
 * drafter without a head vocabulary). */
pf_rc pf_drafter_set_head(pf_drafter *d, int draft_head, char err[PF_ERR_LEN]);
/* lookup_counts' answer; 0 and 0 for a drafter without one. */
void pf_drafter_lookup_counts(const pf_drafter *d, int64_t *lookup_rounds, int64_t *rounds);

#endif
