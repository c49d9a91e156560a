/* Speculative decoding is lossless: greedy output equals plain decoding token for token for many
 * prompts and every block size; a fixed seed with a point-mass draft reproduces plain sampling;
 * a stochastic draft keeps the sampling distribution (chi-square). Oracle drafts check the
 * acceptance index, the bonus and the rollback arithmetic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "api/strategy.h"
#include "draft/dflash_drafter.h"
#include "convert/dflash_synth.h"
#include "draft/ngram.h"
#include "engine/chat.h"
#include "engine/tokenizer.h"
#include "engine/generate.h"
#include "convert/synth.h"
#include "chi2.h"
#include "test.h"
#include "util.h"
#include "verify/accept.h"
#include "verify/spec.h"
#include "engine/batch.h"

static void make_prompt(int i, int32_t *p, int *n, int V) {
    *n = 3 + i % 17;
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    for (int j = 0; j < *n; j++) {
        x ^= x >> 29; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 32;
        /* every third prompt repeats a short motif so the lookup draft finds matches */
        p[j] = i % 3 == 0 ? (int32_t)((j % 4) * 37 % V) : (int32_t)(x % (uint64_t)V);
    }
}

/* ---- an oracle drafter: runs the target itself (its own cache) to propose the exact greedy
 * continuation, or samples it at another temperature (a stochastic draft); optional corruption of
 * position `corrupt` (1-based) ---- */
typedef struct {
    const pf_model *m;
    pf_ctx *ctx;
    float *lg;
    int corrupt;
    float draft_temp; /* > 0: sample proposals at this temperature (stochastic q) */
    int64_t rounds;
} oracle;

static pf_rc or_begin(void *st, const int32_t *prompt, int n, const float *taps, char err[PF_ERR_LEN]) {
    oracle *o = st;
    (void)taps;
    pf_kv_truncate(o->ctx->kv, 0);
    pf_batch b = {.tokens = prompt, .n = n};
    return pf_forward(o->ctx, &b, err);
}

static pf_rc or_propose(void *st, int32_t bonus, int64_t pos, int B, const pf_sampling *samp, pf_rng *rng,
                        int32_t *draft, pf_dist *q, int *n_drafted, char err[PF_ERR_LEN]) {
    oracle *o = st;
    if (o->ctx->kv->len != pos) { snprintf(err, PF_ERR_LEN, "oracle out of sync"); return PF_RC_INTERNAL; }
    int32_t t = bonus;
    int V = o->m->hp.n_vocab;
    for (int k = 0; k < B - 1; k++) {
        pf_batch b = {.tokens = &t, .n = 1, .logits_mode = PF_LOGITS_LAST, .logits = o->lg};
        pf_rc rc = pf_forward(o->ctx, &b, err);
        if (rc != PF_RC_OK) return rc;
        if (o->draft_temp > 0 && samp) {
            pf_sampling ds = {o->draft_temp, samp->top_k, 1.0f};
            pf_sampling_probs(&ds, o->lg, V, &q[k]);
            t = pf_dist_sample(&q[k], rng);
        } else {
            t = pf_argmax(o->lg, V);
        }
        if (k + 1 == o->corrupt) t = (t + 1) % V;
        draft[k] = t;
    }
    pf_kv_truncate(o->ctx->kv, pos);
    o->rounds++;
    *n_drafted = B - 1;
    return PF_RC_OK;
}

static pf_rc or_commit(void *st, const int32_t *tokens, int n, const float *taps, char err[PF_ERR_LEN]) {
    oracle *o = st;
    (void)taps;
    pf_batch b = {.tokens = tokens, .n = n};
    return pf_forward(o->ctx, &b, err);
}

static pf_drafter *oracle_new(const pf_model *m, int corrupt, float draft_temp) {
    char err[PF_ERR_LEN];
    oracle *o = calloc(1, sizeof *o);
    o->m = m;
    o->ctx = pf_ctx_new(m, 512, 1, NULL, err);
    o->lg = malloc((size_t)m->hp.n_vocab * sizeof(float));
    o->corrupt = corrupt;
    o->draft_temp = draft_temp;
    pf_drafter *d = calloc(1, sizeof *d);
    *d = (pf_drafter){.name = "oracle", .state = o, .begin = or_begin, .propose = or_propose, .commit = or_commit,
                      .deterministic = draft_temp <= 0};
    return d;
}

static void oracle_free(pf_drafter *d) {
    oracle *o = d->state;
    pf_ctx_free(o->ctx);
    free(o->lg);
    free(o);
    free(d);
}

static pf_gen_params params(int n, float temp, uint64_t seed) {
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.max_tokens = n;
    gp.temp = temp;
    gp.top_k = temp > 0 ? 6 : 0;
    gp.seed = seed;
    gp.stop_at_eot = false;
    return gp;
}

static void spec_done(pf_session *s, pf_spec *spec) {
    pf_api_use_strategy(s, NULL); /* before the strategy goes */
    pf_spec_free(spec);
}

/* A strategy over drafter d at block B made the session's, and its output for prompt into *got
 * (stats into *st unless NULL); spec_done takes it off again. NULL (the failure recorded) when it
 * cannot be made or run. */
static pf_spec *spec_generate(pf_session *s, pf_drafter *d, int B, const int32_t *prompt, int np, const pf_gen_params *gp,
                              test_seq *got, pf_gen_stats *st) {
    char err[PF_ERR_LEN];
    pf_spec *spec = pf_spec_new(&s->engine, d, B, err);
    if (spec) {
        pf_api_use_strategy(s, pf_spec_strategy(spec));
        if (pf_generate_tokens(s, prompt, np, gp, test_seq_push, got, st, err) == PF_OK) return spec;
        spec_done(s, spec);
    }
    pf_test_failf(__FILE__, __LINE__, "block %d: %s", B, err);
    return NULL;
}

/* 51 prompts x blocks 2..16 with the lookup draft; output equals plain decoding. */
TEST(spec_greedy_lossless_ngram_many_prompts_all_blocks) {
    test_tiny t;
    CHECK(test_tiny_open(&t, PF_TYPE_Q8_0, 11, 2, 256) == 0);
    char err[PF_ERR_LEN];
    int64_t accepted = 0;
    for (int i = 0; i < 51; i++) {
        int32_t prompt[32];
        int np;
        make_prompt(i, prompt, &np, t.m->hp.n_vocab);
        pf_gen_params gp = params(40, 0, 0);
        test_seq plain = {.n = 0};
        CHECK(pf_generate_tokens(t.s, prompt, np, &gp, test_seq_push, &plain, NULL, err) == PF_OK);
        for (int B = 2; B <= 16; B++) {
            if ((i + B) % 3) continue; /* every block size, a third of the prompts each */
            pf_drafter *d = pf_ngram_drafter_new(1, 3);
            test_seq got = {.n = 0};
            pf_spec *spec = spec_generate(t.s, d, B, prompt, np, &gp, &got, NULL);
            CHECK(spec);
            CHECKF(test_seq_same(&got, &plain),
                   "prompt %d block %d: speculative output differs", i, B);
            accepted += pf_spec_stats_get(spec)->tokens - pf_spec_stats_get(spec)->rounds;
            spec_done(t.s, spec);
            pf_drafter_free(d);
        }
    }
    CHECKF(accepted > 100, "the lookup draft never got accepted (%lld): test exercises nothing", (long long)accepted);
    test_tiny_close(&t);
}

/* Oracle drafts: every round accepts B-1, or exactly corrupt-1 with a corrupted position. */
TEST(spec_oracle_acceptance_and_rollback_arithmetic) {
    test_tiny t;
    CHECK(test_tiny_open(&t, PF_TYPE_Q4_1, 12, 1, 512) == 0);
    char err[PF_ERR_LEN];
    int32_t prompt[6] = {4, 8, 15, 16, 23, 42};
    pf_gen_params gp = params(61, 0, 0);
    test_seq plain = {.n = 0};
    CHECK(pf_generate_tokens(t.s, prompt, 6, &gp, test_seq_push, &plain, NULL, err) == PF_OK);
    for (int B = 2; B <= 16; B += 3) {
        for (int corrupt = 0; corrupt < B; corrupt += (B > 4 ? 3 : 1)) {
            pf_drafter *d = oracle_new(t.m, corrupt, 0);
            test_seq got = {.n = 0};
            pf_spec *spec = spec_generate(t.s, d, B, prompt, 6, &gp, &got, NULL);
            CHECK(spec);
            CHECKF(test_seq_same(&got, &plain),
                   "block %d corrupt %d: output differs", B, corrupt);
            const pf_spec_stats *st = pf_spec_stats_get(spec);
            int want = corrupt ? corrupt - 1 : B - 1;
            /* all rounds but possibly the last (cut by the length limit) accept exactly `want` */
            CHECKF(st->hist[want] >= st->rounds - 1, "block %d corrupt %d: hist[%d] = %lld of %lld rounds", B,
                   corrupt, want, (long long)st->hist[want], (long long)st->rounds);
            CHECK(st->tokens == 60); /* the first token comes from the prefill */
            /* the target cache holds exactly the committed rows: prompt + all but the last token */
            CHECK(t.s->engine.ctx->kv->len == 6 + 60);
            spec_done(t.s, spec);
            oracle_free(d);
        }
    }
    test_tiny_close(&t);
}

/* After a partially rejected round, the cache and the next logits equal plain decoding's. */
TEST(spec_rollback_cache_equals_plain) {
    pf_session_params sp = {.n_threads = 2, .n_ctx = 128};
    test_tiny t;
    CHECK(test_tiny_open(&t, PF_TYPE_F16, 13, 2, 128) == 0);
    pf_session *s2 = NULL;
    char err[PF_ERR_LEN];
    pf_session_new(t.m, &sp, &s2, err);
    int32_t prompt[5] = {100, 200, 300, 400, 500};
    pf_gen_params gp = params(20, 0, 0);
    test_seq plain = {.n = 0}, got = {.n = 0};
    CHECK(pf_generate_tokens(s2, prompt, 5, &gp, test_seq_push, &plain, NULL, err) == PF_OK);
    pf_drafter *d = oracle_new(t.m, 3, 0); /* rejects at position 3 every round */
    pf_spec *spec = spec_generate(t.s, d, 6, prompt, 5, &gp, &got, NULL);
    CHECK(spec);
    CHECK(test_seq_same(&got, &plain));
    CHECK(t.s->engine.ctx->kv->len == s2->engine.ctx->kv->len);
    const pf_kv_cache *a = t.s->engine.ctx->kv, *b = s2->engine.ctx->kv;
    for (int l = 0; l < t.m->hp.n_layer; l++) {
        size_t off = (size_t)l * a->n_ctx * a->kv_dim, n = (size_t)a->len * a->kv_dim * sizeof(pf_half);
        CHECK(!memcmp(a->k + off, b->k + off, n) && !memcmp(a->v + off, b->v + off, n));
    }
    /* next logits after the same last token */
    int32_t last = got.toks[got.n - 1];
    float *l1 = malloc((size_t)t.m->hp.n_vocab * 4), *l2 = malloc((size_t)t.m->hp.n_vocab * 4);
    pf_batch b1 = {.tokens = &last, .n = 1, .logits_mode = PF_LOGITS_LAST, .logits = l1};
    pf_batch b2 = {.tokens = &last, .n = 1, .logits_mode = PF_LOGITS_LAST, .logits = l2};
    CHECK(pf_forward(t.s->engine.ctx, &b1, err) == 0 && pf_forward(s2->engine.ctx, &b2, err) == 0);
    CHECK(!memcmp(l1, l2, (size_t)t.m->hp.n_vocab * 4));
    free(l1); free(l2);
    spec_done(t.s, spec);
    oracle_free(d);
    pf_session_free(s2);
    test_tiny_close(&t);
}

/* A point-mass draft with a fixed seed gives plain sampling's tokens exactly. */
TEST(spec_sampled_point_mass_same_tokens_as_plain) {
    test_tiny t;
    CHECK(test_tiny_open(&t, PF_TYPE_Q8_0, 14, 1, 256) == 0);
    char err[PF_ERR_LEN];
    for (int seed = 1; seed <= 12; seed++) {
        int32_t prompt[32];
        int np;
        make_prompt(seed, prompt, &np, t.m->hp.n_vocab);
        pf_gen_params gp = params(30, 0.8f, (uint64_t)seed);
        gp.top_k = 0;
        gp.top_p = 0.95f;
        test_seq plain = {.n = 0}, got = {.n = 0}, got2 = {.n = 0};
        CHECK(pf_generate_tokens(t.s, prompt, np, &gp, test_seq_push, &plain, NULL, err) == PF_OK);
        pf_drafter *d = oracle_new(t.m, 0, 0), *ng = pf_ngram_drafter_new(1, 3);
        pf_spec *spec = spec_generate(t.s, d, 5, prompt, np, &gp, &got, NULL);
        CHECK(spec);
        spec_done(t.s, spec);
        CHECK((spec = spec_generate(t.s, ng, 7, prompt, np, &gp, &got2, NULL)));
        spec_done(t.s, spec);
        CHECKF(test_seq_same(&got, &plain), "seed %d oracle", seed);
        CHECKF(test_seq_same(&got2, &plain), "seed %d ngram", seed);
        oracle_free(d);
        pf_drafter_free(ng);
    }
    test_tiny_close(&t);
}

typedef struct {
    pf_spec *spec;
    int64_t acc, drafted;
} spec_tally;

/* after each speculative generation: its accepted and drafted tokens */
static void tally_spec(void *u) {
    spec_tally *t = u;
    t->acc += pf_spec_stats_get(t->spec)->tokens - pf_spec_stats_get(t->spec)->rounds;
    t->drafted += pf_spec_stats_get(t->spec)->drafted;
}

/* Two-sample chi-square over (t1, t2, t3) outcomes of plain vs speculative sampling with a
 * stochastic draft (the target itself at a higher temperature). Categories with few counts are
 * pooled; threshold: the 0.999 quantile for the degrees of freedom (Wilson-Hilferty). */
TEST(spec_sampled_stochastic_draft_same_distribution) {
    test_tiny t;
    CHECK(test_tiny_open(&t, PF_TYPE_Q8_0, 15, 1, 64) == 0);
    char err[PF_ERR_LEN];
    int32_t prompt[4] = {7, 77, 177, 277};
    enum { RUNS = 3000, POS = 3 };
    int V = t.m->hp.n_vocab;
    pf_drafter *d = oracle_new(t.m, 0, 0.35f);
    pf_spec *spec = pf_spec_new(&t.s->engine, d, 4, err);
    spec_tally tally = {spec, 0, 0};
    test_sampling ts = {.s = t.s, .prompt = prompt, .n_prompt = 4, .runs = RUNS, .n_pos = POS, .n_vocab = V,
                        .seed_mul = 7919, .seed_add = 1, .strategy = pf_spec_strategy(spec), .after = tally_spec, .u = &tally};
    /* per position, counts over token ids for plain (0) and spec (1) */
    int *cnt = test_sample_counts(&ts, err);
    CHECKF(cnt, "%s", err);
    int64_t acc = tally.acc, drafted = tally.drafted;
    CHECKF(acc > drafted / 10 && acc < drafted, "acceptance %lld of %lld: both paths must be exercised", (long long)acc, (long long)drafted);
    char why[128];
    CHECKF(pf_chi2_positions_differ(cnt, POS, V, why, sizeof why) < 0, "%s", why);
    free(cnt);
    pf_spec_free(spec);
    oracle_free(d);
    test_tiny_close(&t);
}

/* Near the context limit blocks shrink; generation ends exactly where plain decoding ends. */
TEST(spec_shrinks_blocks_at_context_limit) {
    test_tiny t;
    CHECK(test_tiny_open(&t, PF_TYPE_Q8_0, 16, 1, 40) == 0);
    char err[PF_ERR_LEN];
    int32_t prompt[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    pf_gen_params gp = params(100, 0, 0);
    test_seq plain = {.n = 0}, got = {.n = 0};
    pf_gen_stats a, b;
    CHECK(pf_generate_tokens(t.s, prompt, 10, &gp, test_seq_push, &plain, &a, err) == PF_OK);
    pf_drafter *d = oracle_new(t.m, 0, 0);
    pf_spec *spec = spec_generate(t.s, d, 16, prompt, 10, &gp, &got, &b);
    CHECK(spec);
    CHECK(a.stop == PF_STOP_CONTEXT && b.stop == PF_STOP_CONTEXT && a.n_gen == b.n_gen);
    CHECK(test_seq_same(&got, &plain));
    spec_done(t.s, spec);
    oracle_free(d);
    test_tiny_close(&t);
}

/* The acceptance rule on hand-made logits. */
TEST(spec_accept_greedy_index_and_bonus) {
    enum { V = 5 };
    float lg[4 * V] = {0};
    lg[0 * V + 2] = 1; /* row 0 -> 2 */
    lg[1 * V + 3] = 1; /* row 1 -> 3 */
    lg[2 * V + 1] = 1; /* row 2 -> 1 */
    lg[3 * V + 4] = 1;
    int32_t d1[3] = {2, 3, 1}, d2[3] = {2, 4, 1}, d3[3] = {0, 3, 1}, bonus;
    CHECK(pf_accept_greedy(lg, V, d1, 3, &bonus) == 3 && bonus == 4);
    CHECK(pf_accept_greedy(lg, V, d2, 3, &bonus) == 1 && bonus == 3);
    CHECK(pf_accept_greedy(lg, V, d3, 3, &bonus) == 0 && bonus == 2);
    CHECK(pf_accept_greedy(lg, V, d1, 0, &bonus) == 0 && bonus == 2);
}

/* The sampled acceptance rule alone, on hand-made p and q very different from each other: the
 * first committed token (accepted draft or the residual draw) must follow p exactly, and the second
 * position must follow p of row 1 whenever row 0's draft was kept. 200k trials; chi-square 0.999
 * quantile for 4 degrees of freedom is 18.47. */
TEST(spec_accept_sampled_follows_target_distribution) {
    enum { V = 5, TRIALS = 200000 };
    float lg[2 * V] = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f, 0.0f, 1.5f, 0.2f, 0.9f, -0.3f};
    pf_sampling samp = {1.0f, 0, 1.0f};
    pf_dist p, resid, q[1], pr, pr1;
    pf_dist_init(&p, V); pf_dist_init(&resid, V); pf_dist_init(&q[0], V);
    pf_dist_init(&pr, V); pf_dist_init(&pr1, V);
    pf_sampling_probs(&samp, lg, V, &pr);
    pf_sampling_probs(&samp, lg + V, V, &pr1);
    /* q favours the tokens p likes least */
    float qp[V] = {0.02f, 0.08f, 0.1f, 0.3f, 0.5f};
    pf_rng rng;
    pf_rng_seed(&rng, 99);
    int c0[V] = {0}, c1[V] = {0}, kept = 0;
    for (int i = 0; i < TRIALS; i++) {
        q[0].n = V;
        for (int t = 0; t < V; t++) { q[0].ids[t] = t; q[0].p[t] = qp[t]; }
        int32_t d = pf_dist_sample(&q[0], &rng), bonus;
        int a = pf_accept_sampled(lg, V, &d, q, 1, 0, &samp, &rng, &p, &resid, &bonus);
        c0[a ? d : bonus]++;
        if (a) { kept++; c1[bonus]++; }
    }
    double chi0 = 0, chi1 = 0;
    for (int t = 0; t < V; t++) {
        double e0 = TRIALS * pf_dist_prob(&pr, t), e1 = kept * pf_dist_prob(&pr1, t);
        chi0 += (c0[t] - e0) * (c0[t] - e0) / e0;
        chi1 += (c1[t] - e1) * (c1[t] - e1) / e1;
    }
    CHECKF(kept > TRIALS / 20 && kept < TRIALS / 2, "kept %d", kept);
    CHECKF(chi0 < 18.47, "first token: chi-square %.1f", chi0);
    CHECKF(chi1 < 18.47, "bonus after a kept draft: chi-square %.1f", chi1);
    pf_dist_free(&p); pf_dist_free(&resid); pf_dist_free(&q[0]); pf_dist_free(&pr); pf_dist_free(&pr1);
}

/* Random DFlash and DFlash2 drafts (they reject almost everything): greedy output still equals
 * plain decoding for many prompts and block sizes, and sampled output with a fixed seed is
 * reproducible; the draft context stays in step with the target. */
TEST(spec_greedy_lossless_random_dflash_drafts) {
    char tpath[300], dpath[300], err[PF_ERR_LEN];
    snprintf(tpath, sizeof tpath, "%s/spec-df-target.gguf", pf_test_tmpdir());
    CHECK(pf_synth_write(pf_synth_shape_find("tiny"), PF_TYPE_Q8_0, false, 21, tpath, err) == 0);
    pf_model *m = pf_model_load(tpath, err);
    CHECK(m);
    pf_session_params sp = {.n_threads = 2, .n_ctx = 200};
    pf_session *s = NULL;
    pf_session_new(m, &sp, &s, err);
    for (int version = 1; version <= 2; version++) {
        snprintf(dpath, sizeof dpath, "%s/spec-df-v%d.gguf", pf_test_tmpdir(), version);
        CHECKF(pf_dflash_synth(tpath, version, 2, 8, NULL, 2, 5, false, dpath, err) == 0, "%s", err);
        pf_dflash *w = pf_dflash_load(dpath, m, err);
        CHECKF(w, "%s", err);
        for (int i = 0; i < 50; i++) {
            int32_t prompt[32];
            int np;
            make_prompt(i + 100, prompt, &np, m->hp.n_vocab);
            pf_gen_params gp = params(24, 0, 0);
            test_seq plain = {.n = 0}, got = {.n = 0};
            CHECK(pf_generate_tokens(s, prompt, np, &gp, test_seq_push, &plain, NULL, err) == PF_OK);
            int B = 2 + (i % 15);
            pf_drafter *d = NULL;
            pf_dflash_drafter_new(w, &s->engine, &d, err);
            CHECK(d);
            pf_spec *spec = spec_generate(s, d, B, prompt, np, &gp, &got, NULL);
            CHECK(spec);
            CHECKF(test_seq_same(&got, &plain),
                   "v%d prompt %d block %d: output differs", version, i, B);
            CHECK(pf_spec_stats_get(spec)->drafted > 0);
            if (i < 4) { /* sampled: same seed, same tokens */
                pf_gen_params g2 = params(20, 0.9f, (uint64_t)i + 1);
                pf_api_use_strategy(s, pf_spec_strategy(spec));
                test_seq a = {.n = 0}, b = {.n = 0};
                CHECK(pf_generate_tokens(s, prompt, np, &g2, test_seq_push, &a, NULL, err) == PF_OK);
                CHECK(pf_generate_tokens(s, prompt, np, &g2, test_seq_push, &b, NULL, err) == PF_OK);
                CHECK(a.n == 20 && test_seq_same(&a, &b));
            }
            spec_done(s, spec);
            pf_drafter_free(d);
        }
        pf_dflash_free(w);
    }
    pf_session_free(s);
    pf_model_free(m);
}

/* The committed trained pair: greedy speculative output equals plain decoding on eval prompts of
 * every task type, for DFlash and DFlash2 at block sizes 2..16, and the drafts are accepted. */
/* Greedy speculative decoding with draft w over one ChatML prompt, blocks B0, B0 + 3, .. <= 16,
 * each output compared with plain decoding in the same session; adds the drafts accepted to
 * *accepted. */
static void check_lossless_prompt(pf_session *s, pf_dflash *w, const char *prompt, int B0, const char *what,
                                  int64_t *accepted) {
    char err[PF_ERR_LEN];
    const pf_model *m = s->engine.model;
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK(test_chat_tokens(m, prompt, &ids, &n, err) == 0);
    pf_gen_params gp = params(40, 0, 0);
    gp.stop_at_eot = true;
    test_seq plain = {.n = 0};
    CHECK(pf_generate_tokens(s, ids, (int)n, &gp, test_seq_push, &plain, NULL, err) == PF_OK);
    for (int B = B0; B <= 16; B += 3) {
        pf_drafter *d = NULL;
        pf_dflash_drafter_new(w, &s->engine, &d, err);
        test_seq got = {.n = 0};
        pf_spec *spec = spec_generate(s, d, B, ids, (int)n, &gp, &got, NULL);
        CHECK(spec);
        CHECKF(test_seq_same(&got, &plain),
               "%s, block %d: speculative output differs from plain decoding", what, B);
        *accepted += pf_spec_stats_get(spec)->tokens - pf_spec_stats_get(spec)->rounds;
        spec_done(s, spec);
        pf_drafter_free(d);
    }
    free(ids);
}

static const char *const k_lossless_prompts[7] = {
    "Convert this description into JSON with the keys name, version, section.\n\nVersion 2.1-3 of libfoo is available. It belongs to the libs section.",
    "A shop sells 12 apples for 3 dollars each. How much do the apples cost?",
    "Write a Python function add(a, b) that returns the sum of a and b.",
    "Translate into Chinese: Open the file",
    "Summarize in one line: a library for parsing and writing JSON documents quickly and safely in C.",
    "What does serendipity mean?",
    "Continue this passage:\n\nThe morning was cold and the road was long."};

TEST(spec_greedy_lossless_trained_drafts) {
    char err[PF_ERR_LEN], what[160];
    pf_model *m = pf_model_load("models/pf-target-f16.gguf", err);
    CHECKF(m, "%s", err);
    static const char *const drafts[2] = {"models/pf-draft-dflash.gguf", "models/pf-draft-dflash2.gguf"};
    pf_session_params sp = {.n_threads = 2, .n_ctx = 512};
    pf_session *s = NULL;
    pf_session_new(m, &sp, &s, err);
    int64_t accepted = 0;
    for (int dv = 0; dv < 2; dv++) {
        pf_dflash *w = pf_dflash_load(drafts[dv], m, err);
        CHECKF(w, "%s", err);
        for (int pi = 0; pi < 7; pi++) {
            snprintf(what, sizeof what, "%s prompt %d", drafts[dv], pi);
            check_lossless_prompt(s, w, k_lossless_prompts[pi], 2 + (pi + dv) % 3, what, &accepted);
        }
        pf_dflash_free(w);
    }
    CHECKF(accepted > 200, "trained drafts accepted only %lld tokens", (long long)accepted);
    pf_session_free(s);
    pf_model_free(m);
}

/* With the 8-bit KV cache (on the SIMD levels), speculative output still equals plain decoding
 * with that cache: the verify pass writes and reads the same rows as one-row decoding. Where
 * AVX-512 runs, the AVX2 kernels (PF_KERNELS=avx2, other bits) are checked as well. The ARM64
 * levels share their float kernels (neon_float_gemm.h, neon_elementwise.h) and their integer
 * paths give the scalar bits (kernels_attention_levels_bitwise_scalar, kernels_attention_q8): one pass
 * at the best level covers them (a pass takes 12 minutes under qemu). */
TEST(spec_greedy_lossless_kv_q8) {
    char err[PF_ERR_LEN], what[160];
    pf_session_params sp = {.n_threads = 2, .n_ctx = 512, .kv_q8 = 1};
    const pf_level best = pf_best_level();
    if (!pf_kv_q8_usable(pf_kernels_get(best), err)) { /* refused on scalar (the CLI test checks the message) */
        pf_model *m = pf_model_load("models/pf-target-f16.gguf", err);
        CHECKF(m, "%s", err);
        pf_session *s = NULL;
        pf_session_new(m, &sp, &s, err);
        CHECK(!s && strstr(err, "SIMD kernels"));
        pf_model_free(m);
        return;
    }
    const pf_level low = best == PF_LEVEL_AVX512 ? PF_LEVEL_AVX2 : best;
    for (int pass = 0; pass < (low != best ? 2 : 1); pass++) {
        /* a model's kernels are chosen when it is loaded, so the cap is set around the load */
        if (pass) setenv("PF_KERNELS", pf_level_name(low), 1);
        pf_model *m = pf_model_load("models/pf-target-f16.gguf", err);
        if (pass) unsetenv("PF_KERNELS");
        CHECKF(m, "%s", err);
        pf_session *s = NULL;
        pf_session_new(m, &sp, &s, err);
        CHECKF(s && s->engine.ctx->kv->type == PF_KV_Q8, "%s", err);
        if (pass) CHECK(s->engine.ctx->k->level == low);
        pf_dflash *w = pf_dflash_load("models/pf-draft-dflash2.gguf", m, err);
        CHECKF(w, "%s", err);
        int64_t accepted = 0;
        for (int pi = pass; pi < 7; pi += 2) {
            snprintf(what, sizeof what, "8-bit cache, %s kernels, prompt %d", s->engine.ctx->k->name, pi);
            check_lossless_prompt(s, w, k_lossless_prompts[pi], 3 + pi % 2, what, &accepted);
        }
        CHECKF(accepted > 30, "%s: the draft was accepted only %lld times", s->engine.ctx->k->name, (long long)accepted);
        pf_dflash_free(w);
        pf_session_free(s);
        pf_model_free(m);
    }
}
