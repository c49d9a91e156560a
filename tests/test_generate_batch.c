/* Batched plain decoding (pf_engine_generate_batch) against each request decoded alone: the same
 * tokens, stop reason and count for every request, greedy and sampled with per-request seeds, at
 * 1, 2, 3 and 8 sequences at a time (fewer slots than requests: requests join as others end),
 * with the stops of the one-sequence path (end of turn, length, context full, callback) and a
 * request that fails leaving the others alone. */
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "engine/generate_batch.h"
#include "batch_feed.h"
#include "test.h"
#include "util.h"

enum { N_REQ = 7, MAX_TOK = BF_MAX_TOK };

static const char *const k_prompts[N_REQ] = {
    "Write a short poem about the sea.", "What is 17 times 23?", "Name three colours.",
    "Tell me a story about a fox and a crow that ends well, in a few sentences.", "hi",
    "List the days of the week.", "Explain why the sky is blue to a child.",
};
/* per request: max tokens, and after how many tokens its callback stops it (0: never) */
static const int k_max[N_REQ] = {40, 24, 8, 48, 0, 33, 30};
static const int k_stop_after[N_REQ] = {0, 0, 0, 0, 0, 6, 0};

/* The f16 target and a session on it (sp NULL: the defaults): 0, or -1 with why in err. */
static int open_target(const pf_session_params *sp, pf_model **m, pf_session **s, char err[PF_ERR_LEN]) {
    *s = NULL;
    if (!(*m = pf_model_load("models/pf-target-f16.gguf", err))) return -1;
    return pf_session_new(*m, sp, s, err) == PF_OK && *s ? 0 : -1;
}

static void check_same(const bf_outcome *solo, const bf_outcome *got, int i, int slots, const char *mode) {
    CHECKF(got->ended == 1, "%s, %d slots, request %d: ended %d times", mode, slots, i, got->ended);
    CHECKF(got->rc == solo->rc, "%s, %d slots, request %d: rc %d, alone %d", mode, slots, i, got->rc, solo->rc);
    if (solo->rc != PF_RC_OK) return;
    CHECKF(got->n == solo->n && !memcmp(got->toks, solo->toks, (size_t)(solo->n < MAX_TOK ? solo->n : MAX_TOK) * 4),
           "%s, %d slots, request %d: %d tokens, alone %d, or other tokens", mode, slots, i, got->n, solo->n);
    CHECKF(got->st.stop == solo->st.stop && got->st.n_gen == solo->st.n_gen && got->st.n_prompt == solo->st.n_prompt,
           "%s, %d slots, request %d: stop %d after %d, alone %d after %d", mode, slots, i, got->st.stop,
           got->st.n_gen, solo->st.stop, solo->st.n_gen);
}

/* n_ctx: the session's context (small enough that the longest request runs into it). */
static void check_batch_equals_solo(float temp, const char *mode) {
    char err[PF_ERR_LEN];
    pf_model *m;
    pf_session *s;
    CHECKF(open_target(&(pf_session_params){.n_threads = 2, .n_ctx = 64}, &m, &s, err) == 0, "%s", err);
    bf_requests q = {.n = N_REQ, .stop_after = k_stop_after};
    for (int i = 0; i < N_REQ; i++) {
        size_t n = 0;
        CHECK(test_chat_tokens(m, k_prompts[i], &q.ids[i], &n, err) == 0);
        q.n_ids[i] = (int)n;
        q.p[i] = (pf_decode_params){.max_tokens = k_max[i], .temp = temp, .top_k = 40, .top_p = 0.95f,
                                    .seed = 1000 + 17 * (uint64_t)i, .stop_at_eot = i != 3};
    }
    /* request 3 asks for more than its context holds; request 1's prompt is cut so it fits no
     * context at all when repeated (an error the others must not see) */
    int32_t *longp = malloc(80 * sizeof(int32_t));
    for (int j = 0; j < 80; j++) longp[j] = q.ids[1][j % q.n_ids[1]];
    free(q.ids[1]);
    q.ids[1] = longp, q.n_ids[1] = 80;
    bf_outcome solo[N_REQ];
    for (int i = 0; i < N_REQ; i++) {
        solo[i] = (bf_outcome){.stop_after = k_stop_after[i]};
        solo[i].rc = pf_engine_generate_tokens(&s->engine, q.ids[i], q.n_ids[i], &q.p[i], NULL, bf_collect, &solo[i],
                                               &solo[i].st, err);
    }
    CHECK(solo[1].rc == PF_RC_CONTEXT && solo[3].st.stop == PF_END_CONTEXT && solo[5].st.stop == PF_END_CALLBACK);
    CHECK(solo[4].st.n_gen == 0 && solo[2].st.stop == PF_END_LENGTH);
    const int slots[] = {1, 2, 3, 8};
    for (size_t k = 0; k < sizeof slots / sizeof slots[0]; k++) {
        q.next = 0;
        pf_seq_feed feed = {bf_feed_next, bf_feed_done, &q};
        CHECKF(pf_engine_generate_batch(&s->engine, slots[k], &feed, err) == PF_RC_OK, "%s", err);
        for (int i = 0; i < N_REQ; i++) check_same(&solo[i], &q.out[i], i, slots[k], mode);
    }
    int eot = 0;
    for (int i = 0; i < N_REQ; i++) eot += solo[i].st.stop == PF_END_EOT;
    printf("    %s: %d requests (%d ended at end of turn) the same at 1, 2, 3 and 8 sequences\n", mode, N_REQ, eot);
    for (int i = 0; i < N_REQ; i++) free(q.ids[i]);
    pf_session_free(s);
    pf_model_free(m);
}

TEST(generate_batch_greedy_equals_solo) { check_batch_equals_solo(0, "greedy"); }
TEST(generate_batch_sampled_equals_solo) { check_batch_equals_solo(0.9f, "sampled"); }

static int feed_fails(void *u, pf_seq_request *r, char err[PF_ERR_LEN]) {
    (void)u, (void)r;
    snprintf(err, PF_ERR_LEN, "the feed's own error");
    return -1;
}

/* The feed's error ends the batch with it; no slots is an argument error; a request with a prompt
 * cache is refused alone. */
TEST(generate_batch_errors) {
    char err[PF_ERR_LEN];
    pf_model *m;
    pf_session *s;
    CHECKF(open_target(NULL, &m, &s, err) == 0, "%s", err);
    pf_seq_feed bad = {feed_fails, bf_feed_done, NULL};
    CHECK(pf_engine_generate_batch(&s->engine, 2, &bad, err) == PF_RC_ARG && strstr(err, "own error"));
    CHECK(pf_engine_generate_batch(&s->engine, 0, &bad, err) == PF_RC_ARG);
    bf_requests q = {.n = N_REQ, .stop_after = k_stop_after};
    for (int i = 0; i < N_REQ; i++) {
        q.ids[i] = malloc(sizeof(int32_t));
        q.ids[i][0] = 100 + i, q.n_ids[i] = 1;
        q.p[i] = (pf_decode_params){.max_tokens = 3, .prompt_cache = i == 2 ? "unused.cache" : NULL};
    }
    pf_seq_feed feed = {bf_feed_next, bf_feed_done, &q};
    CHECK(pf_engine_generate_batch(&s->engine, 3, &feed, err) == PF_RC_OK);
    for (int i = 0; i < N_REQ; i++) {
        CHECKF(q.out[i].ended == 1 && q.out[i].rc == (i == 2 ? PF_RC_ARG : PF_RC_OK), "request %d", i);
        CHECK(i == 2 || q.out[i].n == (k_stop_after[i] && k_stop_after[i] < 3 ? k_stop_after[i] : 3));
        free(q.ids[i]);
    }
    pf_session_free(s);
    pf_model_free(m);
}

/* The join test's log: which request each token went to, in order, and where request 2 joined. */
enum { JOIN_LOG = 256, JOIN_LONG = 150 };
static int g_join_log[JOIN_LOG], g_join_n;
static bf_requests *g_join_q;

static int join_collect(void *u, int32_t t) {
    if (g_join_n < JOIN_LOG) g_join_log[g_join_n++] = (int)((bf_outcome *)u - g_join_q->out);
    return bf_collect(u, t);
}

static int join_next(void *u, pf_seq_request *r, char err[PF_ERR_LEN]) {
    int got = bf_feed_next(u, r, err);
    if (got == 1) r->on_token = join_collect;
    if (got == 1 && g_join_n < JOIN_LOG && r->user == &g_join_q->out[2]) g_join_log[g_join_n++] = -1;
    return got;
}

/* A request whose prompt takes several steps' prompt rows joins while another decodes: the
 * decoding request keeps getting a token every step of that prefill (the prompt's chunks share its
 * forwards), the joining request keeps the rows its prompt shares with its slot's last request,
 * and every request's tokens are its solo ones. */
TEST(generate_batch_long_prompt_joins_mid_batch) {
    char err[PF_ERR_LEN];
    pf_model *m;
    pf_session *s;
    CHECKF(open_target(&(pf_session_params){.n_threads = 2, .n_ctx = 256}, &m, &s, err) == 0, "%s", err);
    bf_requests q = {.n = 3};
    const int max[3] = {3, 40, 6};
    for (int i = 0; i < 3; i++) {
        size_t n = 0;
        CHECK(test_chat_tokens(m, k_prompts[i], &q.ids[i], &n, err) == 0);
        q.n_ids[i] = (int)n;
        q.p[i] = (pf_decode_params){.max_tokens = max[i]};
    }
    int32_t *longp = malloc(JOIN_LONG * sizeof(int32_t)); /* more prompt rows than one step takes */
    for (int j = 0; j < JOIN_LONG; j++) longp[j] = q.ids[2][j % q.n_ids[2]];
    free(q.ids[2]);
    q.ids[2] = longp, q.n_ids[2] = JOIN_LONG;
    bf_outcome solo[3];
    for (int i = 0; i < 3; i++) {
        solo[i] = (bf_outcome){0};
        solo[i].rc = pf_engine_generate_tokens(&s->engine, q.ids[i], q.n_ids[i], &q.p[i], NULL, bf_collect, &solo[i],
                                               &solo[i].st, err);
        CHECK(solo[i].rc == PF_RC_OK && solo[i].n == max[i]);
    }
    g_join_q = &q, g_join_n = 0;
    pf_seq_feed feed = {join_next, bf_feed_done, &q};
    CHECKF(pf_engine_generate_batch(&s->engine, 2, &feed, err) == PF_RC_OK, "%s", err);
    for (int i = 0; i < 3; i++) check_same(&solo[i], &q.out[i], i, 2, "long prompt joining");
    int joined = -1, first = -1, decoded = 0; /* request 1's tokens from request 2's joining to its first token */
    for (int k = 0; k < g_join_n && first < 0; k++) {
        if (g_join_log[k] == -1) joined = k;
        else if (joined >= 0 && g_join_log[k] == 2) first = k;
        else if (joined >= 0 && g_join_log[k] == 1) decoded++;
    }
    CHECKF(joined >= 0 && first > joined, "request 2 joined at %d, first token at %d", joined, first);
    CHECKF(q.out[0].n == max[0] && joined > 0 && decoded >= 1,
           "request 1 got %d tokens while request 2's %d-token prompt was prefilled", decoded, JOIN_LONG);
    /* request 2 took request 0's slot and kept the rows of their shared chat template */
    CHECKF(q.out[2].st.n_reused > 0 && q.out[1].st.n_reused == 0, "rows reused: %d, %d", q.out[2].st.n_reused,
           q.out[1].st.n_reused);
    printf("    request 1 got %d tokens while request 2's %d-token prompt was prefilled\n", decoded, JOIN_LONG);
    for (int i = 0; i < 3; i++) free(q.ids[i]);
    pf_session_free(s);
    pf_model_free(m);
}
