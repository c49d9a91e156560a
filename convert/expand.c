/* Function-preserving expansion of a small target and its drafts (convert/expand.h has the
 * construction; the numbers of the guard are argued at pf_expand_target). */
#include "convert/expand.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draft/dflash.h"
#include "engine/sampler.h"
#include "engine/tokenizer.h"
#include "formats/ggml_types.h"
#include "formats/quant.h"
#include "convert/requantize.h"

/* Index maps from a big dimension to the small one: i >= 0 is the source index. */
enum { MAP_RANDOM = -1, MAP_ZERO = -2 };

#define GUARD_A 8192.0f    /* exact in f16; Q4_1 stores it as the block minimum, Q8_0 as 127*d */
#define PROBE_TOKENS 64

/* ---------------------------------------------------------------- checks and shapes */

int pf_expand_head_slot(int h, int g, int g_dst) { return h / g * g_dst + h % g; }

int pf_expand_check(const pf_hparams *s, const pf_synth_shape *d, char err[PF_ERR_LEN]) {
    if (d->head_dim != s->head_dim) {
        snprintf(err, PF_ERR_LEN, "expand: head_dim: the source has heads of %d, the target shape %d (heads are not resized)",
                 s->head_dim, d->head_dim);
        return -1;
    }
    struct { const char *what; int64_t s, d; } dims[] = {
        {"layers", s->n_layer, d->n_layer},       {"hidden", s->n_embd, d->n_embd},
        {"FFN", s->n_ff, d->n_ff},                {"query heads", s->n_head, d->n_head},
        {"KV heads", s->n_head_kv, d->n_head_kv}, {"vocabulary", s->n_vocab, d->n_vocab},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].d < dims[i].s) {
            snprintf(err, PF_ERR_LEN, "expand: the target shape is smaller than the source: %s %lld < %lld",
                     dims[i].what, (long long)dims[i].d, (long long)dims[i].s);
            return -1;
        }
    if (d->n_head_kv < 1 || d->n_head % d->n_head_kv) {
        snprintf(err, PF_ERR_LEN, "expand: the target shape's %d query heads are not a multiple of its %d KV heads",
                 d->n_head, d->n_head_kv);
        return -1;
    }
    int g = s->n_head / s->n_head_kv, gd = d->n_head / d->n_head_kv;
    if (gd < g) {
        snprintf(err, PF_ERR_LEN,
                 "expand: query heads per KV head: the source has %d, the target shape %d (a KV group cannot shrink)", g,
                 gd);
        return -1;
    }
    if (d->n_embd % PF_QK || d->n_ff % PF_QK || (d->n_head * d->head_dim) % PF_QK) {
        snprintf(err, PF_ERR_LEN, "expand: the target shape's hidden %d, FFN %d and query width %d must be multiples of 32",
                 d->n_embd, d->n_ff, d->n_head * d->head_dim);
        return -1;
    }
    if (d->n_vocab > s->n_vocab && d->n_embd == s->n_embd) {
        snprintf(err, PF_ERR_LEN,
                 "expand: the vocabulary grows (%d -> %d) but the hidden size does not: the guard needs an extra hidden dim",
                 s->n_vocab, d->n_vocab);
        return -1;
    }
    if (d->n_ctx < 1) {
        snprintf(err, PF_ERR_LEN, "expand: the target shape's context length %lld is not positive", (long long)d->n_ctx);
        return -1;
    }
    return 0;
}

int pf_expand_tensor_shape(const pf_synth_shape *d, bool tied, const char *name, int64_t ne[4]) {
    const int64_t H = d->n_embd, qd = (int64_t)d->n_head * d->head_dim, kvd = (int64_t)d->n_head_kv * d->head_dim;
    ne[0] = ne[1] = ne[2] = ne[3] = 1;
#define SHAPE(a, b) (ne[0] = (a), ne[1] = (b), (b) > 1 ? 2 : 1)
    if (!strcmp(name, "token_embd.weight")) return SHAPE(H, d->n_vocab);
    if (!strcmp(name, "output.weight")) return tied ? 0 : SHAPE(H, d->n_vocab);
    if (!strcmp(name, "output_norm.weight")) return SHAPE(H, 1);
    int l, n = 0;
    char rest[64];
    if (sscanf(name, "blk.%d.%63s%n", &l, rest, &n) != 2 || name[n] || l < 0 || l >= d->n_layer) return 0;
    static const char *const names[] = {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                                        "attn_output.weight", "attn_q_norm.weight", "attn_k_norm.weight",
                                        "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"};
    const int64_t shapes[][2] = {{H, 1},  {H, qd},        {H, kvd},       {H, kvd},       {qd, H}, {d->head_dim, 1},
                                 {d->head_dim, 1}, {H, 1}, {H, d->n_ff}, {H, d->n_ff}, {d->n_ff, H}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(rest, names[i])) return SHAPE(shapes[i][0], shapes[i][1]);
#undef SHAPE
    return 0;
}

/* ---------------------------------------------------------------- building blocks */

/* Uniform on [-sqrt(3), sqrt(3)): unit variance, cheap enough for 300M draws. */
static float urand(pf_rng *r) { return (float)(((double)(pf_rng_next(r) >> 11) * 0x1p-53 * 2.0 - 1.0) * 1.7320508075688772); }

/* Tensors of the output file: the writer keeps their data until it has written them. */
typedef struct {
    gguf_writer *w;
    int oom;
} sink;

static void *own(sink *s, void *p) {
    if (!(p = gguf_w_own(s->w, p))) s->oom = 1;
    return p;
}

/* Matrix [rows, cols] (GGUF dims {cols, rows}) stored as `type`; takes ownership of data. */
static void emit_matrix(sink *s, const char *name, float *data, int64_t rows, int64_t cols, uint32_t type) {
    if (!data || s->oom) {
        free(data);
        s->oom = 1;
        return;
    }
    const int64_t ne[2] = {cols, rows};
    if (type == PF_TYPE_F32) {
        if (own(s, data)) gguf_w_tensor(s->w, name, type, 2, ne, data, (size_t)(rows * cols) * sizeof(float));
        return;
    }
    size_t nb = 0;
    void *q = own(s, pf_convert_matrix(type, data, rows, cols, &nb));
    free(data);
    if (q) gguf_w_tensor(s->w, name, type, 2, ne, q, nb);
}

static void emit_f32(sink *s, const char *name, float *data, uint32_t n_dims, const int64_t *ne) {
    if (!data || s->oom) {
        free(data);
        s->oom = 1;
        return;
    }
    size_t n = 1;
    for (uint32_t i = 0; i < n_dims; i++) n *= (size_t)ne[i];
    if (own(s, data)) gguf_w_tensor(s->w, name, PF_TYPE_F32, n_dims, ne, data, n * sizeof(float));
}

/* dst[i][j] = 0 where either map is MAP_ZERO, src[r][c] * scale where both map to the source,
 * random (std) otherwise. src may be NULL (nothing maps to it). */
static float *build(const int32_t *rmap, int64_t rows, const int32_t *cmap, int64_t cols, const float *src,
                    int64_t src_cols, float scale, float std, pf_rng *rng) {
    float *d = malloc((size_t)(rows * cols) * sizeof(float));
    if (!d) return NULL;
    for (int64_t i = 0; i < rows; i++) {
        float *o = d + i * cols;
        int32_t r = rmap[i];
        for (int64_t j = 0; j < cols; j++) {
            int32_t c = cmap[j];
            if (r == MAP_ZERO || c == MAP_ZERO) o[j] = 0.0f;
            else if (r >= 0 && c >= 0) o[j] = src[(int64_t)r * src_cols + c] * scale;
            else o[j] = std * urand(rng);
        }
    }
    return d;
}

static int32_t *map_new(int64_t n, int64_t n_src, int32_t extra) {
    int32_t *m = malloc((size_t)n * sizeof *m);
    if (m)
        for (int64_t i = 0; i < n; i++) m[i] = i < n_src ? (int32_t)i : extra;
    return m;
}

/* A source tensor of exactly n values as floats (any type the dequantizer reads). */
static float *read_f32(const gguf_file *f, const char *name, int64_t n, char *err) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) {
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s' is missing", f->path, name);
        return NULL;
    }
    if (t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3] != n) {
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s' has %lld values, expected %lld", f->path, name,
                 (long long)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]), (long long)n);
        return NULL;
    }
    float *d = malloc((size_t)n * sizeof(float));
    if (!d) {
        snprintf(err, PF_ERR_LEN, "%s: out of memory for '%s'", f->path, name);
        return NULL;
    }
    int64_t cols = t->ne[0];
    size_t rb = pf_row_bytes(t->type, cols);
    if (!rb) {
        free(d);
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s' has unsupported type %u", f->path, name, t->type);
        return NULL;
    }
    for (int64_t r = 0; r < n / cols; r++) pf_dequantize_row(t->type, (const char *)t->data + (size_t)r * rb, d + r * cols, cols);
    return d;
}

static bool output_type_ok(uint32_t t) {
    return t == PF_TYPE_F32 || t == PF_TYPE_F16 || t == PF_TYPE_BF16 || t == PF_TYPE_Q8_0 || t == PF_TYPE_Q4_0 ||
           t == PF_TYPE_Q4_1;
}

/* tokenizer.ggml.tokens / token_type / scores padded to n_vocab with unused (type 5) tokens
 * "[PAD<id>]": encoding never produces them (engine/tokenizer.c leaves type 5 out of its table).
 * A file without tokens gets none. */
static int pad_tokenizer(gguf_writer *w, const gguf_file *f, int64_t n_vocab, char *err) {
    const gguf_kv *tok = gguf_find(f, "tokenizer.ggml.tokens");
    if (!tok) return 0;
    if (tok->type != GGUF_ARR || tok->v.arr.type != GGUF_STR || tok->v.arr.n > (uint64_t)n_vocab) {
        snprintf(err, PF_ERR_LEN, "%s: tokenizer.ggml.tokens: expected at most %lld strings", f->path, (long long)n_vocab);
        return -1;
    }
    const uint64_t n0 = tok->v.arr.n, n = (uint64_t)n_vocab;
    const gguf_kv *tt = gguf_find(f, "tokenizer.ggml.token_type");
    const gguf_kv *sc = gguf_get_arr(f, "tokenizer.ggml.scores", GGUF_F32);
    const char **strs = malloc(n * sizeof *strs);
    uint64_t *lens = malloc(n * sizeof *lens);
    char *pads = malloc((n - n0) * 16 + 1);
    int32_t *types = malloc(n * sizeof *types);
    float *scores = malloc(n * sizeof *scores);
    int rc = -1;
    if (!strs || !lens || !pads || !types || !scores) {
        snprintf(err, PF_ERR_LEN, "%s: out of memory for the tokenizer", f->path);
        goto done;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (i < n0) {
            strs[i] = tok->v.arr.strs[i].ptr;
            lens[i] = tok->v.arr.strs[i].len;
            types[i] = tt && tt->type == GGUF_ARR && tt->v.arr.n == n0 ? (int32_t)gguf_arr_int(tt, i) : PF_TOKEN_NORMAL;
            scores[i] = sc && sc->v.arr.n == n0 ? ((const float *)sc->v.arr.data)[i] : 0.0f;
        } else {
            char *p = pads + (i - n0) * 16;
            lens[i] = (uint64_t)snprintf(p, 16, "[PAD%llu]", (unsigned long long)i);
            strs[i] = p;
            types[i] = PF_TOKEN_UNUSED;
            scores[i] = 0.0f;
        }
    }
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", strs, lens, n);
    gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_I32, types, n);
    if (sc) gguf_w_arr(w, "tokenizer.ggml.scores", GGUF_F32, scores, n);
    rc = 0;
done:
    free(strs);
    free(lens);
    free(pads);
    free(types);
    free(scores);
    return rc;
}

static bool is_vocab_array(const char *k) {
    return !strcmp(k, "tokenizer.ggml.tokens") || !strcmp(k, "tokenizer.ggml.token_type") ||
           !strcmp(k, "tokenizer.ggml.scores");
}

static bool skip_target_key(const char *k) {
    static const char *const keys[] = {"general.name", "general.file_type", "qwen3.block_count",
                                       "qwen3.context_length", "qwen3.embedding_length", "qwen3.feed_forward_length",
                                       "qwen3.attention.head_count", "qwen3.attention.head_count_kv",
                                       "qwen3.attention.key_length", "qwen3.attention.value_length",
                                       "qwen3.attention.layer_norm_rms_epsilon"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(k, keys[i])) return true;
    return is_vocab_array(k) || !strncmp(k, "pocketflash.expand.", 19);
}

static bool skip_draft_key(const char *k) {
    static const char *const keys[] = {"general.name", "general.file_type", "dflash.context_length",
                                       "dflash.embedding_length", "dflash.feed_forward_length",
                                       "dflash.attention.head_count", "dflash.attention.head_count_kv",
                                       "dflash.attention.key_length", "dflash.attention.value_length",
                                       "dflash.attention.layer_norm_rms_epsilon"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(k, keys[i])) return true;
    return is_vocab_array(k) || !strncmp(k, "pocketflash.expand.", 19);
}

static void write_name(gguf_writer *w, const gguf_file *f, const pf_synth_shape *d, const char *fallback) {
    gguf_str s;
    char name[256];
    int n = gguf_get_str(f, "general.name", &s) == 0 ? (int)(s.len > 160 ? 160 : s.len) : 0;
    const char *what = d->name && !strcmp(d->name, "pocket") ? "Pocket-shape stand-in" : "expanded";
    snprintf(name, sizeof name, "%.*s (%s)", n ? n : (int)strlen(fallback), n ? s.ptr : fallback, what);
    gguf_w_str(w, "general.name", name);
}

/* ---------------------------------------------------------------- one Qwen3-style layer */

/* Maps of one layer between a small and a big configuration (the target's or a draft's). */
typedef struct {
    int H, Hd, hd;         /* hidden small / big, head size (both) */
    int nh, nkv, F;        /* small */
    int nh_d, nkv_d, F_d;  /* big */
    int guard;             /* -1 or the guard dim */
    int32_t *hid_in, *hid_out, *q_rows, *o_cols, *kv_rows, *ff_rows, *ff_cols, *ff_rand, *hid_rand, *q_rand, *kv_rand;
} layer_maps;

static void maps_free(layer_maps *m) {
    free(m->hid_in); free(m->hid_out); free(m->q_rows); free(m->o_cols); free(m->kv_rows);
    free(m->ff_rows); free(m->ff_cols); free(m->ff_rand); free(m->hid_rand); free(m->q_rand); free(m->kv_rand);
}

static int maps_init(layer_maps *m) {
    const int hd = m->hd, g = m->nh / m->nkv, gd = m->nh_d / m->nkv_d;
    const int64_t qd = (int64_t)m->nh_d * hd, kvd = (int64_t)m->nkv_d * hd;
    m->hid_in = map_new(m->Hd, m->H, MAP_RANDOM);   /* inputs of q/k/v/gate/up: zero activations there */
    m->hid_out = map_new(m->Hd, m->H, MAP_ZERO);    /* rows writing the residual stream */
    m->ff_rows = map_new(m->F_d, m->F, MAP_RANDOM);
    m->ff_cols = map_new(m->F_d, m->F, MAP_ZERO);
    m->kv_rows = map_new(kvd, (int64_t)m->nkv * hd, MAP_RANDOM);
    m->q_rows = map_new(qd, 0, MAP_RANDOM);
    m->o_cols = map_new(qd, 0, MAP_ZERO);
    m->ff_rand = map_new(m->F_d, 0, MAP_RANDOM);
    m->hid_rand = map_new(m->Hd, 0, MAP_RANDOM);
    m->q_rand = map_new(qd, 0, MAP_RANDOM);
    m->kv_rand = map_new(kvd, 0, MAP_RANDOM);
    if (!m->hid_in || !m->hid_out || !m->ff_rows || !m->ff_cols || !m->kv_rows || !m->q_rows || !m->o_cols ||
        !m->ff_rand || !m->hid_rand || !m->q_rand || !m->kv_rand)
        return -1;
    for (int h = 0; h < m->nh; h++) {
        int slot = pf_expand_head_slot(h, g, gd);
        for (int i = 0; i < hd; i++) m->q_rows[slot * hd + i] = m->o_cols[slot * hd + i] = h * hd + i;
    }
    return 0;
}

/* Norm vector of the hidden size: small dims scaled, guard 0 (never read), other extra dims 1. */
static float *hidden_norm(const float *src, const layer_maps *m, float scale, pf_rng *rng) {
    float *v = malloc((size_t)m->Hd * sizeof(float));
    if (!v) return NULL;
    for (int i = 0; i < m->Hd; i++) v[i] = src ? (i < m->H ? src[i] * scale : 1.0f) : 1.0f + 0.1f * urand(rng);
    if (m->guard >= 0) v[m->guard] = 0.0f;
    return v;
}

/* Layer l of the big model: from source layer l of `f` (prefix "blk.%d.") when f != NULL, else an
 * extra layer (random weights, zero attn_output and ffn_down). */
static int write_layer(sink *s, const gguf_file *f, int l, const layer_maps *m, float norm_scale, float qk_scale,
                       uint32_t type, pf_rng *rng, char *err) {
    const int H = m->H, hd = m->hd;
    const int64_t qd_s = (int64_t)m->nh * hd, kvd_s = (int64_t)m->nkv * hd;
    const int64_t qd = (int64_t)m->nh_d * hd, kvd = (int64_t)m->nkv_d * hd;
    const float sh = 1.0f / sqrtf((float)m->Hd), sq = 1.0f / sqrtf((float)qd), sf = 1.0f / sqrtf((float)m->F_d);
    char name[96], out[96];
    struct {
        const char *t;
        int64_t rows, cols, src_rows, src_cols;
        const int32_t *rmap, *cmap, *rrand, *crand;
        float scale, std;
        int zero_extra; /* an extra layer's attn_output / ffn_down */
    } mats[] = {
        {"attn_q", qd, m->Hd, qd_s, H, m->q_rows, m->hid_in, m->q_rand, m->hid_rand, qk_scale, sh, 0},
        {"attn_k", kvd, m->Hd, kvd_s, H, m->kv_rows, m->hid_in, m->kv_rand, m->hid_rand, qk_scale, sh, 0},
        {"attn_v", kvd, m->Hd, kvd_s, H, m->kv_rows, m->hid_in, m->kv_rand, m->hid_rand, 1.0f, sh, 0},
        {"attn_output", m->Hd, qd, H, qd_s, m->hid_out, m->o_cols, NULL, NULL, 1.0f, sq, 1},
        {"ffn_gate", m->F_d, m->Hd, m->F, H, m->ff_rows, m->hid_in, m->ff_rand, m->hid_rand, 1.0f, sh, 0},
        {"ffn_up", m->F_d, m->Hd, m->F, H, m->ff_rows, m->hid_in, m->ff_rand, m->hid_rand, 1.0f, sh, 0},
        {"ffn_down", m->Hd, m->F_d, H, m->F, m->hid_out, m->ff_cols, NULL, NULL, 1.0f, sf, 1},
    };
    for (int k = 0; k < 4; k++) { /* norms in file order: attn_norm, q_norm, k_norm, ffn_norm */
        static const char *const norms[4] = {"attn_norm", "attn_q_norm", "attn_k_norm", "ffn_norm"};
        int hidden = k == 0 || k == 3;
        snprintf(name, sizeof name, "blk.%d.%s.weight", l, norms[k]);
        float *src = NULL;
        if (f && !(src = read_f32(f, name, hidden ? H : hd, err))) return -1;
        float *v;
        if (hidden) {
            v = hidden_norm(src, m, norm_scale, rng);
        } else if ((v = malloc((size_t)hd * sizeof(float))) != NULL) {
            for (int i = 0; i < hd; i++) v[i] = src ? src[i] : 1.0f + 0.1f * urand(rng);
        }
        free(src);
        int64_t ne = hidden ? m->Hd : hd;
        emit_f32(s, name, v, 1, &ne);
    }
    for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) {
        snprintf(out, sizeof out, "blk.%d.%s.weight", l, mats[k].t);
        float *d;
        if (f) {
            float *src = read_f32(f, out, mats[k].src_rows * mats[k].src_cols, err);
            if (!src) return -1;
            d = build(mats[k].rmap, mats[k].rows, mats[k].cmap, mats[k].cols, src, mats[k].src_cols, mats[k].scale,
                      mats[k].std, rng);
            free(src);
        } else if (mats[k].zero_extra) {
            d = calloc((size_t)(mats[k].rows * mats[k].cols), sizeof(float));
        } else {
            d = build(mats[k].rrand, mats[k].rows, mats[k].crand, mats[k].cols, NULL, 0, 1.0f, mats[k].std, rng);
        }
        emit_matrix(s, out, d, mats[k].rows, mats[k].cols, type);
    }
    if (s->oom) {
        snprintf(err, PF_ERR_LEN, "expand: out of memory in layer %d", l);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- the target */

/* Largest and smallest rms of the small target's final residual rows (before output_norm) over a
 * probe of ordinary tokens. */
static int probe_residual(const pf_model *m, double *rho_max, double *rho_min, char *err) {
    int32_t toks[PROBE_TOKENS];
    int n = 0;
    for (int64_t i = 0; n < PROBE_TOKENS && i < 64 * PROBE_TOKENS; i++) {
        int32_t id = (int32_t)((i * 7919 + 13) % m->hp.n_vocab);
        int ty = m->tok ? pf_tokenizer_token_type(m->tok, id) : PF_TOKEN_NORMAL;
        if (ty == PF_TOKEN_NORMAL || ty == 0) toks[n++] = id;
    }
    const int H = m->hp.n_embd, tap = m->hp.n_layer - 1;
    float *x = malloc((size_t)n * H * sizeof(float));
    pf_ctx *c = x ? pf_ctx_new(m, n, 1, NULL, err) : NULL;
    pf_batch b = {.tokens = toks, .n = n, .tap_layers = &tap, .n_taps = 1, .taps = x};
    int rc = c && pf_forward(c, &b, err) == 0 ? 0 : -1;
    if (!x) snprintf(err, PF_ERR_LEN, "expand: out of memory for the probe");
    *rho_max = 0;
    *rho_min = INFINITY;
    for (int r = 0; rc == 0 && r < n; r++) {
        double ss = 0;
        for (int i = 0; i < H; i++) ss += (double)x[(size_t)r * H + i] * x[(size_t)r * H + i];
        double rho = sqrt(ss / H);
        if (rho > *rho_max) *rho_max = rho;
        if (rho < *rho_min) *rho_min = rho;
    }
    if (rc == 0 && !(*rho_max > 0 && isfinite(*rho_max))) {
        snprintf(err, PF_ERR_LEN, "expand: the source's final residual is zero or not finite on the probe");
        rc = -1;
    }
    pf_ctx_free(c);
    free(x);
    return rc;
}

/* Largest L2 norm of rows 0..V-1 of w, and rms / smallest squared norm of those rows. */
static void row_stats(const pf_weight *w, double *max_norm, double *rms, double *min_sq) {
    float *row = malloc((size_t)w->cols * sizeof(float));
    double total = 0, mx = 0, mn = INFINITY;
    for (int64_t r = 0; row && r < w->rows; r++) {
        pf_dequantize_row(w->type, (const char *)w->data + (size_t)r * w->row_bytes, row, w->cols);
        double ss = 0;
        for (int64_t i = 0; i < w->cols; i++) ss += (double)row[i] * row[i];
        total += ss;
        if (ss > mx) mx = ss;
        if (ss < mn) mn = ss;
    }
    free(row);
    *max_norm = sqrt(mx);
    if (rms) *rms = sqrt(total / ((double)w->rows * w->cols));
    if (min_sq) *min_sq = mn;
}

static double max_abs(const float *v, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs(v[i]));
    return m;
}

/* The guard value c as the output type stores it: one block [c, 0 x 31] through the quantizer. */
static float stored_guard(uint32_t type, float c) {
    float blk[PF_QK] = {c}, back[PF_QK];
    uint8_t q[PF_QK * 4];
    if (pf_quantize_row(type, blk, q, PF_QK) < 0 || pf_dequantize_row(type, q, back, PF_QK) < 0) return 0.0f;
    return back[0];
}

/* u_G needed so that A*u_G exceeds twice the logit bound plus 100 nats, sized (times the margin)
 * for the largest residual measured; returned as the output_norm weight at the guard. */
static float guard_weight(const pf_expand_info *in, double logit_bound, const pf_synth_shape *d) {
    double need = (2.0 * logit_bound + 100.0) / in->guard_a;
    return (float)(need * PF_EXPAND_GUARD_MARGIN * in->rho * sqrt((double)in->src.n_embd / d->n_embd) / in->guard_c);
}

/* The q/k rows are scaled by sqrt(H/H') so the QK-norm sees the scaled eps exactly, unless that
 * would re-round stored weights (a non-power-of-two scale into f16, bf16 or a block format): a
 * quantized block scaled by 0.65 changes by up to 1 part in 2^11, far more than the QK-norm's
 * eps*(1 - H/H') / mean(q^2) that leaving them alone costs. */
static float qk_scale_for(const pf_expand_opts *o, float norm_scale) {
    if (o->keep_eps) return 1.0f;
    int e;
    bool pow2 = frexpf(norm_scale, &e) == 0.5f;
    return o->type == PF_TYPE_F32 || pow2 ? norm_scale : 1.0f;
}

static int open_target(const char *path, const pf_synth_shape *d, pf_model **m, char *err) {
    *m = pf_model_load(path, err);
    if (!*m) return -1;
    if ((*m)->bundle) {
        snprintf(err, PF_ERR_LEN, "%s: expand reads GGUF files, not bundles", path);
        return -1;
    }
    return pf_expand_check(&(*m)->hp, d, err);
}

int pf_expand_target(const char *in, const char *out, const pf_expand_opts *o, pf_expand_info *info_out,
                     char err[PF_ERR_LEN]) {
    const pf_synth_shape *d = &o->shape;
    if (!output_type_ok(o->type)) {
        snprintf(err, PF_ERR_LEN, "expand: output type %u is not one of f32, f16, bf16, q8_0, q4_0, q4_1", o->type);
        return -1;
    }
    pf_model *m = NULL;
    sink s = {0};
    layer_maps mp = {0};
    int32_t *vmap = NULL;
    float *src = NULL;
    int rc = -1;
    if (open_target(in, d, &m, err) < 0) goto done;
    const pf_hparams *hp = &m->hp;
    const gguf_file *f = m->file;
    const int H = hp->n_embd, Hd = d->n_embd, V = hp->n_vocab, Vd = d->n_vocab;
    pf_expand_info info = {.src = *hp, .tied = m->tied, .guard = Vd > V ? H : -1, .guard_a = GUARD_A};
    info.norm_scale = sqrtf((float)H / Hd);
    info.eps = o->keep_eps ? hp->rms_eps : (float)((double)hp->rms_eps * H / Hd);
    const float qk_scale = qk_scale_for(o, info.norm_scale);

    /* Guard numbers. c is the smallest power of two >= 2^-20 of the embedding rms that the output
     * type stores as a positive value (f16 and the block scales limit it): its share of a norm's
     * mean square, c^2/||x||^2 ~ 1e-12/H for f32, stays far below float rounding, so the norms
     * (and the f16 KV cache that would turn a 1-ulp change into a 1e-3 one) do not see it.
     * Every real logit minus the tied shift is bounded for every input by
     * sqrt(H) * max|output_norm| * max||output row|| (||x/rms(x)|| = sqrt(H)), so an extra token
     * loses by A*u_G - 2*bound or more; u_G = c*w_G/rms(x) is sized for a residual
     * PF_EXPAND_GUARD_MARGIN times the largest the probe measured. */
    double min_sq = 0;
    row_stats(&m->tok_embd, &info.out_row_max, &info.e_rms, &min_sq);
    if (!m->tied) row_stats(&m->output, &info.out_row_max, NULL, NULL);
    info.logit_bound = sqrt((double)H) * max_abs(m->output_norm, H) * info.out_row_max;
    if (probe_residual(m, &info.rho, &info.rho_min, err) < 0) goto done;
    if (info.guard >= 0) {
        float c = exp2f(floorf(log2f((float)(0x1p-20 * info.e_rms))));
        while (c < 1.0f && !(stored_guard(o->type, c) >= 0.5f * c)) c *= 2.0f;
        info.guard_c = stored_guard(o->type, c);
        if (!(info.guard_c > 0)) {
            snprintf(err, PF_ERR_LEN, "expand: the guard value %g does not survive type %s", c, pf_type_info(o->type)->name);
            goto done;
        }
        info.guard_w = guard_weight(&info, info.logit_bound, d);
        double u_min = info.guard_c * info.guard_w / (info.rho * info.norm_scale);
        info.guard_gap = info.guard_a * u_min - info.logit_bound;
        info.shift_max = m->tied ? info.guard_c * info.guard_w / (info.rho_min * info.norm_scale) * info.guard_c : 0;
        info.norm_perturb = (double)info.guard_c * info.guard_c / (2 * min_sq);
    }

    s.w = gguf_writer_new();
    mp = (layer_maps){.H = H, .Hd = Hd, .hd = hp->head_dim, .nh = hp->n_head, .nkv = hp->n_head_kv, .F = hp->n_ff,
                      .nh_d = d->n_head, .nkv_d = d->n_head_kv, .F_d = d->n_ff, .guard = info.guard};
    vmap = map_new(Vd, V, MAP_ZERO);
    if (!s.w || !vmap || maps_init(&mp) < 0) {
        snprintf(err, PF_ERR_LEN, "expand: out of memory");
        goto done;
    }
    gguf_writer *w = s.w;
    gguf_w_copy_kv(w, f, skip_target_key);
    write_name(w, f, d, "target");
    gguf_w_u32(w, "general.file_type", pf_file_type_of(o->type));
    gguf_w_u32(w, "qwen3.block_count", (uint32_t)d->n_layer);
    gguf_w_u32(w, "qwen3.context_length", (uint32_t)d->n_ctx);
    gguf_w_u32(w, "qwen3.embedding_length", (uint32_t)Hd);
    gguf_w_u32(w, "qwen3.feed_forward_length", (uint32_t)d->n_ff);
    gguf_w_u32(w, "qwen3.attention.head_count", (uint32_t)d->n_head);
    gguf_w_u32(w, "qwen3.attention.head_count_kv", (uint32_t)d->n_head_kv);
    gguf_w_u32(w, "qwen3.attention.key_length", (uint32_t)d->head_dim);
    gguf_w_u32(w, "qwen3.attention.value_length", (uint32_t)d->head_dim);
    gguf_w_f32(w, "qwen3.attention.layer_norm_rms_epsilon", info.eps);
    if (pad_tokenizer(w, f, Vd, err) < 0) goto done;
    char desc[160];
    snprintf(desc, sizeof desc, "%d layers, hidden %d, FFN %d, %d/%d heads of %d, vocabulary %d%s", hp->n_layer, H,
             hp->n_ff, hp->n_head, hp->n_head_kv, hp->head_dim, V, m->tied ? ", tied" : "");
    gguf_w_str(w, "pocketflash.expand.source_shape", desc);
    gguf_w_i32(w, "pocketflash.expand.guard_dim", info.guard);
    gguf_w_f32(w, "pocketflash.expand.guard_value", info.guard_c);
    gguf_w_f32(w, "pocketflash.expand.guard_logit_weight", -info.guard_a);
    gguf_w_u64(w, "pocketflash.expand.seed", o->seed);

    pf_rng rng;
    pf_rng_seed(&rng, o->seed);
    /* token_embd: real rows keep their values and carry c at the guard */
    if (!(src = read_f32(f, "token_embd.weight", (int64_t)V * H, err))) goto done;
    float *e = build(vmap, Vd, mp.hid_out, Hd, src, H, 1.0f, 0.0f, &rng);
    free(src);
    src = NULL;
    if (e && info.guard >= 0)
        for (int64_t r = 0; r < Vd; r++) e[r * Hd + info.guard] = r < V ? info.guard_c : (m->tied ? -info.guard_a : 0.0f);
    emit_matrix(&s, "token_embd.weight", e, Vd, Hd, o->type);
    if (!m->tied) { /* real rows 0 at the guard, extra rows -A there and zero elsewhere */
        if (!(src = read_f32(f, "output.weight", (int64_t)V * H, err))) goto done;
        float *ow = build(vmap, Vd, mp.hid_out, Hd, src, H, 1.0f, 0.0f, &rng);
        free(src);
        src = NULL;
        if (ow && info.guard >= 0)
            for (int64_t r = V; r < Vd; r++) ow[r * Hd + info.guard] = -info.guard_a;
        emit_matrix(&s, "output.weight", ow, Vd, Hd, o->type);
    }
    float *on = hidden_norm(m->output_norm, &mp, info.norm_scale, &rng);
    if (on && info.guard >= 0) on[info.guard] = info.guard_w;
    int64_t ne = Hd;
    emit_f32(&s, "output_norm.weight", on, 1, &ne);
    for (int l = 0; l < d->n_layer; l++)
        if (write_layer(&s, l < hp->n_layer ? f : NULL, l, &mp, info.norm_scale, qk_scale, o->type, &rng, err) < 0)
            goto done;
    if (s.oom) {
        snprintf(err, PF_ERR_LEN, "expand: out of memory");
        goto done;
    }
    rc = gguf_w_write(w, out, err);
    if (rc == 0 && info_out) *info_out = info;
done:
    free(src);
    free(vmap);
    maps_free(&mp);
    gguf_writer_free(s.w);
    pf_model_free(m);
    return rc;
}

/* ---------------------------------------------------------------- drafts */

static uint32_t meta_u32(const gguf_file *f, const char *key, uint32_t dflt) {
    uint32_t v;
    return gguf_get_u32(f, key, &v) == 0 ? v : dflt;
}

/* Every tensor of the draft must be one this expansion understands (a new kind of tensor would
 * otherwise be dropped or copied at the wrong shape). */
static int check_draft_tensors(const gguf_file *f, int n_layer, int v2, char *err) {
    static const char *const globals[] = {"fc.weight", "enc.output_norm.weight", "output_norm.weight",
                                          "dec.weight", "dec.bias", "dec.pos_bias",
                                          "selector_hidden.weight", "selector_predecessor.weight",
                                          "selector_successor.weight"};
    static const char *const per_layer[] = {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                                            "attn_output.weight", "attn_q_norm.weight", "attn_k_norm.weight",
                                            "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight",
                                            "attn_conv_base", "attn_conv_proj.weight", "ffn_conv_base",
                                            "ffn_conv_proj.weight"};
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        char *name = gguf_str_dup(f->tensors[i].name);
        bool ok = false;
        for (size_t k = 0; name && !ok && k < sizeof globals / sizeof globals[0]; k++)
            ok = !strcmp(name, globals[k]) && (v2 || k < 6);
        int l, n = 0;
        char rest[64];
        if (name && !ok && sscanf(name, "blk.%d.%63s%n", &l, rest, &n) == 2 && !name[n] && l >= 0 && l < n_layer)
            for (size_t k = 0; !ok && k < sizeof per_layer / sizeof per_layer[0]; k++)
                ok = !strcmp(rest, per_layer[k]) && (v2 || k < 11);
        if (!ok) snprintf(err, PF_ERR_LEN, "%s: tensor '%s' is not part of the dflash layout expand knows", f->path,
                          name ? name : "?");
        free(name);
        if (!ok) return -1;
    }
    return 0;
}

int pf_expand_draft(const char *in, const char *small_target, const char *out, const pf_expand_opts *o,
                    const pf_expand_info *info, char err[PF_ERR_LEN]) {
    const pf_synth_shape *d = &o->shape;
    pf_model *tm = NULL;
    gguf_file *f = NULL;
    sink s = {0};
    layer_maps mp = {0};
    int32_t *vmap = NULL, *id_rows = NULL, *fc_cols = NULL, *proj_rows = NULL;
    float *src = NULL;
    int rc = -1;
    if (!output_type_ok(o->type)) {
        snprintf(err, PF_ERR_LEN, "expand: output type %u is not one of f32, f16, bf16, q8_0, q4_0, q4_1", o->type);
        return -1;
    }
    if (open_target(small_target, d, &tm, err) < 0) goto done;
    if (tm->hp.n_embd != info->src.n_embd || tm->hp.n_vocab != info->src.n_vocab || tm->hp.n_layer != info->src.n_layer) {
        snprintf(err, PF_ERR_LEN, "%s: not the target this expansion's info was made from", small_target);
        goto done;
    }
    pf_dflash *chk = pf_dflash_load(in, tm, err); /* the draft must be valid for its small target */
    if (!chk) goto done;
    const int version = pf_dflash_version(chk), n_layer = pf_dflash_n_layer(chk);
    int n_taps;
    pf_dflash_tap_layers(chk, &n_taps);
    pf_dflash_free(chk);
    if (!(f = gguf_open(in, err))) goto done;
    const pf_hparams *th = &tm->hp;
    const int H = th->n_embd, Hd = d->n_embd, V = th->n_vocab, Vd = d->n_vocab, guard = info->guard;
    const int nh = (int)meta_u32(f, "dflash.attention.head_count", 0), F = (int)meta_u32(f, "dflash.feed_forward_length", 0);
    const int nkv = (int)meta_u32(f, "dflash.attention.head_count_kv", (uint32_t)nh);
    const int hd = (int)meta_u32(f, "dflash.attention.key_length", (uint32_t)(H / nh));
    float eps = th->rms_eps;
    gguf_get_f32(f, "dflash.attention.layer_norm_rms_epsilon", &eps);
    if (check_draft_tensors(f, n_layer, version == 2, err) < 0) goto done;
    /* heads and FFN follow the target's expansion when the draft was built like the small target */
    const bool like_target = nh == th->n_head && nkv == th->n_head_kv && hd == th->head_dim;
    mp = (layer_maps){.H = H, .Hd = Hd, .hd = hd, .nh = nh, .nkv = nkv, .F = F,
                      .nh_d = like_target ? d->n_head : nh, .nkv_d = like_target ? d->n_head_kv : nkv,
                      .F_d = F == th->n_ff ? d->n_ff : F, .guard = guard};
    const uint32_t conv_k = meta_u32(f, "dflash.conv_kernel_size", 2), gs = meta_u32(f, "dflash.conv_group_size", 16);
    if (version == 2 && Hd % (int)gs) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.conv_group_size %u does not divide the target shape's hidden %d", in, gs, Hd);
        goto done;
    }
    const float norm_scale = info->norm_scale, qk_scale = qk_scale_for(o, norm_scale);
    const float eps_d = o->keep_eps ? eps : (float)((double)eps * H / Hd);

    s.w = gguf_writer_new();
    vmap = map_new(Vd, V, MAP_ZERO);
    id_rows = map_new(Hd, Hd, MAP_ZERO);
    const int64_t fc_in = (int64_t)n_taps * Hd;
    fc_cols = malloc((size_t)fc_in * sizeof *fc_cols);
    if (!s.w || !vmap || !id_rows || !fc_cols || maps_init(&mp) < 0) {
        snprintf(err, PF_ERR_LEN, "expand: out of memory");
        goto done;
    }
    /* tap t's big residual: small dims, the guard (c, must not enter fc), zero dims */
    for (int t = 0; t < n_taps; t++)
        for (int i = 0; i < Hd; i++)
            fc_cols[(int64_t)t * Hd + i] = i < H ? t * H + i : i == guard ? MAP_ZERO : MAP_RANDOM;

    gguf_writer *w = s.w;
    gguf_w_copy_kv(w, f, skip_draft_key);
    write_name(w, f, d, "draft");
    gguf_w_u32(w, "general.file_type", pf_file_type_of(o->type));
    gguf_w_u32(w, "dflash.context_length", (uint32_t)d->n_ctx);
    gguf_w_u32(w, "dflash.embedding_length", (uint32_t)Hd);
    gguf_w_u32(w, "dflash.feed_forward_length", (uint32_t)mp.F_d);
    gguf_w_u32(w, "dflash.attention.head_count", (uint32_t)mp.nh_d);
    gguf_w_u32(w, "dflash.attention.head_count_kv", (uint32_t)mp.nkv_d);
    gguf_w_u32(w, "dflash.attention.key_length", (uint32_t)hd);
    gguf_w_u32(w, "dflash.attention.value_length", (uint32_t)hd);
    gguf_w_f32(w, "dflash.attention.layer_norm_rms_epsilon", eps_d);
    if (pad_tokenizer(w, f, Vd, err) < 0) goto done;
    gguf_w_u64(w, "pocketflash.expand.seed", o->seed);

    pf_rng rng;
    pf_rng_seed(&rng, o->seed ^ 0x0d4af7ull);
    const gguf_tensor *fct = gguf_find_tensor(f, "fc.weight");
    if (!(src = read_f32(f, "fc.weight", (int64_t)H * n_taps * H, err))) goto done;
    /* fc stays in its own float type (the recipe keeps it precise); a quantized one takes --type */
    const bool fc_float = fct->type == PF_TYPE_F32 || fct->type == PF_TYPE_F16 || fct->type == PF_TYPE_BF16;
    emit_matrix(&s, "fc.weight", build(mp.hid_out, Hd, fc_cols, fc_in, src, (int64_t)n_taps * H, 1.0f, 1.0f / sqrtf((float)fc_in), &rng),
                Hd, fc_in, fc_float ? fct->type : o->type);
    free(src);
    src = NULL;
    int64_t ne[3] = {Hd, 1, 1};
    for (int k = 0; k < 2; k++) { /* enc.output_norm reads fc's output (zero beyond H); output_norm feeds the head */
        const char *nm = k ? "output_norm.weight" : "enc.output_norm.weight";
        if (!(src = read_f32(f, nm, H, err))) goto done;
        float *v = hidden_norm(src, &mp, norm_scale, &rng);
        if (v && k == 1 && guard >= 0) {
            double bound = sqrt((double)H) * max_abs(src, H) * info->out_row_max;
            v[guard] = guard_weight(info, bound, d);
        }
        free(src);
        src = NULL;
        emit_f32(&s, nm, v, 1, ne);
    }
    if (gguf_find_tensor(f, "dec.weight")) { /* Dec head (draft/dec.h): w_t . h_target + w_d . h_draft */
        if (!(src = read_f32(f, "dec.weight", 2 * (int64_t)H, err))) goto done;
        float *dw = calloc(2 * (size_t)Hd, sizeof(float)); /* zero on extra dims: both rows carry the guard */
        for (int i = 0; dw && i < H; i++) {
            dw[i] = src[i];
            dw[Hd + i] = src[H + i];
        }
        free(src);
        src = NULL;
        const int64_t dne = 2 * (int64_t)Hd;
        emit_f32(&s, "dec.weight", dw, 1, &dne);
        for (int k = 0; k < 2; k++) {
            const gguf_tensor *t = gguf_find_tensor(f, k ? "dec.pos_bias" : "dec.bias");
            if (!t || !(src = read_f32(f, k ? "dec.pos_bias" : "dec.bias", t->ne[0], err))) {
                if (!t) snprintf(err, PF_ERR_LEN, "%s: tensor '%s' is missing", in, k ? "dec.pos_bias" : "dec.bias");
                goto done;
            }
            emit_f32(&s, k ? "dec.pos_bias" : "dec.bias", src, 1, t->ne);
            src = NULL;
        }
    }
    for (int l = 0; l < n_layer; l++)
        if (write_layer(&s, f, l, &mp, norm_scale, qk_scale, o->type, &rng, err) < 0) goto done;
    if (version == 2) {
        const int G = H / (int)gs, Gd = Hd / (int)gs, K = (int)conv_k;
        proj_rows = malloc((size_t)2 * K * Gd * sizeof *proj_rows);
        if (!proj_rows) {
            snprintf(err, PF_ERR_LEN, "expand: out of memory");
            goto done;
        }
        /* dyn rows [side][tap][group]: an old group keeps its row, so channel c < H keeps group c / gs */
        for (int st = 0; st < 2 * K; st++)
            for (int g = 0; g < Gd; g++) proj_rows[st * Gd + g] = g < G ? st * G + g : MAP_RANDOM;
        char name[96];
        for (int l = 0; l < n_layer; l++)
            for (int k = 0; k < 2; k++) {
                const char *sub = k ? "ffn" : "attn";
                snprintf(name, sizeof name, "blk.%d.%s_conv_base", l, sub);
                if (!(src = read_f32(f, name, (int64_t)2 * K * H, err))) goto done;
                float *b = malloc((size_t)2 * K * Hd * sizeof(float));
                for (int st = 0; b && st < 2 * K; st++) /* extra channels: identity tap (their inputs are 0) */
                    for (int c = 0; c < Hd; c++) b[st * Hd + c] = c < H ? src[st * H + c] : (st % K == 0 ? 1.0f : 0.0f);
                free(src);
                src = NULL;
                const int64_t bne[3] = {Hd, K, 2};
                emit_f32(&s, name, b, 3, bne);
                snprintf(name, sizeof name, "blk.%d.%s_conv_proj.weight", l, sub);
                if (!(src = read_f32(f, name, (int64_t)2 * K * G * H, err))) goto done;
                emit_matrix(&s, name, build(proj_rows, 2 * K * Gd, mp.hid_in, Hd, src, H, 1.0f, 0.2f / sqrtf((float)Hd), &rng),
                            2 * K * Gd, Hd, o->type);
                free(src);
                src = NULL;
            }
        const gguf_tensor *sh = gguf_find_tensor(f, "selector_hidden.weight");
        const int R = (int)sh->ne[1];
        /* the final-normed row carries u_G at the guard: the selector must not read it */
        if (!(src = read_f32(f, "selector_hidden.weight", (int64_t)R * H, err))) goto done;
        emit_matrix(&s, "selector_hidden.weight", build(id_rows, R, mp.hid_out, Hd, src, H, 1.0f, 0.0f, &rng), R, Hd, o->type);
        free(src);
        src = NULL;
        int32_t *rank_cols = map_new(R, R, MAP_ZERO);
        for (int k = 0; k < 2; k++) { /* extra tokens are never candidates or predecessors: zero rows */
            const char *nm = k ? "selector_successor.weight" : "selector_predecessor.weight";
            if (!rank_cols || !(src = read_f32(f, nm, (int64_t)V * R, err))) {
                if (!rank_cols) snprintf(err, PF_ERR_LEN, "expand: out of memory");
                free(rank_cols);
                goto done;
            }
            emit_matrix(&s, nm, build(vmap, Vd, rank_cols, R, src, R, 1.0f, 0.0f, &rng), Vd, R, o->type);
            free(src);
            src = NULL;
        }
        free(rank_cols);
    }
    if (s.oom) {
        snprintf(err, PF_ERR_LEN, "expand: out of memory");
        goto done;
    }
    rc = gguf_w_write(w, out, err);
done:
    free(src);
    free(vmap);
    free(id_rows);
    free(fc_cols);
    free(proj_rows);
    maps_free(&mp);
    gguf_writer_free(s.w);
    gguf_close(f);
    pf_model_free(tm);
    return rc;
}
