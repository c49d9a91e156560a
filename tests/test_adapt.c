/* The running cost model (verify/cost_model.h) and the adaptive round planner (verify/adapt.h):
 * priors are interpolated, estimates follow a drifting machine (and one outlier cannot rewrite
 * them), the same measurements give the same estimates, and the planner's choice follows the
 * acceptance it observes and the costs it measures. */
#include <math.h>
#include <string.h>

#include <stdlib.h>

#include "api/strategy.h"
#include "draft/draft_open.h"
#include "engine/chat.h"
#include "engine/tokenizer.h"
#include "test.h"
#include "util.h"
#include "verify/adapt.h"
#include "verify/strategies.h"

TEST(cost_model_prior_interpolates) {
    pf_cost_model cm;
    pf_cost_init(&cm, 16);
    double c[17] = {0}, d[17] = {0};
    c[4] = 1.4;
    c[8] = 2.2;
    d[4] = 0.2;
    pf_cost_set_prior(&cm, c, d, 17, 0.01);
    CHECKF(fabs(pf_cost_verify(&cm, 1) - 0.010) < 1e-12, "t(1) %g", pf_cost_verify(&cm, 1));
    CHECKF(fabs(pf_cost_verify(&cm, 2) - 0.01 * (1 + 0.4 / 3)) < 1e-12, "t(2) %g", pf_cost_verify(&cm, 2));
    CHECKF(fabs(pf_cost_verify(&cm, 6) - 0.018) < 1e-12, "t(6) %g", pf_cost_verify(&cm, 6));
    /* past the last known row count: its slope (0.2 per row) */
    CHECKF(fabs(pf_cost_verify(&cm, 16) - 0.01 * (2.2 + 8 * 0.2)) < 1e-12, "t(16) %g", pf_cost_verify(&cm, 16));
    /* one known draft cost: flat */
    CHECK(fabs(pf_cost_draft(&cm, 2) - 0.002) < 1e-12 && fabs(pf_cost_draft(&cm, 16) - 0.002) < 1e-12);
    pf_cost_model empty;
    pf_cost_init(&empty, 8);
    CHECK(pf_cost_verify(&empty, 3) == 0 && pf_cost_draft(&empty, 3) == 0);
}

/* A curve refitted through one measurement keeps its shape and t(1), takes the measured slope. */
TEST(cost_model_refit_scales_the_slope) {
    pf_cost_model cm;
    pf_cost_init(&cm, 8);
    double c[9] = {0}, d[9] = {0};
    for (int n = 1; n <= 8; n++) c[n] = 1 + 0.5 * (n - 1), d[n] = 0.05 * n;
    pf_cost_set_prior(&cm, c, d, 9, 0.01);
    pf_cost_refit(&cm, 4, 1.3); /* measured c(4) 1.3 against the prior's 2.5: slope x 0.2 */
    CHECKF(fabs(pf_cost_verify(&cm, 1) - 0.01) < 1e-12, "t(1) %g", pf_cost_verify(&cm, 1));
    CHECKF(fabs(pf_cost_verify(&cm, 4) / 0.01 - 1.3) < 1e-9, "c(4) %g", pf_cost_verify(&cm, 4) / 0.01);
    CHECKF(fabs(pf_cost_verify(&cm, 8) / 0.01 - 1.7) < 1e-9, "c(8) %g", pf_cost_verify(&cm, 8) / 0.01);
    CHECK(fabs(pf_cost_draft(&cm, 4) - 0.002) < 1e-12);
    pf_cost_refit(&cm, 4, 1000); /* bounded: at most 10x the slope */
    CHECKF(fabs(pf_cost_verify(&cm, 4) / 0.01 - 4.0) < 1e-9, "bounded c(4) %g", pf_cost_verify(&cm, 4) / 0.01);
    pf_cost_model flat;
    pf_cost_init(&flat, 8);
    for (int n = 1; n <= 8; n++) c[n] = 1;
    pf_cost_set_prior(&flat, c, NULL, 9, 0.01);
    pf_cost_refit(&flat, 4, 2.0); /* a flat curve has no slope to scale */
    CHECK(fabs(pf_cost_verify(&flat, 8) - 0.01) < 1e-12);
}

TEST(cost_model_follows_drift_and_resists_outliers) {
    pf_cost_model cm, twin;
    pf_cost_init(&cm, 16);
    double c[17] = {0};
    for (int n = 1; n <= 16; n++) c[n] = 1 + 0.2 * (n - 1);
    pf_cost_set_prior(&cm, c, NULL, 17, 0.01);
    twin = cm;
    double t16 = pf_cost_verify(&cm, 16), t3 = pf_cost_verify(&cm, 3);
    /* the machine's compute slows: 4-row forwards now take twice as long */
    double now = 2 * 0.01 * c[4];
    for (int i = 0; i < 40; i++) {
        pf_cost_observe_verify(&cm, 4, now);
        pf_cost_observe_verify(&twin, 4, now);
    }
    CHECKF(fabs(pf_cost_verify(&cm, 4) / now - 1) < 0.05, "t(4) %g vs %g", pf_cost_verify(&cm, 4), now);
    CHECKF(pf_cost_verify(&cm, 3) > 1.3 * t3, "neighbour t(3) %g did not follow (was %g)", pf_cost_verify(&cm, 3), t3);
    CHECKF(pf_cost_verify(&cm, 16) < 1.05 * t16, "far t(16) %g moved (was %g)", pf_cost_verify(&cm, 16), t16);
    /* deterministic given the measurements */
    CHECK(!memcmp(&cm, &twin, sizeof cm));
    /* one preempted forward (100x) moves the estimate by at most exp(rate * clamp) */
    double before = pf_cost_verify(&cm, 4);
    pf_cost_observe_verify(&cm, 4, 100 * now);
    CHECKF(pf_cost_verify(&cm, 4) <= before * exp(PF_COST_RATE * PF_COST_CLAMP) * (1 + 1e-12), "outlier: %g -> %g", before,
           pf_cost_verify(&cm, 4));
    /* overheads: running means, an outlier capped at 3x */
    pf_cost_observe_overhead(&cm, 0, 0.001);
    pf_cost_observe_overhead(&cm, 0, 1.0);
    CHECKF(cm.over_spec <= 0.001 * (1 + 2 * PF_COST_RATE) + 1e-12, "overhead %g", cm.over_spec);
}

/* A batch's forwards see the row counts its sequences use: at 8 sequences 8 rows and more, never
 * the counts below. A prior with one count measured high (a preempted calibration forward at 6
 * rows) must not stay under the counts the batch does see: the non-decreasing read would carry it
 * up to 8 rows and past them, a plateau on which the rows after the 8th look free. */
TEST(cost_model_rows_observations_bound_unseen_counts) {
    pf_cost_model cm, plain;
    pf_cost_init(&cm, PF_MAX_BLOCK);
    double c[PF_MAX_BLOCK + 1] = {0, 1, 1.05, 1.1, 1.12, 1.18, 1.9, 1.29, 1.39};
    for (int n = 9; n <= PF_MAX_BLOCK; n++) c[n] = c[8] * n / 8;
    pf_cost_set_prior(&cm, c, NULL, PF_MAX_BLOCK + 1, 0.004);
    plain = cm;
    double t8 = 0.004 * 1.45; /* what 8 rows over 8 sequences take */
    for (int i = 0; i < 40; i++) {
        pf_cost_observe_rows(&cm, 8, t8);
        pf_cost_observe_verify(&plain, 8, t8);
    }
    CHECKF(fabs(pf_cost_verify(&cm, 8) / t8 - 1) < 0.05, "t(8) %g vs %g measured", pf_cost_verify(&cm, 8), t8);
    CHECKF(pf_cost_verify(&cm, 9) > 1.02 * pf_cost_verify(&cm, 8), "t(9) %g: no slope after t(8) %g",
           pf_cost_verify(&cm, 9), pf_cost_verify(&cm, 8));
    /* what the unbounded observations leave: the stale 6-row value read at 8 and 9 rows */
    CHECKF(pf_cost_verify(&plain, 9) < 1.001 * pf_cost_verify(&plain, 8) && pf_cost_verify(&plain, 8) > 1.2 * t8,
           "the plain observations' t(8) %g, t(9) %g", pf_cost_verify(&plain, 8), pf_cost_verify(&plain, 9));
    /* any sequence of observations keeps the stored curve ordered, so it reads as stored */
    uint64_t x = 12345;
    for (int i = 0; i < 2000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        int n = 1 + (int)((x >> 33) % PF_MAX_BLOCK);
        double t = 0.004 * (1 + 0.05 * n) * (0.5 + (double)((x >> 20) % 1000) / 1000);
        pf_cost_observe_rows(&cm, n, t);
        for (int k = 2; k <= PF_MAX_BLOCK; k++)
            if (cm.log_t[k] < cm.log_t[k - 1]) {
                CHECKF(0, "after %d observations t(%d) < t(%d)", i + 1, k, k - 1);
                return;
            }
    }
}

/* A machine where t(n) = t1 * (1 + slope * (n - 1)) and drafting costs 0.05 t1 per row. */
static void machine(pf_adapt *a, double slope, int observe_rows) {
    double c[65] = {0}, d[65] = {0};
    for (int n = 1; n <= 16; n++) {
        c[n] = 1 + slope * (n - 1);
        d[n] = 0.05 * n;
    }
    if (!observe_rows) {
        pf_cost_set_prior(&a->cost, c, d, 17, 0.01);
        return;
    }
    for (int rep = 0; rep < 60; rep++)
        for (int n = 1; n <= 16; n++) pf_cost_observe_verify(&a->cost, n, 0.01 * c[n]);
}

/* Rounds where the target keeps a draft with probability p at every position (deterministic). */
static void feed_acceptance(pf_adapt *a, double p, int rounds, int n) {
    unsigned x = 12345;
    for (int r = 0; r < rounds; r++) {
        int kept = 0;
        for (int k = 1; k <= n; k++) {
            x = x * 1103515245u + 12345u;
            if ((double)(x >> 8) / (double)(1u << 24) >= p) break;
            kept++;
        }
        pf_adapt_observe(a, n, kept);
    }
}

TEST(adapt_block_follows_acceptance_and_cost) {
    pf_adapt a;
    pf_adapt_init(&a, 16, NULL, NULL, 0);
    CHECK(pf_adapt_plan(&a, NULL, 16) == 16); /* nothing measured: draft the most, to learn */
    machine(&a, 0.1, 0);
    /* drafts almost always kept on a cheap-to-verify machine: the largest block */
    feed_acceptance(&a, 0.97, 60, 15);
    int big = pf_adapt_plan(&a, NULL, 16);
    CHECKF(big >= 12, "high acceptance, cheap rows: block %d", big);
    CHECK(pf_adapt_plan(&a, NULL, 5) <= 5); /* the cap (length, context) */
    /* the machine's compute slows down (the same acceptance): the running estimates see it in the
     * rounds' measured times and the block shrinks */
    machine(&a, 0.6, 1);
    int small = pf_adapt_plan(&a, NULL, 16);
    CHECKF(small < big && small >= 2, "expensive rows: block %d (was %d)", small, big);
    /* drafts never kept: plain steps, with a probe round after 1, 2, 4, .. plain steps */
    pf_adapt b;
    pf_adapt_init(&b, 8, NULL, NULL, 0);
    machine(&b, 0.1, 0);
    feed_acceptance(&b, 0.0, 80, 7);
    int plain = 0, probes = 0;
    for (int step = 0; step < 64; step++) {
        int rows = pf_adapt_plan(&b, NULL, 8);
        if (rows == 1) plain++;
        else probes++;
    }
    CHECKF(plain > 50 && probes >= 3 && probes <= 8, "hopeless drafts: %d plain steps, %d probes", plain, probes);
}

TEST(adapt_prior_sets_the_first_choice) {
    /* a profile's acceptance prior (high for 3 positions, then nothing) picks a block of about 4 */
    double alpha[15] = {0.95, 0.95, 0.95};
    pf_adapt a;
    pf_adapt_init(&a, 16, NULL, alpha, 15);
    machine(&a, 0.1, 0);
    int rows = pf_adapt_plan(&a, NULL, 16);
    CHECKF(rows == 4, "prior: block %d", rows);
    CHECKF(fabs(pf_adapt_survival(&a, 2) - 0.95) < 1e-12 && pf_adapt_survival(&a, 5) == 0, "survival %g %g",
           pf_adapt_survival(&a, 2), pf_adapt_survival(&a, 5));
    /* observations outweigh the prior */
    feed_acceptance(&a, 0.97, 60, 15);
    CHECKF(pf_adapt_plan(&a, NULL, 16) > 6, "after observing long accepted runs: block %d", pf_adapt_plan(&a, NULL, 16));
}

/* A plain step's rows reach the drafter with the next drafting round: that deferred cost counts
 * against plain steps. With drafts kept 15% of the time a plain step wins on verify time alone;
 * once handing a row to the drafter is seen to cost 0.1 t(1), drafting two rows wins. */
TEST(adapt_plain_steps_pay_their_deferred_context) {
    double alpha[15];
    for (int k = 0; k < 15; k++) alpha[k] = 0.15;
    pf_adapt a, b;
    pf_adapt_init(&a, 8, NULL, alpha, 15);
    machine(&a, 0.1, 0);
    b = a;
    CHECK(pf_adapt_plan(&a, NULL, 8) == 1);
    for (int i = 0; i < 10; i++) pf_cost_observe_flush(&b.cost, 4, 4 * 0.001);
    CHECKF(fabs(b.cost.flush_row - 0.001) < 1e-12, "flush per row %g", b.cost.flush_row);
    int rows = pf_adapt_plan(&b, NULL, 8);
    CHECKF(rows >= 2, "with the deferred context counted: %d rows", rows);
    /* a preempted flush counts as at most 3x the running mean; a frozen model ignores it */
    pf_cost_observe_flush(&b.cost, 1, 1.0);
    CHECKF(b.cost.flush_row <= 0.001 * (1 + 2 * PF_COST_RATE) + 1e-12, "flush %g", b.cost.flush_row);
    b.cost.frozen = 1;
    double was = b.cost.flush_row;
    pf_cost_observe_flush(&b.cost, 2, 0.5);
    CHECK(b.cost.flush_row == was);
}

typedef struct { int32_t toks[256]; int n; } adapt_seq;

static int adapt_on_tok(void *u, int32_t t) {
    adapt_seq *s = u;
    if (s->n < 256) s->toks[s->n++] = t;
    return 0;
}

/* The default strategy (PF_SPEC_DEFAULT through the library: adaptive Dec with the DFlash2 draft's head, the adaptive
 * block with the head-less DFlash draft) and a profile-style prior: greedy output equals plain
 * decoding on prompts of several task types, one strategy object carried across the prompts (its
 * estimates persist), and it drafts. */
TEST(adapt_default_strategy_lossless_trained_drafts) {
    static const char *const prompts[5] = {
        "Convert this description into JSON with the keys name, version, section.\n\nVersion 2.1-3 of libfoo is available.",
        "A shop sells 12 apples for 3 dollars each. How much do the apples cost?",
        "Write a Python function add(a, b) that returns the sum of a and b.",
        "Translate into Chinese: Open the file",
        "What does serendipity mean?"};
    static const char *const drafts[2] = {"models/pf-draft-dflash.gguf", "models/pf-draft-dflash2.gguf"};
    char err[PF_ERR_LEN];
    pf_model *m = pf_model_load("models/pf-target-f16.gguf", err);
    CHECKF(m, "%s", err);
    pf_session_params sp = {.n_threads = 2, .n_ctx = 512};
    pf_session *s = NULL;
    pf_session_new(m, &sp, &s, err);
    CHECK(s);
    pf_draft *loaded[2] = {NULL, NULL}; /* freed after the session, whose strategy borrows them */
    for (int dv = 0; dv < 2; dv++) {
        pf_dflash *w = NULL;
        pf_dec *dec = NULL;
        pf_strategy_desc probe = {0};
        CHECKF(pf_draft_open(m, drafts[dv], &w, &dec, err) == 0, "%s", err);
        pf_strategy_desc_draft(&probe, w, dec);
        CHECK(probe.has_draft && probe.draft_block >= 4 && probe.draft_has_dec == (dv == 1) && (dec != NULL) == (dv == 1));
        pf_dec_free(dec);
        pf_dflash_free(w);
        pf_load_draft(m, drafts[dv], &loaded[dv], err);
        CHECKF(loaded[dv], "%s", err);
        pf_spec *spec = test_library_spec(s, loaded[dv], PF_SPEC_DEFAULT, 0, err);
        CHECKF(spec, "%s", err);
        CHECK(pf_spec_is_adaptive(spec) && pf_spec_block(spec) >= 4); /* the draft's trained block */
        int64_t draft_rounds = 0; /* rounds that ran the draft, over the prompts */
        for (int pi = 0; pi < 5; pi++) {
            int32_t *ids = NULL;
            size_t n = 0;
            CHECK(test_chat_tokens(m, prompts[pi], &ids, &n, err) == 0);
            pf_gen_params gp;
            pf_gen_params_default(&gp);
            gp.max_tokens = 40;
            adapt_seq plain = {.n = 0}, got = {.n = 0};
            pf_api_use_strategy(s, NULL);
            CHECK(pf_generate_tokens(s, ids, (int)n, &gp, adapt_on_tok, &plain, NULL, err) == PF_OK);
            pf_api_use_strategy(s, pf_spec_strategy(spec));
            CHECKF(pf_generate_tokens(s, ids, (int)n, &gp, adapt_on_tok, &got, NULL, err) == PF_OK, "%s", err);
            CHECKF(got.n == plain.n && !memcmp(got.toks, plain.toks, sizeof(int32_t) * (size_t)got.n),
                   "%s prompt %d: the default strategy's output differs from plain decoding", drafts[dv], pi);
            const pf_spec_stats *st = pf_spec_stats_get(spec);
            draft_rounds += st->draft_rounds;
            int64_t rows = 0;
            for (int k = 1; k <= pf_spec_block(spec); k++) rows += st->verified_rows[k];
            CHECK(rows == st->rounds);
            /* sampled: it drafts point masses, so a seed gives exactly plain sampling's tokens
             * whatever the timing-driven decisions were */
            gp.temp = 0.8f;
            gp.seed = (uint64_t)pi + 7;
            pf_api_use_strategy(s, NULL);
            plain.n = got.n = 0;
            CHECK(pf_generate_tokens(s, ids, (int)n, &gp, adapt_on_tok, &plain, NULL, err) == PF_OK);
            pf_api_use_strategy(s, pf_spec_strategy(spec));
            CHECK(pf_generate_tokens(s, ids, (int)n, &gp, adapt_on_tok, &got, NULL, err) == PF_OK);
            CHECKF(got.n == plain.n && !memcmp(got.toks, plain.toks, sizeof(int32_t) * (size_t)got.n),
                   "%s prompt %d: sampled output differs from plain sampling with the same seed", drafts[dv], pi);
            free(ids);
        }
        /* on this small target drafting costs about half a target pass, so the planner mostly takes
         * plain steps; its probe rounds still draft (at least one per 16 plain steps) */
        CHECKF(draft_rounds > 0, "%s: the default strategy never ran its draft", drafts[dv]);
    }
    pf_session_free(s);
    for (int dv = 0; dv < 2; dv++) pf_free_draft(loaded[dv]);
    pf_model_free(m);
}
