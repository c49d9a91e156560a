/* pf_generate_batch as an application sees it (-Iinclude only): requests decoded together give
 * each its solo pf_generate / pf_generate_chat text, token count and stop reason (greedy, sampled
 * with a seed, a callback's stop and cancel), with fewer slots than requests; a feed filled by
 * other threads while the batch runs (next() blocking while idle; make tsan runs this under
 * ThreadSanitizer) gives the same; requests the batch cannot run end with their status while the
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

static pf_session *open_session(const pf_model *m, int threads) { return api_session(m, threads, 512); }

TEST(api_batch_equals_solo) {
    char err[PF_ERR_LEN];
    pf_model *m;
    if (!api_load(NULL, &m, NULL)) return;
    pf_session *s = open_session(m, 2);
    CHECK(s);
    static result want[N_REQ];
    for (int i = 0; i < N_REQ; i++) solo(s, i, &want[i]);
    CHECK(want[2].stats.stop == PF_STOP_CALLBACK && want[2].st == PF_OK);
    CHECK(want[3].st == PF_ERR_CANCELLED);
    static const int slots[] = {1, 3, N_REQ};
    for (int k = 0; k < 3; k++) {
        static feed f;
        feed_init(&f);
        for (int i = 0; i < N_REQ; i++) feed_add(&f, i);
        feed_close(&f);
        CHECKF(pf_generate_batch(s, slots[k], &(pf_batch_feed){feed_next, feed_done, &f}, err) == PF_OK, "%s", err);
        for (int i = 0; i < N_REQ; i++) {
            CHECKF(f.res[i].done == 1, "%d slots: request %d done %d times", slots[k], i, f.res[i].done);
            CHECKF(same(&f.res[i], &want[i], i), "%d slots", slots[k]);
        }
        CHECK(f.res[3].st == PF_ERR_CANCELLED && strstr(f.res[3].err, "cancelled"));
        CHECK(!strcmp(f.res[0].stats.spec, "plain"));
        feed_destroy(&f);
    }
    pf_session_free(s);
    pf_free_model(m);
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
    pf_model *m;
    if (!api_load(NULL, &m, NULL)) return;
    pf_session *s = open_session(m, 2);
    CHECK(s);
    static result want[N_REQ];
    for (int i = 0; i < N_REQ; i++) solo(s, i, &want[i]);
    static feed f;
    feed_init(&f);
    pf_batch_feed bf = {feed_next, feed_done, &f};
    void *args[2] = {s, &bf};
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
    pf_session_free(s);
    pf_free_model(m);
}

/* Requests the batch cannot run end with their status; the others run on. */
TEST(api_batch_refusals) {
    char err[PF_ERR_LEN];
    pf_model *m;
    pf_draft *d;
    if (!api_load(DRAFT2, &m, &d)) return;
    pf_session *s = open_session(m, 1);
    CHECK(s);
    static result want;
    solo(s, 0, &want);
    static feed f;
    feed_init(&f);
    for (int i = 0; i < 5; i++) feed_add(&f, 0);
    f.req[1].params.draft = d; /* speculates */
    f.req[2].params.json_object = true;
    f.req[3].prompt = "", f.req[3].len = 0, f.req[3].params.chat = false;
    f.req[4].prompt = "\xff\xfe", f.req[4].len = 2;
    for (int i = 0; i < 5; i++) f.req[i].user = &f.res[i];
    feed_close(&f);
    pf_batch_feed bf = {feed_next, feed_done, &f};
    CHECK(pf_generate_batch(s, 2, &bf, err) == PF_OK);
    CHECK(same(&f.res[0], &want, 0));
    CHECKF(f.res[1].st == PF_ERR_ARG && strstr(f.res[1].err, "plainly"), "%s", f.res[1].err);
    CHECKF(f.res[2].st == PF_ERR_ARG && strstr(f.res[2].err, "structured"), "%s", f.res[2].err);
    CHECKF(f.res[3].st == PF_ERR_ARG && strstr(f.res[3].err, "empty"), "%s", f.res[3].err);
    CHECKF(f.res[4].st == PF_ERR_UTF8, "%s", f.res[4].err);
    for (int i = 0; i < 5; i++) CHECK(f.res[i].done == 1);
    CHECK(pf_generate_batch(s, 0, &bf, err) == PF_ERR_ARG && strstr(err, "1 to"));
    CHECK(pf_generate_batch(s, 2, &(pf_batch_feed){NULL, feed_done, &f}, err) == PF_ERR_ARG);
    feed_destroy(&f);
    pf_session_free(s);
    pf_free_draft(d);
    pf_free_model(m);
}
