/* pf_engine_generate_batch: slots, each a sequence with its own cache and sampler; every step one
 * forward over all of them (generate_batch.h). A slot's stop rules are generate.c's plain
 * decoding's, in the same order, so a sequence ends where it ends alone. */
#include "engine/generate_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/batch.h"
#include "engine/clock.h"
#include "engine/constraint.h"
#include "engine/tokenizer.h"

/* Prompt rows one step takes, over all the sequences still prefilling: a decoding sequence waits
 * at most one forward of this many rows more for its next token when a request joins. */
#define PREFILL_ROWS_PER_STEP 64
/* The most tokens one speculative step commits for a sequence (generate.c's step buffer). */
#define STEP_TOKENS_MAX 256

typedef struct {
    pf_seq_request req;
    pf_kv_cache *kv;
    /* the tokens of the cache's first rows, as far as n_hist: what the slot's last request ran
     * (n_ctx + 1 capacity) */
    int32_t *hist;
    int n_hist;
    int busy;
    int n_fed;        /* prompt rows in the cache */
    int32_t last;     /* the token the next step runs (decoding) */
    /* the slot's own session: its cache, sampling state and random stream (a speculative
     * strategy works in it); ctx is the batch's context with the slot's cache */
    pf_engine_session seq;
    pf_ctx ctx;
    pf_strategy *strat; /* speculation: the slot's strategy (NULL: plain) */
    /* the strategy whose context covers the cache's rows after the slot's last request (it ran
     * that request to its end), or NULL: what a tapping strategy's keep needs (generate.c's prev) */
    pf_strategy *prev;
    float *ptaps;       /* speculation: the prompt's tapped rows until begin */
    pf_decode_stats st;
    double t0, t_first;
    int row;          /* the slot's pf_batch in this step's forward, or -1 */
    float *logits;    /* where this step's forward put the slot's logits, or NULL */
} seq_slot;

typedef struct {
    pf_engine_session *s;
    const pf_seq_feed *feed;
    seq_slot *slots;
    int n_slots, feed_dry;
    int feed_later; /* next() said "none now" during this admit: ask again before the next step */
    float *logits; /* n_slots rows: a step's logits, the wanting sequences' side by side */
    pf_batch *rows;
    const pf_seq_strategy *spec; /* NULL: plain decoding */
    int *dec_slot, *dec_cap;     /* speculation: a step's decoding slots, their caps and lasts */
    int32_t *dec_last, *out;
    pf_batch *dec_rows;
} batch_run;

static int is_stop(const pf_tokenizer *t, int32_t id) {
    return id == pf_tokenizer_eot(t) || id == pf_tokenizer_eos(t);
}

/* The slot's request ends: its timings, the caller told, the slot free. */
static void finish(batch_run *b, seq_slot *sl, pf_rc rc, const char *err) {
    double t_end = pf_now_s();
    sl->st.ttft_s = (sl->t_first > 0 ? sl->t_first : t_end) - sl->t0;
    sl->st.decode_s = sl->t_first > 0 ? t_end - sl->t_first : 0;
    b->feed->done(b->feed->feed, &sl->req, rc, &sl->st, err ? err : "");
    sl->busy = 0;
    sl->prev = rc == PF_RC_OK && sl->n_fed == sl->req.n_prompt ? sl->strat : NULL;
    pf_constraint_free(sl->seq.cons);
    sl->seq.cons = NULL;
    free(sl->ptaps);
    sl->ptaps = NULL;
}

/* What the one-sequence path refuses before it prefills (generate.c's check_request), and what
 * this path leaves to it. */
static pf_rc check_request(const batch_run *b, const pf_seq_request *r, char err[PF_ERR_LEN]) {
    const pf_kv_cache *kv = b->s->ctx->kv;
    if (r->n_prompt < 1) {
        snprintf(err, PF_ERR_LEN, "empty prompt");
        return PF_RC_ARG;
    }
    if (r->n_prompt >= kv->n_ctx) {
        snprintf(err, PF_ERR_LEN, "prompt of %d tokens does not fit the context of %lld tokens", r->n_prompt,
                 (long long)kv->n_ctx);
        return PF_RC_CONTEXT;
    }
    if (r->p.max_tokens < 0) {
        snprintf(err, PF_ERR_LEN, "max_tokens must be >= 0");
        return PF_RC_ARG;
    }
    if (r->p.prompt_cache) {
        snprintf(err, PF_ERR_LEN, "batched decoding takes no prompt cache");
        return PF_RC_ARG;
    }
    for (int i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= b->s->model->hp.n_vocab) {
            snprintf(err, PF_ERR_LEN, "token id %d is outside the vocabulary (%d)", r->prompt[i],
                     b->s->model->hp.n_vocab);
            return PF_RC_ARG;
        }
    return PF_RC_OK;
}

/* Speculation: the request's strategy (NULL: it decodes plainly) and a buffer for its prompt's
 * taps. */
static pf_rc spec_slot(batch_run *b, int i, char err[PF_ERR_LEN]) {
    seq_slot *sl = &b->slots[i];
    pf_rc rc = b->spec->slot(b->spec->state, i, &sl->req, &sl->seq, &sl->strat, err);
    if (rc != PF_RC_OK || !sl->strat) return rc;
    sl->st.strategy = sl->strat->name;
    size_t row = (size_t)sl->strat->n_taps * b->s->model->hp.n_embd;
    if (row && !(sl->ptaps = malloc((size_t)sl->req.n_prompt * row * sizeof(float)))) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    return PF_RC_OK;
}

/* Rows of the slot's cache its new prompt shares with what the slot ran last, as a session's
 * multi-turn reuse keeps them (a row is bitwise the same whichever forward computed it): all but
 * the prompt's last token at most, which runs for the first logits. */
static int reusable_rows(const seq_slot *sl) {
    int64_t lim = sl->n_hist < sl->kv->len ? sl->n_hist : sl->kv->len;
    if (lim > sl->req.n_prompt - 1) lim = sl->req.n_prompt - 1;
    int n = 0;
    while (n < lim && sl->hist[n] == sl->req.prompt[n]) n++;
    return n;
}

/* The slot's cache for its new request: the rows it reuses kept, the prompt its history. A
 * strategy that taps the prompt's rows keeps them only when it ran the slot's last request and
 * cuts its own context to them (generate.c's keep_reusable); otherwise it begins on the whole
 * prompt. */
static void start_cache(seq_slot *sl) {
    int keep = reusable_rows(sl);
    pf_strategy *st = sl->strat;
    if (keep > 0 && st && st->n_taps &&
        !(sl->prev == st && st->keep && st->resume && st->keep(st->state, &sl->seq, keep) == 0))
        keep = 0;
    sl->prev = NULL; /* what stays valid if this request fails */
    pf_kv_truncate(sl->kv, keep);
    sl->n_fed = keep;
    sl->st.n_reused = keep;
    memcpy(sl->hist, sl->req.prompt, (size_t)sl->req.n_prompt * sizeof *sl->hist);
    sl->n_hist = sl->req.n_prompt;
}

/* Free slots take the feed's next requests. -1 (err set) when the feed fails; a strategy's
 * failure to start a request ends that request. */
static int admit(batch_run *b, char err[PF_ERR_LEN]) {
    b->feed_later = 0;
    for (int i = 0; i < b->n_slots && !b->feed_dry && !b->feed_later; i++) {
        seq_slot *sl = &b->slots[i];
        while (!sl->busy && !b->feed_dry && !b->feed_later) {
            memset(&sl->req, 0, sizeof sl->req);
            int got = b->feed->next(b->feed->feed, &sl->req, err);
            if (got < 0) return -1;
            if (got == 0) {
                b->feed_dry = 1;
                break;
            }
            if (got == PF_SEQ_LATER) {
                b->feed_later = 1;
                break;
            }
            sl->busy = 1;
            sl->strat = NULL;
            sl->n_fed = 0;
            sl->t_first = 0;
            sl->t0 = pf_now_s();
            sl->st = (pf_decode_stats){.n_prompt = sl->req.n_prompt, .stop = PF_END_LENGTH, .strategy = "plain"};
            sl->seq.sampling = (pf_sampling){sl->req.p.temp, sl->req.p.top_k, sl->req.p.top_p};
            pf_rng_seed(&sl->seq.rng, sl->req.p.seed);
            char why[PF_ERR_LEN];
            pf_rc rc = check_request(b, &sl->req, why);
            /* structured output: the slot's constraint over the batch session's token masker */
            if (rc == PF_RC_OK) rc = pf_constraint_open(b->s, &sl->req.p, &sl->seq.cons, why);
            if (rc == PF_RC_OK && sl->req.p.max_tokens > 0 && b->spec) rc = spec_slot(b, i, why);
            if (rc == PF_RC_OK && sl->req.p.max_tokens > 0) {
                start_cache(sl);
                continue;
            }
            pf_kv_truncate(sl->kv, 0);
            sl->n_hist = 0;
            if (rc != PF_RC_OK) finish(b, sl, rc, why);
            else finish(b, sl, PF_RC_OK, NULL); /* decodes nothing */
        }
    }
    return 0;
}

/* Speculation: the speculating slots' rows, as the strategy plans them, into their places;
 * n_plain slots decode plainly beside them. */
static pf_rc spec_rows(batch_run *b, int n_dec, int n_plain, char err[PF_ERR_LEN]) {
    if (n_dec == 0) return PF_RC_OK;
    pf_rc rc = b->spec->plan(b->spec->state, n_dec, b->dec_slot, b->dec_last, b->dec_cap, n_plain, b->dec_rows, err);
    if (rc != PF_RC_OK) return rc;
    for (int j = 0; j < n_dec; j++) {
        seq_slot *sl = &b->slots[b->dec_slot[j]];
        b->rows[sl->row] = b->dec_rows[j];
        b->rows[sl->row].kv = sl->kv;
    }
    return PF_RC_OK;
}

/* The most tokens a decoding slot may commit this step (generate.c's next_tokens). */
static int step_cap(const seq_slot *sl) {
    int64_t room = sl->kv->n_ctx - sl->kv->len;
    int cap = sl->req.p.max_tokens - sl->st.n_gen;
    if (cap > room) cap = (int)room;
    return cap < STEP_TOKENS_MAX ? cap : STEP_TOKENS_MAX;
}

/* The step's rows into b->rows, one pf_batch per slot with rows: a decoding slot's last token (or
 * what the strategy plans for it), a prefilling slot's next prompt chunk; sequences whose context
 * is full end here (PF_END_CONTEXT, as alone). Returns how many, *n_dec of them speculating and
 * *n_plain decoding plainly. */
static int step_rows(batch_run *b, int *n_dec, int *n_plain) {
    int n = 0, n_logits = 0, budget = PREFILL_ROWS_PER_STEP;
    *n_dec = 0, *n_plain = 0;
    const int V = b->s->model->hp.n_vocab;
    for (int i = 0; i < b->n_slots; i++) {
        seq_slot *sl = &b->slots[i];
        sl->logits = NULL;
        sl->row = -1;
        if (!sl->busy) continue;
        pf_batch *r = &b->rows[n];
        *r = (pf_batch){.kv = sl->kv, .logits_mode = PF_LOGITS_LAST};
        if (sl->n_fed < sl->req.n_prompt) {
            if (budget == 0) continue;
            int left = sl->req.n_prompt - sl->n_fed, take = left < budget ? left : budget;
            budget -= take;
            r->tokens = sl->req.prompt + sl->n_fed, r->n = take;
            if (take < left) r->logits_mode = PF_LOGITS_NONE;
            if (sl->strat && sl->strat->n_taps) {
                r->tap_layers = sl->strat->tap_layers, r->n_taps = sl->strat->n_taps;
                r->taps = sl->ptaps + (size_t)sl->n_fed * sl->strat->n_taps * b->s->model->hp.n_embd;
            }
        } else {
            if (sl->kv->len >= sl->kv->n_ctx) {
                sl->st.stop = PF_END_CONTEXT;
                finish(b, sl, PF_RC_OK, NULL);
                continue;
            }
            r->tokens = &sl->last, r->n = 1;
            if (sl->strat) { /* its rows come from the strategy's plan */
                b->dec_slot[*n_dec] = i, b->dec_last[*n_dec] = sl->last, b->dec_cap[*n_dec] = step_cap(sl);
                ++*n_dec;
                sl->row = n++;
                continue;
            }
            ++*n_plain;
        }
        if (r->logits_mode == PF_LOGITS_LAST) r->logits = sl->logits = b->logits + (size_t)n_logits++ * V;
        sl->row = n++;
    }
    return n;
}

/* A sampled token through the one-sequence path's stop rules (generate.c's emit): the slot ends
 * or runs the token next. */
static void take_token(batch_run *b, seq_slot *sl, int32_t tok, bool drafted) {
    const pf_decode_params *p = &sl->req.p;
    if (sl->st.n_gen == 0) sl->t_first = pf_now_s();
    int held = sl->seq.cons ? pf_constraint_advance(sl->seq.cons, tok) : 0;
    if (held < 0) { /* a strategy proposed what the constraint refused: a bug */
        char why[PF_ERR_LEN];
        snprintf(why, sizeof why, "internal: token %d breaks the output's JSON schema", (int)tok);
        finish(b, sl, PF_RC_INTERNAL, why);
        return;
    }
    if (held > 0 || (p->stop_at_eot && is_stop(b->s->model->tok, tok))) {
        sl->st.stop = PF_END_EOT;
        finish(b, sl, PF_RC_OK, NULL);
        return;
    }
    sl->st.n_gen++;
    sl->last = tok;
    if (sl->n_hist <= sl->kv->n_ctx) sl->hist[sl->n_hist++] = tok;
    if (p->on_token_source) p->on_token_source(p->token_source_user, tok, drafted);
    if (sl->req.on_token && sl->req.on_token(sl->req.user, tok)) sl->st.stop = PF_END_CALLBACK;
    else if (sl->st.n_gen >= p->max_tokens) sl->st.stop = PF_END_LENGTH;
    else if (sl->seq.cons && pf_constraint_done(sl->seq.cons)) sl->st.stop = PF_END_EOT; /* the document is complete */
    else return;
    finish(b, sl, PF_RC_OK, NULL);
}

/* Speculation: a prefilled slot begins its strategy on the prompt, or resumes it after the rows
 * it kept (as generate.c's prefill). */
static pf_rc spec_begin(batch_run *b, seq_slot *sl, char err[PF_ERR_LEN]) {
    pf_strategy *st = sl->strat;
    const int32_t *prompt = sl->req.prompt;
    int n = sl->req.n_prompt, kept = sl->st.n_reused;
    pf_rc rc = PF_RC_OK;
    if (kept > 0 && st->n_taps)
        rc = st->resume(st->state, &sl->seq, prompt, n, kept,
                        sl->ptaps + (size_t)kept * st->n_taps * b->s->model->hp.n_embd, err);
    else if (st->begin)
        rc = st->begin(st->state, &sl->seq, prompt, n, sl->ptaps, err);
    free(sl->ptaps);
    sl->ptaps = NULL;
    return rc;
}

/* Speculation: a decoding slot's committed tokens through the stop rules, in order. */
static pf_rc spec_commit(batch_run *b, int i, char err[PF_ERR_LEN]) {
    seq_slot *sl = &b->slots[i];
    int n = 0;
    pf_rc rc = b->spec->commit(b->spec->state, i, b->out, &n, err);
    for (int k = 0; rc == PF_RC_OK && k < n && sl->busy; k++) take_token(b, sl, b->out[k], k < n - 1);
    return rc;
}

/* The slot's next token from its logits row, under its constraint when it has one (generate.c's
 * pick: greedy takes the masked row's argmax). */
static int32_t pick(batch_run *b, seq_slot *sl, int V) {
    pf_constraint *c = sl->seq.cons;
    if (c && sl->seq.sampling.temp <= 0) return pf_constraint_greedy(c, sl->logits);
    if (c) pf_constraint_apply(c, sl->logits);
    return pf_sample(&sl->seq.sampling, sl->logits, V, &b->s->dist, &sl->seq.rng);
}

/* One forward over every busy slot's rows, then each slot with logits samples its token (or its
 * strategy commits its tokens). */
static pf_rc step(batch_run *b, char err[PF_ERR_LEN]) {
    int n_dec = 0, n_plain = 0, n = step_rows(b, &n_dec, &n_plain);
    if (n == 0) return PF_RC_OK;
    pf_rc rc = b->spec ? spec_rows(b, n_dec, n_plain, err) : PF_RC_OK;
    if (rc != PF_RC_OK) return rc;
    double t0 = pf_now_s();
    rc = pf_forward_seqs(b->s->ctx, b->rows, n, err);
    if (rc != PF_RC_OK) return rc; /* the requests were checked: an internal failure */
    if (b->spec) {
        int dec_rows = n_plain;
        for (int j = 0; j < n_dec; j++) dec_rows += b->dec_rows[j].n;
        b->spec->forward_done(b->spec->state, dec_rows, n > n_dec + n_plain, pf_now_s() - t0);
    }
    const int V = b->s->model->hp.n_vocab;
    for (int i = 0; i < b->n_slots && rc == PF_RC_OK; i++) {
        seq_slot *sl = &b->slots[i];
        if (sl->row < 0) continue;
        if (sl->n_fed < sl->req.n_prompt) {
            sl->n_fed += b->rows[sl->row].n;
            if (sl->n_fed == sl->req.n_prompt) {
                sl->st.prefill_s = pf_now_s() - sl->t0;
                if (sl->strat) rc = spec_begin(b, sl, err);
            }
        } else if (sl->strat) {
            rc = spec_commit(b, i, err);
            continue;
        }
        if (rc == PF_RC_OK && sl->logits) take_token(b, sl, pick(b, sl, V), false);
    }
    return rc;
}

static void batch_free(batch_run *b) {
    for (int i = 0; b->slots && i < b->n_slots; i++) {
        pf_constraint_free(b->slots[i].seq.cons);
        pf_kv_free(b->slots[i].kv);
        free(b->slots[i].hist);
        free(b->slots[i].ptaps);
    }
    free(b->slots);
    free(b->logits);
    free(b->rows);
    free(b->dec_slot), free(b->dec_cap), free(b->dec_last), free(b->out), free(b->dec_rows);
}

/* Each slot's session: the batch's model and context, the slot's cache. */
static void slot_sessions(batch_run *b) {
    for (int i = 0; i < b->n_slots; i++) {
        seq_slot *sl = &b->slots[i];
        sl->ctx = *b->s->ctx;
        sl->ctx.kv = sl->kv;
        sl->seq = (pf_engine_session){.model = b->s->model, .ctx = &sl->ctx, .dist = b->s->dist, .logits = b->s->logits};
    }
}

pf_rc pf_engine_generate_batch(pf_engine_session *s, int n_slots, const pf_seq_feed *feed, char err[PF_ERR_LEN]) {
    return pf_engine_generate_batch_spec(s, n_slots, feed, NULL, err);
}

pf_rc pf_engine_generate_batch_spec(pf_engine_session *s, int n_slots, const pf_seq_feed *feed,
                                    const pf_seq_strategy *strat, char err[PF_ERR_LEN]) {
    if (n_slots < 1) {
        snprintf(err, PF_ERR_LEN, "a batch needs at least one sequence");
        return PF_RC_ARG;
    }
    const pf_kv_cache *own = s->ctx->kv;
    batch_run b = {.s = s, .feed = feed, .n_slots = n_slots, .slots = calloc((size_t)n_slots, sizeof(seq_slot)),
                   .logits = malloc((size_t)n_slots * s->model->hp.n_vocab * sizeof(float)),
                   .rows = malloc((size_t)n_slots * sizeof(pf_batch)), .spec = strat};
    int ok = b.slots && b.logits && b.rows;
    if (strat) {
        b.dec_slot = malloc((size_t)n_slots * sizeof(int)), b.dec_cap = malloc((size_t)n_slots * sizeof(int));
        b.dec_last = malloc((size_t)n_slots * sizeof(int32_t));
        b.out = malloc(STEP_TOKENS_MAX * sizeof(int32_t));
        b.dec_rows = malloc((size_t)n_slots * sizeof(pf_batch));
        ok = ok && b.dec_slot && b.dec_cap && b.dec_last && b.out && b.dec_rows;
    }
    for (int i = 0; ok && i < n_slots; i++)
        ok = (b.slots[i].kv = pf_kv_new(&s->model->hp, own->n_ctx, own->type)) &&
             (b.slots[i].hist = malloc((size_t)(own->n_ctx + 1) * sizeof(int32_t)));
    if (!ok) {
        batch_free(&b);
        snprintf(err, PF_ERR_LEN, "out of memory for %d sequences of %lld tokens", n_slots, (long long)own->n_ctx);
        return PF_RC_OOM;
    }
    slot_sessions(&b);
    pf_rc rc = PF_RC_OK;
    for (;;) {
        if (admit(&b, err) < 0) {
            rc = PF_RC_ARG; /* next()'s failure */
            break;
        }
        int busy = 0;
        for (int i = 0; i < n_slots; i++) busy += b.slots[i].busy;
        if (!busy && b.feed_dry) break; /* the feed is dry and every request ended */
        if (!busy) continue;              /* none now: the feed is asked again */
        if ((rc = step(&b, err)) != PF_RC_OK) break;
    }
    batch_free(&b);
    return rc;
}
