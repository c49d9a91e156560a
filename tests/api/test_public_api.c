/* The public C API as an application sees it: this file is compiled with -Iinclude only (no
 * internal header; tests/test.h is the harness). Speculative (dflash, dec, ngram, default) text
 * equals plain text; multi-turn reuse gives exactly the tokens of cold runs of the full histories
 * with the expected reused-token counts, and a prompt that diverges mid-cache keeps only the
 * shared prefix (the draft's context too: its rounds match a cold run's); N sessions on N threads
 * sharing one model and draft equal the sequential results (make tsan runs this under
 * ThreadSanitizer); bad arguments fail with a message. */
#include <pocketflash.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "api_fixture.h"
#include "text_sink.h"


typedef struct { int32_t t[1024]; int n; } toks;

static int on_tok(void *u, int32_t id) {
    toks *t = u;
    if (t->n < 1024) t->t[t->n++] = id;
    return 0;
}

static pf_session *session(const pf_model *m, int threads) { return api_session(m, threads, 1024); }

/* The default parameters for at most max_tokens tokens over draft d (NULL: none). */
static pf_gen_params params(int max_tokens, const pf_draft *d) {
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.max_tokens = max_tokens;
    gp.draft = d;
    return gp;
}

static const char *const k_prompts[3] = {
    "A shop sells 12 apples for 3 dollars each. How much do the apples cost?",
    "Extract the name and the version as JSON: package zlib1g, version 1.2.13, a compression library.",
    "Translate into Chinese: the weather is nice today.",
};

TEST(api_version_matches_header) {
    CHECK(strcmp(pf_version(), PF_VERSION_STRING) == 0);
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", PF_VERSION_MAJOR, PF_VERSION_MINOR, PF_VERSION_PATCH);
    CHECK(strcmp(v, PF_VERSION_STRING) == 0);
}

TEST(api_speculative_text_equals_plain) {
    char err[PF_ERR_LEN];
    api_fixture fx;
    if (!api_open(&fx, DRAFT2, 2, 1024)) return;
    CHECK(pf_draft_has_dec(fx.d) && pf_draft_block_size(fx.d) == 8);
    /* the drafter, the strategy that ran (the default with a Dec head is dec) and the block */
    static const struct { pf_spec_kind kind; const char *name, *ran; int block; } k_specs[] = {
        {PF_SPEC_DEFAULT, "dflash2", "dec", 8}, {PF_SPEC_DFLASH, "dflash2", "dflash", 6},
        {PF_SPEC_DEC, "dflash2", "dec", 8}, {PF_SPEC_NGRAM, "ngram", "ngram", 8}};
    for (int i = 0; i < 2; i++) {
        pf_gen_params gp = params(32, NULL);
        gp.chat = true;
        text plain = {0};
        pf_gen_stats st;
        pf_session_reset(fx.s);
        CHECKF(pf_generate(fx.s, k_prompts[i], strlen(k_prompts[i]), &gp, text_sink, &plain, &st, err) == PF_OK, "%s", err);
        CHECK(st.n_gen > 0 && plain.n > 0 && st.rounds == 0 && !strcmp(st.drafter, "plain") &&
              st.spec && !strcmp(st.spec, "plain"));
        for (int k = 0; k < 4; k++) {
            gp.draft = k_specs[k].kind == PF_SPEC_NGRAM ? NULL : fx.d;
            gp.spec = k_specs[k].kind;
            gp.block = k_specs[k].kind == PF_SPEC_DFLASH ? 6 : 0;
            text got = {0};
            pf_session_reset(fx.s);
            CHECKF(pf_generate(fx.s, k_prompts[i], strlen(k_prompts[i]), &gp, text_sink, &got, &st, err) == PF_OK, "%s", err);
            CHECKF(got.n == plain.n && !memcmp(got.s, plain.s, plain.n), "prompt %d spec %d:\n%s\nvs plain\n%s", i, k,
                   got.s, plain.s);
            CHECKF(!strcmp(st.drafter, k_specs[k].name) && st.spec && !strcmp(st.spec, k_specs[k].ran) &&
                   st.block == k_specs[k].block, "spec %d: %s / %s block %d", k, st.drafter, st.spec ? st.spec : "-",
                   st.block);
            CHECK(st.rounds > 0 && st.round_tokens + 1 >= st.n_gen && st.tau >= 1.0);
            CHECK(st.tau == (double)st.round_tokens / (double)st.rounds && st.accepted == st.round_tokens - st.rounds);
            CHECK(st.acceptance >= 0 && st.acceptance <= 1 && st.accepted <= st.drafted);
            CHECK(st.verify_s > 0 && st.draft_s >= 0 && st.other_s >= 0);
        }
    }
    api_close(&fx);
}

typedef struct { int drafted, target; } sources;

static void on_source(void *u, int32_t id, bool drafted) {
    (void)id;
    sources *c = u;
    if (drafted) c->drafted++;
    else c->target++;
}

/* on_token_source: every generated token once, none drafted in plain decoding; a speculative run
 * marks at most the kept drafts as drafted, and the text is unchanged by asking. */
TEST(api_token_source_marks_kept_drafts) {
    char err[PF_ERR_LEN];
    api_fixture fx;
    if (!api_open(&fx, DRAFT2, 1, 1024)) return;
    text want = {0};
    for (int spec = 0; spec < 2; spec++) {
        pf_gen_params gp = params(40, spec ? fx.d : NULL);
        gp.chat = true;
        /* a fixed block: the default (Dec) decides from measured costs, and on a slow machine (a
         * sanitizer build under load) may verify no draft at all in 40 tokens */
        gp.spec = spec ? PF_SPEC_DFLASH : PF_SPEC_DEFAULT;
        gp.block = spec ? 4 : 0;
        sources c = {0};
        gp.on_token_source = on_source;
        gp.token_source_user = &c;
        text got = {0};
        pf_gen_stats st;
        pf_session_reset(fx.s);
        CHECKF(pf_generate(fx.s, k_prompts[1], strlen(k_prompts[1]), &gp, text_sink, &got, &st, err) == PF_OK, "%s", err);
        CHECKF(c.drafted + c.target == st.n_gen, "%d + %d marks for %d tokens", c.drafted, c.target, st.n_gen);
        if (!spec) {
            CHECK(c.drafted == 0 && c.target == st.n_gen && st.n_gen > 0);
            want = got;
        } else {
            CHECKF(c.drafted > 0 && c.drafted <= st.accepted, "%d drafted, %lld accepted", c.drafted, (long long)st.accepted);
            CHECK(got.n == want.n && !memcmp(got.s, want.s, want.n));
        }
    }
    api_close(&fx);
}

/* A token history: the previous turn's prompt and reply, then new "user" tokens. */
static int extend(int32_t *h, int n, const toks *reply, int salt) {
    memcpy(h + n, reply->t, (size_t)reply->n * sizeof *h);
    n += reply->n;
    for (int i = 0; i < 7; i++) h[n++] = 300 + (salt * 37 + i * 11) % 4000;
    return n;
}

/* Three turns on one session (reusing the cache) against three cold runs of the full histories. */
static void three_turns(pf_model *m, const pf_draft *d, pf_spec_kind kind, float temp) {
    char err[PF_ERR_LEN];
    pf_session *s = session(m, 1), *cold = session(m, 1);
    CHECK(s && cold);
    pf_gen_params gp = params(24, d);
    gp.stop_at_eot = false;
    gp.spec = kind;
    gp.temp = temp; /* sampled: the same seed gives the same tokens, reused cache or not */
    gp.top_p = 0.95f;
    gp.seed = 7;
    int32_t h[512];
    int n = 0;
    for (int i = 0; i < 9; i++) h[n++] = 200 + i * 53;
    int prev_len = 0; /* tokens the previous turn left in the cache */
    for (int turn = 0; turn < 3; turn++) {
        toks a = {.n = 0}, b = {.n = 0};
        pf_gen_stats sa, sb;
        CHECKF(pf_generate_tokens(s, h, n, &gp, on_tok, &a, &sa, err) == PF_OK, "%s", err);
        pf_session_reset(cold);
        CHECKF(pf_generate_tokens(cold, h, n, &gp, on_tok, &b, &sb, err) == PF_OK, "%s", err);
        CHECKF(a.n == b.n && !memcmp(a.t, b.t, (size_t)a.n * sizeof(int32_t)), "turn %d differs from the cold run", turn);
        CHECKF(sa.n_reused == prev_len && sb.n_reused == 0, "turn %d: reused %d, expected %d", turn, sa.n_reused,
               prev_len);
        /* same draft context: the same proposals, round for round (Dec's choices depend on
         * measured timings, so only its output is compared) */
        if (kind == PF_SPEC_DFLASH || kind == PF_SPEC_NGRAM)
            CHECKF(sa.rounds == sb.rounds && sa.drafted == sb.drafted && sa.accepted == sb.accepted,
                   "turn %d: rounds %lld/%lld accepted %lld/%lld", turn, (long long)sa.rounds, (long long)sb.rounds,
                   (long long)sa.accepted, (long long)sb.accepted);
        /* the cache holds the prompt and the reply but its last token (never run) */
        prev_len = n + a.n - 1;
        n = extend(h, n, &a, turn);
    }
    pf_session_free(s);
    pf_session_free(cold);
}

TEST(api_multi_turn_reuse_equals_cold_runs) {
    pf_model *m;
    pf_draft *d;
    if (!api_load(DRAFT2, &m, &d)) return;
    three_turns(m, NULL, PF_SPEC_PLAIN, 0);
    if (!pf_test_failed()) three_turns(m, d, PF_SPEC_DFLASH, 0);
    if (!pf_test_failed()) three_turns(m, d, PF_SPEC_DEC, 0);
    if (!pf_test_failed()) three_turns(m, NULL, PF_SPEC_NGRAM, 0);
    if (!pf_test_failed()) three_turns(m, d, PF_SPEC_DFLASH, 0.8f);
    pf_free_draft(d);
    pf_free_model(m);
}

TEST(api_divergent_prompt_truncates_cache_and_draft_context) {
    char err[PF_ERR_LEN];
    pf_model *m;
    pf_draft *d;
    if (!api_load(DRAFT2, &m, &d)) return;
    pf_session *s = session(m, 2), *cold = session(m, 2);
    CHECK(s && cold);
    pf_gen_params gp = params(20, d);
    gp.stop_at_eot = false;
    gp.spec = PF_SPEC_DFLASH; /* a fixed block: its rounds do not depend on measured timings */
    int32_t p[64];
    for (int i = 0; i < 40; i++) p[i] = 100 + (i * 97) % 5000;
    toks a = {.n = 0}, b = {.n = 0};
    pf_gen_stats sa, sb;
    CHECK(pf_generate_tokens(s, p, 40, &gp, on_tok, &a, &sa, err) == PF_OK && sa.n_reused == 0);
    /* the same first 25 tokens, then others: 25 rows kept, the rest (and the reply) dropped */
    for (int i = 25; i < 40; i++) p[i] = 7000 + i;
    a.n = 0;
    CHECK(pf_generate_tokens(s, p, 40, &gp, on_tok, &a, &sa, err) == PF_OK);
    CHECK(pf_generate_tokens(cold, p, 40, &gp, on_tok, &b, &sb, err) == PF_OK);
    CHECKF(sa.n_reused == 25, "reused %d", sa.n_reused);
    CHECK(a.n == b.n && !memcmp(a.t, b.t, (size_t)a.n * sizeof(int32_t)));
    CHECK(sa.rounds == sb.rounds && sa.drafted == sb.drafted && sa.accepted == sb.accepted);
    /* a shorter prompt inside the cache: all but its last token kept */
    a.n = b.n = 0;
    CHECK(pf_generate_tokens(s, p, 30, &gp, on_tok, &a, &sa, err) == PF_OK && sa.n_reused == 29);
    pf_session_reset(cold);
    CHECK(pf_generate_tokens(cold, p, 30, &gp, on_tok, &b, &sb, err) == PF_OK && sb.n_reused == 0);
    CHECK(a.n == b.n && !memcmp(a.t, b.t, (size_t)a.n * sizeof(int32_t)) && sa.accepted == sb.accepted);
    /* a change of strategy: plain decoding reuses the rows, a new draft context cannot */
    gp.spec = PF_SPEC_PLAIN;
    a.n = 0;
    CHECK(pf_generate_tokens(s, p, 30, &gp, on_tok, &a, &sa, err) == PF_OK && sa.n_reused == 29);
    CHECK(a.n == b.n && !memcmp(a.t, b.t, (size_t)a.n * sizeof(int32_t)));
    gp.spec = PF_SPEC_DFLASH;
    gp.block = 3;
    a.n = 0;
    CHECK(pf_generate_tokens(s, p, 30, &gp, on_tok, &a, &sa, err) == PF_OK && sa.n_reused == 0 && sa.block == 3);
    CHECK(a.n == b.n && !memcmp(a.t, b.t, (size_t)a.n * sizeof(int32_t)));
    /* reset: nothing reused */
    pf_session_reset(s);
    CHECK(pf_generate_tokens(s, p, 30, &gp, on_tok, &a, &sa, err) == PF_OK && sa.n_reused == 0);
    pf_session_free(s);
    pf_session_free(cold);
    pf_free_draft(d);
    pf_free_model(m);
}

/* The messages of a three-turn chat, the replies appended as they come. */
typedef struct {
    pf_message msg[8];
    int n;
    text reply[3];
} chat_log;

static const char *const k_users[3] = {
    "A shop sells 12 apples for 3 dollars each. How much do the apples cost?",
    "And how much do 5 apples cost?",
    "Write that answer as JSON.",
};

static pf_status chat_turns(pf_session *s, const pf_gen_params *gp, chat_log *c, pf_gen_stats st[3], int cold_each,
                            char err[PF_ERR_LEN]) {
    c->n = 0;
    c->msg[c->n++] = (pf_message){"system", "You are a helpful assistant."};
    for (int t = 0; t < 3; t++) {
        c->msg[c->n++] = (pf_message){"user", k_users[t]};
        c->reply[t].n = 0;
        c->reply[t].s[0] = 0;
        if (cold_each) pf_session_reset(s);
        pf_status rc = pf_generate_chat(s, c->msg, c->n, gp, text_sink, &c->reply[t], &st[t], err);
        if (rc != PF_OK) return rc;
        c->msg[c->n++] = (pf_message){"assistant", c->reply[t].s};
    }
    return PF_OK;
}

TEST(api_chat_turns_reuse_and_equal_cold) {
    char err[PF_ERR_LEN];
    api_fixture fx;
    if (!api_open(&fx, DRAFT2, 2, 1024)) return;
    pf_gen_params gp = params(24, fx.d);
    chat_log warm, cold;
    pf_gen_stats sw[3], sc[3];
    CHECKF(chat_turns(fx.s, &gp, &warm, sw, 0, err) == PF_OK, "%s", err);
    CHECKF(chat_turns(fx.s, &gp, &cold, sc, 1, err) == PF_OK, "%s", err);
    for (int t = 0; t < 3; t++) {
        CHECKF(!strcmp(warm.reply[t].s, cold.reply[t].s), "turn %d:\n%s\nvs cold\n%s", t, warm.reply[t].s,
               cold.reply[t].s);
        CHECK(sc[t].n_reused == 0 && sw[t].n_prompt == sc[t].n_prompt && sw[t].n_gen == sc[t].n_gen);
        /* the earlier turns are not prefilled again: the previous prompt stays but for its last
         * token, the "\n" after "assistant", which merges with a reply that starts with one */
        if (t > 0)
            CHECKF(sw[t].n_reused >= sw[t - 1].n_prompt - 1 && sw[t].n_reused < sw[t].n_prompt,
                   "turn %d: reused %d of %d", t, sw[t].n_reused, sw[t].n_prompt);
    }
    /* one user turn renders as pf_generate with chat */
    text a = {0}, b = {0};
    pf_message one[2] = {{"system", "Be brief."}, {"user", k_users[0]}};
    gp.system = "Be brief.";
    gp.chat = true;
    pf_gen_stats st;
    pf_session_reset(fx.s);
    CHECK(pf_generate(fx.s, k_users[0], strlen(k_users[0]), &gp, text_sink, &a, &st, err) == PF_OK);
    int n_prompt = st.n_prompt;
    pf_session_reset(fx.s);
    gp.chat = false;
    gp.system = NULL;
    CHECK(pf_generate_chat(fx.s, one, 2, &gp, text_sink, &b, &st, err) == PF_OK);
    CHECK(st.n_prompt == n_prompt && !strcmp(a.s, b.s));
    api_close(&fx);
}

typedef struct {
    const pf_model *m;
    const pf_draft *d;
    int id, threads;
    toks out[3];
    pf_status rc;
} job;

/* One session's work: three turns with the draft, each prompt depending on the job id. */
static void *run_job(void *p) {
    job *j = p;
    char err[PF_ERR_LEN];
    pf_session_params sp = {.n_threads = j->threads, .n_ctx = 512};
    pf_session *s = NULL;
    pf_session_new(j->m, &sp, &s, err);
    j->rc = s ? PF_OK : PF_ERR_OOM;
    pf_gen_params gp = params(12, j->d);
    gp.stop_at_eot = false;
    gp.spec = j->id % 2 ? PF_SPEC_DEC : PF_SPEC_DFLASH;
    gp.block = 4; /* also bounds Dec's cost calibration (slow under ThreadSanitizer) */
    int32_t h[256];
    int n = 0;
    for (int i = 0; i < 12; i++) h[n++] = 150 + (j->id * 131 + i * 29) % 6000;
    for (int t = 0; t < 3 && j->rc == PF_OK; t++) {
        j->out[t].n = 0;
        j->rc = pf_generate_tokens(s, h, n, &gp, on_tok, &j->out[t], NULL, err);
        n = extend(h, n, &j->out[t], j->id + t);
    }
    pf_session_free(s);
    return NULL;
}

TEST(api_concurrent_sessions_equal_sequential) {
    enum { N = 4 };
    pf_model *m;
    pf_draft *d;
    if (!api_load(DRAFT2, &m, &d)) return;
    job seq[N], par[N];
    for (int i = 0; i < N; i++) {
        seq[i] = (job){.m = m, .d = d, .id = i, .threads = 1 + i % 2};
        par[i] = seq[i];
        run_job(&seq[i]);
        CHECK(seq[i].rc == PF_OK);
    }
    pthread_t th[N];
    for (int i = 0; i < N; i++) CHECK(pthread_create(&th[i], NULL, run_job, &par[i]) == 0);
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        CHECK(par[i].rc == PF_OK);
        for (int t = 0; t < 3; t++)
            CHECKF(par[i].out[t].n == seq[i].out[t].n &&
                       !memcmp(par[i].out[t].t, seq[i].out[t].t, (size_t)seq[i].out[t].n * sizeof(int32_t)),
                   "session %d turn %d differs on threads", i, t);
    }
    pf_free_draft(d);
    pf_free_model(m);
}

/* path holds the first n bytes of src (a truncated copy). 0, or -1. */
static int truncated_copy(const char *src, const char *path, size_t n) {
    char buf[4096];
    FILE *in = fopen(src, "rb"), *out = fopen(path, "wb");
    size_t got = in ? fread(buf, 1, n < sizeof buf ? n : sizeof buf, in) : 0;
    int ok = in && out && got == n && fwrite(buf, 1, got, out) == got;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = 0;
    return ok ? 0 : -1;
}

/* Each failure reaches the caller as its own kind, with a message naming what failed: a profile
 * that cannot be read (I/O: missing, a folder), one that is truncated or not a profile (format),
 * a bad value (argument), a prompt over the context. */
TEST(api_failure_kinds_reach_the_caller) {
    char err[PF_ERR_LEN], trunc[512], notprof[512];
    pf_model *m = NULL;
    pf_load_model(TARGET, &m, err);
    pf_draft *d = NULL;
    if (m) pf_load_draft(m, DRAFT2, &d, err);
    pf_session *s = d ? session(m, 1) : NULL;
    CHECKF(s, "%s", err);
    snprintf(trunc, sizeof trunc, "%s/truncated-profile.json", pf_test_tmpdir());
    snprintf(notprof, sizeof notprof, "%s/not-a-profile.json", pf_test_tmpdir());
    CHECK(truncated_copy("eval/results/profile-pocket.json", trunc, 300) == 0);
    FILE *f = fopen(notprof, "w");
    CHECK(f && fputs("{\"tasks\": {}}", f) >= 0 && fclose(f) == 0);
    pf_gen_params gp = params(2, d);
    text t = {0};
    static const struct { const char *profile; pf_status want; const char *msg; } cases[] = {
        {"/nonexistent/profile.json", PF_ERR_IO, "/nonexistent/profile.json: No such file"},
        {"models", PF_ERR_IO, "models: read error"},
        {NULL, PF_ERR_FORMAT, "truncated-profile.json: byte 300"},
        {NULL, PF_ERR_FORMAT, "not a tuned profile"},
    };
    for (int i = 0; i < 4; i++) {
        gp.profile = cases[i].profile ? cases[i].profile : i == 2 ? trunc : notprof;
        pf_status rc = pf_generate(s, "hi", 2, &gp, text_sink, &t, NULL, err);
        CHECKF(rc == cases[i].want && strstr(err, cases[i].msg) && !strchr(err, '\n'), "%s: status %d, '%s'",
               gp.profile, (int)rc, err);
        char line[160];
        CHECK(pf_gen_plan(&gp, line, sizeof line, err) == cases[i].want); /* the plan says the same */
    }
    gp.profile = NULL;
    gp.block = 99;
    CHECK(pf_generate(s, "hi", 2, &gp, text_sink, &t, NULL, err) == PF_ERR_ARG && strstr(err, "block 99 is outside"));
    gp.block = 0;
    static char long_prompt[40000];
    for (size_t i = 0; i + 6 < sizeof long_prompt; i += 6) memcpy(long_prompt + i, "apple ", 6);
    CHECK(pf_generate(s, long_prompt, strlen(long_prompt), &gp, text_sink, &t, NULL, err) == PF_ERR_CONTEXT);
    pf_session_free(s);
    pf_free_draft(d);
    pf_free_model(m);
}

TEST(api_bad_arguments_fail_with_a_message) {
    char err[PF_ERR_LEN];
    api_fixture fx;
    if (!api_open(&fx, NULL, 1, 1024)) return;
    err[0] = 0;
    pf_draft *none = NULL;
    CHECK(pf_load_draft(fx.m, "/nonexistent/draft.gguf", &none, err) == PF_ERR_IO && !none &&
          strstr(err, "/nonexistent/draft.gguf"));
    CHECK(pf_load_draft(fx.m, TARGET, &none, err) == PF_ERR_FORMAT && !none && err[0]); /* a target is no draft */
    CHECK(pf_load_draft(fx.m, NULL, &none, err) == PF_ERR_ARG && !none && strstr(err, "bundle"));
    pf_draft *d1 = NULL;
    pf_load_draft(fx.m, DRAFT1, &d1, err);
    CHECKF(d1, "%s", err);
    CHECK(!pf_draft_has_dec(d1));
    pf_gen_params gp = params(4, NULL);
    text t = {0};
    pf_message bad_role[1] = {{"robot", "hi"}}, last_assistant[2] = {{"user", "hi"}, {"assistant", "hello"}},
               bad_utf8[1] = {{"user", "ab\xff"}};
    CHECK(pf_generate_chat(fx.s, bad_role, 1, &gp, text_sink, &t, NULL, err) == PF_ERR_ARG && strstr(err, "robot"));
    CHECK(pf_generate_chat(fx.s, last_assistant, 2, &gp, text_sink, &t, NULL, err) == PF_ERR_ARG && strstr(err, "assistant"));
    CHECK(pf_generate_chat(fx.s, bad_utf8, 1, &gp, text_sink, &t, NULL, err) == PF_ERR_UTF8);
    CHECK(pf_generate_chat(fx.s, bad_role, 0, &gp, text_sink, &t, NULL, err) == PF_ERR_ARG);
    /* statuses travel up as the compiler gave them, not read from the message: a schema whose
     * error names a property "out of memory" is still a bad argument */
    gp.json_schema = "{\"type\": \"object\", \"properties\": {\"out of memory\": 5}}";
    CHECK(pf_generate(fx.s, "hi", 2, &gp, text_sink, &t, NULL, err) == PF_ERR_ARG && strstr(err, "out of memory"));
    pf_message nothing_to_answer[1] = {{"assistant", "out of memory"}};
    CHECK(pf_generate_chat(fx.s, nothing_to_answer, 1, &gp, text_sink, &t, NULL, err) == PF_ERR_ARG);
    gp.json_schema = NULL;
    gp.spec = PF_SPEC_DFLASH;
    CHECK(pf_generate(fx.s, "hi", 2, &gp, text_sink, &t, NULL, err) == PF_ERR_ARG && strstr(err, "draft"));
    gp.spec = PF_SPEC_DEC;
    gp.draft = d1;
    CHECK(pf_generate(fx.s, "hi", 2, &gp, text_sink, &t, NULL, err) == PF_ERR_ARG && strstr(err, "Dec"));
    gp.spec = PF_SPEC_DFLASH;
    gp.block = 65;
    CHECK(pf_generate(fx.s, "hi", 2, &gp, text_sink, &t, NULL, err) == PF_ERR_ARG && strstr(err, "block 65 is outside 2..64"));
    gp.block = 0;
    gp.draft_head = 1 << 20; /* more tokens than the draft ranks: the drafter's bad value, not memory */
    CHECK(pf_generate(fx.s, "hi", 2, &gp, text_sink, &t, NULL, err) == PF_ERR_ARG && strstr(err, "draft head"));
    gp.draft_head = 0;
    gp.spec = (pf_spec_kind)42;
    CHECK(pf_generate(fx.s, "hi", 2, &gp, text_sink, &t, NULL, err) == PF_ERR_ARG);
    gp.spec = PF_SPEC_DEFAULT;
    gp.task = "math";
    CHECK(pf_generate(fx.s, "hi", 2, &gp, text_sink, &t, NULL, err) == PF_ERR_ARG && strstr(err, "profile"));
    gp.task = NULL;
    /* a draft loaded for another model */
    pf_model *m2 = NULL;
    pf_load_model(TARGET, &m2, err);
    CHECK(m2);
    pf_draft *d2 = NULL;
    pf_load_draft(m2, DRAFT1, &d2, err);
    CHECK(d2);
    gp.draft = d2;
    CHECK(pf_generate(fx.s, "hi", 2, &gp, text_sink, &t, NULL, err) == PF_ERR_ARG && strstr(err, "another model"));
    /* after the failures the session still works and equals a fresh one */
    gp.draft = d1;
    t.n = 0;
    CHECKF(pf_generate(fx.s, "hello", 5, &gp, text_sink, &t, NULL, err) == PF_OK, "%s", err);
    pf_free_draft(d2);
    pf_free_model(m2);
    pf_free_draft(d1);
    api_close(&fx);
}

/* A tuned profile chooses strategy and block per task; explicit fields win. */
TEST(api_profile_chooses_strategy) {
    char err[PF_ERR_LEN], path[300];
    snprintf(path, sizeof path, "%s/api-profile.json", pf_test_tmpdir());
    FILE *f = fopen(path, "w");
    CHECK(f);
    fputs("{\"default\": {\"spec\": \"ngram\", \"block\": 5}, \"tasks\": {\"math\": {\"spec\": \"dflash\", \"block\": 3}}}",
          f);
    fclose(f);
    api_fixture fx;
    if (!api_open(&fx, DRAFT2, 1, 1024)) return;
    pf_gen_params gp = params(12, fx.d);
    gp.profile = path;
    pf_gen_stats st;
    text a = {0}, b = {0}, c = {0};
    CHECKF(pf_generate(fx.s, k_prompts[0], strlen(k_prompts[0]), &gp, text_sink, &a, &st, err) == PF_OK, "%s", err);
    CHECK(!strcmp(st.drafter, "ngram") && !strcmp(st.spec, "ngram") && st.block == 5);
    /* spec and block open, entry dflash: adaptive from the profile's prior, up to the trained block
     * (the block a default run without a profile has) */
    gp.profile = NULL;
    CHECK(pf_generate(fx.s, k_prompts[0], strlen(k_prompts[0]), &gp, text_sink, &b, &st, err) == PF_OK);
    int trained = st.block;
    gp.profile = path;
    gp.task = "math";
    b.n = 0, b.s[0] = 0;
    CHECK(pf_generate(fx.s, k_prompts[0], strlen(k_prompts[0]), &gp, text_sink, &b, &st, err) == PF_OK);
    CHECK(!strcmp(st.drafter, "dflash2") && st.block == trained && trained != 3 && !strcmp(a.s, b.s));
    gp.spec = PF_SPEC_DFLASH; /* the strategy named, the block open: the profile's block */
    b.n = 0, b.s[0] = 0;
    CHECK(pf_generate(fx.s, k_prompts[0], strlen(k_prompts[0]), &gp, text_sink, &b, &st, err) == PF_OK);
    CHECK(!strcmp(st.drafter, "dflash2") && !strcmp(st.spec, "dflash") && st.block == 3 && !strcmp(a.s, b.s));
    gp.spec = PF_SPEC_DEFAULT;
    gp.block = 7;
    CHECK(pf_generate(fx.s, k_prompts[0], strlen(k_prompts[0]), &gp, text_sink, &c, &st, err) == PF_OK);
    CHECK(st.block == 7 && !strcmp(a.s, c.s));
    gp.task = "poetry";
    CHECK(pf_generate(fx.s, k_prompts[0], strlen(k_prompts[0]), &gp, text_sink, &c, &st, err) == PF_ERR_ARG &&
          strstr(err, "poetry"));
    api_close(&fx);
}

/* pf_load_draft from a .pfb: the target's own bundle (path NULL) and another bundle's file. */
TEST(api_draft_from_bundle) {
    char err[PF_ERR_LEN], pfb[300], cmd[900];
    snprintf(pfb, sizeof pfb, "%s/api-app.pfb", pf_test_tmpdir());
    const char *cli = getenv("PF_CLI") ? getenv("PF_CLI") : "./pocketflash";
    snprintf(cmd, sizeof cmd, "%s pack -m %s -d %s -o %s >/dev/null", cli, TARGET, DRAFT2, pfb);
    CHECK(system(cmd) == 0);
    pf_model *mb = NULL, *mg = NULL;
    pf_load_model(pfb, &mb, err);
    pf_load_model(TARGET, &mg, err);
    CHECKF(mb && mg, "%s", err);
    pf_draft *db = NULL;
    pf_load_draft(mb, NULL, &db, err);
    CHECKF(db, "%s", err);
    pf_draft *dg = NULL;
    pf_load_draft(mg, pfb, &dg, err);
    CHECKF(dg, "%s", err);
    CHECK(pf_draft_has_dec(db) && pf_draft_has_dec(dg));
    pf_session *sb = session(mb, 1), *sg = session(mg, 1);
    pf_gen_params gp = params(24, NULL);
    gp.chat = true;
    text plain = {0}, a = {0}, b = {0};
    pf_gen_stats st;
    CHECK(pf_generate(sg, k_prompts[1], strlen(k_prompts[1]), &gp, text_sink, &plain, &st, err) == PF_OK);
    gp.draft = db;
    gp.spec = PF_SPEC_DEC;
    CHECK(pf_generate(sb, k_prompts[1], strlen(k_prompts[1]), &gp, text_sink, &a, &st, err) == PF_OK && st.rounds > 0);
    gp.draft = dg;
    gp.spec = PF_SPEC_DFLASH;
    pf_session_reset(sg);
    CHECK(pf_generate(sg, k_prompts[1], strlen(k_prompts[1]), &gp, text_sink, &b, &st, err) == PF_OK && st.rounds > 0);
    CHECK(!strcmp(plain.s, a.s) && !strcmp(plain.s, b.s));
    pf_session_free(sb);
    pf_session_free(sg);
    pf_free_draft(db);
    pf_free_draft(dg);
    pf_free_model(mb);
    pf_free_model(mg);
}

/* Rows restored from a prompt-cache file are reused by the session's next call like prefilled ones. */
TEST(api_prompt_cache_rows_reused_next_turn) {
    char err[PF_ERR_LEN], path[300];
    snprintf(path, sizeof path, "%s/api-prompt.cache", pf_test_tmpdir());
    pf_model *m;
    if (!api_load(NULL, &m, NULL)) return;
    pf_session *s = session(m, 1), *cold = session(m, 1);
    pf_gen_params gp = params(8, NULL);
    gp.stop_at_eot = false;
    gp.prompt_cache = path;
    int32_t h[128];
    for (int i = 0; i < 30; i++) h[i] = 500 + i * 41;
    toks a = {.n = 0}, b = {.n = 0};
    pf_gen_stats st;
    CHECK(pf_generate_tokens(cold, h, 30, &gp, on_tok, &b, &st, err) == PF_OK && st.n_cached == 0); /* writes */
    CHECK(pf_generate_tokens(s, h, 30, &gp, on_tok, &a, &st, err) == PF_OK && st.n_cached == 29 && st.n_reused == 0);
    int n = extend(h, 30, &a, 1);
    a.n = b.n = 0;
    gp.prompt_cache = NULL;
    CHECK(pf_generate_tokens(s, h, n, &gp, on_tok, &a, &st, err) == PF_OK);
    CHECKF(st.n_reused == 30 + 8 - 1 && st.n_cached == 0, "reused %d", st.n_reused);
    pf_session_reset(cold);
    CHECK(pf_generate_tokens(cold, h, n, &gp, on_tok, &b, &st, err) == PF_OK);
    CHECK(a.n == b.n && !memcmp(a.t, b.t, (size_t)a.n * sizeof(int32_t)));
    pf_session_free(s);
    pf_session_free(cold);
    pf_free_model(m);
}
