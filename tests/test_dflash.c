/* DFlash / DFlash2 draft runtime: the C block forward against a float64 reference written here
 * (context features, context K/V, non-causal block attention, conv, MLP, target head, selector
 * walk), DFlash2 at identity init == DFlash, determinism and split/thread invariance, sampled
 * proposals, loading errors, sliding window and the causal flag. Tiny synthetic targets only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "draft/dflash.h"
#include "convert/dflash_synth.h"
#include "engine/model.h"
#include "engine/sampler.h"
#include "convert/synth.h"
#include "engine/tokenizer.h"
#include "formats/quant.h"
#include "test.h"
#include "util.h"

/* ---------------------------------------------------------------- fixtures */

static const pf_synth_shape k_tiny_h64 = {"tiny-h64", 2, 64, 192, 2, 1, 32, 512, 2048};
static const pf_synth_shape k_tiny_deep = {"tiny-deep", 4, 128, 384, 4, 2, 32, 512, 2048};

/* A synthetic target written once per (shape, type) and loaded. */
static pf_model *make_target(const pf_synth_shape *sh, uint32_t type, char *path, size_t n) {
    char name[96];
    snprintf(name, sizeof name, "df-target-%s-%s.gguf", sh->name, pf_type_info(type)->name);
    test_tmp_path(path, n, name);
    return test_synth_model(sh, type, false, path);
}

static int make_draft(const char *target, int version, int layers, int block, const int *taps, int n_taps,
                      uint64_t seed, bool identity, const char *name, char *path, size_t n) {
    char err[PF_ERR_LEN];
    test_tmp_path(path, n, name);
    if (pf_dflash_synth(target, version, layers, block, taps, n_taps, seed, identity, path, err) != PF_RC_OK) {
        printf("    synth-draft: %s\n", err);
        return -1;
    }
    return 0;
}

static pf_dflash *load_draft(const char *path, const pf_model *m) {
    char err[PF_ERR_LEN];
    pf_dflash *d = pf_dflash_load(path, m, err);
    if (!d) printf("    load draft: %s\n", err);
    return d;
}

/* Copy a GGUF dropping some keys/tensors and adding keys: variants of a synthetic draft. */
static bool (*g_drop_key)(const char *key);
static bool skip_key(const char *key) { return g_drop_key && g_drop_key(key); }

static int rewrite_gguf(const char *src, const char *dst, bool (*drop_key)(const char *), bool (*drop_tensor)(const char *),
                        void (*add)(gguf_writer *)) {
    char err[PF_ERR_LEN];
    gguf_file *f;
    gguf_open_file(src, &f, err);
    if (!f) {
        printf("    open: %s\n", err);
        return -1;
    }
    gguf_writer *w = gguf_writer_new();
    g_drop_key = drop_key;
    gguf_w_copy_kv(w, f, skip_key);
    g_drop_key = NULL;
    if (add) add(w);
    gguf_w_copy_tensors(w, f, drop_tensor);
    int rc = gguf_w_write(w, dst, err);
    if (rc < 0) printf("    write: %s\n", err);
    gguf_writer_free(w);
    gguf_close(f);
    return rc;
}

static void prompt_tokens(int32_t *t, int n, int V, int salt) {
    for (int i = 0; i < n; i++) t[i] = (i * 131 + 17 + salt * 7) % (V - 30); /* ordinary tokens */
}

/* A tiny target of `type`, a draft of it (block 8, two taps, seed) written as <prefix>-v<version>.gguf
 * and loaded, and the target's taps over n prompt tokens (prompt_tokens with prompt_seed, into toks); 0, or -1 when
 * a step fails (what was made stays in t for the caller to free). */
typedef struct {
    pf_model *m;
    pf_dflash *d;
    float *taps;
} tapped_draft;

static int tapped_draft_open(tapped_draft *t, uint32_t type, int version, int layers, uint64_t seed, const char *prefix,
                             int32_t *toks, int n, int prompt_seed) {
    char tpath[300], dpath[300], name[64];
    snprintf(name, sizeof name, "%s-v%d.gguf", prefix, version);
    t->d = NULL;
    t->taps = NULL;
    if (!(t->m = make_target(pf_synth_shape_find("tiny"), type, tpath, sizeof tpath))) return -1;
    if (make_draft(tpath, version, layers, 8, NULL, 2, seed, false, name, dpath, sizeof dpath) < 0) return -1;
    if (!(t->d = load_draft(dpath, t->m))) return -1;
    prompt_tokens(toks, n, t->m->hp.n_vocab, prompt_seed);
    return (t->taps = test_target_taps(t->m, t->d, toks, n)) ? 0 : -1;
}

static void tapped_draft_close(tapped_draft *t) {
    free(t->taps);
    pf_dflash_free(t->d);
    pf_model_free(t->m);
}

/* ---------------------------------------------------------------- float64 reference */

/* Every weight read straight from the GGUF file (not through pf_dflash), as doubles. */
typedef struct {
    double *wq, *wk, *wv, *wo, *wg, *wu, *wd, *an, *fn, *qn, *kn;
    double *acb, *fcb, *acp, *fcp; /* DFlash2 conv */
} ref_layer;

typedef struct {
    const pf_model *target;
    int H, L, F, nh, nkv, hd, V, T, version, K, gs, R, topk, causal;
    int64_t window[8];
    int32_t mask;
    double theta, eps;
    double *fc, *enc_norm, *out_norm, *sel_h, *sel_a, *sel_b;
    ref_layer lay[8];
    /* context cache, f16-rounded like the engine's: [layer][pos][kvd] */
    int64_t n_ctx, len;
    double *kc, *vc;
} ref_draft;

static double *ref_tensor(const gguf_file *f, const char *name, int64_t n) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t || t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3] != n) {
        printf("    reference: tensor %s missing or of the wrong size\n", name);
        return NULL;
    }
    int64_t row = t->ne[0], rows = n / row;
    size_t rb = pf_row_bytes(t->type, row);
    double *out = malloc((size_t)n * sizeof(double));
    float *tmp = malloc((size_t)row * sizeof(float));
    for (int64_t r = 0; r < rows; r++) {
        pf_dequantize_row(t->type, (const char *)t->data + (size_t)r * rb, tmp, row);
        for (int64_t i = 0; i < row; i++) out[r * row + i] = tmp[i];
    }
    free(tmp);
    return out;
}

static uint32_t meta_u32(const gguf_file *f, const char *key, uint32_t dflt) {
    uint32_t v;
    return gguf_get_u32(f, key, &v) == 0 ? v : dflt;
}

/* windows: per-layer sliding window the test expects (NULL = none); causal: expected flag. */
static int ref_load(ref_draft *r, const char *path, const pf_model *target, const int64_t *windows, int causal,
                    int64_t n_ctx) {
    char err[PF_ERR_LEN], nm[96];
    gguf_file *f;
    gguf_open_file(path, &f, err);
    if (!f) return -1;
    memset(r, 0, sizeof *r);
    r->target = target;
    r->H = (int)meta_u32(f, "dflash.embedding_length", 0);
    r->L = (int)meta_u32(f, "dflash.block_count", 0);
    r->F = (int)meta_u32(f, "dflash.feed_forward_length", 0);
    r->nh = (int)meta_u32(f, "dflash.attention.head_count", 0);
    r->nkv = (int)meta_u32(f, "dflash.attention.head_count_kv", 0);
    r->hd = (int)meta_u32(f, "dflash.attention.key_length", 0);
    r->V = target->hp.n_vocab;
    r->mask = (int32_t)meta_u32(f, "tokenizer.ggml.mask_token_id", 0);
    float th = 0, eps = 0;
    gguf_get_f32(f, "dflash.rope.freq_base", &th);
    gguf_get_f32(f, "dflash.attention.layer_norm_rms_epsilon", &eps);
    r->theta = th;
    r->eps = eps;
    const gguf_kv *tl = gguf_get_arr(f, "dflash.target_layers", GGUF_I32);
    r->T = tl ? (int)tl->v.arr.n : 0;
    r->causal = causal;
    for (int l = 0; l < r->L && l < 8; l++) r->window[l] = windows ? windows[l] : 0;
    int H = r->H, hd = r->hd, qd = r->nh * hd, kvd = r->nkv * hd, F = r->F;
    int Ht = target->hp.n_embd;
    r->version = gguf_find_tensor(f, "selector_hidden.weight") ? 2 : 1;
    r->fc = ref_tensor(f, "fc.weight", (int64_t)H * r->T * Ht);
    r->enc_norm = ref_tensor(f, "enc.output_norm.weight", H);
    r->out_norm = ref_tensor(f, "output_norm.weight", H);
    int ok = r->fc && r->enc_norm && r->out_norm && r->L <= 8;
    if (r->version == 2) {
        r->K = (int)meta_u32(f, "dflash.conv_kernel_size", 2);
        r->gs = (int)meta_u32(f, "dflash.conv_group_size", 16);
        r->R = (int)meta_u32(f, "dflash.selector_rank", 256);
        r->topk = (int)meta_u32(f, "dflash.selector_top_k", 16);
        r->sel_h = ref_tensor(f, "selector_hidden.weight", (int64_t)r->R * H);
        r->sel_a = ref_tensor(f, "selector_predecessor.weight", (int64_t)r->V * r->R);
        r->sel_b = ref_tensor(f, "selector_successor.weight", (int64_t)r->V * r->R);
        ok = ok && r->sel_h && r->sel_a && r->sel_b;
    }
    for (int l = 0; l < r->L && ok; l++) {
        ref_layer *y = &r->lay[l];
#define T_(FIELD, S, N) (snprintf(nm, sizeof nm, "blk.%d." S, l), y->FIELD = ref_tensor(f, nm, (N)), ok = ok && y->FIELD)
        T_(wq, "attn_q.weight", (int64_t)qd * H);
        T_(wk, "attn_k.weight", (int64_t)kvd * H);
        T_(wv, "attn_v.weight", (int64_t)kvd * H);
        T_(wo, "attn_output.weight", (int64_t)H * qd);
        T_(wg, "ffn_gate.weight", (int64_t)F * H);
        T_(wu, "ffn_up.weight", (int64_t)F * H);
        T_(wd, "ffn_down.weight", (int64_t)H * F);
        T_(an, "attn_norm.weight", H);
        T_(fn, "ffn_norm.weight", H);
        T_(qn, "attn_q_norm.weight", hd);
        T_(kn, "attn_k_norm.weight", hd);
        if (r->version == 2) {
            int G = H / r->gs;
            T_(acb, "attn_conv_base", 2 * (int64_t)r->K * H);
            T_(fcb, "ffn_conv_base", 2 * (int64_t)r->K * H);
            T_(acp, "attn_conv_proj.weight", 2 * (int64_t)r->K * G * H);
            T_(fcp, "ffn_conv_proj.weight", 2 * (int64_t)r->K * G * H);
        }
#undef T_
    }
    gguf_close(f);
    r->n_ctx = n_ctx;
    r->kc = calloc((size_t)r->L * n_ctx * kvd, sizeof(double));
    r->vc = calloc((size_t)r->L * n_ctx * kvd, sizeof(double));
    return ok ? 0 : -1;
}

static void ref_free(ref_draft *r) {
    free(r->fc); free(r->enc_norm); free(r->out_norm); free(r->sel_h); free(r->sel_a); free(r->sel_b);
    for (int l = 0; l < r->L && l < 8; l++) {
        ref_layer *y = &r->lay[l];
        double *p[] = {y->wq, y->wk, y->wv, y->wo, y->wg, y->wu, y->wd, y->an, y->fn, y->qn, y->kn, y->acb, y->fcb, y->acp, y->fcp};
        for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
    }
    free(r->kc);
    free(r->vc);
}

/* K/V of one layer's input row at pos, written to the reference cache (f16-rounded). */
static void ref_kv(ref_draft *r, int l, const double *in, int64_t pos) {
    int hd = r->hd, kvd = r->nkv * hd;
    double k[1024], v[1024];
    ref_matvec_d(r->lay[l].wk, kvd, r->H, in, k);
    ref_matvec_d(r->lay[l].wv, kvd, r->H, in, v);
    for (int h = 0; h < r->nkv; h++) ref_rmsnorm(k + h * hd, r->lay[l].kn, hd, r->eps, k + h * hd);
    ref_rope(k, r->nkv, hd, pos, r->theta);
    double *K = r->kc + ((size_t)l * r->n_ctx + pos) * kvd, *V = r->vc + ((size_t)l * r->n_ctx + pos) * kvd;
    for (int i = 0; i < kvd; i++) {
        K[i] = ref_f16(k[i]);
        V[i] = ref_f16(v[i]);
    }
}

/* docs/dflash-format.md, context injection: ctx = rmsnorm(fc @ feat) * enc.output_norm, K/V per layer. */
static void ref_append(ref_draft *r, const float *taps, int n) {
    int H = r->H, FI = r->T * r->target->hp.n_embd;
    double *feat = malloc((size_t)FI * sizeof(double)), *ctx = malloc((size_t)H * sizeof(double));
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < FI; i++) feat[i] = taps[(size_t)p * FI + i];
        ref_matvec_d(r->fc, H, FI, feat, ctx);
        ref_rmsnorm(ctx, r->enc_norm, H, r->eps, ctx);
        for (int l = 0; l < r->L; l++) ref_kv(r, l, ctx, r->len);
        r->len++;
    }
    free(feat);
    free(ctx);
}

/* The sublayer convolution (docs/dflash-format.md):
 * out[t][c] = sum_tap (base[side][tap][c] + dyn[t][side][tap][c/gs]) z[t-tap][c]. */
static void ref_conv(const ref_draft *r, const double *z, int B, const double *base, const double *dyn, int side,
                     double *out) {
    int H = r->H, K = r->K, G = H / r->gs;
    for (int t = 0; t < B; t++)
        for (int c = 0; c < H; c++) {
            double s = 0;
            for (int tap = 0; tap < K; tap++) {
                if (t - tap < 0) continue; /* z[-1] = 0: no reach before the block */
                double w = base[((size_t)side * K + tap) * H + c] + dyn[(size_t)t * 2 * K * G + (side * K + tap) * G + c / r->gs];
                s += w * z[(size_t)(t - tap) * H + c];
            }
            out[(size_t)t * H + c] = s;
        }
}

static void target_row(const pf_weight *w, int64_t row, double *out) {
    float *tmp = malloc((size_t)w->cols * sizeof(float));
    pf_dequantize_row(w->type, (const char *)w->data + (size_t)row * w->row_bytes, tmp, w->cols);
    for (int64_t i = 0; i < w->cols; i++) out[i] = tmp[i];
    free(tmp);
}

/* The block forward. logits: (B-1) x V; hn: B x H final-normed rows. */
static void ref_block(ref_draft *r, int32_t bonus, int B, double *logits, double *hn) {
    const pf_model *m = r->target;
    int H = r->H, hd = r->hd, qd = r->nh * hd, kvd = r->nkv * hd, F = r->F, V = r->V, v2 = r->version == 2;
    int KG2 = v2 ? 2 * r->K * (H / r->gs) : 1;
    int64_t start = r->len;
    size_t BH = (size_t)B * H;
    double *x = malloc(BH * sizeof(double)), *u = malloc(BH * sizeof(double)), *cu = malloc(BH * sizeof(double));
    double *o = malloc(BH * sizeof(double)), *co = malloc(BH * sizeof(double));
    double *q = malloc((size_t)B * qd * sizeof(double)), *att = malloc((size_t)B * qd * sizeof(double));
    double *dyn = malloc((size_t)B * KG2 * sizeof(double)), *g = malloc((size_t)F * sizeof(double));
    double *up = malloc((size_t)F * sizeof(double)), *sc = malloc((size_t)(start + B) * sizeof(double));
    for (int t = 0; t < B; t++) target_row(&m->tok_embd, t ? r->mask : bonus, x + (size_t)t * H);
    for (int l = 0; l < r->L; l++) {
        ref_layer *y = &r->lay[l];
        /* attention sublayer */
        for (int t = 0; t < B; t++) ref_rmsnorm(x + (size_t)t * H, y->an, H, r->eps, u + (size_t)t * H);
        const double *in = u;
        if (v2) {
            for (int t = 0; t < B; t++) ref_matvec_d(y->acp, KG2, H, u + (size_t)t * H, dyn + (size_t)t * KG2);
            ref_conv(r, u, B, y->acb, dyn, 0, cu);
            in = cu;
        }
        for (int t = 0; t < B; t++) {
            double *qt = q + (size_t)t * qd;
            ref_matvec_d(y->wq, qd, H, in + (size_t)t * H, qt);
            for (int h = 0; h < r->nh; h++) ref_rmsnorm(qt + h * hd, y->qn, hd, r->eps, qt + h * hd);
            ref_rope(qt, r->nh, hd, start + t, r->theta);
            ref_kv(r, l, in + (size_t)t * H, start + t); /* block K/V after the context */
        }
        const double *K = r->kc + (size_t)l * r->n_ctx * kvd, *Vv = r->vc + (size_t)l * r->n_ctx * kvd;
        int grp = r->nh / r->nkv;
        for (int t = 0; t < B; t++) {
            int64_t pi = start + t;
            for (int h = 0; h < r->nh; h++) {
                int kh = h / grp;
                double mx = -1e300, sum = 0, *a = att + (size_t)t * qd + h * hd;
                for (int64_t j = 0; j < start + B; j++) {
                    int keep = (!r->causal || j <= pi) && (r->window[l] == 0 || pi - j < r->window[l]);
                    sc[j] = -INFINITY;
                    if (!keep) continue;
                    double s = 0;
                    for (int i = 0; i < hd; i++) s += q[(size_t)t * qd + h * hd + i] * K[j * kvd + kh * hd + i];
                    sc[j] = s / sqrt((double)hd);
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int i = 0; i < hd; i++) a[i] = 0;
                for (int64_t j = 0; j < start + B; j++) {
                    if (sc[j] == -INFINITY) continue;
                    double e = exp(sc[j] - mx);
                    sum += e;
                    for (int i = 0; i < hd; i++) a[i] += e * Vv[j * kvd + kh * hd + i];
                }
                for (int i = 0; i < hd; i++) a[i] /= sum;
            }
            ref_matvec_d(y->wo, H, qd, att + (size_t)t * qd, o + (size_t)t * H);
        }
        if (v2) ref_conv(r, o, B, y->acb, dyn, 1, co);
        for (size_t i = 0; i < BH; i++) x[i] += v2 ? co[i] : o[i];
        /* MLP sublayer */
        for (int t = 0; t < B; t++) ref_rmsnorm(x + (size_t)t * H, y->fn, H, r->eps, u + (size_t)t * H);
        in = u;
        if (v2) {
            for (int t = 0; t < B; t++) ref_matvec_d(y->fcp, KG2, H, u + (size_t)t * H, dyn + (size_t)t * KG2);
            ref_conv(r, u, B, y->fcb, dyn, 0, cu);
            in = cu;
        }
        for (int t = 0; t < B; t++) {
            ref_matvec_d(y->wg, F, H, in + (size_t)t * H, g);
            ref_matvec_d(y->wu, F, H, in + (size_t)t * H, up);
            for (int i = 0; i < F; i++) g[i] = g[i] / (1.0 + exp(-g[i])) * up[i];
            ref_matvec_d(y->wd, H, F, g, o + (size_t)t * H);
        }
        if (v2) ref_conv(r, o, B, y->fcb, dyn, 1, co);
        for (size_t i = 0; i < BH; i++) x[i] += v2 ? co[i] : o[i];
    }
    for (int t = 0; t < B; t++) ref_rmsnorm(x + (size_t)t * H, r->out_norm, H, r->eps, hn + (size_t)t * H);
    double *row = malloc((size_t)H * sizeof(double));
    for (int v = 0; v < V; v++) {
        target_row(&m->output, v, row);
        for (int t = 1; t < B; t++) {
            double s = 0;
            for (int i = 0; i < H; i++) s += row[i] * hn[(size_t)t * H + i];
            logits[(size_t)(t - 1) * V + v] = s;
        }
    }
    free(row); free(x); free(u); free(cu); free(o); free(co); free(q); free(att); free(dyn); free(g); free(up); free(sc);
}

/* DFlash2 selector walk over the reference logits; cand/score: (B-1) x topk; tokens: B-1. */
static void ref_walk(const ref_draft *r, const double *logits, const double *hn, int B, int32_t bonus,
                     int32_t *cand, double *score, int32_t *tokens) {
    int V = r->V, R = r->R, kk = r->topk, H = r->H;
    double *gt = malloc((size_t)R * sizeof(double));
    int32_t prev = bonus;
    for (int t = 1; t < B; t++) {
        const double *lg = logits + (size_t)(t - 1) * V;
        int32_t *c = cand + (size_t)(t - 1) * kk;
        for (int j = 0; j < kk; j++) { /* j-th best: largest logit, lowest id on ties, not taken yet */
            int best = -1;
            for (int v = 0; v < V; v++) {
                int taken = 0;
                for (int i = 0; i < j; i++) taken |= c[i] == v;
                if (!taken && (best < 0 || lg[v] > lg[best])) best = v;
            }
            c[j] = best;
        }
        ref_matvec_d(r->sel_h, R, H, hn + (size_t)t * H, gt);
        double *s = score + (size_t)(t - 1) * kk;
        int bj = 0;
        for (int j = 0; j < kk; j++) {
            double acc = lg[c[j]];
            for (int i = 0; i < R; i++) acc += r->sel_a[(size_t)prev * R + i] * gt[i] * r->sel_b[(size_t)c[j] * R + i];
            s[j] = acc;
            if (s[j] > s[bj]) bj = j;
        }
        tokens[t - 1] = prev = c[bj];
    }
    free(gt);
}

static double max_abs(const double *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

/* Draft (pf_dflash) vs reference after the same context: greedy tokens exact, logits and selector
 * scores within tol relative to the largest reference value. */
static void compare_block(pf_dflash_state *s, ref_draft *r, int32_t bonus, int B, double tol, const char *what) {
    char err[PF_ERR_LEN];
    int V = r->V;
    int32_t *draft = malloc((size_t)B * sizeof *draft), *rtok = malloc((size_t)B * sizeof *rtok);
    double *rl = malloc((size_t)(B - 1) * V * sizeof(double)), *rh = malloc((size_t)B * r->H * sizeof(double));
    float *hidden = malloc((size_t)B * r->H * sizeof(float));
    CHECKF(pf_dflash_propose(s, bonus, B, NULL, NULL, draft, NULL, hidden, err) == 0, "%s: %s", what, err);
    ref_block(r, bonus, B, rl, rh);
    int nrows;
    const float *lg = pf_dflash_last_logits(s, &nrows);
    CHECK(lg && nrows == B - 1);
    double scale = max_abs(rl, (size_t)(B - 1) * V), worst = 0, hworst = 0;
    for (size_t i = 0; i < (size_t)(B - 1) * V; i++) worst = fmax(worst, fabs(lg[i] - rl[i]) / scale);
    for (size_t i = 0; i < (size_t)B * r->H; i++) hworst = fmax(hworst, fabs(hidden[i] - rh[i]));
    CHECKF(worst < tol, "%s: max relative logit error %.3g >= %.3g", what, worst, tol);
    CHECKF(hworst < tol * 10, "%s: hidden rows differ by %.3g", what, hworst);
    if (r->version == 1) {
        for (int t = 1; t < B; t++) {
            const double *row = rl + (size_t)(t - 1) * V;
            int best = 0;
            for (int v = 1; v < V; v++)
                if (row[v] > row[best]) best = v;
            rtok[t - 1] = best;
        }
    } else {
        int kk = r->topk;
        int32_t *rc = malloc((size_t)(B - 1) * kk * sizeof *rc);
        double *rs = malloc((size_t)(B - 1) * kk * sizeof(double));
        ref_walk(r, rl, rh, B, bonus, rc, rs, rtok);
        const int32_t *cand;
        const float *score;
        CHECK(pf_dflash_last_selector(s, &cand, &score) == kk);
        double ss = max_abs(rs, (size_t)(B - 1) * kk), sworst = 0;
        int same_cand = !memcmp(cand, rc, (size_t)(B - 1) * kk * sizeof *rc);
        for (size_t i = 0; i < (size_t)(B - 1) * kk; i++) sworst = fmax(sworst, fabs(score[i] - rs[i]) / ss);
        /* the walk must actually move the choice away from the plain argmax somewhere */
        int moved = 0;
        for (int t = 1; t < B; t++) moved |= rtok[t - 1] != rc[(size_t)(t - 1) * kk];
        free(rc);
        free(rs);
        CHECKF(same_cand, "%s: selector candidates differ from the reference top-%d", what, kk);
        CHECKF(sworst < tol, "%s: max relative selector score error %.3g >= %.3g", what, sworst, tol);
        CHECKF(moved, "%s: the selector never overrode the top logit (test has no power)", what);
    }
    for (int k = 0; k < B - 1; k++)
        CHECKF(draft[k] == rtok[k], "%s: draft token %d is %d, reference %d", what, k + 1, draft[k], rtok[k]);
    free(draft); free(rtok); free(rl); free(rh); free(hidden);
}

/* Two rounds against the reference: context 12, block B1; 3 more context rows, block B2. */
static void check_reference(uint32_t type, int version, const int64_t *windows, int causal, double tol,
                            bool (*drop)(const char *), void (*edit)(gguf_writer *), const char *tag) {
    char tpath[300], dpath[300], epath[300], err[PF_ERR_LEN];
    pf_model *m = make_target(pf_synth_shape_find("tiny"), type, tpath, sizeof tpath);
    CHECK(m);
    char name[96];
    snprintf(name, sizeof name, "df-ref-%s.gguf", tag);
    CHECK(make_draft(tpath, version, 2, 8, NULL, 2, 11, false, name, dpath, sizeof dpath) == 0);
    if (edit) {
        snprintf(name, sizeof name, "df-ref-%s-edit.gguf", tag);
        test_tmp_path(epath, sizeof epath, name);
        CHECK(rewrite_gguf(dpath, epath, drop, NULL, edit) == 0);
        strcpy(dpath, epath);
    }
    pf_dflash *d = load_draft(dpath, m);
    CHECK(d);
    CHECK(pf_dflash_version(d) == version);
    CHECK(pf_dflash_causal(d) == (causal != 0));
    for (int l = 0; l < 2; l++) CHECK(pf_dflash_layer_window(d, l) == (windows ? windows[l] : 0));
    ref_draft r;
    CHECK(ref_load(&r, dpath, m, windows, causal, 64) == 0);
    enum { N = 15 };
    int32_t toks[N];
    prompt_tokens(toks, N, m->hp.n_vocab, version);
    float *taps = test_target_taps(m, d, toks, N);
    CHECK(taps);
    pf_pool *pool = pf_pool_create(2);
    pf_dflash_state *s = pf_dflash_state_new(d, 64, pool, NULL, err);
    CHECKF(s, "%s", err);
    int FI = r.T * m->hp.n_embd;
    CHECK(pf_dflash_append_context(s, taps, 12, err) == 0);
    ref_append(&r, taps, 12);
    compare_block(s, &r, toks[12], 8, tol, tag);
    if (!pf_test_failed()) {
        CHECK(pf_dflash_append_context(s, taps + (size_t)12 * FI, 3, err) == 0);
        ref_append(&r, taps + (size_t)12 * FI, 3);
        compare_block(s, &r, 77, 5, tol, tag); /* a block size other than the trained 8 */
    }
    pf_dflash_state_free(s);
    pf_pool_destroy(pool);
    ref_free(&r);
    free(taps);
    pf_dflash_free(d);
    pf_model_free(m);
}

/* f32 / f16 weights: no activation quantization, so the engine differs from float64 only by
 * float rounding (and f16 K/V rounding, which the reference mirrors). */
TEST(dflash_v1_matches_float64_reference) { check_reference(PF_TYPE_F32, 1, NULL, 0, 1e-4, NULL, NULL, "v1-f32"); }
TEST(dflash_v1_matches_float64_reference_f16) { check_reference(PF_TYPE_F16, 1, NULL, 0, 1e-4, NULL, NULL, "v1-f16"); }
TEST(dflash_v2_matches_float64_reference) { check_reference(PF_TYPE_F32, 2, NULL, 0, 1e-4, NULL, NULL, "v2-f32"); }
TEST(dflash_v2_matches_float64_reference_f16) { check_reference(PF_TYPE_F16, 2, NULL, 0, 1e-4, NULL, NULL, "v2-f16"); }


/* ---------------------------------------------------------------- sliding window, causal */

static void add_window(gguf_writer *w) {
    gguf_w_u32(w, "dflash.attention.sliding_window", 6);
    int32_t pat[2] = {1, 0}; /* layer 0 slides, layer 1 is full */
    gguf_w_arr(w, "dflash.attention.sliding_window_pattern", GGUF_I32, pat, 2);
}
static void add_window_all(gguf_writer *w) { gguf_w_u32(w, "dflash.attention.sliding_window", 4); }
static bool drop_causal(const char *k) { return !strcmp(k, "dflash.attention.causal"); }
static void add_causal(gguf_writer *w) { gguf_w_bool(w, "dflash.attention.causal", true); }
static void add_causal_window(gguf_writer *w) {
    add_causal(w);
    add_window(w);
}

/* Windows cut into both the context and the block (context 12/15 rows, window 6 or 4). */
TEST(dflash_sliding_window_matches_reference) {
    int64_t win[2] = {6, 0}, all[2] = {4, 4};
    check_reference(PF_TYPE_F32, 1, win, 0, 1e-4, NULL, add_window, "window-v1");
    if (pf_test_failed()) return;
    check_reference(PF_TYPE_F32, 2, win, 0, 1e-4, NULL, add_window, "window-v2");
    if (pf_test_failed()) return;
    check_reference(PF_TYPE_F32, 1, all, 0, 1e-4, NULL, add_window_all, "window-all");
}

TEST(dflash_causal_flag_matches_reference) {
    int64_t win[2] = {6, 0};
    check_reference(PF_TYPE_F32, 1, NULL, 1, 1e-4, drop_causal, add_causal, "causal-v1");
    if (pf_test_failed()) return;
    check_reference(PF_TYPE_F32, 2, NULL, 1, 1e-4, drop_causal, add_causal, "causal-v2");
    if (pf_test_failed()) return;
    check_reference(PF_TYPE_F32, 1, win, 1, 1e-4, drop_causal, add_causal_window, "causal-window");
}

/* ---------------------------------------------------------------- DFlash2 identity == DFlash */

static bool is_v2_key(const char *k) { return strstr(k, "dflash.conv_") || strstr(k, "dflash.selector_"); }
static bool is_v2_tensor(const char *n) { return strstr(n, "_conv_") || !strncmp(n, "selector_", 9); }

/* Runs the same context and block through two drafts; tokens, logits and hidden rows bitwise. */
static void check_same_drafts(const pf_model *m, pf_dflash *a, pf_dflash *b, const int *blocks, int n_blocks,
                              const char *what) {
    char err[PF_ERR_LEN];
    enum { N = 13 };
    int32_t toks[N];
    prompt_tokens(toks, N, m->hp.n_vocab, 3);
    float *taps = test_target_taps(m, a, toks, N);
    CHECK(taps);
    pf_pool *pool = pf_pool_create(2);
    pf_dflash_state *sa = pf_dflash_state_new(a, 64, pool, NULL, err), *sb = pf_dflash_state_new(b, 64, pool, NULL, err);
    CHECK(sa && sb);
    CHECK(pf_dflash_append_context(sa, taps, N - 1, err) == 0 && pf_dflash_append_context(sb, taps, N - 1, err) == 0);
    int H = m->hp.n_embd, V = m->hp.n_vocab;
    for (int i = 0; i < n_blocks; i++) {
        int B = blocks[i];
        int32_t da[64], db[64];
        float *ha = malloc((size_t)B * H * sizeof(float)), *hb = malloc((size_t)B * H * sizeof(float));
        CHECK(pf_dflash_propose(sa, toks[N - 1], B, NULL, NULL, da, NULL, ha, err) == 0);
        CHECK(pf_dflash_propose(sb, toks[N - 1], B, NULL, NULL, db, NULL, hb, err) == 0);
        const float *la = pf_dflash_last_logits(sa, NULL), *lb = pf_dflash_last_logits(sb, NULL);
        CHECKF(!memcmp(da, db, (size_t)(B - 1) * sizeof da[0]), "%s B=%d: draft tokens differ", what, B);
        CHECKF(!memcmp(la, lb, (size_t)(B - 1) * V * sizeof(float)), "%s B=%d: row logits differ", what, B);
        CHECKF(!memcmp(ha, hb, (size_t)B * H * sizeof(float)), "%s B=%d: hidden rows differ", what, B);
        free(ha);
        free(hb);
    }
    pf_dflash_state_free(sa);
    pf_dflash_state_free(sb);
    pf_pool_destroy(pool);
    free(taps);
}

static void check_identity(uint32_t type) {
    char tpath[300], p2[300], p1[300], p1s[300], name[64];
    pf_model *m = make_target(pf_synth_shape_find("tiny"), type, tpath, sizeof tpath);
    CHECK(m);
    const char *tn = pf_type_info(type)->name;
    snprintf(name, sizeof name, "df-id-v2-%s.gguf", tn);
    CHECK(make_draft(tpath, 2, 2, 8, NULL, 2, 5, true, name, p2, sizeof p2) == 0);
    snprintf(name, sizeof name, "df-id-v1-%s.gguf", tn);
    test_tmp_path(p1, sizeof p1, name);
    CHECK(rewrite_gguf(p2, p1, is_v2_key, is_v2_tensor, NULL) == 0);
    snprintf(name, sizeof name, "df-id-v1s-%s.gguf", tn);
    CHECK(make_draft(tpath, 1, 2, 8, NULL, 2, 5, false, name, p1s, sizeof p1s) == 0);
    pf_dflash *d2 = load_draft(p2, m), *d1 = load_draft(p1, m), *d1s = load_draft(p1s, m);
    CHECK(d2 && d1 && d1s);
    CHECK(pf_dflash_version(d2) == 2 && pf_dflash_version(d1) == 1 && pf_dflash_version(d1s) == 1);
    static const int blocks[] = {8, 2, 3, 12};
    check_same_drafts(m, d2, d1, blocks, 4, "identity v2 vs stripped v1");
    /* the v1 synthesized with the same seed holds the same shared weights */
    if (!pf_test_failed()) check_same_drafts(m, d2, d1s, blocks, 1, "identity v2 vs synthesized v1");
    pf_dflash_free(d2);
    pf_dflash_free(d1);
    pf_dflash_free(d1s);
    pf_model_free(m);
}

TEST(dflash_v2_identity_equals_v1_f32) { check_identity(PF_TYPE_F32); }
TEST(dflash_v2_identity_equals_v1_q4_1) { check_identity(PF_TYPE_Q4_1); }

/* ---------------------------------------------------------------- determinism, splits, threads */

static void check_invariance(int version) {
    char err[PF_ERR_LEN];
    enum { N = 41 }; /* 40 context rows: more than one internal chunk */
    int32_t toks[N];
    tapped_draft td;
    CHECK(tapped_draft_open(&td, PF_TYPE_Q8_0, version, 2, 9, "df-inv", toks, N, 5) == 0);
    pf_model *m = td.m;
    pf_dflash *d = td.d;
    float *taps = td.taps;
    int n_taps;
    pf_dflash_tap_layers(d, &n_taps);
    size_t row = (size_t)n_taps * m->hp.n_embd;
    pf_pool *p1 = pf_pool_create(1), *p3 = pf_pool_create(3);
    pf_dflash_state *a = pf_dflash_state_new(d, 96, p1, NULL, err);
    pf_dflash_state *b = pf_dflash_state_new(d, 96, p3, NULL, err);
    pf_dflash_state *c = pf_dflash_state_new(d, 96, NULL, NULL, err);
    CHECK(a && b && c);
    CHECK(pf_dflash_append_context(a, taps, N - 1, err) == 0);
    for (int i = 0; i < N - 1; i++) CHECK(pf_dflash_append_context(b, taps + i * row, 1, err) == 0);
    CHECK(pf_dflash_append_context(c, taps, 5, err) == 0 && pf_dflash_append_context(c, taps + 5 * row, 0, err) == 0);
    CHECK(pf_dflash_append_context(c, taps + 5 * row, N - 6, err) == 0);
    CHECK(pf_dflash_context_len(a) == N - 1 && pf_dflash_context_len(b) == N - 1 && pf_dflash_context_len(c) == N - 1);
    const int kvd = pf_dflash_kv_dim(d);
    pf_half *ra = malloc((size_t)kvd * sizeof(pf_half)), *rb = malloc((size_t)kvd * sizeof(pf_half)),
            *rc = malloc((size_t)kvd * sizeof(pf_half));
    for (int l = 0; l < pf_dflash_n_layer(d); l++)
        for (int keys = 0; keys < 2; keys++)
            for (int p = 0; p < N - 1; p++) {
                pf_dflash_cache_row(a, l, keys, p, ra);
                pf_dflash_cache_row(b, l, keys, p, rb);
                pf_dflash_cache_row(c, l, keys, p, rc);
                size_t nb = (size_t)kvd * sizeof(pf_half);
                CHECKF(!memcmp(ra, rb, nb), "layer %d %s, position %d: one call != row by row", l, keys ? "K" : "V", p);
                CHECKF(!memcmp(ra, rc, nb), "layer %d %s, position %d: 5+35 split differs", l, keys ? "K" : "V", p);
            }
    free(ra), free(rb), free(rc);
    int V = m->hp.n_vocab;
    enum { B = 8 };
    int32_t d0[B], d1[B];
    float *l0 = malloc((size_t)(B - 1) * V * sizeof(float));
    CHECK(pf_dflash_propose(a, toks[N - 1], B, NULL, NULL, d0, NULL, NULL, err) == 0);
    memcpy(l0, pf_dflash_last_logits(a, NULL), (size_t)(B - 1) * V * sizeof(float));
    CHECK(pf_dflash_context_len(a) == N - 1);
    /* a large block (beyond the trained size and the internal chunk) in between changes nothing */
    int32_t big[47];
    CHECKF(pf_dflash_propose(a, toks[N - 1], 48, NULL, NULL, big, NULL, NULL, err) == 0, "%s", err);
    CHECK(pf_dflash_context_len(a) == N - 1);
    pf_dflash_state *all[3] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        CHECK(pf_dflash_propose(all[i], toks[N - 1], B, NULL, NULL, d1, NULL, NULL, err) == 0);
        CHECKF(!memcmp(d0, d1, sizeof(int32_t) * (B - 1)), "state %d: draft tokens differ", i);
        CHECKF(!memcmp(l0, pf_dflash_last_logits(all[i], NULL), (size_t)(B - 1) * V * sizeof(float)),
               "state %d (threads %d): logits differ", i, i == 0 ? 1 : i == 1 ? 3 : 1);
        CHECK(pf_dflash_context_len(all[i]) == N - 1);
    }
    /* blocks that do not fit; bad tokens */
    CHECK(pf_dflash_propose(a, toks[N - 1], 57, NULL, NULL, big, NULL, NULL, err) == PF_RC_CONTEXT && strstr(err, "context"));
    CHECK(pf_dflash_propose(a, V, 4, NULL, NULL, big, NULL, NULL, err) == PF_RC_ARG && strstr(err, "vocabulary"));
    CHECK(pf_dflash_append_context(a, taps, 57, err) == PF_RC_CONTEXT && strstr(err, "context") && pf_dflash_context_len(a) == N - 1);
    /* truncate + re-append == never truncated */
    pf_dflash_truncate(a, 30);
    CHECK(pf_dflash_append_context(a, taps + 30 * row, N - 31, err) == 0);
    CHECK(pf_dflash_propose(a, toks[N - 1], B, NULL, NULL, d1, NULL, NULL, err) == 0);
    CHECK(!memcmp(l0, pf_dflash_last_logits(a, NULL), (size_t)(B - 1) * V * sizeof(float)));
    pf_dflash_reset(a);
    CHECK(pf_dflash_context_len(a) == 0);
    free(l0);
    pf_dflash_state_free(a);
    pf_dflash_state_free(b);
    pf_dflash_state_free(c);
    pf_pool_destroy(p1);
    pf_pool_destroy(p3);
    tapped_draft_close(&td);
}

TEST(dflash_v1_deterministic_split_and_thread_invariant) { check_invariance(1); }
TEST(dflash_v2_deterministic_split_and_thread_invariant) { check_invariance(2); }

/* ---------------------------------------------------------------- sampled proposals */

static void check_sampled(int version) {
    char err[PF_ERR_LEN];
    enum { N = 10, B = 8 };
    int32_t toks[N];
    tapped_draft td;
    CHECK(tapped_draft_open(&td, PF_TYPE_F16, version, 1, 13, "df-samp", toks, N, 1) == 0);
    pf_dflash *d = td.d;
    pf_dflash_state *s = pf_dflash_state_new(d, 64, NULL, NULL, err);
    CHECK(s);
    CHECK(pf_dflash_append_context(s, td.taps, N - 1, err) == 0);
    int V = td.m->hp.n_vocab;
    pf_dist q[B - 1];
    for (int i = 0; i < B - 1; i++) CHECK(pf_dist_init(&q[i], V) == 0);
    int32_t greedy[B], dr[B], dr2[B];
    CHECK(pf_dflash_propose(s, toks[N - 1], B, NULL, NULL, greedy, NULL, NULL, err) == 0);

    /* temperature 0 (rng not needed): point masses on the greedy tokens */
    pf_sampling cold = {0, 0, 1};
    CHECK(pf_dflash_propose(s, toks[N - 1], B, &cold, NULL, dr, q, NULL, err) == 0);
    for (int k = 0; k < B - 1; k++) CHECK(dr[k] == greedy[k] && q[k].n == 1 && q[k].p[0] == 1.0f && q[k].ids[0] == dr[k]);

    pf_sampling warm[2] = {{1.5f, 0, 1}, {0.8f, 5, 0.9f}};
    int differs = 0;
    for (int w = 0; w < 2; w++) {
        pf_rng rng;
        for (int rep = 0; rep < 6; rep++) {
            pf_rng_seed(&rng, 100 + rep);
            CHECK(pf_dflash_propose(s, toks[N - 1], B, &warm[w], &rng, dr, q, NULL, err) == 0);
            const float *lg = pf_dflash_last_logits(s, NULL);
            const int32_t *cand = NULL;
            const float *score = NULL;
            int kk = pf_dflash_last_selector(s, &cand, &score);
            CHECK((version == 2) == (kk > 0));
            for (int k = 0; k < B - 1; k++) {
                double sum = 0;
                for (int i = 0; i < q[k].n; i++) sum += q[k].p[i];
                CHECKF(fabs(sum - 1) < 1e-5, "q[%d] sums to %.8f", k, sum);
                CHECKF(pf_dist_prob(&q[k], dr[k]) > 0, "draft %d = %d has q 0", k, dr[k]);
                differs |= dr[k] != greedy[k];
                if (version == 1) { /* exactly the sampler's distribution of that row */
                    pf_dist ref;
                    CHECK(pf_dist_init(&ref, V) == 0);
                    pf_sampling_probs(&warm[w], lg + (size_t)k * V, V, &ref);
                    CHECK(ref.n == q[k].n && !memcmp(ref.ids, q[k].ids, ref.n * sizeof(int32_t)) &&
                          !memcmp(ref.p, q[k].p, ref.n * sizeof(float)));
                    pf_dist_free(&ref);
                } else { /* softmax(score / T) over the row's candidates */
                    CHECK(q[k].n <= kk);
                    double z = 0, mx = -1e30;
                    for (int j = 0; j < kk; j++) mx = fmax(mx, score[k * kk + j]);
                    for (int j = 0; j < kk; j++) z += exp((score[k * kk + j] - mx) / warm[w].temp);
                    for (int j = 0; j < kk; j++) {
                        double p = exp((score[k * kk + j] - mx) / warm[w].temp) / z;
                        CHECKF(fabs(pf_dist_prob(&q[k], cand[k * kk + j]) - p) < 1e-5, "row %d cand %d: q %.6f vs %.6f",
                               k, j, pf_dist_prob(&q[k], cand[k * kk + j]), p);
                    }
                }
            }
            /* the same seed, the same proposal */
            pf_rng_seed(&rng, 100 + rep);
            CHECK(pf_dflash_propose(s, toks[N - 1], B, &warm[w], &rng, dr2, NULL, NULL, err) == 0);
            CHECK(!memcmp(dr, dr2, sizeof(int32_t) * (B - 1)));
        }
    }
    CHECKF(differs, "sampling never left the greedy tokens (test has no power)");
    CHECK(pf_dflash_propose(s, toks[N - 1], B, &warm[0], NULL, dr, q, NULL, err) == PF_RC_ARG && strstr(err, "rng"));
    CHECK(pf_dflash_context_len(s) == N - 1);
    for (int i = 0; i < B - 1; i++) pf_dist_free(&q[i]);
    pf_dflash_state_free(s);
    tapped_draft_close(&td);
}

TEST(dflash_v1_sampled_proposals) { check_sampled(1); }
TEST(dflash_v2_sampled_proposals) { check_sampled(2); }

/* ---------------------------------------------------------------- loading errors */

static const char *g_drop_tensor;
static bool drop_named_tensor(const char *n) { return !strcmp(n, g_drop_tensor); }
static bool drop_mask(const char *k) { return !strcmp(k, "tokenizer.ggml.mask_token_id"); }
static void add_bad_mask(gguf_writer *w) { gguf_w_u32(w, "tokenizer.ggml.mask_token_id", 100000); }
static bool drop_layers(const char *k) { return !strcmp(k, "dflash.target_layers"); }
static void add_three_layers(gguf_writer *w) {
    int32_t l[3] = {1, 2, 2};
    gguf_w_arr(w, "dflash.target_layers", GGUF_I32, l, 3);
}
static bool drop_block(const char *k) { return !strcmp(k, "dflash.block_size"); }

/* Loading `path` against m fails with one line that names the file and `field`. */
static void expect_load_error(const char *path, const pf_model *m, const char *field) {
    char err[PF_ERR_LEN] = "";
    pf_dflash *d = pf_dflash_load(path, m, err);
    if (d) pf_dflash_free(d);
    CHECKF(!d, "%s loaded; expected an error about %s", path, field);
    CHECKF(strstr(err, path) && strstr(err, field) && !strchr(err, '\n'), "error '%s' should name %s and %s", err,
           path, field);
}

TEST(dflash_load_errors_name_the_field) {
    char tpath[300], hpath[300], deep[300], dpath[300], d2path[300], bad[300];
    pf_model *m = make_target(pf_synth_shape_find("tiny"), PF_TYPE_F32, tpath, sizeof tpath);
    pf_model *mh = make_target(&k_tiny_h64, PF_TYPE_F32, hpath, sizeof hpath);
    pf_model *md = make_target(&k_tiny_deep, PF_TYPE_F32, deep, sizeof deep);
    CHECK(m && mh && md);
    CHECK(make_draft(tpath, 1, 1, 8, NULL, 2, 3, false, "df-err.gguf", dpath, sizeof dpath) == 0);
    CHECK(make_draft(tpath, 2, 1, 8, NULL, 2, 3, false, "df-err2.gguf", d2path, sizeof d2path) == 0);
    /* a target is not a draft */
    expect_load_error(tpath, m, "general.architecture");
    /* a tensor missing, in a v1 and in the v2 parts */
    test_tmp_path(bad, sizeof bad, "df-err-missing.gguf");
    g_drop_tensor = "blk.0.ffn_up.weight";
    CHECK(rewrite_gguf(dpath, bad, NULL, drop_named_tensor, NULL) == 0);
    expect_load_error(bad, m, "blk.0.ffn_up.weight");
    test_tmp_path(bad, sizeof bad, "df-err-missing2.gguf");
    g_drop_tensor = "selector_successor.weight";
    CHECK(rewrite_gguf(d2path, bad, NULL, drop_named_tensor, NULL) == 0);
    expect_load_error(bad, m, "selector_successor.weight");
    g_drop_tensor = "blk.0.ffn_conv_base";
    CHECK(rewrite_gguf(d2path, bad, NULL, drop_named_tensor, NULL) == 0);
    expect_load_error(bad, m, "blk.0.ffn_conv_base");
    /* a draft for a target of another width */
    test_tmp_path(bad, sizeof bad, "df-err-h64.gguf");
    CHECK(pf_dflash_synth(hpath, 1, 1, 8, NULL, 2, 3, false, bad, (char[PF_ERR_LEN]){0}) == 0);
    expect_load_error(bad, m, "dflash.embedding_length");
    /* tapping layer 3 of a 4-layer target, loaded against a 2-layer one */
    int taps[2] = {1, 3};
    test_tmp_path(bad, sizeof bad, "df-err-deep.gguf");
    CHECK(pf_dflash_synth(deep, 1, 1, 8, taps, 2, 3, false, bad, (char[PF_ERR_LEN]){0}) == 0);
    pf_dflash *ok = load_draft(bad, md);
    CHECK(ok);
    pf_dflash_free(ok);
    expect_load_error(bad, m, "dflash.target_layers");
    /* fc width != taps x target hidden */
    test_tmp_path(bad, sizeof bad, "df-err-fc.gguf");
    CHECK(rewrite_gguf(dpath, bad, drop_layers, NULL, add_three_layers) == 0);
    expect_load_error(bad, m, "fc.weight");
    /* mask outside the vocabulary; block size missing */
    test_tmp_path(bad, sizeof bad, "df-err-mask.gguf");
    CHECK(rewrite_gguf(dpath, bad, drop_mask, NULL, add_bad_mask) == 0);
    expect_load_error(bad, m, "tokenizer.ggml.mask_token_id");
    test_tmp_path(bad, sizeof bad, "df-err-block.gguf");
    CHECK(rewrite_gguf(dpath, bad, drop_block, NULL, NULL) == 0);
    expect_load_error(bad, m, "dflash.block_size");
    /* and the good files load with the expected facts */
    pf_dflash *d = load_draft(dpath, m);
    CHECK(d);
    int n_taps;
    const int *tl = pf_dflash_tap_layers(d, &n_taps);
    CHECK(n_taps == 2 && tl[0] == 0 && tl[1] == 0); /* z-lab's rule on 2 target layers, never the last one */
    CHECK(pf_dflash_block_size(d) == 8 && pf_dflash_version(d) == 1 && pf_dflash_selector_top_k(d) == 0);
    CHECK(pf_dflash_mask_token(d) == pf_tokenizer_find(m->tok, "<|fim_pad|>", 11));
    CHECK(pf_dflash_n_embd(d) == m->hp.n_embd);
    pf_dflash_free(d);
    pf_model_free(m);
    pf_model_free(mh);
    pf_model_free(md);
}
