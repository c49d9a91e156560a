/* pf_generate_batch: the public requests (a text prompt or a chat, text out) over the engine's
 * batch (engine/generate_batch.h) with speculation across its sequences (verify/spec_batch.h):
 * each request's parameters resolve to a plan as pf_generate's do (plain decoding is one), so
 * plain and speculating requests share every forward. Each request is tokenized as pf_generate
 * tokenizes it and its tokens become text through its own stream decoder, so its text is the
 * one-session call's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "api/gen_convert.h"
#include "api/status.h"
#include "api/strategy.h"
#include "engine/generate_batch.h"
#include "engine/tokenizer.h"
#include "verify/spec_batch.h"

enum { MAX_SLOTS = 256 };

/* One request the engine runs: the caller's request, its prompt ids and text decoder. */
typedef struct api_seq {
    pf_batch_request req;
    int32_t *ids;
    size_t n_ids;
    pf_detok dt;
    pf_spec_choice choice; /* its plan, draft and Dec head */
    int cancel; /* on_text's negative return, 0 while it wants more */
    struct api_seq *prev, *next;
} api_seq;

typedef struct {
    pf_session *s;
    const pf_batch_feed *feed;
    pf_spec_batch *sb;
    api_seq *live; /* handed to the engine, done() not yet called */
    int running;
} api_batch;

static void seq_free(api_seq *q) {
    pf_detok_free(&q->dt);
    free(q->ids);
    free(q);
}

static void unlink_seq(api_batch *b, api_seq *q) {
    if (q->prev) q->prev->next = q->next;
    else b->live = q->next;
    if (q->next) q->next->prev = q->prev;
    b->running--;
}

static int seq_token(void *user, int32_t id) {
    api_seq *q = user;
    size_t n = 0;
    const char *out = pf_detok_push(&q->dt, id, &n);
    int r = out && n && q->req.on_text ? q->req.on_text(q->req.user, out, n) : 0;
    if (r < 0) q->cancel = r;
    return r;
}

/* The request's prompt ids, or why it cannot join the batch. */
static pf_status seq_open(api_batch *b, api_seq *q, char err[PF_ERR_LEN]) {
    const pf_batch_request *r = &q->req;
    pf_status st = pf_api_choice(b->s, &r->params, &q->choice, err);
    if (st != PF_OK) return st;
    pf_detok_init(&q->dt, b->s->engine.model->tok, false);
    pf_decode_params p = pf_api_decode_params(&r->params);
    if (r->messages) {
        pf_chat_msg *m = malloc((size_t)(r->n_messages > 0 ? r->n_messages : 1) * sizeof *m);
        if (!m) {
            snprintf(err, PF_ERR_LEN, "out of memory");
            return PF_ERR_OOM;
        }
        for (int i = 0; i < r->n_messages; i++) m[i] = (pf_chat_msg){r->messages[i].role, r->messages[i].content};
        st = pf_api_status(pf_engine_chat_ids(&b->s->engine, m, r->n_messages, &p, &q->ids, &q->n_ids, NULL, err));
        free(m);
        return st;
    }
    if (!r->prompt) {
        snprintf(err, PF_ERR_LEN, "no prompt");
        return PF_ERR_ARG;
    }
    return pf_api_status(pf_engine_prompt_ids(&b->s->engine, r->prompt, r->len, &p, &q->ids, &q->n_ids, err));
}

static int seq_next(void *feed, pf_seq_request *r, char err[PF_ERR_LEN]) {
    api_batch *b = feed;
    for (;;) {
        pf_batch_request req;
        memset(&req, 0, sizeof req);
        int got = b->feed->next(b->feed->feed, &req, b->running == 0);
        if (got == 0) return 0;
        if (got == 2) return PF_SEQ_LATER;
        if (got != 1) {
            snprintf(err, PF_ERR_LEN, "the batch feed's next() returned %d", got);
            return -1;
        }
        pf_gen_stats none;
        memset(&none, 0, sizeof none);
        api_seq *q = calloc(1, sizeof *q);
        if (!q) {
            b->feed->done(b->feed->feed, &req, PF_ERR_OOM, &none, "out of memory");
            continue;
        }
        q->req = req;
        char why[PF_ERR_LEN] = "";
        pf_status st = seq_open(b, q, why);
        if (st != PF_OK || q->n_ids > (size_t)INT32_MAX) {
            b->feed->done(b->feed->feed, &q->req, st != PF_OK ? st : PF_ERR_CONTEXT, &none,
                          st != PF_OK ? why : "the prompt does not fit the context");
            seq_free(q);
            continue;
        }
        *r = (pf_seq_request){.prompt = q->ids, .n_prompt = (int)q->n_ids, .p = pf_api_decode_params(&q->req.params),
                              .on_token = seq_token, .user = q};
        q->next = b->live;
        if (b->live) b->live->prev = q;
        b->live = q;
        b->running++;
        return 1;
    }
}

static void seq_choice(void *user, const pf_seq_request *r, pf_spec_choice *c) {
    (void)user;
    *c = ((const api_seq *)r->user)->choice;
}

static void seq_done(void *feed, const pf_seq_request *r, pf_rc rc, const pf_decode_stats *ds, const char *err) {
    api_batch *b = feed;
    api_seq *q = r->user;
    size_t n = 0;
    const char *out = pf_detok_flush(&q->dt, &n);
    if (out && n && q->req.on_text && !q->cancel) q->req.on_text(q->req.user, out, n); /* a cancelled one hands out no more */
    pf_gen_stats st;
    memset(&st, 0, sizeof st);
    pf_api_copy_stats(ds, &st);
    pf_api_spec_stats(pf_kind_name(q->choice.plan.kind), pf_spec_batch_request(b->sb, q), q->choice.plan.block, &st);
    pf_status status = pf_api_status(rc);
    char why[PF_ERR_LEN];
    if (q->cancel && rc == PF_RC_OK) {
        status = PF_ERR_CANCELLED;
        snprintf(why, sizeof why, "cancelled: the callback returned %d", q->cancel);
        err = why;
    }
    unlink_seq(b, q);
    b->feed->done(b->feed->feed, &q->req, status, &st, err);
    seq_free(q);
}

pf_status pf_generate_batch(pf_session *s, int n_slots, const pf_batch_feed *feed, char err[PF_ERR_LEN]) {
    if (!s || !feed || !feed->next || !feed->done) {
        snprintf(err, PF_ERR_LEN, "%s", !s ? "no session" : "a batch feed needs next() and done()");
        return PF_ERR_ARG;
    }
    if (n_slots < 1 || n_slots > MAX_SLOTS) {
        snprintf(err, PF_ERR_LEN, "a batch runs 1 to %d requests at a time, not %d", MAX_SLOTS, n_slots);
        return PF_ERR_ARG;
    }
    api_batch b = {.s = s, .feed = feed};
    pf_seq_feed f = {.next = seq_next, .done = seq_done, .feed = &b};
    pf_status st = PF_OK;
    if (!s->batch) st = pf_api_status(pf_spec_batch_new_mixed(&s->engine, seq_choice, NULL, &s->batch, err));
    b.sb = s->batch;
    if (st == PF_OK) st = pf_api_status(pf_spec_batch_generate(b.sb, n_slots, &f, err));
    while (b.live) { /* the batch ended early: no done() for these */
        api_seq *q = b.live;
        unlink_seq(&b, q);
        seq_free(q);
    }
    return st;
}
