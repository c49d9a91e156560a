/* The draft-head vocabulary (dflash.head_tokens / head_vocab, pf_dflash_set_head): the subset's
 * logits are bitwise the whole head's at those ids, greedy proposals are the best ranked token,
 * sampled proposals are drawn from the q they report (so acceptance stays lossless), bad files
 * and bad sizes are rejected by name, and the CLI writes files that load. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "api/api_session.h"
#include "draft/dflash.h"
#include "draft/dflash_drafter.h"
#include "convert/dflash_synth.h"
#include "convert/head_vocab.h"
#include "engine/batch.h"
#include "engine/forward.h"
#include "engine/sampler.h"
#include "convert/synth.h"
#include "chi2.h"
#include "test.h"
#include "include/pocketflash.h"

enum { NRANK = 300, NHEAD = 200 };

static bool is_head_key(const char *k) { return !strcmp(k, "dflash.head_tokens") || !strcmp(k, "dflash.head_vocab"); }

/* A tiny Q4_1 target (packed gemm where AVX-512 runs) and a random draft of `version` with a
 * ranked list: a permutation of NRANK ids, the first NHEAD the default. */
static pf_model *setup(int version, char *dpath, size_t n, int32_t *ranked) {
    char tpath[300], raw[300], err[PF_ERR_LEN];
    snprintf(tpath, sizeof tpath, "%s/dh-target.gguf", pf_test_tmpdir());
    snprintf(raw, sizeof raw, "%s/dh-raw-v%d.gguf", pf_test_tmpdir(), version);
    snprintf(dpath, n, "%s/dh-draft-v%d.gguf", pf_test_tmpdir(), version);
    if (pf_synth_write(pf_synth_shape_find("tiny"), PF_TYPE_Q4_1, true, 31, tpath, err) < 0 ||
        pf_dflash_synth(tpath, version, 1, 8, NULL, 2, 11 + version, false, raw, err) != PF_RC_OK) {
        printf("    %s\n", err);
        return NULL;
    }
    pf_model *m = pf_model_load(tpath, err);
    if (!m) return NULL;
    int V = m->hp.n_vocab;
    int32_t *perm = malloc((size_t)V * sizeof *perm);
    for (int i = 0; i < V; i++) perm[i] = i;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = V - 1; i > 0; i--) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        int j = (int)(x % (uint64_t)(i + 1));
        int32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
    memcpy(ranked, perm, NRANK * sizeof *ranked);
    free(perm);
    if (pf_draft_head_attach(raw, ranked, NRANK, NHEAD, V, dpath, err) != PF_RC_OK) {
        printf("    attach: %s\n", err);
        pf_model_free(m);
        return NULL;
    }
    return m;
}

/* setup's target and its draft, loaded. */
typedef struct {
    pf_model *m;
    pf_dflash *d;
    int32_t ranked[NRANK];
} head_pair;

static void head_pair_close(head_pair *p) {
    pf_dflash_free(p->d);
    pf_model_free(p->m);
}

/* 0, or -1 with the error printed and nothing held. */
static int head_pair_open(head_pair *p, int version) {
    char dpath[300], err[PF_ERR_LEN];
    p->d = NULL;
    if (!(p->m = setup(version, dpath, sizeof dpath, p->ranked))) return -1;
    if ((p->d = pf_dflash_load(dpath, p->m, err))) return 0;
    printf("    %s\n", err);
    head_pair_close(p);
    return -1;
}

static float *context_taps(const pf_model *m, const pf_dflash *d, int n) {
    char err[PF_ERR_LEN];
    int n_taps;
    const int *tl = pf_dflash_tap_layers(d, &n_taps);
    int32_t *toks = malloc((size_t)n * sizeof *toks);
    for (int i = 0; i < n; i++) toks[i] = (i * 37 + 5) % m->hp.n_vocab;
    float *taps = malloc((size_t)n * n_taps * m->hp.n_embd * sizeof(float));
    pf_ctx *c = pf_ctx_new(m, 64, 1, NULL, err);
    pf_batch b = {.tokens = toks, .n = n, .tap_layers = tl, .n_taps = n_taps, .taps = taps};
    int ok = c && pf_forward(c, &b, err) == 0;
    pf_ctx_free(c);
    free(toks);
    if (!ok) {
        free(taps);
        return NULL;
    }
    return taps;
}

static void check_greedy(int version) {
    char err[PF_ERR_LEN];
    head_pair fx;
    CHECK(head_pair_open(&fx, version) == 0);
    CHECK(pf_dflash_head_default(fx.d) == NHEAD && pf_dflash_head_ranked(fx.d) == NRANK);
    const int V = fx.m->hp.n_vocab, B = 8, N = 12;
    float *taps = context_taps(fx.m, fx.d, N);
    CHECK(taps);
    pf_dflash_state *full = pf_dflash_state_new(fx.d, 64, NULL, NULL, err), *sub = pf_dflash_state_new(fx.d, 64, NULL, NULL, err);
    CHECK(full && sub);
    CHECK(pf_dflash_head(full, NULL) == 0); /* a new state scores the whole vocabulary */
    CHECKF(pf_dflash_set_head(sub, -1, err) == 0, "%s", err);
    const int32_t *ids;
    CHECK(pf_dflash_head(sub, &ids) == NHEAD);
    int32_t want[NHEAD];
    memcpy(want, fx.ranked, sizeof want);
    for (int i = 1; i < NHEAD; i++) /* ascending ids of the first NHEAD ranked */
        for (int j = i; j > 0 && want[j - 1] > want[j]; j--) { int32_t t = want[j]; want[j] = want[j - 1]; want[j - 1] = t; }
    CHECK(!memcmp(ids, want, sizeof want));
    /* the default list is gathered once per draft and shared; another size is a state's own, and
     * freeing that state leaves the shared one to the others (sub goes on using ids below) */
    pf_dflash_state *other = pf_dflash_state_new(fx.d, 64, NULL, NULL, err);
    const int32_t *ids2 = NULL;
    CHECK(other && pf_dflash_set_head(other, -1, err) == 0 && pf_dflash_head(other, &ids2) == NHEAD && ids2 == ids);
    CHECK(pf_dflash_set_head(other, NRANK, err) == 0 && pf_dflash_head(other, &ids2) == NRANK && ids2 != ids);
    pf_dflash_state_free(other);
    CHECK(pf_dflash_append_context(full, taps, N, err) == 0 && pf_dflash_append_context(sub, taps, N, err) == 0);
    int32_t df[16], ds[16];
    CHECK(pf_dflash_propose(full, 3, B, NULL, NULL, df, NULL, NULL, err) == 0);
    CHECK(pf_dflash_propose(sub, 3, B, NULL, NULL, ds, NULL, NULL, err) == 0);
    const float *lf = pf_dflash_last_logits(full, NULL), *ls = pf_dflash_last_logits(sub, NULL);
    for (int r = 0; r < B - 1; r++) {
        for (int j = 0; j < NHEAD; j++)
            CHECKF(ls[(size_t)r * NHEAD + j] == lf[(size_t)r * V + ids[j]], "row %d token %d: subset logit %g != whole head %g",
                   r, ids[j], ls[(size_t)r * NHEAD + j], lf[(size_t)r * V + ids[j]]);
        int in = 0;
        for (int j = 0; j < NHEAD; j++) in |= ids[j] == ds[r];
        CHECKF(in, "row %d: proposal %d is outside the head vocabulary", r, ds[r]);
        if (version == 1) { /* the first (lowest id) maximum of the whole head's logits over the subset */
            int best = ids[0];
            for (int j = 1; j < NHEAD; j++)
                if (lf[(size_t)r * V + ids[j]] > lf[(size_t)r * V + best]) best = ids[j];
            CHECKF(ds[r] == best, "row %d: proposal %d, best ranked token %d", r, ds[r], best);
        }
    }
    if (version == 2) { /* the selector's candidates: the top-k of the subset, as token ids */
        const int32_t *cand;
        const float *score;
        int kk = pf_dflash_last_selector(sub, &cand, &score);
        CHECK(kk > 0);
        for (int r = 0; r < B - 1; r++)
            for (int j = 0; j < kk; j++) {
                int32_t t = cand[(size_t)r * kk + j];
                int in = 0, above = 0;
                for (int i = 0; i < NHEAD; i++) {
                    in |= ids[i] == t;
                    above += lf[(size_t)r * V + ids[i]] > lf[(size_t)r * V + t];
                }
                CHECKF(in && above <= j, "row %d candidate %d: token %d (in subset %d, %d subset tokens above)", r, j, t, in, above);
            }
    }
    /* sizes: 0 is the whole head again; more than ranked, or (v2) under the selector's top-k, fail */
    CHECK(pf_dflash_set_head(sub, 0, err) == 0 && pf_dflash_head(sub, NULL) == 0);
    CHECK(pf_dflash_set_head(sub, NRANK + 1, err) == PF_RC_ARG && strstr(err, "ranks"));
    if (version == 2) CHECK(pf_dflash_set_head(sub, pf_dflash_selector_top_k(fx.d) - 1, err) == PF_RC_ARG && strstr(err, "selector"));
    CHECK(pf_dflash_set_head(sub, NRANK, err) == 0 && pf_dflash_head(sub, NULL) == NRANK);
    free(taps);
    pf_dflash_state_free(full);
    pf_dflash_state_free(sub);
    head_pair_close(&fx);
}

TEST(draft_head_v1_logits_and_greedy) { check_greedy(1); }
TEST(draft_head_v2_logits_and_candidates) { check_greedy(2); }

/* Sampled proposals with a head subset: q holds token ids of the subset with the softmax of the
 * subset's logits at the temperature, and the first drafted token is drawn from q[0] (chi-square
 * over many draws). */
static void check_sampled(int version) {
    char err[PF_ERR_LEN];
    head_pair fx;
    CHECK(head_pair_open(&fx, version) == 0);
    const int B = 4, N = 10, V = fx.m->hp.n_vocab;
    float *taps = context_taps(fx.m, fx.d, N);
    pf_dflash_state *s = pf_dflash_state_new(fx.d, 64, NULL, NULL, err);
    CHECK(taps && s && pf_dflash_set_head(s, -1, err) == 0 && pf_dflash_append_context(s, taps, N, err) == 0);
    const int32_t *ids;
    int nh = pf_dflash_head(s, &ids);
    pf_dist q[3];
    for (int i = 0; i < 3; i++) CHECK(pf_dist_init(&q[i], V) == 0);
    pf_sampling samp = {.temp = 3.0f, .top_k = 0, .top_p = 1.0f};
    enum { DRAWS = 4000 };
    int *cnt = calloc((size_t)V, sizeof(int));
    pf_dist q0 = {0};
    CHECK(pf_dist_init(&q0, V) == 0);
    for (int k = 0; k < DRAWS; k++) {
        pf_rng rng;
        pf_rng_seed(&rng, (uint64_t)k * 7919 + 3);
        int32_t draft[3];
        CHECK(pf_dflash_propose(s, 3, B, &samp, &rng, draft, q, NULL, err) == 0);
        cnt[draft[0]]++;
        if (k == 0) {
            q0.n = q[0].n;
            memcpy(q0.ids, q[0].ids, (size_t)q[0].n * sizeof *q0.ids);
            memcpy(q0.p, q[0].p, (size_t)q[0].n * sizeof *q0.p);
            double sum = 0;
            for (int i = 0; i < q0.n; i++) {
                int in = 0;
                for (int j = 0; j < nh; j++) in |= ids[j] == q0.ids[i];
                CHECKF(in, "q[0] holds token %d, outside the head vocabulary", q0.ids[i]);
                sum += q0.p[i];
            }
            CHECKF(fabs(sum - 1) < 1e-4 && q0.n > 1, "q[0]: %d entries summing to %g", q0.n, sum);
            if (version == 1) { /* the softmax of the subset's logits at the temperature */
                const float *l = pf_dflash_last_logits(s, NULL);
                double mx = -INFINITY, z = 0;
                for (int j = 0; j < nh; j++) mx = fmax(mx, l[j]);
                for (int j = 0; j < nh; j++) z += exp((l[j] - mx) / samp.temp);
                for (int j = 0; j < nh; j++) {
                    double p = exp((l[j] - mx) / samp.temp) / z;
                    CHECKF(fabs(pf_dist_prob(&q0, ids[j]) - p) < 1e-4 + 1e-3 * p, "token %d: q %g, softmax %g", ids[j],
                           pf_dist_prob(&q0, ids[j]), p);
                }
            }
        } else {
            CHECK(q[0].n == q0.n && !memcmp(q[0].ids, q0.ids, (size_t)q0.n * sizeof *q0.ids)); /* same context, same q */
        }
    }
    double chi = 0, pool_o = 0, pool_e = 0;
    int df = -1;
    for (int i = 0; i < q0.n; i++) {
        double e = DRAWS * (double)q0.p[i], o = cnt[q0.ids[i]];
        if (e < 10) { pool_o += o; pool_e += e; continue; }
        chi += (o - e) * (o - e) / e;
        df++;
    }
    if (pool_e > 0) { chi += (pool_o - pool_e) * (pool_o - pool_e) / pool_e; df++; }
    int outside = 0;
    for (int t = 0; t < V; t++) outside += cnt[t] && pf_dist_prob(&q0, t) == 0;
    CHECKF(outside == 0, "%d drawn tokens have q = 0", outside);
    if (df < 1) df = 1;
    double crit = pf_chi2_crit999(df);
    CHECKF(chi < crit, "draws vs q[0]: chi-square %.1f >= %.1f (df %d)", chi, crit, df);
    printf("    v%d: %d draws over %d q entries, chi-square %.1f (df %d, 0.999 bound %.1f)\n", version, DRAWS, q0.n, chi, df, crit);
    free(cnt);
    for (int i = 0; i < 3; i++) pf_dist_free(&q[i]);
    pf_dist_free(&q0);
    free(taps);
    pf_dflash_state_free(s);
    head_pair_close(&fx);
}

TEST(draft_head_v1_sampled_from_reported_q) { check_sampled(1); }
TEST(draft_head_v2_sampled_from_reported_q) { check_sampled(2); }

/* Files: duplicates, ids outside the vocabulary, a default outside the list, a default without a
 * list are load errors naming the key; pf_draft_head_attach refuses the same. */
TEST(draft_head_bad_files_rejected) {
    char dpath[300], bad[300], err[PF_ERR_LEN];
    int32_t ranked[NRANK];
    pf_model *m = setup(1, dpath, sizeof dpath, ranked);
    CHECK(m);
    const int V = m->hp.n_vocab;
    snprintf(bad, sizeof bad, "%s/dh-bad.gguf", pf_test_tmpdir());
    int32_t dup[3] = {5, 9, 5}, out[2] = {1, V};
    CHECK(pf_draft_head_attach(dpath, dup, 3, 3, V, bad, err) == PF_RC_ARG && strstr(err, "twice"));
    CHECK(pf_draft_head_attach(dpath, out, 2, 2, V, bad, err) == PF_RC_ARG && strstr(err, "outside"));
    CHECK(pf_draft_head_attach(dpath, ranked, NRANK, NRANK + 1, V, bad, err) == PF_RC_ARG && strstr(err, "-n"));
    /* hand-written files the attach refuses to write: the loader names the key */
    struct { int32_t ids[3]; int n; int vocab; const char *expect; } cases[] = {
        {{4, 8, 4}, 3, 3, "listed twice"},
        {{4, 8, 100000}, 3, 3, "outside the vocabulary"},
        {{4, 8, 12}, 3, 4, "dflash.head_vocab"},
        {{4, 8, 12}, 3, 0, "dflash.head_vocab"},
        {{0}, 0, 3, "dflash.head_tokens is missing"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gguf_file *f;
        gguf_open_file(dpath, &f, err);
        CHECK(f);
        gguf_writer *w = gguf_writer_new();
        gguf_w_copy_kv(w, f, is_head_key);
        if (cases[c].n) gguf_w_arr(w, "dflash.head_tokens", GGUF_I32, cases[c].ids, (uint64_t)cases[c].n);
        gguf_w_u32(w, "dflash.head_vocab", (uint32_t)cases[c].vocab);
        gguf_w_copy_tensors(w, f, NULL);
        CHECK(gguf_w_write(w, bad, err) == 0);
        gguf_writer_free(w);
        gguf_close(f);
        pf_dflash *d = pf_dflash_load(bad, m, err);
        CHECKF(!d && strstr(err, cases[c].expect), "case %zu: %s", c, d ? "loaded" : err);
    }
    /* a list of floats is not a list of token ids */
    {
        gguf_file *f;
        gguf_open_file(dpath, &f, err);
        CHECK(f);
        gguf_writer *w = gguf_writer_new();
        gguf_w_copy_kv(w, f, is_head_key);
        const float ids[3] = {4, 8, 12};
        gguf_w_arr(w, "dflash.head_tokens", GGUF_F32, ids, 3);
        gguf_w_copy_tensors(w, f, NULL);
        CHECK(gguf_w_write(w, bad, err) == 0);
        gguf_writer_free(w);
        gguf_close(f);
        pf_dflash *d = pf_dflash_load(bad, m, err);
        CHECKF(!d && strstr(err, "dflash.head_tokens: expected an array"), "float ids: %s", d ? "loaded" : err);
    }
    /* the good file loads, and a drafter starts with its default head */
    pf_dflash *d = pf_dflash_load(dpath, m, err);
    CHECK(d);
    pf_session_params sp = {.n_threads = 1, .n_ctx = 64};
    pf_session *s = NULL;
    pf_session_new(m, &sp, &s, err);
    pf_drafter *dr = NULL;
    if (s) pf_dflash_drafter_new(d, &s->engine, &dr, err);
    CHECK(dr);
    CHECK(pf_drafter_set_head(dr, -1, err) == 0); /* the whole vocabulary */
    CHECK(pf_drafter_set_head(dr, NRANK + 5, err) == PF_RC_ARG);
    pf_drafter_free(dr);
    pf_session_free(s);
    pf_dflash_free(d);
    pf_model_free(m);
}
