/* Speculation across sequences (verify/spec_batch.h) against each request decoded alone: greedy,
 * every request's tokens, stop reason and count are plain decoding's, for dec, adaptive, a fixed
 * DFlash block and prompt lookup, at 1, 3 and 8 sequences at a time at the best kernel level
 * and at 3 on every other level; sampled (1, 3 and 8 at a time), the same tokens as the request's
 * solo speculative run with its seed (and, for the strategies that draft point masses, plain
 * sampling's). At one slot, requests keep the rows their prompt shares with the slot's last one.
 * The row budget's arithmetic (verify/row_share.h) on its own. */
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "draft/draft_open.h"
#include "engine/generate_batch.h"
#include "batch_feed.h"
#include "test.h"
#include "util.h"
#include "verify/row_share.h"
#include "verify/spec_batch.h"
#include "verify/strategies.h"

enum { N_REQ = 6, MAX_TOK = BF_MAX_TOK };

static const char *const k_prompts[N_REQ] = {
    "Convert this description into JSON with the keys name, version, section.\n\nVersion 2.1-3 of libfoo is available.",
    "Write a Python function add(a, b) that returns the sum of a and b.", "Name three colours.",
    "Tell me a story about a fox and a crow that ends well, in a few sentences.",
    "List the days of the week.", "What does serendipity mean?",
};
/* per request: max tokens, and after how many tokens its callback stops it (0: never) */
static const int k_max[N_REQ] = {40, 33, 8, 200, 30, 24};
static const int k_stop_after[N_REQ] = {0, 0, 0, 0, 11, 0};

static void check_same(const bf_outcome *solo, const bf_outcome *got, int i, const char *what) {
    CHECKF(got->ended == 1 && got->rc == solo->rc, "%s, request %d: ended %d times, rc %d (alone %d)", what, i,
           got->ended, got->rc, solo->rc);
    if (solo->rc != PF_RC_OK) return;
    CHECKF(got->n == solo->n && !memcmp(got->toks, solo->toks, (size_t)(solo->n < MAX_TOK ? solo->n : MAX_TOK) * 4),
           "%s, request %d: %d tokens, alone %d, or other tokens", what, i, got->n, solo->n);
    CHECKF(got->st.stop == solo->st.stop && got->st.n_gen == solo->st.n_gen, "%s, request %d: stop %d after %d, alone %d after %d",
           what, i, got->st.stop, got->st.n_gen, solo->st.stop, solo->st.n_gen);
}

typedef struct {
    pf_model *m;
    pf_session *s;
    pf_dflash *w;
    pf_dec *dec;
    bf_requests q;
} fixture;

static void fixture_open(fixture *f, float temp) {
    char err[PF_ERR_LEN];
    memset(f, 0, sizeof *f);
    f->m = pf_model_load("models/pf-target-f16.gguf", err);
    CHECKF(f->m, "%s", err);
    /* request 3 runs into the context (after some 60 tokens); the longest other request, 0, takes
     * about 80 rows of it */
    pf_session_params sp = {.n_threads = 2, .n_ctx = 96};
    f->q.n = N_REQ, f->q.stop_after = k_stop_after;
    CHECK(pf_session_new(f->m, &sp, &f->s, err) == PF_OK);
    CHECKF(pf_draft_open(f->m, "models/pf-draft-dflash2.gguf", &f->w, &f->dec, err) == PF_RC_OK && f->dec, "%s", err);
    for (int i = 0; i < N_REQ; i++) {
        size_t n = 0;
        CHECK(test_chat_tokens(f->m, k_prompts[i], &f->q.ids[i], &n, err) == 0);
        f->q.n_ids[i] = (int)n;
        f->q.p[i] = (pf_decode_params){.max_tokens = k_max[i], .temp = temp, .top_k = 40, .top_p = 0.95f,
                                       .seed = 500 + 31 * (uint64_t)i, .stop_at_eot = i != 3};
    }
}

static void fixture_close(fixture *f) {
    for (int i = 0; i < N_REQ; i++) free(f->q.ids[i]);
    pf_session_free(f->s);
    pf_dec_free(f->dec);
    pf_dflash_free(f->w);
    pf_model_free(f->m);
}

static void plan_of(pf_kind kind, int block, const fixture *f, pf_strategy_plan *plan) {
    char err[PF_ERR_LEN];
    pf_strategy_desc d = {.kind = kind, .block = block};
    pf_strategy_desc_draft(&d, f->w, f->dec);
    CHECKF(pf_strategy_plan_make(&d, plan, err) == 0, "%s", err);
}

/* Each request alone: plain decoding (plan NULL) or the plan's speculation, a new strategy each. */
static void run_solo(fixture *f, const pf_strategy_plan *plan, bf_outcome *solo) {
    char err[PF_ERR_LEN];
    for (int i = 0; i < N_REQ; i++) {
        pf_drafter *d = NULL;
        pf_spec *sp = NULL;
        if (plan) {
            CHECK(pf_drafter_for(plan, plan->kind == PF_KIND_NGRAM ? NULL : f->w, 0, &f->s->engine, &d, err) == PF_RC_OK);
            CHECKF(pf_strategy_build(&f->s->engine, plan, d, f->dec, &sp, err) == PF_RC_OK, "%s", err);
        }
        pf_session_reset(f->s);
        solo[i] = (bf_outcome){.stop_after = k_stop_after[i]};
        solo[i].rc = pf_engine_generate_tokens(&f->s->engine, f->q.ids[i], f->q.n_ids[i], &f->q.p[i],
                                               sp ? pf_spec_strategy(sp) : NULL, bf_collect, &solo[i], &solo[i].st, err);
        pf_spec_free(sp);
        pf_drafter_free(d);
    }
}

static void run_batch(fixture *f, const pf_strategy_plan *plan, int slots, const bf_outcome *solo, const char *what) {
    char err[PF_ERR_LEN], msg[160];
    pf_spec_batch *sb = NULL;
    CHECKF(pf_spec_batch_new(&f->s->engine, plan, f->w, f->dec, &sb, err) == PF_RC_OK, "%s", err);
    f->q.next = 0;
    pf_seq_feed feed = {bf_feed_next, bf_feed_done, &f->q};
    CHECKF(pf_spec_batch_generate(sb, slots, &feed, err) == PF_RC_OK, "%s", err);
    for (int i = 0; i < N_REQ; i++) {
        snprintf(msg, sizeof msg, "%s, %d slots", what, slots);
        check_same(&solo[i], &f->q.out[i], i, msg);
    }
    const pf_spec_stats *st = pf_spec_batch_stats(sb);
    CHECK(st->rounds > 0);
    /* one slot runs every request in turn: each later prompt keeps the chat template's rows of the
     * one before, the tapping strategies' drafters cut to them too */
    int reused = 0;
    for (int i = 1; slots == 1 && i < N_REQ; i++) reused += f->q.out[i].st.n_reused > 0;
    CHECKF(slots > 1 || reused > 0, "%s, one slot: no request reused its slot's rows", what);
    pf_spec_batch_free(sb);
}

static const struct {
    pf_kind kind;
    int block;
} k_kinds[] = {{PF_KIND_DEC, 0}, {PF_KIND_ADAPTIVE, 0}, {PF_KIND_DFLASH, 4}, {PF_KIND_NGRAM, 0}};
/* one sequence at a time; fewer slots than requests (refilled as requests end); more slots than
 * requests */
static const int k_slots[] = {1, 3, 8};

TEST(spec_batch_greedy_equals_plain_every_level) {
    fixture f;
    fixture_open(&f, 0);
    bf_outcome plain[N_REQ];
    run_solo(&f, NULL, plain);
    CHECK(plain[3].st.stop == PF_END_CONTEXT && plain[4].st.stop == PF_END_CALLBACK && plain[2].st.stop == PF_END_LENGTH);
    const pf_kernels *own = f.s->engine.ctx->k;
    int runs = 0;
    for (int lv = 0; lv < PF_LEVEL_COUNT; lv++) {
        const pf_kernels *k = test_kernels(lv);
        if (!k) continue;
        f.s->engine.ctx->k = k; /* the slots' contexts and drafters are made from the session's */
        /* The whole table at the best level; every other level computes the scalar bits (the kernel
         * tests), so there each strategy at 3 sequences, and the slow scalar reference Dec only. */
        int scalar = k->level == PF_LEVEL_SCALAR, best = k->level == pf_best_level();
        size_t n_kinds = scalar ? 1 : sizeof k_kinds / sizeof k_kinds[0];
        for (size_t j = 0; j < n_kinds; j++) {
            pf_strategy_plan plan;
            plan_of(k_kinds[j].kind, k_kinds[j].block, &f, &plan);
            char what[80];
            snprintf(what, sizeof what, "greedy %s, %s kernels", pf_kind_name(plan.kind), k->name);
            for (size_t c = best ? 0 : 1; c < (best ? sizeof k_slots / sizeof k_slots[0] : 2); c++, runs++)
                run_batch(&f, &plan, k_slots[c], plain, what);
        }
    }
    f.s->engine.ctx->k = own;
    printf("    %d batches (best level: strategies x 1, 3, 8 sequences; other SIMD levels: strategies at 3; "
           "scalar: dec at 3): every request plain decoding's\n", runs);
    fixture_close(&f);
}

TEST(spec_batch_sampled_equals_solo_spec) {
    fixture f;
    fixture_open(&f, 0.8f);
    bf_outcome plain[N_REQ], solo[N_REQ];
    run_solo(&f, NULL, plain);
    for (size_t j = 0; j < sizeof k_kinds / sizeof k_kinds[0]; j++) {
        pf_strategy_plan plan;
        plan_of(k_kinds[j].kind, k_kinds[j].block, &f, &plan);
        run_solo(&f, &plan, solo);
        char what[80];
        snprintf(what, sizeof what, "sampled %s", pf_kind_name(plan.kind));
        if (plan.kind == PF_KIND_DEC || plan.kind == PF_KIND_ADAPTIVE) /* point-mass drafts: plain sampling's tokens */
            for (int i = 0; i < N_REQ; i++) {
                solo[i].ended = 1; /* alone: not through a feed */
                check_same(&plain[i], &solo[i], i, what);
            }
        for (size_t c = 0; c < sizeof k_slots / sizeof k_slots[0]; c++) run_batch(&f, &plan, k_slots[c], solo, what);
    }
    fixture_close(&f);
}

/* Plain decoding is not a speculation; dec needs its head. */
TEST(spec_batch_refuses_plain_and_headless_dec) {
    fixture f;
    fixture_open(&f, 0);
    char err[PF_ERR_LEN];
    pf_spec_batch *sb = NULL;
    pf_strategy_plan plan;
    plan_of(PF_KIND_PLAIN, 0, &f, &plan);
    CHECK(pf_spec_batch_new(&f.s->engine, &plan, f.w, f.dec, &sb, err) == PF_RC_ARG && !sb);
    plan_of(PF_KIND_DEC, 0, &f, &plan);
    CHECK(pf_spec_batch_new(&f.s->engine, &plan, f.w, NULL, &sb, err) == PF_RC_ARG && strstr(err, "Dec head"));
    fixture_close(&f);
}

/* The budget: cheap rows and sure drafts verify the block; dear rows none; a fixed block stays;
 * the total stays within the budget. */
TEST(spec_batch_row_share_arithmetic) {
    double v[PF_MAX_BLOCK + 1];
    pf_share_seq q[8];
    int rows[8];
    memset(q, 0, sizeof q);
    for (int i = 0; i < 8; i++) {
        q[i].bmax = 6;
        for (int k = 0; k < 5; k++) q[i].s[k] = 0.9;
        for (int B = 2; B <= 6; B++) q[i].draft_s[B] = 0.001;
    }
    for (int R = 1; R <= PF_MAX_BLOCK; R++) v[R] = 0.010 + 0.0001 * R; /* flat: rows are nearly free */
    pf_share_rows(q, 1, v, PF_MAX_BLOCK, rows);
    CHECK(rows[0] == 6);
    pf_share_rows(q, 8, v, PF_MAX_BLOCK, rows);
    for (int i = 0; i < 8; i++) CHECK(rows[i] == 6);
    for (int R = 1; R <= PF_MAX_BLOCK; R++) v[R] = 0.010 * R; /* every row costs a forward */
    double rate = pf_share_rows(q, 8, v, PF_MAX_BLOCK, rows);
    for (int i = 0; i < 8; i++) CHECK(rows[i] == 1);
    CHECK(rate > 8 / (0.080 + 1e-9) - 1 && rate < 8 / 0.080 + 1);
    q[3].fixed = 1;
    pf_share_rows(q, 8, v, PF_MAX_BLOCK, rows);
    CHECK(rows[3] == 6 && rows[0] == 1);
    for (int R = 1; R <= PF_MAX_BLOCK; R++) v[R] = 0.010 + 0.0001 * R;
    q[3].fixed = 0;
    pf_share_rows(q, 8, v, 20, rows);
    int total = 0;
    for (int i = 0; i < 8; i++) total += rows[i];
    CHECK(total <= 20 && total >= 19);
    /* a sequence whose drafts are seldom kept yields its rows to one whose drafts are */
    for (int k = 0; k < 5; k++) q[1].s[k] = 0.05;
    for (int R = 1; R <= PF_MAX_BLOCK; R++) v[R] = 0.010 + 0.0015 * R;
    pf_share_rows(q, 2, v, PF_MAX_BLOCK, rows);
    CHECK(rows[0] > 1 && rows[1] == 1);
}
