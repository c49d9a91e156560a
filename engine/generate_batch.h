/* Plain decoding of several sequences together (continuous batching): each step is ONE forward
 * over a row of every decoding sequence and a chunk of the prompts of the sequences that joined,
 * so the weights are read once for all of them (pf_forward_seqs). A sequence that finishes leaves
 * and the next request takes its place between steps. Every sequence has its own KV cache,
 * sampler and random stream, so its tokens, stop reason and token count are those of
 * pf_engine_generate_tokens with plain decoding on the same prompt and parameters (greedy, and
 * sampled with the same seed). */
#ifndef PF_GENERATE_BATCH_H
#define PF_GENERATE_BATCH_H

#include "engine/generate.h"

/* One request: a prompt of token ids and its decode parameters. Of pf_decode_params this path
 * reads max_tokens, temp, top_k, top_p, seed, stop_at_eot, on_token_source and the structured
 * output fields (json_schema, json_object, tools with a required or named call: the slot's own
 * constraint, opened over the batch session's token masker, as generate.c opens it); a prompt
 * cache is refused (PF_RC_ARG) -- it stays with the one-sequence path. */
typedef struct {
    const int32_t *prompt;
    int n_prompt;
    pf_decode_params p;
    pf_decode_token_fn on_token; /* every generated token; nonzero stops this sequence (PF_END_CALLBACK) */
    void *user;                  /* the callbacks' argument; also tells the caller which request */
} pf_seq_request;

/* next()'s answer when no request is waiting yet but more may come (a server's queue). */
enum { PF_SEQ_LATER = 2 };

/* Where requests come from and where they end. */
typedef struct {
    /* The next request into *r: 1, 0 when there are no more, -1 (err set) to end the batch, or
     * PF_SEQ_LATER: none now, the batch asks again before its next step (and at once when no
     * sequence is decoding: a feed with nothing to give an idle batch should block in next()
     * until it has a request or none will come). The prompt must stay valid until done() is
     * called for it. */
    int (*next)(void *feed, pf_seq_request *r, char err[PF_ERR_LEN]);
    /* Request r ended: PF_RC_OK with its statistics, or its error (err) -- a prompt that is empty
     * or does not fit the context, a bad token id; the other sequences go on. */
    void (*done)(void *feed, const pf_seq_request *r, pf_rc rc, const pf_decode_stats *st, const char *err);
    void *feed;
} pf_seq_feed;

/* Decodes the feed's requests, at most n_slots (>= 1) at a time, in the session's context (its
 * threads and kernels; each slot gets a KV cache of the session's type and length, and the
 * session's own cache and multi-turn history are left as they were). A request keeps the rows of
 * its slot's cache that its prompt shares with the slot's last request of this call (as a
 * session's multi-turn reuse; stats n_reused), unless its strategy taps the prompt's rows. Requests join in the order
 * next() gives them. PF_RC_OK when the feed ran dry and every request ended; next()'s error
 * (PF_RC_ARG) or PF_RC_OOM, with err, end the batch early (requests still decoding then get no
 * done() call). */
pf_rc pf_engine_generate_batch(pf_engine_session *s, int n_slots, const pf_seq_feed *feed, char err[PF_ERR_LEN]);

/* Speculation across the batch (verify/spec_batch.h makes one): the engine keeps the requests,
 * the prompts, the stop rules and the ONE forward per step; this decides each decoding sequence's
 * rows of that forward and turns their logits into committed tokens. Every call that can fail
 * returns its pf_rc with err, which ends the batch. */
typedef struct {
    void *state;
    /* The strategy request r runs with in slot `slot`, over seq: the slot's own session (the
     * batch's model, threads and kernels; the slot's cache, sampling state and random stream),
     * which lives as long as the batch. Asked when each request joins; *out NULL: the request
     * decodes plainly (a row of the forward like a speculating one's). The engine taps the prompt
     * rows with its tap_layers and calls its begin on the whole prompt, then draws the first token
     * from the prompt's logits with seq's sampling, as pf_engine_generate_tokens does. A failure
     * (err set) ends that request with its code; the others go on. */
    pf_rc (*slot)(void *state, int slot, const pf_seq_request *r, pf_engine_session *seq, pf_strategy **out,
                  char err[PF_ERR_LEN]);
    /* The step's n speculating sequences: slot ids, the last committed token of each (not yet in
     * its cache) and the most tokens each may commit (>= 1). Each one's rows of the forward into
     * rows[i], its cache being seq's (one row: a plain step). n_plain more sequences decode plainly
     * in the same forward, a row each. */
    pf_rc (*plan)(void *state, int n, const int *slot, const int32_t *last, const int *cap, int n_plain,
                  pf_batch *rows, char err[PF_ERR_LEN]);
    /* The forward ran: its rows of decoding sequences (speculating and plain), whether prompt rows
     * rode along, seconds. */
    void (*forward_done)(void *state, int n_rows, int with_prompt, double seconds);
    /* Slot's committed tokens of this step into out (1..its cap; all but the last kept drafts). */
    pf_rc (*commit)(void *state, int slot, int32_t *out, int *n_out, char err[PF_ERR_LEN]);
} pf_seq_strategy;

/* pf_engine_generate_batch with speculation (strat NULL: plain decoding): every request's tokens
 * and stop reason are its solo run's with its strategy (plain decoding's for the requests that
 * get none; greedy, and sampled when the strategy keeps the random stream as alone). */
pf_rc pf_engine_generate_batch_spec(pf_engine_session *s, int n_slots, const pf_seq_feed *feed,
                                    const pf_seq_strategy *strat, char err[PF_ERR_LEN]);

#endif
