/* Random-weight dflash GGUF writer (pf_dflash_synth). */
#include "convert/dflash_synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draft/dflash_taps.h"
#include "engine/model.h"
#include "engine/rng.h"
#include "engine/tokenizer.h"
#include "formats/ggml_types.h"
#include "convert/requantize.h"
#include "convert/shape_keys.h"

static float gauss(pf_rng *r) {
    double u1 = pf_rng_uniform(r), u2 = pf_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* Only the tokenizer travels from the target (its mask id is set separately). */
static bool skip_non_tokenizer(const char *key) {
    return strncmp(key, "tokenizer.", 10) != 0 || strcmp(key, "tokenizer.ggml.mask_token_id") == 0;
}

/* The MASK token: the target's own, else <|fim_pad|>, else the last control token. */
static int32_t pick_mask(const pf_tokenizer *tok) {
    int32_t m = pf_tokenizer_mask(tok);
    if (m >= 0) return m;
    m = pf_tokenizer_find(tok, "<|fim_pad|>", 11);
    if (m >= 0) return m;
    for (int32_t i = pf_tokenizer_n_vocab(tok) - 1; i >= 0; i--)
        if (pf_tokenizer_token_type(tok, i) == PF_TOKEN_CONTROL) return i;
    return -1;
}

typedef struct {
    gguf_writer *w;
    float *tmp;
    int oom;
} tensor_sink;

/* Tensor data kept by the writer until it has written them. */
static void *own(tensor_sink *s, void *p) {
    if (!(p = gguf_w_own(s->w, p))) s->oom = 1;
    return p;
}

/* Matrix [rows, cols] of gaussians * std (or all `fill` when std == 0) stored as `type`. */
static void put_matrix(tensor_sink *s, const char *name, int64_t rows, int64_t cols, float std, float fill,
                       uint32_t type, pf_rng *rng) {
    if (s->oom) return;
    for (int64_t i = 0; i < rows * cols; i++) s->tmp[i] = std != 0 ? gauss(rng) * std : fill;
    size_t nb = 0;
    void *data = own(s, pf_convert_matrix(type, s->tmp, rows, cols, &nb));
    if (!data) return;
    int64_t ne[2] = {cols, rows};
    gguf_w_tensor(s->w, name, type, 2, ne, data, nb);
}

/* f32 tensor of n_dims dims ne[]; the caller fills the returned buffer. */
static float *put_f32(tensor_sink *s, const char *name, uint32_t n_dims, const int64_t *ne) {
    if (s->oom) return NULL;
    int64_t n = 1;
    for (uint32_t i = 0; i < n_dims; i++) n *= ne[i];
    float *v = own(s, malloc((size_t)n * sizeof(float)));
    if (!v) return NULL;
    gguf_w_tensor(s->w, name, PF_TYPE_F32, n_dims, ne, v, (size_t)n * sizeof(float));
    return v;
}

static void put_norm(tensor_sink *s, const char *name, int64_t n, pf_rng *rng) {
    float *v = put_f32(s, name, 1, &n);
    if (v)
        for (int64_t i = 0; i < n; i++) v[i] = 1.0f + 0.1f * gauss(rng);
}

/* The draft's shape: the target's attention and FFN, n_taps taps into fc, DFlash2's convs and
 * selector. */
typedef struct {
    int version, n_layers, block_size, n_taps;
    int H, hd, F, V, conv_k, conv_group, top_k, rank;
    int64_t qd, kvd, fc_in;
    uint32_t type; /* of the matrices: the target's */
} draft_dims;

static draft_dims dims_of(const pf_model *m, int version, int n_layers, int block_size, int n_taps) {
    const pf_hparams *th = &m->hp;
    draft_dims d = {.version = version, .n_layers = n_layers, .block_size = block_size, .n_taps = n_taps,
                    .H = th->n_embd, .hd = th->head_dim, .F = th->n_ff, .V = th->n_vocab, .conv_k = 2,
                    .conv_group = 16, .type = m->layers[0].attn_q.type};
    d.top_k = d.V < 16 ? d.V : 16;
    d.qd = (int64_t)th->n_head * d.hd;
    d.kvd = (int64_t)th->n_head_kv * d.hd;
    d.fc_in = (int64_t)n_taps * d.H;
    d.rank = d.H / 2 / 32 * 32;
    if (d.rank > 256) d.rank = 256;
    if (d.rank < 32) d.rank = 32;
    return d;
}

/* The tapped layers, 1-based as the file stores them: the given ones, or the default rule's. */
static pf_rc resolve_taps(const pf_hparams *th, const int *target_layers, int n_taps, int32_t *layers_p1,
                          char err[PF_ERR_LEN]) {
    int def[256];
    if (!target_layers && pf_dflash_default_taps(th->n_layer, n_taps, def) < 0) {
        snprintf(err, PF_ERR_LEN, "synth-draft: a target of %d layers has no layer to tap but its last", th->n_layer);
        return PF_RC_ARG;
    }
    for (int i = 0; i < n_taps; i++) {
        int L = target_layers ? target_layers[i] : def[i];
        if (L < 0 || L >= th->n_layer) {
            snprintf(err, PF_ERR_LEN, "synth-draft: tapped layer %d is outside the target's layers 0..%d", L,
                     th->n_layer - 1);
            return PF_RC_ARG;
        }
        layers_p1[i] = L + 1;
    }
    return PF_RC_OK;
}

/* The draft's metadata; the tokenizer is the target's (tf), with the MASK token `mask`. */
static void write_meta(gguf_writer *w, const draft_dims *d, const pf_hparams *th, const int32_t *layers_p1,
                       const gguf_file *tf, int32_t mask) {
    gguf_w_str(w, "general.architecture", "dflash");
    char nm[128];
    snprintf(nm, sizeof nm, "synthetic-dflash%s-%dL", d->version == 2 ? "2" : "", d->n_layers);
    gguf_w_str(w, "general.name", nm);
    gguf_w_u32(w, "dflash.block_count", (uint32_t)d->n_layers);
    pf_write_shape_keys(w, "dflash", &(pf_shape_keys){(uint32_t)th->n_ctx_train, (uint32_t)d->H, (uint32_t)d->F,
                                                      (uint32_t)th->n_head, (uint32_t)th->n_head_kv, (uint32_t)d->hd});
    gguf_w_f32(w, "dflash.rope.freq_base", th->rope_theta);
    gguf_w_f32(w, "dflash.attention.layer_norm_rms_epsilon", th->rms_eps);
    gguf_w_u32(w, "dflash.block_size", (uint32_t)d->block_size);
    gguf_w_arr(w, "dflash.target_layers", GGUF_I32, layers_p1, (uint64_t)d->n_taps);
    gguf_w_bool(w, "dflash.attention.causal", false);
    if (d->version == 2) {
        gguf_w_u32(w, "dflash.conv_kernel_size", (uint32_t)d->conv_k);
        gguf_w_u32(w, "dflash.conv_group_size", (uint32_t)d->conv_group);
        gguf_w_u32(w, "dflash.selector_rank", (uint32_t)d->rank);
        gguf_w_u32(w, "dflash.selector_top_k", (uint32_t)d->top_k);
    }
    gguf_w_copy_kv(w, tf, skip_non_tokenizer);
    gguf_w_u32(w, "tokenizer.ggml.mask_token_id", (uint32_t)mask);
}

/* The weights both versions have, from one stream: fc, the two norms and the layers. */
static void put_shared(tensor_sink *s, const draft_dims *d, pf_rng *rng) {
    const int H = d->H;
    const int64_t qd = d->qd, kvd = d->kvd, F = d->F;
    const uint32_t type = d->type;
    put_matrix(s, "fc.weight", H, d->fc_in, 1.0f / sqrtf((float)d->fc_in), 0, PF_TYPE_F32, rng);
    put_norm(s, "enc.output_norm.weight", H, rng);
    put_norm(s, "output_norm.weight", H, rng);
    const float s_h = 1.0f / sqrtf((float)H), s_q = 1.0f / sqrtf((float)qd), s_f = 1.0f / sqrtf((float)F);
    char name[96];
    for (int l = 0; l < d->n_layers; l++) {
#define LN(S) (snprintf(name, sizeof name, "blk.%d." S, l), name)
        put_norm(s, LN("attn_norm.weight"), H, rng);
        put_matrix(s, LN("attn_q.weight"), qd, H, s_h, 0, type, rng);
        put_matrix(s, LN("attn_k.weight"), kvd, H, s_h, 0, type, rng);
        put_matrix(s, LN("attn_v.weight"), kvd, H, s_h, 0, type, rng);
        put_norm(s, LN("attn_q_norm.weight"), d->hd, rng);
        put_norm(s, LN("attn_k_norm.weight"), d->hd, rng);
        put_matrix(s, LN("attn_output.weight"), H, qd, s_q, 0, type, rng);
        put_norm(s, LN("ffn_norm.weight"), H, rng);
        put_matrix(s, LN("ffn_gate.weight"), F, H, s_h, 0, type, rng);
        put_matrix(s, LN("ffn_up.weight"), F, H, s_h, 0, type, rng);
        put_matrix(s, LN("ffn_down.weight"), H, F, s_f, 0, type, rng);
#undef LN
    }
}

/* DFlash2's convs and selector, from a stream of their own; identity_v2: convs that pass their
 * input through and a selector that adds nothing to the draft's own scores. */
static void put_v2(tensor_sink *s, const draft_dims *d, uint64_t seed, bool identity_v2) {
    const int H = d->H, conv_k = d->conv_k, G = H / d->conv_group;
    const float s_h = 1.0f / sqrtf((float)H), s_sel = powf((float)d->rank, -0.25f);
    pf_rng rng2;
    pf_rng_seed(&rng2, seed ^ 0xd1f1a5402ull);
    char name[96];
    for (int l = 0; l < d->n_layers; l++) {
        static const char *const sub[2] = {"attn", "ffn"};
        for (int k = 0; k < 2; k++) {
            int64_t ne[3] = {H, conv_k, 2}; /* torch [2 sides, K taps, H] */
            snprintf(name, sizeof name, "blk.%d.%s_conv_base", l, sub[k]);
            float *b = put_f32(s, name, 3, ne);
            if (b)
                for (int side = 0; side < 2; side++)
                    for (int tap = 0; tap < conv_k; tap++)
                        for (int c = 0; c < H; c++)
                            b[((size_t)side * conv_k + tap) * H + c] =
                                (tap == 0 ? 1.0f : 0.0f) + (identity_v2 ? 0.0f : 0.1f * gauss(&rng2));
            snprintf(name, sizeof name, "blk.%d.%s_conv_proj.weight", l, sub[k]);
            put_matrix(s, name, 2 * conv_k * G, H, identity_v2 ? 0 : 0.2f * s_h, 0, d->type, &rng2);
        }
    }
    put_matrix(s, "selector_hidden.weight", d->rank, H, s_h, 0, d->type, &rng2);
    put_matrix(s, "selector_predecessor.weight", d->V, d->rank, s_sel, 0, d->type, &rng2);
    put_matrix(s, "selector_successor.weight", d->V, d->rank, identity_v2 ? 0 : s_sel, 0, d->type, &rng2);
}

/* The scratch put_matrix fills: the largest matrix. */
static int64_t largest_matrix(const draft_dims *d) {
    int64_t big = (int64_t)d->F * d->H;
    if (d->fc_in * d->H > big) big = d->fc_in * d->H;
    if ((int64_t)d->V * d->rank > big) big = (int64_t)d->V * d->rank;
    return big;
}

/* The draft's shape as asked: PF_RC_ARG with err for a value out of range. */
static pf_rc check_shape(int version, int n_layers, int block_size, const int *target_layers, int n_taps,
                         char err[PF_ERR_LEN]) {
    if (version != 1 && version != 2) {
        snprintf(err, PF_ERR_LEN, "synth-draft: version %d (1 = DFlash, 2 = DFlash2)", version);
        return PF_RC_ARG;
    }
    if (n_layers < 1 || n_layers > 256 || block_size < 2 || block_size > 4096 || n_taps > 256 ||
        (n_taps < 1 && target_layers)) {
        snprintf(err, PF_ERR_LEN, "synth-draft: layers %d (1..256), block %d (2..4096) or taps %d (1..256) out of range",
                 n_layers, block_size, n_taps);
        return PF_RC_ARG;
    }
    return PF_RC_OK;
}

pf_rc pf_dflash_synth(const char *target_path, int version, int n_layers, int block_size, const int *target_layers,
                      int n_taps, uint64_t seed, bool identity_v2, const char *out, char err[PF_ERR_LEN]) {
    pf_rc rc = check_shape(version, n_layers, block_size, target_layers, n_taps, err);
    if (rc != PF_RC_OK) return rc;
    gguf_file *tf;
    rc = gguf_open_file(target_path, &tf, err);
    if (rc != PF_RC_OK) return rc;
    pf_model *m = NULL;
    if ((rc = pf_model_from_gguf(tf, 0, &m, err)) != PF_RC_OK) {
        gguf_close(tf);
        return rc;
    }
    if (n_taps < 1) n_taps = n_layers; /* z-lab: one tap per draft layer */
    rc = PF_RC_OOM;
    tensor_sink s = {0};
    int32_t *layers_p1 = malloc((size_t)n_taps * sizeof *layers_p1);
    s.w = gguf_writer_new();
    if (!s.w || !layers_p1) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        goto done;
    }
    if ((rc = resolve_taps(&m->hp, target_layers, n_taps, layers_p1, err)) != PF_RC_OK) goto done;
    int32_t mask = pick_mask(m->tok);
    if (mask < 0) {
        snprintf(err, PF_ERR_LEN, "%s: no mask token candidate (no mask id, <|fim_pad|> or control token)", target_path);
        rc = PF_RC_FORMAT;
        goto done;
    }
    const draft_dims d = dims_of(m, version, n_layers, block_size, n_taps);
    write_meta(s.w, &d, &m->hp, layers_p1, tf, mask);
    s.tmp = malloc((size_t)largest_matrix(&d) * sizeof(float));
    rc = PF_RC_OOM;
    if (!s.tmp) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        goto done;
    }
    pf_rng rng;
    pf_rng_seed(&rng, seed);
    put_shared(&s, &d, &rng);
    if (version == 2) put_v2(&s, &d, seed, identity_v2);
    if (s.oom) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        goto done;
    }
    rc = gguf_w_save(s.w, out, err);
done:
    free(s.tmp);
    free(layers_p1);
    gguf_writer_free(s.w);
    pf_model_free(m);
    gguf_close(tf);
    return rc;
}
