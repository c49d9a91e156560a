/* Batched draft proposals (pf_dflash_propose_batch): three states with contexts of their own
 * lengths and blocks of their own sizes, proposed in one batched forward, give each state's solo
 * pf_dflash_propose bit for bit (drafts, logits, hidden rows, DFlash2's selector), DFlash and
 * DFlash2, at every kernel level; blocks that do not fit and states of another draft are refused.
 * A tiny synthetic target and draft. */
#include <stdlib.h>
#include <string.h>

#include "convert/dflash_synth.h"
#include "draft/dflash.h"
#include "engine/model.h"
#include "formats/quant.h"
#include "test.h"
#include "util.h"

enum { N_SEQ = 3, N_TOK = 24, MAXB = 8 };

static const int k_ctx[N_SEQ] = {5, 11, 20}; /* context rows of each state */
static const int k_block[N_SEQ] = {8, 3, 5};

typedef struct {
    int32_t draft[MAXB];
    float *logits, *hidden;
    int n_logits, top_k;
    int32_t cand[MAXB * 64];
    float score[MAXB * 64];
} proposal;

/* What state s's last proposal left, copied into *p. */
static void keep(pf_dflash_state *s, int B, int H, proposal *p) {
    int rows = 0;
    const float *lg = pf_dflash_last_logits(s, &rows);
    CHECK(lg && rows == B - 1);
    int NV = pf_dflash_head(s, NULL);
    p->n_logits = rows * NV;
    memcpy(p->logits, lg, (size_t)p->n_logits * sizeof(float));
    const int32_t *cand;
    const float *score;
    p->top_k = pf_dflash_last_selector(s, &cand, &score);
    CHECK(p->top_k <= 64);
    if (p->top_k) {
        memcpy(p->cand, cand, (size_t)(B - 1) * p->top_k * sizeof(int32_t));
        memcpy(p->score, score, (size_t)(B - 1) * p->top_k * sizeof(float));
    }
    (void)H;
}

static void check_level(pf_model *m, pf_dflash *d, const float *taps, const int32_t *toks, const pf_kernels *k,
                        const char *what) {
    char err[PF_ERR_LEN];
    const int H = m->hp.n_embd, NV = m->hp.n_vocab;
    int n_taps;
    pf_dflash_tap_layers(d, &n_taps);
    const size_t row = (size_t)n_taps * H;
    pf_pool *pool = pf_pool_create(2);
    pf_dflash_state *st[N_SEQ];
    proposal solo[N_SEQ], got[N_SEQ];
    pf_dflash_block blk[N_SEQ];
    for (int i = 0; i < N_SEQ; i++) {
        st[i] = pf_dflash_state_new(d, 64, pool, k, err);
        CHECKF(st[i], "%s", err);
        /* each state's context from its own part of the taps */
        CHECK(pf_dflash_append_context(st[i], taps + (size_t)i * row, k_ctx[i], err) == PF_RC_OK);
        for (int j = 0; j < 2; j++) {
            proposal *p = j ? &got[i] : &solo[i];
            p->logits = calloc((size_t)MAXB * NV, sizeof(float));
            p->hidden = calloc((size_t)MAXB * H, sizeof(float));
        }
        blk[i] = (pf_dflash_block){.s = st[i], .bonus = toks[k_ctx[i] + i], .B = k_block[i], .draft = got[i].draft,
                                   .hidden = got[i].hidden};
        CHECK(pf_dflash_propose(st[i], blk[i].bonus, k_block[i], NULL, NULL, solo[i].draft, NULL, solo[i].hidden,
                                err) == PF_RC_OK);
        keep(st[i], k_block[i], H, &solo[i]);
    }
    CHECKF(pf_dflash_propose_batch(NULL, blk, 0, err) == PF_RC_OK, "%s", err); /* nothing to do */
    pf_dflash_batch *b = pf_dflash_batch_new(d);
    CHECK(b);
    for (int rep = 0; rep < 2; rep++) { /* the second time in the scratch the first one grew */
        CHECKF(pf_dflash_propose_batch(b, blk, N_SEQ, err) == PF_RC_OK, "%s", err);
        for (int i = 0; i < N_SEQ; i++) {
            const int B = k_block[i];
            keep(st[i], B, H, &got[i]);
            CHECKF(pf_dflash_n_proposed(st[i]) == B - 1, "%s: state %d proposed %d", what, i, pf_dflash_n_proposed(st[i]));
            CHECKF(!memcmp(solo[i].draft, got[i].draft, (size_t)(B - 1) * sizeof(int32_t)), "%s: state %d drafts differ",
                   what, i);
            CHECKF(got[i].n_logits == solo[i].n_logits &&
                   !memcmp(solo[i].logits, got[i].logits, (size_t)solo[i].n_logits * sizeof(float)),
                   "%s: state %d logits differ from its solo proposal's", what, i);
            CHECKF(!memcmp(solo[i].hidden, got[i].hidden, (size_t)B * H * sizeof(float)), "%s: state %d hidden rows differ",
                   what, i);
            CHECKF(got[i].top_k == solo[i].top_k &&
                   !memcmp(solo[i].cand, got[i].cand, (size_t)(B - 1) * solo[i].top_k * sizeof(int32_t)) &&
                   !memcmp(solo[i].score, got[i].score, (size_t)(B - 1) * solo[i].top_k * sizeof(float)),
                   "%s: state %d selector differs", what, i);
            CHECK(pf_dflash_context_len(st[i]) == k_ctx[i]);
        }
    }
    /* a block that does not fit in one state's context: refused, named */
    blk[1].B = 64 - k_ctx[1] + 1;
    int32_t big[64];
    blk[1].draft = big;
    CHECK(pf_dflash_propose_batch(b, blk, N_SEQ, err) == PF_RC_CONTEXT && strstr(err, "context"));
    blk[1].B = k_block[1], blk[1].draft = got[1].draft;
    pf_dflash_batch_free(b);
    for (int i = 0; i < N_SEQ; i++) {
        pf_dflash_state_free(st[i]);
        for (int j = 0; j < 2; j++) free((j ? &got[i] : &solo[i])->logits), free((j ? &got[i] : &solo[i])->hidden);
    }
    pf_pool_destroy(pool);
}

static void check_version(int version) {
    char err[PF_ERR_LEN], tpath[300], dpath[300], opath[300], name[64];
    snprintf(name, sizeof name, "dfb-target-v%d.gguf", version);
    test_tmp_path(tpath, sizeof tpath, name);
    pf_model *m = test_synth_model(pf_synth_shape_find("tiny"), PF_TYPE_Q4_1, false, tpath);
    CHECK(m);
    snprintf(name, sizeof name, "dfb-draft-v%d.gguf", version);
    test_tmp_path(dpath, sizeof dpath, name);
    CHECKF(pf_dflash_synth(tpath, version, 2, 8, NULL, 2, 21, false, dpath, err) == 0, "%s", err);
    snprintf(name, sizeof name, "dfb-other-v%d.gguf", version);
    test_tmp_path(opath, sizeof opath, name);
    CHECKF(pf_dflash_synth(tpath, version, 1, 8, NULL, 2, 22, false, opath, err) == 0, "%s", err);
    pf_dflash *d = pf_dflash_load(dpath, m, err), *o = pf_dflash_load(opath, m, err);
    CHECKF(d && o, "%s", err);
    int32_t toks[N_TOK];
    for (int i = 0; i < N_TOK; i++) toks[i] = (i * 131 + 17) % (m->hp.n_vocab - 30);
    float *taps = test_target_taps(m, d, toks, N_TOK);
    CHECK(taps);
    int runs = 0;
    for (int lv = 0; lv < PF_LEVEL_COUNT && taps; lv++) {
        const pf_kernels *k = test_kernels(lv);
        if (!k) continue;
        char what[64];
        snprintf(what, sizeof what, "v%d, %s kernels", version, k->name);
        check_level(m, d, taps, toks, k, what);
        runs++;
    }
    /* a state of another draft in the batch */
    pf_dflash_state *a = pf_dflash_state_new(d, 32, NULL, NULL, err), *x = pf_dflash_state_new(o, 32, NULL, NULL, err);
    pf_dflash_batch *b = pf_dflash_batch_new(d);
    CHECK(a && x && b);
    int32_t da[4], dx[4];
    pf_dflash_block blk[2] = {{.s = a, .bonus = 1, .B = 4, .draft = da}, {.s = x, .bonus = 1, .B = 4, .draft = dx}};
    CHECK(pf_dflash_propose_batch(b, blk, 2, err) == PF_RC_ARG && strstr(err, "another draft"));
    pf_dflash_batch_free(b);
    pf_dflash_state_free(a), pf_dflash_state_free(x);
    printf("    %d kernel levels: every state's batched proposal bitwise its solo one\n", runs);
    free(taps);
    pf_dflash_free(d), pf_dflash_free(o);
    pf_model_free(m);
}

TEST(dflash_batch_v1_equals_solo_every_level) { check_version(1); }
TEST(dflash_batch_v2_equals_solo_every_level) { check_version(2); }
