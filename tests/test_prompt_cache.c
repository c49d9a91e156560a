/* Prompt cache: a hit gives exactly the cold run's tokens (greedy and seeded sampling, plain and
 * speculative) while prefilling only the rest of the prompt (pf_gen_stats.n_cached); the ChatML
 * system block is what a chat run saves; a cache from another model, for another prefix, without
 * the taps a drafter needs, or corrupt / truncated / foreign, is refused with the one-line warning,
 * never used, and rewritten. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api_session.h"
#include "api/strategy.h"
#include "convert/dflash_synth.h"
#include "engine/chat.h"
#include "engine/generate.h"
#include "engine/tokenizer.h"
#include "convert/synth.h"
#include "formats/ggml_types.h"
#include "test.h"
#include "util.h"
#include "verify/spec.h"
#include "verify/strategies.h"

typedef struct { char a[300], b[300], draft[300]; int ok; } pc_fixture;

/* Two tiny targets of the same shape (seeds differ) and a 2-layer draft for the first. */
static const pc_fixture *fix(void) {
    static pc_fixture f;
    if (f.ok) return &f;
    char err[PF_ERR_LEN];
    test_tmp_path(f.b, sizeof f.b, "pc-b.gguf");
    if (test_synth_target_draft("pc", 41, 2, f.a, f.draft, sizeof f.a, err) < 0 ||
        pf_synth_write(pf_synth_shape_find("tiny"), PF_TYPE_Q8_0, false, 42, f.b, err) < 0) {
        printf("    fixture: %s\n", err);
        return NULL;
    }
    f.ok = 1;
    return &f;
}

typedef struct {
    pf_model *m;
    pf_session *s;
    pf_drafter *d;
    pf_spec *sp;
} runner;

/* spec: NULL (plain), "dflash" (draft file), "ngram"; kv_q8: the 8-bit KV cache */
static int runner_open_kv(runner *r, const char *model, const char *spec, const char *draft, int kv_q8, char *err) {
    memset(r, 0, sizeof *r);
    if (!(r->m = pf_model_load(model, err))) return -1;
    pf_session_params sp = {.n_threads = 1, .n_ctx = 256, .kv_q8 = kv_q8};
    if (pf_session_new(r->m, &sp, &r->s, err) != PF_OK) return -1;
    int block = 0;
    if (spec && (pf_drafter_open(spec, draft, &r->s->engine, 3, &block, &r->d, err) != PF_RC_OK ||
                 !(r->sp = pf_spec_new(&r->s->engine, r->d, block, err))))
        return -1;
    return 0;
}

static int runner_open(runner *r, const char *model, const char *spec, const char *draft, char *err) {
    return runner_open_kv(r, model, spec, draft, 0, err);
}

static void runner_close(runner *r) {
    pf_spec_free(r->sp);
    pf_drafter_free(r->d);
    pf_session_free(r->s);
    pf_model_free(r->m);
}

static pf_status run_tokens(runner *r, const int32_t *p, int n, float temp, uint64_t seed, const char *cache,
                            test_seq *out, pf_gen_stats *st, char *err) {
    pf_gen_params gp = test_gen_fixed(24);
    gp.temp = temp;
    gp.seed = seed;
    gp.prompt_cache = cache;
    pf_api_use_strategy(r->s, r->sp ? pf_spec_strategy(r->sp) : NULL);
    out->n = 0;
    pf_session_reset(r->s); /* the file is what these tests exercise: a cold session each run */
    return pf_generate_tokens(r->s, p, n, &gp, test_seq_push, out, st, err);
}

static void make_prompt(int32_t *p, int n, uint64_t seed, int V) {
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int j = 0; j < n; j++) {
        x ^= x >> 29; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 32;
        p[j] = (int32_t)(x % (uint64_t)(V - 26)); /* no special tokens */
    }
}

TEST(prompt_cache_hit_equals_cold_and_skips_prefill) {
    const pc_fixture *f = fix();
    CHECK(f);
    char err[PF_ERR_LEN], path[300];
    const char *specs[] = {NULL, "dflash", "ngram"};
    for (int si = 0; si < 3; si++)
        for (int sampled = 0; sampled < 2; sampled++) {
            runner r;
            CHECKF(runner_open(&r, f->a, specs[si], f->draft, err) == 0, "%s", err);
            snprintf(path, sizeof path, "%s/pc-hit-%d-%d.bin", pf_test_tmpdir(), si, sampled);
            unlink(path);
            float temp = sampled ? 0.8f : 0;
            int32_t p[80];
            make_prompt(p, 60, 7, r.m->hp.n_vocab);
            test_seq cold, first, hit, longer_cold, longer_hit;
            pf_gen_stats st;
            CHECK(run_tokens(&r, p, 60, temp, 9, NULL, &cold, &st, err) == PF_OK);
            CHECK(st.n_cached == 0 && cold.n == 24);
            /* absent: cold prefill, the prompt minus its last token is saved */
            CHECK(run_tokens(&r, p, 60, temp, 9, path, &first, &st, err) == PF_OK);
            CHECK(st.n_cached == 0 && test_seq_same(&cold, &first) && test_exists(path));
            /* hit: 59 rows restored, one token prefilled, same tokens */
            CHECK(run_tokens(&r, p, 60, temp, 9, path, &hit, &st, err) == PF_OK);
            CHECKF(st.n_cached == 59 && st.n_prompt == 60, "spec %s: n_cached %d", specs[si] ? specs[si] : "plain",
                   st.n_cached);
            CHECKF(test_seq_same(&cold, &hit), "spec %s temp %g: cache hit output differs", specs[si] ? specs[si] : "plain",
                   (double)temp);
            /* a longer prompt with the same prefix: 59 restored, 11 prefilled, same as cold */
            make_prompt(p + 60, 10, 8, r.m->hp.n_vocab);
            CHECK(run_tokens(&r, p, 70, temp, 9, NULL, &longer_cold, &st, err) == PF_OK);
            CHECK(run_tokens(&r, p, 70, temp, 9, path, &longer_hit, &st, err) == PF_OK);
            CHECK(st.n_cached == 59 && test_seq_same(&longer_cold, &longer_hit));
            /* the prompt equal to the cached prefix: its last token is left to prefill */
            test_seq eq_cold, eq_hit;
            CHECK(run_tokens(&r, p, 59, temp, 9, NULL, &eq_cold, &st, err) == PF_OK);
            CHECK(run_tokens(&r, p, 59, temp, 9, path, &eq_hit, &st, err) == PF_OK);
            CHECK(st.n_cached == 58 && test_seq_same(&eq_cold, &eq_hit));
            runner_close(&r);
        }
}

TEST(prompt_cache_chat_system_block_shared) {
    const pc_fixture *f = fix();
    CHECK(f);
    char err[PF_ERR_LEN], path[300];
    snprintf(path, sizeof path, "%s/pc-chat.bin", pf_test_tmpdir());
    unlink(path);
    runner r;
    CHECKF(runner_open(&r, f->a, "dflash", f->draft, err) == 0, "%s", err);
    const char *system = "You are a terse assistant. Answer in one short sentence, and never apologise.";
    const char *users[] = {"what is a bundle?", "why cache prompts?"};
    int32_t *sys_ids = NULL;
    size_t n_sys = 0;
    char *block = pf_chat_format(system, ""), *none = pf_chat_format(NULL, "");
    CHECK(pf_tokenize(r.m->tok, block, strlen(block) - strlen(none), true, &sys_ids, &n_sys, err) == 0);
    free(block);
    free(none);
    for (int u = 0; u < 2; u++) {
        pf_gen_params gp;
        pf_gen_params_default(&gp);
        gp.max_tokens = 16;
        gp.chat = true;
        gp.system = system;
        pf_api_use_strategy(r.s, pf_spec_strategy(r.sp));
        pf_gen_stats cold, hit;
        CHECK(pf_generate(r.s, users[u], strlen(users[u]), &gp, NULL, NULL, &cold, err) == PF_OK);
        gp.prompt_cache = path;
        pf_session_reset(r.s);
        CHECK(pf_generate(r.s, users[u], strlen(users[u]), &gp, NULL, NULL, &hit, err) == PF_OK);
        /* the first user saves the system block; the second reuses it */
        CHECKF(hit.n_cached == (u == 0 ? 0 : (int)n_sys), "user %d: n_cached %d, system block %zu", u, hit.n_cached,
               n_sys);
        CHECK(hit.n_gen == cold.n_gen && hit.n_prompt == cold.n_prompt);
    }
    /* token-level identity for the second user: cold vs hit */
    char *text = pf_chat_format(system, users[1]);
    int32_t *ids = NULL;
    size_t n_ids = 0;
    CHECK(pf_tokenize(r.m->tok, text, strlen(text), true, &ids, &n_ids, err) == 0);
    free(text);
    test_seq cold, hit;
    pf_gen_stats st;
    CHECK(run_tokens(&r, ids, (int)n_ids, 0, 0, NULL, &cold, &st, err) == PF_OK);
    CHECK(run_tokens(&r, ids, (int)n_ids, 0, 0, path, &hit, &st, err) == PF_OK);
    CHECK(st.n_cached == (int)n_sys && test_seq_same(&cold, &hit));
    free(ids);
    free(sys_ids);
    runner_close(&r);
}

/* Run with a cache that must be refused: the warning names the file and ends "ignored", nothing
 * is restored, output equals cold, and the file is rewritten so the next run hits. */
static void expect_refused(runner *r, const int32_t *p, int n, const char *path, const char *why, const test_seq *cold) {
    char err[PF_ERR_LEN], msg[4096], expect[400];
    test_seq got;
    pf_gen_stats st;
    test_capture cap;
    test_capture_begin(&cap, 2);
    pf_status rc = run_tokens(r, p, n, 0, 0, path, &got, &st, err);
    test_capture_end(&cap, msg, sizeof msg);
    snprintf(expect, sizeof expect, "pocketflash: warning: prompt cache %s: ", path);
    CHECKF(rc == PF_OK && st.n_cached == 0 && test_seq_same(&got, cold), "%s: used or output differs", why);
    CHECKF(strstr(msg, expect) == msg && strstr(msg, why) && strstr(msg, "ignored\n") &&
           strchr(msg, '\n') == msg + strlen(msg) - 1, "warning '%s' (expected '%s ... %s ... ignored')", msg, expect, why);
    CHECK(run_tokens(r, p, n, 0, 0, path, &got, &st, err) == PF_OK);
    CHECKF(st.n_cached == n - 1 && test_seq_same(&got, cold), "%s: not rewritten", why);
}

TEST(prompt_cache_refuses_other_model_prefix_corrupt) {
    const pc_fixture *f = fix();
    CHECK(f);
    char err[PF_ERR_LEN], path[300], cmd[800];
    snprintf(path, sizeof path, "%s/pc-refuse.bin", pf_test_tmpdir());
    runner a, b, ad;
    CHECKF(runner_open(&a, f->a, NULL, NULL, err) == 0 && runner_open(&b, f->b, NULL, NULL, err) == 0 &&
           runner_open(&ad, f->a, "dflash", f->draft, err) == 0, "%s", err);
    int32_t p[40], q[40];
    make_prompt(p, 40, 11, a.m->hp.n_vocab);
    make_prompt(q, 40, 12, a.m->hp.n_vocab);
    test_seq cold_a, cold_b, cold_q, cold_ad, tmp;
    pf_gen_stats st;
    CHECK(run_tokens(&a, p, 40, 0, 0, NULL, &cold_a, &st, err) == PF_OK);
    CHECK(run_tokens(&b, p, 40, 0, 0, NULL, &cold_b, &st, err) == PF_OK);
    CHECK(run_tokens(&a, q, 40, 0, 0, NULL, &cold_q, &st, err) == PF_OK);
    CHECK(run_tokens(&ad, p, 40, 0, 0, NULL, &cold_ad, &st, err) == PF_OK);
    unlink(path);
    CHECK(run_tokens(&a, p, 40, 0, 0, path, &tmp, &st, err) == PF_OK && test_exists(path));
    /* model B has model A's shape and tokenizer: only the key tells them apart */
    expect_refused(&b, p, 40, path, "another model", &cold_b);
    /* now the file is B's; A again refuses it */
    expect_refused(&a, p, 40, path, "another model", &cold_a);
    /* another prompt */
    expect_refused(&a, q, 40, path, "does not start with its 39-token prefix", &cold_q);
    /* saved by a plain run: no tapped rows for the draft */
    expect_refused(&ad, q, 40, path, "no tapped rows", &cold_q);
    /* and the dflash-saved file serves a plain run (taps are simply not needed) */
    CHECK(run_tokens(&a, q, 40, 0, 0, path, &tmp, &st, err) == PF_OK && st.n_cached == 39 && test_seq_same(&tmp, &cold_q));
    /* corruptions: a flipped payload byte, a flipped header byte, truncation, a foreign file */
    CHECK(run_tokens(&a, p, 40, 0, 0, NULL, &tmp, &st, err) == PF_OK);
    unlink(path);
    CHECK(run_tokens(&a, p, 40, 0, 0, path, &tmp, &st, err) == PF_OK);
    struct { const char *sh, *why; } bad[] = {
        {"printf '\\001' | dd of=%s bs=1 seek=100 conv=notrunc 2>/dev/null", "payload hash mismatch"},
        {"printf '\\377' | dd of=%s bs=1 seek=20 conv=notrunc 2>/dev/null", "header hash mismatch"},
        {"truncate -s -7 %s", "payload hash mismatch"},
        {"truncate -s 30 %s", "truncated file"},
        {"echo 'not a cache at all, just text long enough to have a header......' > %s", "not a prompt cache file"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, bad[i].sh, path);
        CHECK(system(cmd) == 0);
        expect_refused(&a, p, 40, path, bad[i].why, &cold_a);
    }
    (void)cold_ad;
    runner_close(&a);
    runner_close(&b);
    runner_close(&ad);
}

/* The CLI: --prompt-cache round trip gives the same text and reports the restored tokens; a bad
 * file gets exactly one warning line. */
TEST(prompt_cache_cli) {
    const pc_fixture *f = fix();
    CHECK(f);
    /* absolute: the commands run in the scratch directory */
    char *cli = realpath(getenv("PF_CLI") ? getenv("PF_CLI") : "./pocketflash", NULL);
    CHECK(cli);
    const char *d = pf_test_tmpdir();
    char cmd[8192];
    const char *args = "-p 'a long shared prompt that is worth caching between runs' -n 12 --temp 0.7 --seed 3";
    snprintf(cmd, sizeof cmd,
             "cd %s && rm -f c.bin && %s run -m %s -d %s %s > o1 2>e1 && %s run -m %s -d %s %s --prompt-cache c.bin "
             "> o2 2>e2 && %s run -m %s -d %s %s --prompt-cache c.bin > o3 2>e3 && cmp -s o1 o2 && cmp -s o1 o3 && "
             "! grep -q restored e2 && grep -q 'more restored from the prompt cache' e3 && "
             "head -c 40 c.bin > c2.bin && %s run -m %s -d %s %s --prompt-cache c2.bin > o4 2>e4 && cmp -s o1 o4 && "
             "test $(grep -c warning e4) = 1 && grep -q '^pocketflash: warning: prompt cache c2.bin: truncated file (40 bytes), ignored$' e4",
             d, cli, f->a, f->draft, args, cli, f->a, f->draft, args, cli, f->a, f->draft, args, cli, f->a, f->draft, args);
    free(cli);
    int st = system(cmd);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "CLI prompt cache round trip failed (see %s/e*)", d);
}

/* The 8-bit KV cache: its files (version 2) hold its int8 rows and scales, so a hit gives the cold
 * output exactly, plain and speculative; a file restores only into a cache of its own type. */
TEST(prompt_cache_kv_q8) {
    const pc_fixture *f = fix();
    CHECK(f);
    char err[PF_ERR_LEN], path[300];
    if (!pf_kv_q8_usable(pf_kernels_get(pf_best_level()), err)) { /* sessions refuse the 8-bit cache there */
        runner r;
        CHECK(runner_open_kv(&r, f->a, NULL, NULL, 1, err) < 0 && strstr(err, "SIMD kernels"));
        runner_close(&r);
        return;
    }
    snprintf(path, sizeof path, "%s/pc-q8.bin", pf_test_tmpdir());
    const char *specs[] = {NULL, "dflash"};
    int32_t p[60];
    for (int si = 0; si < 2; si++) {
        runner r;
        CHECKF(runner_open_kv(&r, f->a, specs[si], f->draft, 1, err) == 0, "%s", err);
        make_prompt(p, 60, 21, r.m->hp.n_vocab);
        test_seq cold, first, hit;
        pf_gen_stats st;
        unlink(path);
        CHECK(run_tokens(&r, p, 60, 0, 0, NULL, &cold, &st, err) == PF_OK);
        CHECK(run_tokens(&r, p, 60, 0, 0, path, &first, &st, err) == PF_OK && test_exists(path) && test_seq_same(&cold, &first));
        CHECK(run_tokens(&r, p, 60, 0, 0, path, &hit, &st, err) == PF_OK);
        CHECKF(st.n_cached == 59 && test_seq_same(&cold, &hit), "spec %s: 8-bit cache hit: %d restored, same %d",
               specs[si] ? specs[si] : "plain", st.n_cached, test_seq_same(&cold, &hit));
        runner_close(&r);
    }
    /* the file is the 8-bit cache's: an f16 run refuses it (and rewrites it), then the 8-bit run
     * refuses the f16 file */
    runner a, q;
    CHECKF(runner_open(&a, f->a, NULL, NULL, err) == 0 && runner_open_kv(&q, f->a, NULL, NULL, 1, err) == 0, "%s", err);
    test_seq cold_a, cold_q;
    pf_gen_stats st;
    CHECK(run_tokens(&a, p, 60, 0, 0, NULL, &cold_a, &st, err) == PF_OK);
    CHECK(run_tokens(&q, p, 60, 0, 0, NULL, &cold_q, &st, err) == PF_OK);
    expect_refused(&a, p, 60, path, "saved with the 8-bit KV cache, this run uses the f16 one", &cold_a);
    expect_refused(&q, p, 60, path, "saved with the f16 KV cache, this run uses the 8-bit one", &cold_q);
    runner_close(&a);
    runner_close(&q);
}
