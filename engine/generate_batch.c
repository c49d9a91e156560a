/* pf_engine_generate_batch: slots, each a sequence with its own cache and sampler; every step one
 * forward over all of them (generate_batch.h). A slot's stop rules are generate.c's plain
 * decoding's, in the same order, so a sequence ends where it ends alone. */
#include "engine/generate_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/batch.h"
#include "engine/clock.h"
#include "engine/tokenizer.h"

/* Prompt rows one step takes, over all the sequences still prefilling: a decoding sequence waits
 * at most one forward of this many rows more for its next token when a request joins. */
#define PREFILL_ROWS_PER_STEP 64

typedef struct {
    pf_seq_request req;
    pf_kv_cache *kv;
    int busy;
    int n_fed;        /* prompt rows in the cache */
    int32_t last;     /* the token the next step runs (decoding) */
    pf_sampling sampling;
    pf_rng rng;
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
    if (r->p.prompt_cache || r->p.json_schema || r->p.json_object ||
        (r->p.tools && (r->p.tool_choice == PF_TOOLS_REQUIRED || r->p.tool_choice == PF_TOOLS_NAMED))) {
        snprintf(err, PF_ERR_LEN, "batched decoding takes neither a prompt cache nor structured output");
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

/* Free slots take the feed's next requests. -1 (err set) when the feed fails. */
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
            sl->n_fed = 0;
            sl->t_first = 0;
            sl->t0 = pf_now_s();
            sl->st = (pf_decode_stats){.n_prompt = sl->req.n_prompt, .stop = PF_END_LENGTH, .strategy = "plain"};
            sl->sampling = (pf_sampling){sl->req.p.temp, sl->req.p.top_k, sl->req.p.top_p};
            pf_rng_seed(&sl->rng, sl->req.p.seed);
            pf_kv_truncate(sl->kv, 0);
            char why[PF_ERR_LEN];
            pf_rc rc = check_request(b, &sl->req, why);
            if (rc != PF_RC_OK) finish(b, sl, rc, why);
            else if (sl->req.p.max_tokens == 0) finish(b, sl, PF_RC_OK, NULL); /* decodes nothing */
        }
    }
    return 0;
}

/* The step's rows into b->rows, one pf_batch per slot with rows: a decoding slot's last token, a
 * prefilling slot's next prompt chunk; sequences whose context is full end here (PF_END_CONTEXT,
 * as alone). Returns how many. */
static int step_rows(batch_run *b) {
    int n = 0, n_logits = 0, budget = PREFILL_ROWS_PER_STEP;
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
        } else {
            if (sl->kv->len >= sl->kv->n_ctx) {
                sl->st.stop = PF_END_CONTEXT;
                finish(b, sl, PF_RC_OK, NULL);
                continue;
            }
            r->tokens = &sl->last, r->n = 1;
        }
        if (r->logits_mode == PF_LOGITS_LAST) r->logits = sl->logits = b->logits + (size_t)n_logits++ * V;
        sl->row = n++;
    }
    return n;
}

/* A sampled token through the one-sequence path's stop rules (generate.c's emit): the slot ends
 * or runs the token next. */
static void take_token(batch_run *b, seq_slot *sl, int32_t tok) {
    const pf_decode_params *p = &sl->req.p;
    if (sl->st.n_gen == 0) sl->t_first = pf_now_s();
    if (p->stop_at_eot && is_stop(b->s->model->tok, tok)) {
        sl->st.stop = PF_END_EOT;
        finish(b, sl, PF_RC_OK, NULL);
        return;
    }
    sl->st.n_gen++;
    sl->last = tok;
    if (p->on_token_source) p->on_token_source(p->token_source_user, tok, false);
    if (sl->req.on_token && sl->req.on_token(sl->req.user, tok)) sl->st.stop = PF_END_CALLBACK;
    else if (sl->st.n_gen >= p->max_tokens) sl->st.stop = PF_END_LENGTH;
    else return;
    finish(b, sl, PF_RC_OK, NULL);
}

/* One forward over every busy slot's rows, then each slot with logits samples its token. */
static pf_rc step(batch_run *b, char err[PF_ERR_LEN]) {
    int n = step_rows(b);
    if (n == 0) return PF_RC_OK;
    pf_rc rc = pf_forward_seqs(b->s->ctx, b->rows, n, err);
    if (rc != PF_RC_OK) return rc; /* the requests were checked: an internal failure */
    const int V = b->s->model->hp.n_vocab;
    for (int i = 0; i < b->n_slots; i++) {
        seq_slot *sl = &b->slots[i];
        if (sl->row < 0) continue;
        if (sl->n_fed < sl->req.n_prompt) {
            sl->n_fed += b->rows[sl->row].n;
            if (sl->n_fed == sl->req.n_prompt) sl->st.prefill_s = pf_now_s() - sl->t0;
        }
        if (sl->logits) take_token(b, sl, pf_sample(&sl->sampling, sl->logits, V, &b->s->dist, &sl->rng));
    }
    return PF_RC_OK;
}

static void batch_free(batch_run *b) {
    for (int i = 0; b->slots && i < b->n_slots; i++) pf_kv_free(b->slots[i].kv);
    free(b->slots);
    free(b->logits);
    free(b->rows);
}

pf_rc pf_engine_generate_batch(pf_engine_session *s, int n_slots, const pf_seq_feed *feed, char err[PF_ERR_LEN]) {
    if (n_slots < 1) {
        snprintf(err, PF_ERR_LEN, "a batch needs at least one sequence");
        return PF_RC_ARG;
    }
    const pf_kv_cache *own = s->ctx->kv;
    batch_run b = {.s = s, .feed = feed, .n_slots = n_slots, .slots = calloc((size_t)n_slots, sizeof(seq_slot)),
                   .logits = malloc((size_t)n_slots * s->model->hp.n_vocab * sizeof(float)),
                   .rows = malloc((size_t)n_slots * sizeof(pf_batch))};
    int ok = b.slots && b.logits && b.rows;
    for (int i = 0; ok && i < n_slots; i++) ok = (b.slots[i].kv = pf_kv_new(&s->model->hp, own->n_ctx, own->type)) != NULL;
    if (!ok) {
        batch_free(&b);
        snprintf(err, PF_ERR_LEN, "out of memory for %d sequences of %lld tokens", n_slots, (long long)own->n_ctx);
        return PF_RC_OOM;
    }
    pf_rc rc = PF_RC_OK;
    for (;;) {
        if (admit(&b, err) < 0) {
            rc = PF_RC_ARG;
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
