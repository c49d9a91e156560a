/* pf_generate_batch as an application sees it (-Iinclude only): requests decoded together give
 * each its solo pf_generate / pf_generate_chat text, token count and stop reason (greedy, sampled
 * with a seed, a callback's stop and cancel), with fewer slots than requests; a feed filled by
 * other threads while the batch runs (next() blocking while idle; make tsan runs this under
 * ThreadSanitizer) gives the same; speculating requests (each its own strategy and block, with a
 * draft or prompt lookup) mixed with plain ones give their solo texts too; requests the batch
 * cannot run (a strategy without the draft it needs among them) end with their status while the
 * others go on. */
#include <pocketflash.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "api_fixture.h"
#include "text_sink.h"


enum { N_REQ = 6 };

typedef struct {
    text out;
    int pieces, stop_after; /* stop_after > 0: on_text returns 1 at that piece, < 0: returns -1 */
    pf_status st;
    pf_gen_stats stats;
    char err[PF_ERR_LEN];
    int done;
} result;

static int on_piece(void *u, const char *s, size_t n) {
    result *r = u;
    text_sink(&r->out, s, n);
    r->pieces++;
    if (r->stop_after > 0 && r->pieces == r->stop_after) return 1;
    if (r->stop_after < 0 && r->pieces == -r->stop_after) return -1;
    return 0;
}

static const char *const k_prompts[N_REQ] = {
    "A shop sells 12 apples for 3 dollars each. How much do the apples cost?",
    "Write a short poem about the sea.",
    "What is the capital of France?",
    "List three colors.",
    "Once upon a time, there was",
    "Translate into Chinese: the weather is nice today.",
};

/* Request i: chat or raw, greedy or sampled, with or without a callback stop. */
static void request(int i, pf_batch_request *r, pf_message *msg, result *res) {
    memset(r, 0, sizeof *r);
    pf_gen_params_default(&r->params);
    r->params.max_tokens = 24 + 4 * i;
    if (i == 1 || i == 4) r->params.temp = 0.8f, r->params.seed = 100 + (uint64_t)i, r->params.top_p = 0.95f;
    res->stop_after = i == 2 ? 3 : i == 3 ? -2 : 0;
    if (i == 5) {
        msg[0] = (pf_message){"user", k_prompts[i]};
        r->messages = msg, r->n_messages = 1;
    } else {
        r->prompt = k_prompts[i], r->len = strlen(k_prompts[i]);
        r->params.chat = i != 4;
    }
    r->on_text = on_piece;
    r->user = res;
}

static void solo(pf_session *s, int i, result *res) {
    pf_batch_request r;
    pf_message msg[1];
    memset(res, 0, sizeof *res);
    request(i, &r, msg, res);
    pf_session_reset(s);
    res->st = r.messages ? pf_generate_chat(s, r.messages, r.n_messages, &r.params, on_piece, res, &res->stats, res->err)
                         : pf_generate(s, r.prompt, r.len, &r.params, on_piece, res, &res->stats, res->err);
}

/* A feed of requests behind a lock: filled by the test (all at once, or by threads meanwhile). */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pf_batch_request req[N_REQ];
    pf_message msg[N_REQ][1];
    result res[N_REQ];
    int n_added, n_taken, n_done, closed;
    int n_later; /* next() said "none now" */
} feed;

static int feed_next(void *f_, pf_batch_request *r, bool idle) {
    feed *f = f_;
    pthread_mutex_lock(&f->mu);
    while (idle && f->n_taken == f->n_added && !f->closed) pthread_cond_wait(&f->cv, &f->mu);
    int got = f->n_taken < f->n_added ? 1 : f->closed ? 0 : 2;
    if (got == 1) *r = f->req[f->n_taken++];
    if (got == 2) f->n_later++;
    pthread_mutex_unlock(&f->mu);
    return got;
}

static void feed_done(void *f_, const pf_batch_request *r, pf_status st, const pf_gen_stats *stats, const char *err) {
    feed *f = f_;
    result *res = r->user;
    pthread_mutex_lock(&f->mu);
    res->st = st;
    res->stats = *stats;
    snprintf(res->err, sizeof res->err, "%s", err ? err : "");
    res->done++;
    f->n_done++;
    pthread_mutex_unlock(&f->mu);
}

static void feed_add(feed *f, int i) {
    pthread_mutex_lock(&f->mu);
    request(i, &f->req[f->n_added], f->msg[f->n_added], &f->res[i]);
    f->n_added++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void feed_close(feed *f) {
    pthread_mutex_lock(&f->mu);
    f->closed = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void feed_init(feed *f) {
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
}

static void feed_destroy(feed *f) {
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
}

static int same(const result *a, const result *b, int i) {
    if (a->st == b->st && a->stats.n_gen == b->stats.n_gen && a->stats.stop == b->stats.stop &&
        a->stats.n_prompt == b->stats.n_prompt && !strcmp(a->out.s, b->out.s))
        return 1;
    printf("    request %d: batch %s n_gen %d stop %d '%s' / solo %s n_gen %d stop %d '%s'\n", i, pf_status_name(a->st),
           a->stats.n_gen, (int)a->stats.stop, a->out.s, pf_status_name(b->st), b->stats.n_gen, (int)b->stats.stop,
           b->out.s);
    return 0;
}

TEST(api_batch_equals_solo) {
    char err[PF_ERR_LEN];
    api_fixture fx;
    if (!api_open(&fx, NULL, 2, 512)) return;
    static result want[N_REQ];
    for (int i = 0; i < N_REQ; i++) solo(fx.s, i, &want[i]);
    CHECK(want[2].stats.stop == PF_STOP_CALLBACK && want[2].st == PF_OK);
    CHECK(want[3].st == PF_ERR_CANCELLED);
    static const int slots[] = {1, 3, N_REQ};
    for (int k = 0; k < 3; k++) {
        static feed f;
        feed_init(&f);
        for (int i = 0; i < N_REQ; i++) feed_add(&f, i);
        feed_close(&f);
        CHECKF(pf_generate_batch(fx.s, slots[k], &(pf_batch_feed){feed_next, feed_done, &f}, err) == PF_OK, "%s", err);
        for (int i = 0; i < N_REQ; i++) {
            CHECKF(f.res[i].done == 1, "%d slots: request %d done %d times", slots[k], i, f.res[i].done);
            CHECKF(same(&f.res[i], &want[i], i), "%d slots", slots[k]);
        }
        CHECK(f.res[3].st == PF_ERR_CANCELLED && strstr(f.res[3].err, "cancelled"));
        CHECK(!strcmp(f.res[0].stats.spec, "plain"));
        feed_destroy(&f);
    }
    api_close(&fx);
}

typedef struct {
    feed *f;
    int first;
} producer;

static void *produce(void *arg) {
    producer *p = arg;
    for (int i = p->first; i < N_REQ; i += 2) feed_add(p->f, i);
    return NULL;
}

/* The batch runs on its own thread while two threads add the requests. */
static void *run_batch(void *arg) {
    void **a = arg;
    char err[PF_ERR_LEN];
    pf_status st = pf_generate_batch(a[0], 3, a[1], err);
    if (st != PF_OK) printf("    %s\n", err);
    return (void *)(intptr_t)st;
}

TEST(api_batch_fed_from_threads) {
    api_fixture fx;
    if (!api_open(&fx, NULL, 2, 512)) return;
    static result want[N_REQ];
    for (int i = 0; i < N_REQ; i++) solo(fx.s, i, &want[i]);
    static feed f;
    feed_init(&f);
    pf_batch_feed bf = {feed_next, feed_done, &f};
    void *args[2] = {fx.s, &bf};
    pthread_t batch, prod[2];
    producer pa[2] = {{&f, 0}, {&f, 1}};
    CHECK(pthread_create(&batch, NULL, run_batch, args) == 0);
    for (int t = 0; t < 2; t++) CHECK(pthread_create(&prod[t], NULL, produce, &pa[t]) == 0);
    for (int t = 0; t < 2; t++) pthread_join(prod[t], NULL);
    feed_close(&f);
    void *st = NULL;
    pthread_join(batch, &st);
    CHECK((intptr_t)st == PF_OK);
    CHECK(f.n_done == N_REQ);
    for (int i = 0; i < N_REQ; i++) CHECK(same(&f.res[i], &want[i], i));
    feed_destroy(&f);
    api_close(&fx);
}

/* Requests the batch cannot run end with their status; the others run on. */
TEST(api_batch_refusals) {
    char err[PF_ERR_LEN];
    api_fixture fx;
    if (!api_open(&fx, NULL, 1, 512)) return;
    static result want;
    solo(fx.s, 0, &want);
    static feed f;
    feed_init(&f);
    for (int i = 0; i < 5; i++) feed_add(&f, 0);
    f.req[1].params.spec = PF_SPEC_DFLASH; /* no draft to give it */
    f.req[2].params.prompt_cache = "unused.cache";
    f.req[3].prompt = "", f.req[3].len = 0, f.req[3].params.chat = false;
    f.req[4].prompt = "\xff\xfe", f.req[4].len = 2;
    for (int i = 0; i < 5; i++) f.req[i].user = &f.res[i];
    feed_close(&f);
    pf_batch_feed bf = {feed_next, feed_done, &f};
    CHECK(pf_generate_batch(fx.s, 2, &bf, err) == PF_OK);
    CHECK(same(&f.res[0], &want, 0));
    CHECKF(f.res[1].st == PF_ERR_ARG && strstr(f.res[1].err, "strategy dflash needs a draft"), "%s", f.res[1].err);
    CHECKF(f.res[2].st == PF_ERR_ARG && strstr(f.res[2].err, "prompt cache"), "%s", f.res[2].err);
    CHECKF(f.res[3].st == PF_ERR_ARG && strstr(f.res[3].err, "empty"), "%s", f.res[3].err);
    CHECKF(f.res[4].st == PF_ERR_UTF8, "%s", f.res[4].err);
    for (int i = 0; i < 5; i++) CHECK(f.res[i].done == 1);
    CHECK(pf_generate_batch(fx.s, 0, &bf, err) == PF_ERR_ARG && strstr(err, "1 to"));
    CHECK(pf_generate_batch(fx.s, 2, &(pf_batch_feed){NULL, feed_done, &f}, err) == PF_ERR_ARG);
    feed_destroy(&f);
    api_close(&fx);
}

/* How a test makes its request i (d: the draft speculating requests use). */
typedef void (*request_maker)(int i, const pf_draft *d, pf_batch_request *r, pf_message *msg, result *res);

/* Request i made by make, alone on s from an empty cache, into *want: whether it succeeded. */
static int solo_made(pf_session *s, int i, request_maker make, const pf_draft *d, result *want) {
    pf_batch_request r;
    pf_message msg[1];
    memset(want, 0, sizeof *want);
    make(i, d, &r, msg, want);
    pf_session_reset(s);
    want->st = r.messages ? pf_generate_chat(s, r.messages, 1, &r.params, on_piece, want, &want->stats, want->err)
                          : pf_generate(s, r.prompt, r.len, &r.params, on_piece, want, &want->stats, want->err);
    return want->st == PF_OK;
}

/* Requests 0..n-1 made by make, run as one batch of n_slots slots on s with their results in f. */
static pf_status batch_made(pf_session *s, int n_slots, int n, request_maker make, const pf_draft *d, feed *f,
                            char err[PF_ERR_LEN]) {
    feed_init(f);
    for (int i = 0; i < n; i++) {
        make(i, d, &f->req[i], f->msg[i], &f->res[i]);
        f->n_added++;
    }
    feed_close(f);
    return pf_generate_batch(s, n_slots, &(pf_batch_feed){feed_next, feed_done, f}, err);
}

/* Request i of the mixed batch: plain and speculating, greedy and sampled, each strategy its own. */
static void mixed_request(int i, const pf_draft *d, pf_batch_request *r, pf_message *msg, result *res) {
    request(i, r, msg, res);
    r->params.max_tokens = 20 + 3 * i;
    res->stop_after = 0;
    static const pf_spec_kind kind[N_REQ] = {PF_SPEC_PLAIN,    PF_SPEC_DEFAULT, PF_SPEC_DFLASH,
                                             PF_SPEC_ADAPTIVE, PF_SPEC_NGRAM,   PF_SPEC_DEC};
    r->params.spec = kind[i];
    r->params.draft = kind[i] == PF_SPEC_PLAIN || kind[i] == PF_SPEC_NGRAM ? NULL : d;
    if (kind[i] == PF_SPEC_DFLASH) r->params.block = 3;
    if (kind[i] == PF_SPEC_DEC) r->params.temp = 0.8f, r->params.seed = 7, r->params.top_p = 0.95f;
}

/* Plain and speculating requests in one batch: each its solo pf_generate's text, and its
 * strategy's name and block in the statistics. */
TEST(api_batch_mixed_spec_equals_solo) {
    char err[PF_ERR_LEN];
    api_fixture fx;
    if (!api_open(&fx, DRAFT2, 2, 512)) return;
    static result want[N_REQ];
    for (int i = 0; i < N_REQ; i++)
        CHECKF(solo_made(fx.s, i, mixed_request, fx.d, &want[i]), "request %d alone: %s", i, want[i].err);
    CHECK(!strcmp(want[0].stats.spec, "plain") && !strcmp(want[2].stats.spec, "dflash") && want[2].stats.block == 3);
    static const int slots[] = {2, N_REQ};
    for (int k = 0; k < 2; k++) {
        static feed f;
        CHECKF(batch_made(fx.s, slots[k], N_REQ, mixed_request, fx.d, &f, err) == PF_OK, "%s", err);
        for (int i = 0; i < N_REQ; i++) {
            CHECKF(f.res[i].done == 1 && same(&f.res[i], &want[i], i), "%d slots, request %d", slots[k], i);
            CHECKF(!strcmp(f.res[i].stats.spec, want[i].stats.spec) && f.res[i].stats.block == want[i].stats.block,
                   "%d slots, request %d: %s block %d, alone %s block %d", slots[k], i, f.res[i].stats.spec,
                   f.res[i].stats.block, want[i].stats.spec, want[i].stats.block);
            CHECKF((f.res[i].stats.rounds > 0) == (i > 0), "%d slots, request %d: %lld rounds", slots[k], i,
                   (long long)f.res[i].stats.rounds);
        }
        feed_destroy(&f);
    }
    api_close(&fx);
}

/* Structured output in the batch: JSON mode and a schema, plain, speculating and sampled, beside an
 * unconstrained request; each its solo text (the document) and stop. */
static void structured_request(int i, const pf_draft *d, pf_batch_request *r, pf_message *msg, result *res) {
    static const char *const schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
                                      "\"age\":{\"type\":\"integer\"}},\"required\":[\"name\",\"age\"]}";
    request(i, r, msg, res);
    r->params.max_tokens = 40;
    res->stop_after = 0;
    r->params.temp = 0, r->params.seed = 0;
    if (i == 0) r->params.json_object = true;
    if (i == 1) r->params.json_schema = schema, r->params.draft = d, r->params.spec = PF_SPEC_DFLASH;
    if (i == 2) r->params.json_schema = schema, r->params.draft = d, r->params.temp = 0.8f, r->params.seed = 5;
}

TEST(api_batch_structured_equals_solo) {
    char err[PF_ERR_LEN];
    api_fixture fx;
    if (!api_open(&fx, DRAFT2, 2, 512)) return;
    enum { N = 4 };
    static result want[N];
    for (int i = 0; i < N; i++)
        CHECKF(solo_made(fx.s, i, structured_request, fx.d, &want[i]), "request %d alone: %s", i, want[i].err);
    CHECKF(want[0].out.s[0] == '{' && strstr(want[1].out.s, "\"age\""), "'%s' / '%s'", want[0].out.s, want[1].out.s);
    static const int slots[] = {2, N};
    for (int k = 0; k < 2; k++) {
        static feed f;
        CHECKF(batch_made(fx.s, slots[k], N, structured_request, fx.d, &f, err) == PF_OK, "%s", err);
        for (int i = 0; i < N; i++)
            CHECKF(f.res[i].done == 1 && same(&f.res[i], &want[i], i), "%d slots, request %d: %s", slots[k], i,
                   f.res[i].err);
        CHECK(f.res[1].stats.rounds > 0 && !strcmp(f.res[1].stats.spec, "dflash")); /* speculated under its schema */
        feed_destroy(&f);
    }
    api_close(&fx);
}
