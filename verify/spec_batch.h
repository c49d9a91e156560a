/* Speculation across the sequences of a batch (engine/generate_batch.h's pf_seq_strategy): every
 * slot runs its own copy of its request's plan's strategy (its drafter with its own context, its
 * running acceptance, its sampling state), and each step the target verifies every sequence's
 * rows in ONE forward, beside the rows of the requests that decode plainly. Each decoding
 * sequence has its plain row; with one sequence decoding a round is the strategy's own, and with
 * several the adaptive strategies' draft rows go where they add the most expected tokens per
 * second of the step (verify/row_share.h) under a running estimate of what R rows of one forward
 * cost on this machine, so when rows are dear no drafts are verified. The budget decides before
 * anything is drafted, from each sequence's survival as its verified rounds kept it (with a Dec
 * head, moved by the step's target half) scaled by what the budget's drafts kept against what it
 * expected of them, and every draft it buys is verified (Dec's head does not cut them after the
 * shared draft forward was paid). The DFlash drafters of a
 * draft propose in one batched draft forward per step (pf_dflash_propose_batch: the draft's
 * weights read once for every drafting sequence, each sequence's drafts its solo ones, each
 * charged its rows' share of the time); a lookup or hybrid drafter proposes alone, and the
 * drafters' context appends stay per sequence. A slot whose adaptive strategy starts from the
 * batch's calibration builds no drafter context until the budget first gives it drafts
 * (verify/spec_lazy.c: its prompt's and plain steps' rows wait), and the budget charges that
 * build, at its running seconds per row, to that first draft: a sequence that never drafts costs
 * what plain decoding costs but its taps. The cost of R rows follows every decoding forward with
 * the curve kept non-decreasing (pf_cost_observe_rows), so row counts no forward uses cannot
 * keep stale values from the first calibration. A fixed block is verified whole in every sequence.
 * Every sequence's output is its solo speculative run's: plain decoding's when greedy, and under
 * sampling the same tokens for the same seed as its solo run (the adaptive strategies draft point
 * masses, whose acceptance draws the target's own samples from plain sampling's stream; a fixed
 * block's rounds are its solo rounds). */
#ifndef PF_SPEC_BATCH_H
#define PF_SPEC_BATCH_H

#include "draft/dec.h"
#include "draft/dflash.h"
#include "engine/generate_batch.h"
#include "verify/cost_model.h"
#include "verify/plan.h"
#include "verify/spec.h"

typedef struct pf_spec_batch pf_spec_batch;

/* The plan's speculation (not plain decoding) over the draft weights w (NULL for ngram) and, for
 * dec, its head, both borrowed, for batches in session s: every request runs it. PF_RC_OK, or
 * PF_RC_ARG (plain decoding, dec without a head) / PF_RC_OOM with err. */
pf_rc pf_spec_batch_new(pf_engine_session *s, const pf_strategy_plan *plan, const pf_dflash *w, const pf_dec *dec,
                        pf_spec_batch **out, char err[PF_ERR_LEN]);

/* What one request runs: a plan (PF_KIND_PLAIN: plain decoding) over the draft weights w (NULL
 * for ngram and plain) and, for dec, its head; both borrowed and alive for the batch. */
typedef struct {
    pf_strategy_plan plan;
    const pf_dflash *w;
    const pf_dec *dec;
} pf_spec_choice;
/* Each request's own choice: into *c what request r runs. */
typedef void (*pf_spec_choose_fn)(void *user, const pf_seq_request *r, pf_spec_choice *c);
/* Speculation where every request brings its own plan (and draft): plain and speculating
 * requests, of any strategies and blocks, in one batch; each runs as it runs alone. A plan
 * this cannot run (dec without a head, a head vocabulary the draft cannot take) ends that
 * request with PF_RC_ARG. PF_RC_OK or PF_RC_OOM with err. */
pf_rc pf_spec_batch_new_mixed(pf_engine_session *s, pf_spec_choose_fn choose, void *user, pf_spec_batch **out,
                              char err[PF_ERR_LEN]);
void pf_spec_batch_free(pf_spec_batch *sb);
/* pf_engine_generate_batch with this speculation. The cost model measured in the first call
 * (one slot's calibration, then every step's forward), each slot's drafter and each slot's
 * speculation (its running acceptance and cost model, while its requests' choice stays) carry
 * over to later calls, as a session's own speculation carries over from call to call. */
pf_rc pf_spec_batch_generate(pf_spec_batch *sb, int n_slots, const pf_seq_feed *feed, char err[PF_ERR_LEN]);
/* Rounds of the last call, summed over its requests (each request's own rounds are its slot's). */
const pf_spec_stats *pf_spec_batch_stats(const pf_spec_batch *sb);
/* The speculation running the request whose user is `user` (from its start until the feed's
 * done() for it returns: its own round statistics), NULL when it decodes plainly. */
const pf_spec *pf_spec_batch_request(const pf_spec_batch *sb, const void *user);

#endif
