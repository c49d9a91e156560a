/* Function-preserving expansion of a small target and its drafts (convert/expand.h has the
 * construction): the checks, shapes and building blocks both transforms use; the target is
 * expanded in expand_target.c (where the guard's numbers are argued), drafts in expand_draft.c. */
#include "convert/expand_impl.h"

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


void *expand_own(sink *s, void *p) {
    if (!(p = gguf_w_own(s->w, p))) s->oom = 1;
    return p;
}

/* Matrix [rows, cols] (GGUF dims {cols, rows}) stored as `type`; takes ownership of data. */
void expand_emit_matrix(sink *s, const char *name, float *data, int64_t rows, int64_t cols, uint32_t type) {
    if (!data || s->oom) {
        free(data);
        s->oom = 1;
        return;
    }
    const int64_t ne[2] = {cols, rows};
    if (type == PF_TYPE_F32) {
        if (expand_own(s, data)) gguf_w_tensor(s->w, name, type, 2, ne, data, (size_t)(rows * cols) * sizeof(float));
        return;
    }
    size_t nb = 0;
    void *q = expand_own(s, pf_convert_matrix(type, data, rows, cols, &nb));
    free(data);
    if (q) gguf_w_tensor(s->w, name, type, 2, ne, q, nb);
}

void expand_emit_f32(sink *s, const char *name, float *data, uint32_t n_dims, const int64_t *ne) {
    if (!data || s->oom) {
        free(data);
        s->oom = 1;
        return;
    }
    size_t n = 1;
    for (uint32_t i = 0; i < n_dims; i++) n *= (size_t)ne[i];
    if (expand_own(s, data)) gguf_w_tensor(s->w, name, PF_TYPE_F32, n_dims, ne, data, n * sizeof(float));
}

/* dst[i][j] = 0 where either map is MAP_ZERO, src[r][c] * scale where both map to the source,
 * random (std) otherwise. src may be NULL (nothing maps to it). */
float *expand_build_matrix(const int32_t *rmap, int64_t rows, const int32_t *cmap, int64_t cols, const float *src,
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

int32_t *expand_map_new(int64_t n, int64_t n_src, int32_t extra) {
    int32_t *m = malloc((size_t)n * sizeof *m);
    if (m)
        for (int64_t i = 0; i < n; i++) m[i] = i < n_src ? (int32_t)i : extra;
    return m;
}

pf_rc expand_read_f32(const gguf_file *f, const char *name, int64_t n, float **out, char *err) {
    *out = NULL;
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) {
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s' is missing", f->path, name);
        return PF_RC_FORMAT;
    }
    if (t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3] != n) {
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s' has %lld values, expected %lld", f->path, name,
                 (long long)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]), (long long)n);
        return PF_RC_FORMAT;
    }
    int64_t cols = t->ne[0];
    size_t rb = pf_row_bytes(t->type, cols);
    if (!rb) {
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s' has unsupported type %u", f->path, name, t->type);
        return PF_RC_FORMAT;
    }
    float *d = malloc((size_t)n * sizeof(float));
    if (!d) {
        snprintf(err, PF_ERR_LEN, "%s: out of memory for '%s'", f->path, name);
        return PF_RC_OOM;
    }
    for (int64_t r = 0; r < n / cols; r++) pf_dequantize_row(t->type, (const char *)t->data + (size_t)r * rb, d + r * cols, cols);
    *out = d;
    return PF_RC_OK;
}

bool expand_output_type_ok(uint32_t t) {
    return t == PF_TYPE_F32 || t == PF_TYPE_F16 || t == PF_TYPE_BF16 || t == PF_TYPE_Q8_0 || t == PF_TYPE_Q4_0 ||
           t == PF_TYPE_Q4_1;
}

/* tokenizer.ggml.tokens / token_type / scores padded to n_vocab with unused (type 5) tokens
 * "[PAD<id>]": encoding never produces them (engine/tokenizer.c leaves type 5 out of its table).
 * A file without tokens gets none. */
pf_rc expand_pad_tokenizer(gguf_writer *w, const gguf_file *f, int64_t n_vocab, char *err) {
    const gguf_kv *tok = gguf_find(f, "tokenizer.ggml.tokens");
    if (!tok) return PF_RC_OK;
    if (tok->type != GGUF_ARR || tok->v.arr.type != GGUF_STR || tok->v.arr.n > (uint64_t)n_vocab) {
        snprintf(err, PF_ERR_LEN, "%s: tokenizer.ggml.tokens: expected at most %lld strings", f->path, (long long)n_vocab);
        return PF_RC_FORMAT;
    }
    const uint64_t n0 = tok->v.arr.n, n = (uint64_t)n_vocab;
    const gguf_kv *tt = gguf_find(f, "tokenizer.ggml.token_type");
    const gguf_kv *sc = gguf_get_arr(f, "tokenizer.ggml.scores", GGUF_F32);
    const char **strs = malloc(n * sizeof *strs);
    uint64_t *lens = malloc(n * sizeof *lens);
    char *pads = malloc((n - n0) * 16 + 1);
    int32_t *types = malloc(n * sizeof *types);
    float *scores = malloc(n * sizeof *scores);
    pf_rc rc = PF_RC_OOM;
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
    rc = PF_RC_OK;
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

/* k is one of the n keys, a vocabulary array (rewritten padded) or an earlier expansion's record. */
static bool skipped_key(const char *k, const char *const *keys, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k, keys[i])) return true;
    return is_vocab_array(k) || !strncmp(k, "pocketflash.expand.", 19);
}

bool expand_skip_target_key(const char *k) {
    static const char *const keys[] = {"general.name", "general.file_type", "qwen3.block_count",
                                       "qwen3.context_length", "qwen3.embedding_length", "qwen3.feed_forward_length",
                                       "qwen3.attention.head_count", "qwen3.attention.head_count_kv",
                                       "qwen3.attention.key_length", "qwen3.attention.value_length",
                                       "qwen3.attention.layer_norm_rms_epsilon"};
    return skipped_key(k, keys, sizeof keys / sizeof keys[0]);
}

bool expand_skip_draft_key(const char *k) {
    static const char *const keys[] = {"general.name", "general.file_type", "dflash.context_length",
                                       "dflash.embedding_length", "dflash.feed_forward_length",
                                       "dflash.attention.head_count", "dflash.attention.head_count_kv",
                                       "dflash.attention.key_length", "dflash.attention.value_length",
                                       "dflash.attention.layer_norm_rms_epsilon"};
    return skipped_key(k, keys, sizeof keys / sizeof keys[0]);
}

void expand_write_name(gguf_writer *w, const gguf_file *f, const pf_synth_shape *d, const char *fallback) {
    gguf_str s;
    char name[256];
    int n = gguf_get_str(f, "general.name", &s) == 0 ? (int)(s.len > 160 ? 160 : s.len) : 0;
    const char *what = d->name && !strcmp(d->name, "pocket") ? "Pocket-shape stand-in" : "expanded";
    snprintf(name, sizeof name, "%.*s (%s)", n ? n : (int)strlen(fallback), n ? s.ptr : fallback, what);
    gguf_w_str(w, "general.name", name);
}

/* ---------------------------------------------------------------- one Qwen3-style layer */


void expand_maps_free(layer_maps *m) {
    free(m->hid_in); free(m->hid_out); free(m->q_rows); free(m->o_cols); free(m->kv_rows);
    free(m->ff_rows); free(m->ff_cols); free(m->ff_rand); free(m->hid_rand); free(m->q_rand); free(m->kv_rand);
}

int expand_maps_init(layer_maps *m) {
    const int hd = m->hd, g = m->nh / m->nkv, gd = m->nh_d / m->nkv_d;
    const int64_t qd = (int64_t)m->nh_d * hd, kvd = (int64_t)m->nkv_d * hd;
    m->hid_in = expand_map_new(m->Hd, m->H, MAP_RANDOM);   /* inputs of q/k/v/gate/up: zero activations there */
    m->hid_out = expand_map_new(m->Hd, m->H, MAP_ZERO);    /* rows writing the residual stream */
    m->ff_rows = expand_map_new(m->F_d, m->F, MAP_RANDOM);
    m->ff_cols = expand_map_new(m->F_d, m->F, MAP_ZERO);
    m->kv_rows = expand_map_new(kvd, (int64_t)m->nkv * hd, MAP_RANDOM);
    m->q_rows = expand_map_new(qd, 0, MAP_RANDOM);
    m->o_cols = expand_map_new(qd, 0, MAP_ZERO);
    m->ff_rand = expand_map_new(m->F_d, 0, MAP_RANDOM);
    m->hid_rand = expand_map_new(m->Hd, 0, MAP_RANDOM);
    m->q_rand = expand_map_new(qd, 0, MAP_RANDOM);
    m->kv_rand = expand_map_new(kvd, 0, MAP_RANDOM);
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
float *expand_hidden_norm(const float *src, const layer_maps *m, float scale, pf_rng *rng) {
    float *v = malloc((size_t)m->Hd * sizeof(float));
    if (!v) return NULL;
    for (int i = 0; i < m->Hd; i++) v[i] = src ? (i < m->H ? src[i] * scale : 1.0f) : 1.0f + 0.1f * urand(rng);
    if (m->guard >= 0) v[m->guard] = 0.0f;
    return v;
}

/* Layer l's norms in file order (attn_norm, q_norm, k_norm, ffn_norm): from f when given, else
 * drawn. expand_read_f32's kinds when f lacks one. */
static pf_rc expand_layer_norms(sink *s, const gguf_file *f, int l, const layer_maps *m, float norm_scale, pf_rng *rng,
                                char *err) {
    static const char *const norms[4] = {"attn_norm", "attn_q_norm", "attn_k_norm", "ffn_norm"};
    const int H = m->H, hd = m->hd;
    char name[96];
    for (int k = 0; k < 4; k++) {
        int hidden = k == 0 || k == 3;
        snprintf(name, sizeof name, "blk.%d.%s.weight", l, norms[k]);
        float *src = NULL;
        pf_rc rc = f ? expand_read_f32(f, name, hidden ? H : hd, &src, err) : PF_RC_OK;
        if (rc != PF_RC_OK) return rc;
        float *v;
        if (hidden) {
            v = expand_hidden_norm(src, m, norm_scale, rng);
        } else if ((v = malloc((size_t)hd * sizeof(float))) != NULL) {
            for (int i = 0; i < hd; i++) v[i] = src ? src[i] : 1.0f + 0.1f * urand(rng);
        }
        free(src);
        int64_t ne = hidden ? m->Hd : hd;
        expand_emit_f32(s, name, v, 1, &ne);
    }
    return PF_RC_OK;
}

/* One matrix of a layer: its big and source shapes, the row / column maps from the source (and
 * those of a drawn layer), its scale and the std of what is drawn. */
typedef struct {
    const char *t;
    int64_t rows, cols, src_rows, src_cols;
    const int32_t *rmap, *cmap, *rrand, *crand;
    float scale, std;
    int zero_extra; /* an extra layer's attn_output / ffn_down */
} layer_mat;

/* Matrix mt of layer l: expanded from f when given, else zero (zero_extra) or drawn. PF_RC_OK, or
 * expand_read_f32's kinds. */
static pf_rc expand_layer_matrix(sink *s, const gguf_file *f, int l, const layer_mat *mt, uint32_t type, pf_rng *rng,
                                 char *err) {
    char out[96];
    snprintf(out, sizeof out, "blk.%d.%s.weight", l, mt->t);
    float *d;
    if (f) {
        float *src;
        pf_rc rc = expand_read_f32(f, out, mt->src_rows * mt->src_cols, &src, err);
        if (rc != PF_RC_OK) return rc;
        d = expand_build_matrix(mt->rmap, mt->rows, mt->cmap, mt->cols, src, mt->src_cols, mt->scale, mt->std, rng);
        free(src);
    } else if (mt->zero_extra) {
        d = calloc((size_t)(mt->rows * mt->cols), sizeof(float));
    } else {
        d = expand_build_matrix(mt->rrand, mt->rows, mt->crand, mt->cols, NULL, 0, 1.0f, mt->std, rng);
    }
    expand_emit_matrix(s, out, d, mt->rows, mt->cols, type);
    return PF_RC_OK;
}

/* Layer l of the big model: from source layer l of `f` (prefix "blk.%d.") when f != NULL, else an
 * extra layer (random weights, zero attn_output and ffn_down). */
pf_rc expand_write_layer(sink *s, const gguf_file *f, int l, const layer_maps *m, float norm_scale, float qk_scale,
                         uint32_t type, pf_rng *rng, char *err) {
    const int H = m->H, hd = m->hd;
    const int64_t qd_s = (int64_t)m->nh * hd, kvd_s = (int64_t)m->nkv * hd;
    const int64_t qd = (int64_t)m->nh_d * hd, kvd = (int64_t)m->nkv_d * hd;
    const float sh = 1.0f / sqrtf((float)m->Hd), sq = 1.0f / sqrtf((float)qd), sf = 1.0f / sqrtf((float)m->F_d);
    const layer_mat mats[] = {
        {"attn_q", qd, m->Hd, qd_s, H, m->q_rows, m->hid_in, m->q_rand, m->hid_rand, qk_scale, sh, 0},
        {"attn_k", kvd, m->Hd, kvd_s, H, m->kv_rows, m->hid_in, m->kv_rand, m->hid_rand, qk_scale, sh, 0},
        {"attn_v", kvd, m->Hd, kvd_s, H, m->kv_rows, m->hid_in, m->kv_rand, m->hid_rand, 1.0f, sh, 0},
        {"attn_output", m->Hd, qd, H, qd_s, m->hid_out, m->o_cols, NULL, NULL, 1.0f, sq, 1},
        {"ffn_gate", m->F_d, m->Hd, m->F, H, m->ff_rows, m->hid_in, m->ff_rand, m->hid_rand, 1.0f, sh, 0},
        {"ffn_up", m->F_d, m->Hd, m->F, H, m->ff_rows, m->hid_in, m->ff_rand, m->hid_rand, 1.0f, sh, 0},
        {"ffn_down", m->Hd, m->F_d, H, m->F, m->hid_out, m->ff_cols, NULL, NULL, 1.0f, sf, 1},
    };
    pf_rc rc = expand_layer_norms(s, f, l, m, norm_scale, rng, err);
    for (size_t k = 0; rc == PF_RC_OK && k < sizeof mats / sizeof mats[0]; k++)
        rc = expand_layer_matrix(s, f, l, &mats[k], type, rng, err);
    if (rc == PF_RC_OK && s->oom) {
        snprintf(err, PF_ERR_LEN, "expand: out of memory in layer %d", l);
        rc = PF_RC_OOM;
    }
    return rc;
}
