/* The forward over several sequences (pf_forward_seqs): every sequence's logits, taps and cache
 * length are bitwise those of its rows run alone, at every kernel level and thread count, with
 * ragged rows (prefill chunks, decode rows and verification blocks side by side, across the
 * forward's internal chunks), and a bad sequence leaves every cache as it was. */
#include <stdlib.h>
#include <string.h>

#include "engine/batch.h"
#include "engine/forward.h"
#include "test.h"
#include "util.h"

enum { N_SEQ = 4, MAX_PARTS = 4, N_CTX = 160 };

/* One sequence's rows in one step: n rows, which logits (PF_LOGITS_*), whether it taps. */
typedef struct {
    int seq, n, mode, taps;
} part;

/* The steps every run takes, in order (seq -1 ends a step's list). Step 0 prefills prompts of
 * four lengths; step 1 decodes one row each; step 2 mixes a prompt chunk, decode rows and a block
 * of 5 (a verification's rows); step 3 crosses the 32-row chunk inside one sequence and leaves
 * a sequence out; step 4 changes the order and mixes rows without logits in. */
static const part k_steps[][MAX_PARTS] = {
    {{0, 7, PF_LOGITS_LAST, 0}, {1, 3, PF_LOGITS_ALL, 1}, {2, 1, PF_LOGITS_LAST, 0}, {3, 20, PF_LOGITS_NONE, 1}},
    {{0, 1, PF_LOGITS_LAST, 0}, {1, 1, PF_LOGITS_LAST, 0}, {2, 1, PF_LOGITS_LAST, 0}, {3, 1, PF_LOGITS_LAST, 0}},
    {{1, 12, PF_LOGITS_LAST, 1}, {0, 1, PF_LOGITS_LAST, 0}, {3, 5, PF_LOGITS_ALL, 1}, {2, 1, PF_LOGITS_LAST, 0}},
    {{2, 40, PF_LOGITS_ALL, 1}, {0, 1, PF_LOGITS_LAST, 0}, {3, 1, PF_LOGITS_LAST, 1}, {-1, 0, 0, 0}},
    {{3, 1, PF_LOGITS_LAST, 0}, {0, 2, PF_LOGITS_NONE, 0}, {1, 30, PF_LOGITS_ALL, 0}, {2, 1, PF_LOGITS_LAST, 1}},
};
enum { N_STEPS = sizeof k_steps / sizeof k_steps[0] };

/* Where every part's logits and taps go: one zeroed arena per run, parts in step order, with a
 * row's gap after every part of the odd steps (so the head's rows go through the scratch there,
 * and straight into the consecutive parts' logits elsewhere). */
typedef struct {
    size_t logit_at[N_STEPS][MAX_PARTS], tap_at[N_STEPS][MAX_PARTS], n_logits, n_taps;
    int32_t *toks[N_SEQ];
    int64_t used[N_STEPS][MAX_PARTS]; /* the part's first row in its sequence */
} layout;

static void layout_make(layout *lo, const pf_hparams *hp) {
    size_t lat = 0, tat = 0;
    int64_t used[N_SEQ] = {0};
    for (int st = 0; st < N_STEPS; st++)
        for (int i = 0; i < MAX_PARTS && k_steps[st][i].seq >= 0; i++) {
            const part *p = &k_steps[st][i];
            lo->logit_at[st][i] = lat, lo->tap_at[st][i] = tat, lo->used[st][i] = used[p->seq];
            lat += (size_t)(p->mode == PF_LOGITS_ALL ? p->n : p->mode == PF_LOGITS_LAST) * hp->n_vocab;
            if (st % 2) lat += hp->n_vocab;
            tat += p->taps ? (size_t)p->n * 2 * hp->n_embd : 0;
            used[p->seq] += p->n;
        }
    lo->n_logits = lat, lo->n_taps = tat;
    for (int s = 0; s < N_SEQ; s++) {
        lo->toks[s] = malloc((size_t)used[s] * sizeof(int32_t));
        for (int64_t j = 0; j < used[s]; j++) lo->toks[s][j] = (int32_t)((j * (97 + 24 * s) + 5 + 31 * s) % hp->n_vocab);
    }
}

static pf_batch part_batch(const layout *lo, int st, int i, const int *tap_layers, float *logits, float *taps) {
    const part *p = &k_steps[st][i];
    return (pf_batch){.tokens = lo->toks[p->seq] + lo->used[st][i], .n = p->n, .logits_mode = p->mode,
                      .logits = logits + lo->logit_at[st][i], .tap_layers = tap_layers, .n_taps = p->taps ? 2 : 0,
                      .taps = taps + lo->tap_at[st][i]};
}

/* Every sequence alone: its own context, its parts one pf_forward each. */
static void run_solo(const pf_model *m, const pf_kernels *k, int threads, pf_kv_type kv, const layout *lo,
                     const int *tap_layers, float *logits, float *taps, int64_t *len) {
    char err[PF_ERR_LEN];
    for (int s = 0; s < N_SEQ; s++) {
        pf_ctx *c = pf_ctx_new(m, N_CTX, threads, k, err);
        CHECK(c && pf_ctx_set_kv_type(c, kv, err) == 0);
        for (int st = 0; st < N_STEPS; st++)
            for (int i = 0; i < MAX_PARTS && k_steps[st][i].seq >= 0; i++) {
                if (k_steps[st][i].seq != s) continue;
                pf_batch b = part_batch(lo, st, i, tap_layers, logits, taps);
                CHECKF(pf_forward(c, &b, err) == PF_RC_OK, "%s", err);
            }
        len[s] = c->kv->len;
        pf_ctx_free(c);
    }
}

/* All sequences together: one context, sequence 0 in its own cache, the others in caches of
 * their own; each step one pf_forward_seqs. */
static void run_together(const pf_model *m, const pf_kernels *k, int threads, pf_kv_type kv, const layout *lo,
                         const int *tap_layers, float *logits, float *taps, int64_t *len) {
    char err[PF_ERR_LEN];
    pf_ctx *c = pf_ctx_new(m, N_CTX, threads, k, err);
    CHECK(c && pf_ctx_set_kv_type(c, kv, err) == 0);
    pf_kv_cache *caches[N_SEQ] = {NULL};
    for (int s = 1; s < N_SEQ; s++) CHECK((caches[s] = pf_kv_new(&m->hp, N_CTX, kv)));
    for (int st = 0; st < N_STEPS; st++) {
        pf_batch seqs[MAX_PARTS];
        int n = 0;
        for (; n < MAX_PARTS && k_steps[st][n].seq >= 0; n++) {
            seqs[n] = part_batch(lo, st, n, tap_layers, logits, taps);
            seqs[n].kv = caches[k_steps[st][n].seq];
        }
        CHECKF(pf_forward_seqs(c, seqs, n, err) == PF_RC_OK, "%s", err);
    }
    for (int s = 0; s < N_SEQ; s++) len[s] = s ? caches[s]->len : c->kv->len;
    for (int s = 1; s < N_SEQ; s++) pf_kv_free(caches[s]);
    pf_ctx_free(c);
}

static void check_seqs_equal_solo(uint32_t type, pf_kv_type kv) {
    char path[300];
    snprintf(path, sizeof path, "%s/tiny-seqs-%s.gguf", pf_test_tmpdir(), pf_type_info(type)->name);
    pf_model *m = test_synth_model(pf_synth_shape_find("tiny"), type, true, path);
    CHECK(m);
    layout lo;
    layout_make(&lo, &m->hp);
    int tap_layers[2] = {0, m->hp.n_layer - 1};
    float *ref = calloc(lo.n_logits, sizeof(float)), *got = calloc(lo.n_logits, sizeof(float));
    float *rtap = calloc(lo.n_taps, sizeof(float)), *gtap = calloc(lo.n_taps, sizeof(float));
    int runs = 0;
    for (int lv = 0; lv < PF_LEVEL_COUNT; lv++) {
        const pf_kernels *k = test_kernels(lv);
        if (!k || (kv == PF_KV_Q8 && lv == PF_LEVEL_SCALAR)) continue;
        for (int threads = 1; threads <= 2; threads++) {
            int64_t rlen[N_SEQ], glen[N_SEQ];
            memset(got, 0, lo.n_logits * sizeof(float));
            memset(gtap, 0, lo.n_taps * sizeof(float));
            run_solo(m, k, threads, kv, &lo, tap_layers, ref, rtap, rlen);
            run_together(m, k, threads, kv, &lo, tap_layers, got, gtap, glen);
            CHECKF(!memcmp(ref, got, lo.n_logits * sizeof(float)), "%s%s level %s, %d threads: logits differ from "
                   "the solo runs'", pf_type_info(type)->name, kv == PF_KV_Q8 ? " kv q8" : "", k->name, threads);
            CHECKF(!memcmp(rtap, gtap, lo.n_taps * sizeof(float)), "%s level %s, %d threads: taps differ",
                   pf_type_info(type)->name, k->name, threads);
            CHECK(!memcmp(rlen, glen, sizeof rlen));
            runs++;
        }
    }
    printf("    %d runs (levels x threads): every sequence bitwise its solo run\n", runs);
    for (int s = 0; s < N_SEQ; s++) free(lo.toks[s]);
    free(ref), free(got), free(rtap), free(gtap);
    pf_model_free(m);
}

TEST(forward_seqs_equal_solo_q4_1) { check_seqs_equal_solo(PF_TYPE_Q4_1, PF_KV_F16); }
TEST(forward_seqs_equal_solo_q8_0) { check_seqs_equal_solo(PF_TYPE_Q8_0, PF_KV_F16); }
TEST(forward_seqs_equal_solo_f32) { check_seqs_equal_solo(PF_TYPE_F32, PF_KV_F16); }
TEST(forward_seqs_equal_solo_q4_0_kv_q8) { check_seqs_equal_solo(PF_TYPE_Q4_0, PF_KV_Q8); }

/* A sequence the forward refuses leaves every cache unchanged: one sequence's context full, two
 * sequences sharing a cache, a bad token in the last sequence, no rows, no sequences. */
TEST(forward_seqs_rejects_bad_sequences) {
    char path[300];
    snprintf(path, sizeof path, "%s/tiny-seqs-bad.gguf", pf_test_tmpdir());
    pf_model *m = test_synth_model(pf_synth_shape_find("tiny"), PF_TYPE_Q8_0, false, path);
    CHECK(m);
    char err[PF_ERR_LEN];
    pf_ctx *c = pf_ctx_new(m, 64, 2, NULL, err);
    pf_kv_cache *a = pf_kv_new(&m->hp, 64, PF_KV_F16), *small = pf_kv_new(&m->hp, 4, PF_KV_F16);
    CHECK(c && a && small);
    int32_t toks[6] = {1, 2, 3, 4, 5, 6}, bad[2] = {1, m->hp.n_vocab};
    pf_batch ok = {.kv = a, .tokens = toks, .n = 6}, full = {.kv = small, .tokens = toks, .n = 5};
    pf_batch own = {.tokens = toks, .n = 2}, twice = {.kv = a, .tokens = toks, .n = 1};
    pf_batch badtok = {.tokens = bad, .n = 2}, none = {.kv = small, .tokens = toks, .n = 0};
    CHECK(pf_forward_seqs(c, (pf_batch[]){ok, full}, 2, err) == PF_RC_CONTEXT && strstr(err, "context"));
    CHECK(pf_forward_seqs(c, (pf_batch[]){ok, own, twice}, 3, err) == PF_RC_ARG && strstr(err, "share"));
    CHECK(pf_forward_seqs(c, (pf_batch[]){ok, badtok}, 2, err) == PF_RC_ARG && strstr(err, "vocabulary"));
    CHECK(pf_forward_seqs(c, (pf_batch[]){ok, none}, 2, err) == PF_RC_ARG && strstr(err, "no rows"));
    CHECK(pf_forward_seqs(c, &ok, 0, err) == PF_RC_ARG);
    CHECK(a->len == 0 && small->len == 0 && c->kv->len == 0);
    CHECK(pf_forward_seqs(c, (pf_batch[]){ok, own}, 2, err) == PF_RC_OK);
    CHECK(a->len == 6 && c->kv->len == 2 && small->len == 0);
    pf_kv_free(a), pf_kv_free(small);
    pf_ctx_free(c);
    pf_model_free(m);
}
