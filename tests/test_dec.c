/* Dec gating: the decision head only changes how much is verified, never the output; extreme
 * heads verify everything / nothing; the round log has the documented layout; dec-attach stores
 * the head so that pf_dec_survival reproduces the formula. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "api/strategy.h"
#include "convert/dec_attach.h"
#include "draft/block.h"
#include "draft/dec.h"
#include "draft/dflash_drafter.h"
#include "convert/dflash_synth.h"
#include "convert/synth.h"
#include "test.h"
#include "util.h"
#include "verify/adapt.h"
#include "verify/spec.h"

typedef struct {
    char target[300], draft[300];
    pf_model *m;
    pf_dflash *w;
    pf_session *s; /* setup_with_session's */
} fixture;

static int setup(fixture *f) {
    char err[PF_ERR_LEN];
    f->s = NULL;
    snprintf(f->target, sizeof f->target, "%s/dec-target.gguf", pf_test_tmpdir());
    snprintf(f->draft, sizeof f->draft, "%s/dec-draft.gguf", pf_test_tmpdir());
    if (pf_synth_write(pf_synth_shape_find("tiny"), PF_TYPE_Q8_0, false, 31, f->target, err) < 0) return -1;
    if (pf_dflash_synth(f->target, 1, 1, 8, NULL, 2, 9, false, f->draft, err) != PF_RC_OK) return -1;
    f->m = pf_model_load(f->target, err);
    f->w = f->m ? pf_dflash_load(f->draft, f->m, err) : NULL;
    return f->w ? 0 : -1;
}

/* setup, and a session on the target: 2 threads, 256 positions. */
static int setup_with_session(fixture *f) {
    char err[PF_ERR_LEN];
    if (setup(f) < 0) return -1;
    pf_session_params sp = {.n_threads = 2, .n_ctx = 256};
    return pf_session_new(f->m, &sp, &f->s, err) == PF_OK ? 0 : -1;
}

static void teardown(fixture *f) {
    pf_session_free(f->s);
    pf_dflash_free(f->w);
    pf_model_free(f->m);
}

/* A head with weights w = scale * (deterministic pattern) and the given bias. */
static pf_dec *make_head(const fixture *f, float scale, float bias, const char *name) {
    char path[400], err[PF_ERR_LEN];
    int H = f->m->hp.n_embd;
    float *w = malloc((size_t)2 * H * sizeof(float)), pb[8];
    for (int i = 0; i < 2 * H; i++) w[i] = scale * (float)(((i * 37) % 11) - 5) / 5.0f;
    for (int k = 0; k < 8; k++) pb[k] = -0.3f * (float)k;
    snprintf(path, sizeof path, "%s/%s.gguf", pf_test_tmpdir(), name);
    pf_rc r = pf_dec_attach(f->draft, w, H, bias, pb, 8, path, err);
    free(w);
    pf_dec *d = NULL;
    if (r == PF_RC_OK) pf_dec_load_path(path, H, &d, err);
    return d;
}

TEST(dec_attach_round_trip_and_formula) {
    fixture f;
    CHECK(setup(&f) == 0);
    pf_dec *d = make_head(&f, 0.01f, 0.5f, "head-a");
    CHECK(d);
    int H = f.m->hp.n_embd;
    float *ht = malloc((size_t)H * 4), *hd = malloc((size_t)3 * H * 4), s[2];
    for (int i = 0; i < H; i++) ht[i] = (float)sin(i * 0.1);
    for (int i = 0; i < 3 * H; i++) hd[i] = (float)cos(i * 0.07);
    pf_dec_survival(d, ht, hd, 2, s);
    for (int k = 1; k <= 2; k++) {
        double z = 0.5 - 0.3 * (k - 1);
        for (int i = 0; i < 2 * H; i++) {
            double wi = 0.01 * (double)(((i * 37) % 11) - 5) / 5.0;
            z += wi * (i < H ? ht[i] : hd[(size_t)k * H + i - H]);
        }
        CHECKF(fabs(s[k - 1] - 1 / (1 + exp(-z))) < 1e-5, "k %d: %g vs %g", k, s[k - 1], 1 / (1 + exp(-z)));
    }
    /* the draft with a head still loads as a draft */
    char err[PF_ERR_LEN], path[400];
    snprintf(path, sizeof path, "%s/head-a.gguf", pf_test_tmpdir());
    pf_dflash *w2 = pf_dflash_load(path, f.m, err);
    CHECKF(w2, "%s", err);
    pf_dflash_free(w2);
    pf_dec *none;
    CHECK(pf_dec_load_path(f.draft, H, &none, err) == PF_RC_FORMAT && !none && strstr(err, "dec.weight"));
    /* stripped again: no dec.* tensor or key left, the same tensor count as the bare draft, still a draft */
    char bare[400];
    snprintf(bare, sizeof bare, "%s/head-a-stripped.gguf", pf_test_tmpdir());
    CHECKF(pf_dec_strip(path, bare, err) == 0, "%s", err);
    gguf_file *g0 = NULL, *g1 = NULL;
    pf_rc orc = gguf_open_file(f.draft, &g0, err);
    if (orc == PF_RC_OK) orc = gguf_open_file(bare, &g1, err);
    CHECKF(orc == PF_RC_OK, "%s", err);
    CHECKF(g1->n_tensors == g0->n_tensors, "%lld tensors after strip, %lld in the bare draft", (long long)g1->n_tensors,
           (long long)g0->n_tensors);
    CHECK(!gguf_find_tensor(g1, "dec.weight") && !gguf_find_tensor(g1, "dec.bias"));
    CHECK(!gguf_find(g1, "dflash.dec.positions"));
    gguf_close(g0);
    gguf_close(g1);
    CHECK(pf_dec_load_path(bare, H, &none, err) == PF_RC_FORMAT && !none && strstr(err, "dec.weight"));
    w2 = pf_dflash_load(bare, f.m, err);
    CHECKF(w2, "%s", err);
    pf_dflash_free(w2);
    free(ht);
    free(hd);
    pf_dec_free(d);
    teardown(&f);
}

/* Greedy output equals plain decoding whatever the head says; extreme heads verify all or none. */
TEST(dec_gating_lossless_and_extremes) {
    fixture f;
    CHECK(setup_with_session(&f) == 0);
    char err[PF_ERR_LEN];
    struct { float scale, bias; } heads[3] = {{0.02f, 0}, {0, 30}, {0, -30}};
    for (int h = 0; h < 3; h++) {
        char name[32];
        snprintf(name, sizeof name, "head-%d", h);
        pf_dec *dec = make_head(&f, heads[h].scale, heads[h].bias, name);
        CHECK(dec);
        for (int p = 0; p < 12; p++) {
            int32_t prompt[8];
            for (int i = 0; i < 8; i++) prompt[i] = (int32_t)((p * 53 + i * (p % 3 ? 7 : 0) + 1) % 400);
            pf_gen_params gp = test_gen_fixed(30);
            test_seq plain = {.n = 0}, got = {.n = 0};
            CHECK(pf_generate_tokens(f.s, prompt, 8, &gp, test_seq_push, &plain, NULL, err) == PF_OK);
            pf_drafter *d = NULL;
            pf_dflash_drafter_new(f.w, &f.s->engine, &d, err);
            pf_spec *spec = pf_spec_new(&f.s->engine, d, 6, err);
            /* c(n) = 1 + 0.1 (n-1), held fixed (not refreshed by this machine's timings) and drafting
             * free: only the head decides */
            double cost[8];
            for (int n = 0; n < 8; n++) cost[n] = 1 + 0.1 * (n - 1);
            pf_spec_prior prior = {.c = cost, .n = 8, .fixed = 1};
            CHECK(pf_spec_set_adaptive(spec, dec, &prior, err) == 0);
            pf_api_use_strategy(f.s, pf_spec_strategy(spec));
            CHECK(pf_generate_tokens(f.s, prompt, 8, &gp, test_seq_push, &got, NULL, err) == PF_OK);
            CHECKF(test_seq_same(&got, &plain),
                   "head %d prompt %d: output differs", h, p);
            const pf_spec_stats *st = pf_spec_stats_get(spec);
            /* a confident head verifies every draft of the rounds that draft (the last rounds are
             * shortened by the length limit; rounds may also skip drafting when the draft costs more
             * than it can gain, which is the same decision for any head) */
            if (h == 1) CHECKF(st->pos_tried[0] > 0 && st->pos_tried[4] >= st->pos_tried[0] - 5,
                               "confident head: %lld rounds verified a draft, %lld verified 5",
                               (long long)st->pos_tried[0], (long long)st->pos_tried[4]);
            if (h == 2) CHECKF(st->drafted == 0, "hopeless head still verified %lld drafts", (long long)st->drafted);
            pf_api_use_strategy(f.s, NULL); /* before the strategy goes */
            pf_spec_free(spec);
            pf_drafter_free(d);
        }
        pf_dec_free(dec);
    }
    teardown(&f);
}

/* The round log: one record per full round, in the documented layout. */
TEST(dec_round_log_layout) {
    fixture f;
    CHECK(setup(&f) == 0);
    char err[PF_ERR_LEN], path[400];
    snprintf(path, sizeof path, "%s/rounds.bin", pf_test_tmpdir());
    pf_session *s = NULL;
    pf_session_new(f.m, NULL, &s, err);
    pf_drafter *d = NULL;
    pf_dflash_drafter_new(f.w, &s->engine, &d, err);
    pf_spec *spec = pf_spec_new(&s->engine, d, 5, err);
    FILE *log = fopen(path, "wb");
    CHECK(pf_spec_set_log(spec, log, err) == 0);
    pf_gen_params gp = test_gen_fixed(41); /* 40 tokens from rounds */
    pf_api_use_strategy(s, pf_spec_strategy(spec));
    int32_t prompt[5] = {3, 1, 4, 1, 5};
    test_seq got = {.n = 0}, plain = {.n = 0};
    CHECK(pf_generate_tokens(s, prompt, 5, &gp, test_seq_push, &got, NULL, err) == PF_OK);
    fclose(log);
    pf_api_use_strategy(s, NULL);
    CHECK(pf_generate_tokens(s, prompt, 5, &gp, test_seq_push, &plain, NULL, err) == PF_OK);
    CHECK(test_seq_same(&got, &plain));
    FILE *in = fopen(path, "rb");
    int records = 0, H = f.m->hp.n_embd;
    int32_t hdr[4];
    while (fread(hdr, sizeof hdr, 1, in) == 1) {
        CHECK(hdr[0] == 0x52434544 && hdr[1] == H && hdr[2] >= 1 && hdr[2] <= 4 && hdr[3] >= 0 && hdr[3] <= hdr[2]);
        CHECK(fseek(in, (long)sizeof(float) * H * (hdr[2] + 2), SEEK_CUR) == 0);
        records++;
    }
    fclose(in);
    const pf_spec_stats *st = pf_spec_stats_get(spec);
    /* every round but possibly the last (shortened by the length limit) is logged */
    CHECKF(records >= st->rounds - 1 && records <= st->rounds, "%d records for %lld rounds", records, (long long)st->rounds);
    pf_api_use_strategy(s, NULL); /* before the strategy goes */
    pf_spec_free(spec);
    pf_drafter_free(d);
    pf_session_free(s);
    teardown(&f);
}

/* A planner with the Dec head `head`, up to 8 rows, and a fixed cost prior: t(1) 10 ms, c(n) =
 * 1 + 0.1 (n - 1), drafting n rows 0.02 n of t(1). */
static void head_adapt(pf_adapt *a, const pf_dec *head) {
    double c[10] = {0}, d[10] = {0};
    for (int n = 1; n <= 9; n++) c[n] = 1 + 0.1 * (n - 1), d[n] = 0.02 * n;
    pf_adapt_init(a, 8, head, NULL, 0);
    pf_cost_set_prior(&a->cost, c, d, 10, 0.01);
}

/* A head (make_head's scale and bias) on the fixture, its planner (head_adapt) and zero target and
 * draft rows: what the calibration tests drive round by round. */
typedef struct {
    fixture f;
    pf_dec *head;
    float *ht, *hd;
    pf_adapt a;
} head_rounds;

static int head_rounds_open(head_rounds *r, float scale, float bias, const char *name) {
    r->head = NULL, r->ht = r->hd = NULL;
    if (setup(&r->f) < 0 || !(r->head = make_head(&r->f, scale, bias, name))) return -1;
    int H = r->f.m->hp.n_embd;
    r->ht = calloc((size_t)H, sizeof(float));
    r->hd = calloc((size_t)8 * H, sizeof(float));
    head_adapt(&r->a, r->head);
    return r->ht && r->hd ? 0 : -1;
}

static void head_rounds_close(head_rounds *r) {
    free(r->ht), free(r->hd);
    pf_dec_free(r->head);
    teardown(&r->f);
}

/* The head's online calibration: a head that predicts almost nothing survives (bias -3) while
 * every verified draft is kept learns to verify more; one that predicts everything survives
 * (bias +3) while only the first draft is ever kept learns to verify less; the offsets stay
 * bounded and move only at the positions seen. */
TEST(dec_calibration_follows_kept_drafts) {
    head_rounds hr;
    CHECK(head_rounds_open(&hr, 0.0f, -2.0f, "head-pessimist") == 0);
    pf_dec *hi = make_head(&hr.f, 0.0f, 3.0f, "head-optimist");
    CHECK(hi);
    float *ht = hr.ht, *hd = hr.hd;
    pf_adapt a = hr.a, b;
    head_adapt(&b, hi);
    /* each round as the engine runs it: plan (the head's target half), then choose after drafting */
    pf_adapt_plan(&a, ht, 8), pf_adapt_plan(&b, ht, 8);
    int a0 = pf_adapt_choose(&a, ht, hd, 7), b0 = pf_adapt_choose(&b, ht, hd, 7);
    CHECKF(a0 <= 1 && b0 >= 6, "before: pessimist verifies %d, optimist %d", a0, b0);
    for (int r = 0; r < 300; r++) {
        pf_adapt_plan(&a, ht, 8), pf_adapt_choose(&a, ht, hd, 7);
        pf_adapt_observe(&a, 7, 7); /* e.g. probe rounds: all seven verified and kept */
        pf_adapt_plan(&b, ht, 8), pf_adapt_choose(&b, ht, hd, 7);
        pf_adapt_observe(&b, 7, 1); /* one kept: positions 1 (kept) and 2 (not) are seen */
    }
    pf_adapt_plan(&a, ht, 8), pf_adapt_plan(&b, ht, 8);
    int a1 = pf_adapt_choose(&a, ht, hd, 7), b1 = pf_adapt_choose(&b, ht, hd, 7);
    CHECKF(a1 >= 5 && b1 <= 3, "after: pessimist verifies %d, optimist %d", a1, b1);
    for (int k = 0; k < PF_MAX_BLOCK; k++)
        CHECK(fabs(a.cal[k]) <= PF_ADAPT_CAL_MAX && fabs(b.cal[k]) <= PF_ADAPT_CAL_MAX);
    CHECK(a.cal[0] > 2.5 && b.cal[1] < -2.5 && b.cal[2] == 0); /* position 3 was never seen by b */
    pf_dec_free(hi);
    head_rounds_close(&hr);
}

/* What the batch's row budget plans with (pf_adapt_survival_kept): an optimist head's drafts that
 * are never kept read as seldom kept after three rounds, while the head's own estimate still
 * promises most of them; without a head it is the running acceptance, pf_adapt_survival's. */
TEST(dec_survival_kept_reads_the_kept_drafts) {
    head_rounds hr;
    CHECK(head_rounds_open(&hr, 0.0f, 3.0f, "head-optimist-kept") == 0);
    float *ht = hr.ht, *hd = hr.hd;
    pf_adapt a = hr.a, plain;
    head_adapt(&plain, NULL);
    for (int r = 0; r < 3; r++) {
        pf_adapt_plan(&a, ht, 8), pf_adapt_choose(&a, ht, hd, 7);
        pf_adapt_observe(&a, 7, 0);
        pf_adapt_observe(&plain, 3, 1);
    }
    pf_adapt_target(&a, ht);
    double head = pf_adapt_survival(&a, 1), kept = pf_adapt_survival_kept(&a, 1);
    CHECKF(head > 0.8 && kept < 0.35, "position 1: the head says %.3f, the kept drafts %.3f", head, kept);
    for (int k = 1; k <= 4; k++)
        CHECKF(pf_adapt_survival_kept(&plain, k) == pf_adapt_survival(&plain, k), "headless position %d: %.3f, %.3f", k,
               pf_adapt_survival_kept(&plain, k), pf_adapt_survival(&plain, k));
    CHECK(pf_adapt_survival_kept(&plain, 1) > 0.8 && pf_adapt_survival_kept(&plain, 2) < 0.4);
    head_rounds_close(&hr);
}

/* The calibration's slope: a head whose logit spreads wide while the drafts are kept about half the
 * time whatever it says (overconfident) has its slope shrunk toward 0 and its extreme predictions
 * pulled to the middle; a head whose logit is right (outcomes drawn from its own sigmoid) keeps a
 * slope near 1. */
TEST(dec_calibration_slope_shrinks_an_overconfident_head) {
    head_rounds hr;
    CHECK(head_rounds_open(&hr, 1.0f, 0.0f, "head-spread") == 0);
    int H = hr.f.m->hp.n_embd;
    float *ht = hr.ht, *hd = hr.hd;
    for (int honest = 0; honest < 2; honest++) {
        pf_adapt a = hr.a; /* a fresh planner for each kind of outcome */
        unsigned x = 777;
        double zabs = 0, p_ext = 0;
        int n_ext = 0;
        for (int r = 0; r < 600; r++) {
            for (int i = 0; i < H; i++) { /* a target state that moves the head's logit each round */
                x = x * 1103515245u + 12345u;
                ht[i] = (float)((double)(x >> 8) / (double)(1u << 24) * 2 - 1);
            }
            pf_adapt_plan(&a, ht, 8);
            pf_adapt_choose(&a, ht, hd, 1);
            double z = a.last_z[0], p_true = honest ? 1 / (1 + exp(-z)) : 0.5;
            x = x * 1103515245u + 12345u;
            int kept = (double)(x >> 8) / (double)(1u << 24) < p_true;
            zabs += fabs(z);
            if (r >= 400 && fabs(z) > 2) p_ext += fabs(a.last_sk[0] - 0.5), n_ext++;
            pf_adapt_observe(&a, 1, kept);
        }
        CHECKF(zabs / 600 > 1.5, "the test head's logit should spread (mean |z| %g)", zabs / 600);
        CHECK(a.cal_slope >= PF_ADAPT_SLOPE_MIN && a.cal_slope <= PF_ADAPT_SLOPE_MAX);
        if (honest) CHECKF(a.cal_slope > 0.75 && a.cal_slope < 1.3, "a calibrated head's slope moved to %g", a.cal_slope);
        else {
            CHECKF(a.cal_slope < 0.5, "an overconfident head's slope stayed %g", a.cal_slope);
            CHECKF(n_ext > 20 && p_ext / n_ext < 0.3, "extreme logits still predict %g from 0.5", p_ext / (n_ext ? n_ext : 1));
        }
    }
    head_rounds_close(&hr);
}

/* The offsets' first steps are large (1/(4 + observations)): ten rounds in which every draft is
 * kept move a head that predicts 0.12 to above 0.5, its position-1 offset by more than 0.6 (at the
 * floor rate, 0.05, by 0.32, and the survival to 0.46); once a position has been seen for hundreds
 * of rounds one observation moves its offset by the floor rate at most. */
TEST(dec_calibration_starts_fast) {
    head_rounds hr;
    CHECK(head_rounds_open(&hr, 0.0f, -2.0f, "head-slowstart") == 0);
    pf_adapt a = hr.a;
    pf_adapt_plan(&a, hr.ht, 8), pf_adapt_choose(&a, hr.ht, hr.hd, 3);
    double s0 = a.last_sk[0];
    for (int r = 0; r < 10; r++) {
        pf_adapt_plan(&a, hr.ht, 8), pf_adapt_choose(&a, hr.ht, hr.hd, 3);
        pf_adapt_observe(&a, 3, 3);
    }
    pf_adapt_plan(&a, hr.ht, 8), pf_adapt_choose(&a, hr.ht, hr.hd, 3);
    CHECKF(s0 < 0.15 && a.last_sk[0] > 0.5 && a.cal[0] > 0.6, "survival %g -> %g (offset %g) after ten kept rounds", s0,
           a.last_sk[0], a.cal[0]);
    for (int r = 0; r < 400; r++) {
        pf_adapt_plan(&a, hr.ht, 8), pf_adapt_choose(&a, hr.ht, hr.hd, 3);
        pf_adapt_observe(&a, 3, r % 2 ? 3 : 0);
    }
    pf_adapt_plan(&a, hr.ht, 8), pf_adapt_choose(&a, hr.ht, hr.hd, 3);
    double before = a.cal[0], sl = a.cal_slope;
    pf_adapt_observe(&a, 3, 0);
    CHECKF(fabs(a.cal[0] - before) <= PF_ADAPT_CAL_RATE + 1e-12, "a late step moved the offset by %g", a.cal[0] - before);
    CHECK(fabs(a.cal_slope - sl) <= PF_ADAPT_SLOPE_RATE * 3 * 10 + 1e-12); /* 3 positions, |z| < 10 here */
    head_rounds_close(&hr);
}

/* A profile's relative costs are a prior: t(1) and t(4) measured at the start refit its curve, so
 * a profile tuned in another regime (here c(n) = 1 + 3 (n-1): a 4-row forward at 10x one row) does
 * not survive the first generation; held fixed (tests) it stays exactly the prior. One token is
 * generated, so no round has refined anything yet: what is seen is the calibration's. */
TEST(dec_profile_costs_refit_at_the_start) {
    fixture f;
    CHECK(setup_with_session(&f) == 0);
    char err[PF_ERR_LEN];
    pf_dec *dec = make_head(&f, 0.02f, 0, "head-refit");
    CHECK(dec);
    double cost[8] = {0}, draft[8] = {0};
    for (int n = 1; n < 8; n++) cost[n] = 1 + 3.0 * (n - 1), draft[n] = 0.05 * n;
    for (int fixed = 0; fixed < 2; fixed++) {
        pf_drafter *d = NULL;
        pf_dflash_drafter_new(f.w, &f.s->engine, &d, err);
        pf_spec *spec = d ? pf_spec_new(&f.s->engine, d, 6, err) : NULL;
        CHECKF(spec, "%s", err);
        pf_spec_prior prior = {.c = cost, .draft = draft, .n = 8, .fixed = fixed};
        CHECK(pf_spec_set_adaptive(spec, dec, &prior, err) == 0);
        int32_t prompt[8] = {5, 17, 29, 41, 53, 65, 77, 89};
        pf_gen_params gp = test_gen_fixed(1);
        pf_api_use_strategy(f.s, pf_spec_strategy(spec));
        test_seq got = {.n = 0};
        CHECK(pf_generate_tokens(f.s, prompt, 8, &gp, test_seq_push, &got, NULL, err) == PF_OK && got.n == 1);
        const pf_cost_model *cm = pf_spec_cost(spec);
        CHECK(cm && pf_cost_verify(cm, 1) > 0);
        double c4 = pf_cost_verify(cm, 4) / pf_cost_verify(cm, 1), c6 = pf_cost_verify(cm, 6) / pf_cost_verify(cm, 1);
        double d4 = pf_cost_draft(cm, 4) / pf_cost_verify(cm, 1);
        if (fixed) CHECKF(fabs(c4 - 10) < 1e-9 && fabs(c6 - 16) < 1e-9, "fixed prior moved: c(4) %g c(6) %g", c4, c6);
        else /* refit from the measured t(1), t(4) (their ratio depends on the machine's load, so only
              * that it moved is asserted, not its value); the shape's slope is scaled alike */
            CHECKF(fabs(c4 - 10) > 1e-6 && fabs((c6 - 1) / (c4 - 1) - 5.0 / 3) < 1e-6, "refit: c(4) %g c(6) %g", c4, c6);
        CHECKF(fabs(d4 - 0.2) < 1e-9, "the draft's prior cost is kept: %g", d4);
        pf_api_use_strategy(f.s, NULL); /* before the strategy goes */
        pf_spec_free(spec);
        pf_drafter_free(d);
    }
    pf_dec_free(dec);
    teardown(&f);
}

/* Structured output: a draft position the constraint forces survives surely once reached, so a
 * pessimistic head verifies through a forced run it would otherwise cut; the forced positions stay
 * out of the head's calibration and the running acceptance (they say nothing of the draft), and
 * the marks last one round. */
TEST(dec_forced_drafts_count_as_kept) {
    head_rounds hr;
    CHECK(head_rounds_open(&hr, 0.0f, -2.0f, "head-forced") == 0);
    pf_adapt a = hr.a;
    pf_adapt_plan(&a, hr.ht, 8);
    int free_n = pf_adapt_choose(&a, hr.ht, hr.hd, 7);
    pf_adapt_observe(&a, free_n, 0);
    pf_adapt_plan(&a, hr.ht, 8);
    memset(a.forced, 1, 6); /* drafts 1..6 forced, draft 7 the model's choice */
    int forced_n = pf_adapt_choose(&a, hr.ht, hr.hd, 7);
    CHECKF(free_n <= 1 && forced_n >= 6, "free drafts: %d verified, forced run: %d", free_n, forced_n);
    double cal[PF_MAX_BLOCK];
    memcpy(cal, a.cal, sizeof cal);
    pf_adapt_observe(&a, 7, 6); /* the forced six kept, the seventh not */
    for (int k = 0; k < 6; k++) CHECKF(a.cal[k] == cal[k], "position %d calibrated on a forced draft", k + 1);
    CHECK(a.cal[6] < cal[6]);
    for (int k = 0; k < PF_MAX_BLOCK; k++) CHECK(!a.forced[k]);
    pf_adapt b; /* without a head: the running acceptance of a forced position does not move */
    pf_adapt_init(&b, 8, NULL, NULL, 0);
    b.forced[0] = 1;
    pf_adapt_observe(&b, 3, 3);
    CHECK(b.tried[0] == 0 && b.acc[0] == 0 && b.tried[1] == 1 && b.acc[1] == 1);
    head_rounds_close(&hr);
}
