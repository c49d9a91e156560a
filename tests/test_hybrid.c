/* Hybrid drafting (draft/hybrid.c: prompt lookup where it matches, DFlash otherwise) is lossless:
 * greedy output equals plain decoding on many prompts and block sizes (random drafts on a tiny target,
 * and the committed trained pair on held-out eval prompts), sampled output keeps the target's
 * distribution (chi-square), and both sources really propose. Misuse is refused with a message. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "api/strategy.h"
#include "draft/dflash_drafter.h"
#include "convert/dflash_synth.h"
#include "draft/hybrid.h"
#include "draft/ngram.h"
#include "engine/chat.h"
#include "engine/generate.h"
#include "convert/synth.h"
#include "engine/tokenizer.h"
#include "eval/tasks.h"
#include "chi2.h"
#include "test.h"
#include "util.h"
#include "verify/spec.h"
#include "verify/strategies.h"

/* Random prompts; every other one repeats a motif, so lookup finds patterns from the start. */
static void make_prompt(int i, int32_t *p, int *n, int V) {
    *n = 4 + i % 13;
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 7);
    for (int j = 0; j < *n; j++) {
        x ^= x >> 29; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 32;
        p[j] = i % 2 ? (int32_t)((j % 3) * 41 % V + 5) : (int32_t)(x % (uint64_t)V);
    }
}

static pf_gen_params params(int n, float temp, uint64_t seed) {
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.max_tokens = n;
    gp.temp = temp;
    gp.seed = seed;
    gp.stop_at_eot = false;
    return gp;
}

/* A tiny target and a random DFlash draft of it (version 1 or 2), written once per run. */
static pf_model *tiny_pair(int version, pf_dflash **w, char err[PF_ERR_LEN]) {
    char tpath[300], dpath[300];
    snprintf(tpath, sizeof tpath, "%s/hybrid-target.gguf", pf_test_tmpdir());
    snprintf(dpath, sizeof dpath, "%s/hybrid-draft-v%d.gguf", pf_test_tmpdir(), version);
    if (pf_synth_write(pf_synth_shape_find("tiny"), PF_TYPE_Q8_0, false, 31, tpath, err) < 0) return NULL;
    if (pf_dflash_synth(tpath, version, 2, 8, NULL, 2, 7, false, dpath, err) != PF_RC_OK) return NULL;
    pf_model *m = pf_model_load(tpath, err);
    if (m && !(*w = pf_dflash_load(dpath, m, err))) {
        pf_model_free(m);
        return NULL;
    }
    return m;
}

typedef struct {
    pf_model *m;
    pf_dflash *w;
    pf_session *s;
} pair;

/* tiny_pair(version) with a session of n_threads and n_ctx; NULL, with err, when any step fails. */
static pf_session *pair_open(pair *p, int version, int n_threads, int n_ctx, char err[PF_ERR_LEN]) {
    p->w = NULL;
    p->s = NULL;
    if (!(p->m = tiny_pair(version, &p->w, err))) return NULL;
    pf_session_params sp = {.n_threads = n_threads, .n_ctx = n_ctx};
    pf_session_new(p->m, &sp, &p->s, err);
    return p->s;
}

static void pair_close(pair *p) {
    pf_session_free(p->s);
    pf_dflash_free(p->w);
    pf_model_free(p->m);
}

static pf_drafter *hybrid_of(pf_dflash *w, pf_session *s, int min_match, int min_tokens, char err[PF_ERR_LEN]) {
    pf_drafter *model = NULL;
    pf_dflash_drafter_new(w, &s->engine, &model, err);
    pf_drafter *h = NULL;
    if (model) pf_hybrid_drafter_new(pf_ngram_drafter_new(min_match, 3), model, min_tokens, &h, err);
    return h;
}

/* Greedy, random drafts: 40 prompts x blocks 2..9 (both draft versions), output equals plain
 * decoding, and over the run both lookup and the draft proposed. */
TEST(hybrid_greedy_lossless_random_drafts) {
    char err[PF_ERR_LEN];
    for (int version = 1; version <= 2; version++) {
        pair pr;
        CHECKF(pair_open(&pr, version, 2, 160, err), "%s", err);
        pf_model *m = pr.m;
        pf_dflash *w = pr.w;
        pf_session *s = pr.s;
        int64_t lookup = 0, rounds = 0, accepted = 0;
        for (int i = 0; i < 40; i++) {
            int32_t prompt[32];
            int np;
            make_prompt(i, prompt, &np, m->hp.n_vocab);
            pf_gen_params gp = params(32, 0, 0);
            test_seq plain = {.n = 0}, got = {.n = 0};
            CHECK(pf_generate_tokens(s, prompt, np, &gp, test_seq_push, &plain, NULL, err) == PF_OK);
            int B = 2 + (i + version) % 8;
            pf_drafter *d = hybrid_of(w, s, 1 + i % 3, 1 + i % 2, err);
            CHECKF(d, "%s", err);
            pf_spec *spec = pf_spec_new(&s->engine, d, B, err);
            pf_api_use_strategy(s, pf_spec_strategy(spec));
            CHECKF(pf_generate_tokens(s, prompt, np, &gp, test_seq_push, &got, NULL, err) == PF_OK, "%s", err);
            CHECKF(test_seq_same(&got, &plain),
                   "v%d prompt %d block %d: hybrid output differs from plain decoding", version, i, B);
            int64_t l, r;
            pf_drafter_lookup_counts(d, &l, &r);
            CHECK(r > 0 && r <= pf_spec_stats_get(spec)->rounds); /* rounds at the length limit draft nothing */
            lookup += l;
            rounds += r;
            accepted += pf_spec_stats_get(spec)->tokens - pf_spec_stats_get(spec)->rounds;
            pf_api_use_strategy(s, NULL); /* before the strategy goes */
            pf_spec_free(spec);
            pf_drafter_free(d);
        }
        CHECKF(lookup > 0 && lookup < rounds, "v%d: lookup proposed in %lld of %lld rounds: one source never ran",
               version, (long long)lookup, (long long)rounds);
        CHECKF(accepted > 20, "v%d: only %lld drafts accepted: the test exercises nothing", version, (long long)accepted);
        pair_close(&pr);
    }
}

typedef struct {
    pf_drafter *d;
    pf_spec *spec;
    int64_t lookup, rounds, acc;
} hybrid_tally;

/* after each speculative generation: the rounds the lookup proposed in, all rounds, accepted tokens */
static void tally_hybrid(void *u) {
    hybrid_tally *t = u;
    int64_t l, r;
    pf_drafter_lookup_counts(t->d, &l, &r);
    t->lookup += l;
    t->rounds += r;
    t->acc += pf_spec_stats_get(t->spec)->tokens - pf_spec_stats_get(t->spec)->rounds;
}

/* Sampled: two-sample chi-square of (t1, t2, t3) outcomes, plain vs hybrid speculative sampling (lookup
 * point masses and the draft's own distributions mixed within one generation). Pooled rare categories;
 * threshold the 0.999 quantile (Wilson-Hilferty). */
TEST(hybrid_sampled_same_distribution) {
    char err[PF_ERR_LEN];
    pair pr;
    CHECKF(pair_open(&pr, 1, 1, 64, err), "%s", err);
    pf_model *m = pr.m;
    pf_dflash *w = pr.w;
    pf_session *s = pr.s;
    int32_t prompt[6] = {9, 90, 9, 90, 9, 90};
    enum { RUNS = 2500, POS = 3 };
    int V = m->hp.n_vocab;
    pf_drafter *d = hybrid_of(w, s, 1, 1, err);
    CHECKF(d, "%s", err);
    pf_spec *spec = pf_spec_new(&s->engine, d, 4, err);
    hybrid_tally tally = {d, spec, 0, 0, 0};
    test_sampling ts = {.s = s, .prompt = prompt, .n_prompt = 6, .runs = RUNS, .n_pos = POS, .n_vocab = V,
                        .seed_mul = 104729, .seed_add = 3, .strategy = pf_spec_strategy(spec), .after = tally_hybrid, .u = &tally};
    int *cnt = test_sample_counts(&ts, err);
    CHECKF(cnt, "%s", err);
    int64_t lookup = tally.lookup, rounds = tally.rounds, acc = tally.acc;
    CHECKF(lookup > rounds / 20 && lookup < rounds && acc > 0,
           "lookup proposed in %lld of %lld rounds, %lld accepted: both sources must be exercised",
           (long long)lookup, (long long)rounds, (long long)acc);
    char why[128];
    CHECKF(pf_chi2_positions_differ(cnt, POS, V, why, sizeof why) < 0, "%s", why);
    free(cnt);
    pf_spec_free(spec);
    pf_drafter_free(d);
    pair_close(&pr);
}

/* The committed pair, the strategy as front ends open it ("hybrid"): greedy output equals plain decoding
 * on held-out eval prompts of every task type (2 each, blocks 3..8), and lookup fires on them. */
TEST(hybrid_greedy_lossless_trained_pair) {
    char err[PF_ERR_LEN];
    pf_model *m = pf_model_load("models/pf-target-f16.gguf", err);
    CHECKF(m, "%s", err);
    pf_task_suite suite;
    CHECKF(pf_tasks_load("eval/tasks", 2, &suite, err) == 0, "%s", err);
    pf_session_params sp = {.n_threads = 2, .n_ctx = 512};
    pf_session *s = NULL;
    pf_session_new(m, &sp, &s, err);
    CHECKF(s, "%s", err);
    int64_t lookup = 0, rounds = 0;
    int cases = 0;
    for (int t = 0; t < suite.n; t++)
        for (int i = 0; i < suite.types[t].n; i++) {
            int32_t *ids = NULL;
            size_t n = 0;
            CHECK(test_chat_tokens(m, suite.types[t].prompts[i].prompt, &ids, &n, err) == 0);
            pf_gen_params gp = params(40, 0, 0);
            gp.stop_at_eot = true;
            test_seq plain = {.n = 0}, got = {.n = 0};
            CHECK(pf_generate_tokens(s, ids, (int)n, &gp, test_seq_push, &plain, NULL, err) == PF_OK);
            int block = 3 + cases % 6;
            pf_drafter *d = NULL;
            pf_drafter_open("hybrid", "models/pf-draft-dflash2.gguf", &s->engine, 3, &block, &d, err);
            CHECKF(d && !strcmp(d->name, "hybrid"), "%s", err);
            block = 3 + cases % 6;
            pf_spec *spec = pf_spec_new(&s->engine, d, block, err);
            pf_api_use_strategy(s, pf_spec_strategy(spec));
            CHECKF(pf_generate_tokens(s, ids, (int)n, &gp, test_seq_push, &got, NULL, err) == PF_OK, "%s", err);
            CHECKF(test_seq_same(&got, &plain),
                   "%s (block %d): hybrid output differs from plain decoding", suite.types[t].prompts[i].id, block);
            int64_t l, r;
            pf_drafter_lookup_counts(d, &l, &r);
            lookup += l;
            rounds += r;
            pf_api_use_strategy(s, NULL); /* before the strategy goes */
            pf_spec_free(spec);
            pf_drafter_free(d);
            free(ids);
            cases++;
        }
    CHECKF(cases >= 14 && lookup > 0 && lookup < rounds, "%d prompts, lookup in %lld of %lld rounds", cases,
           (long long)lookup, (long long)rounds);
    pf_session_free(s);
    pf_tasks_free(&suite);
    pf_model_free(m);
}

/* Misuse: a lookup drafter with taps or a missing part is refused (and what was passed is freed); Dec
 * gating needs hidden rows, which a hybrid has not; the strategy needs a draft. */
TEST(hybrid_refusals) {
    char err[PF_ERR_LEN] = "";
    pf_drafter *h = NULL;
    CHECK(pf_hybrid_drafter_new(pf_ngram_drafter_new(1, 3), NULL, 2, &h, err) == PF_RC_ARG && !h && strstr(err, "hybrid drafter"));
    err[0] = 0;
    CHECK(pf_hybrid_drafter_new(pf_ngram_drafter_new(1, 3), pf_ngram_drafter_new(1, 3), 0, &h, err) == PF_RC_ARG &&
          strstr(err, "min_tokens"));
    pair pr;
    CHECKF(pair_open(&pr, 1, 1, 64, err), "%s", err);
    pf_dflash *w = pr.w;
    pf_session *s = pr.s;
    pf_drafter *d = hybrid_of(w, s, 2, 2, err);
    CHECKF(d, "%s", err);
    CHECK(d->n_taps > 0 && d->set_head); /* the model drafter's taps and head vocabulary */
    pf_drafter *tapped = NULL;
    pf_dflash_drafter_new(w, &s->engine, &tapped, err);
    err[0] = 0;
    pf_drafter *model = NULL;
    pf_dflash_drafter_new(w, &s->engine, &model, err);
    CHECK(pf_hybrid_drafter_new(tapped, model, 2, &h, err) == PF_RC_ARG && strstr(err, "without taps"));
    pf_spec *spec = pf_spec_new(&s->engine, d, 4, err);
    CHECK(spec);
    err[0] = 0;
    CHECK(pf_spec_set_dec(spec, NULL, NULL, 0, err) == PF_RC_ARG && strstr(err, "hidden rows"));
    int block = 0;
    err[0] = 0;
    pf_drafter *none = NULL;
    CHECK(pf_drafter_open("hybrid", NULL, &s->engine, 3, &block, &none, err) == PF_RC_ARG && !none && strstr(err, "needs a draft"));
    pf_spec_free(spec);
    pf_drafter_free(d);
    pair_close(&pr);
}
