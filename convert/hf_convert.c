/* HF checkpoint -> GGUF. See hf_convert.h.
 *
 * Followed (read, not copied): llama.cpp's converter conversion/qwen.py (Qwen3Model, DFlashModel:
 * the draft's top-level layers.* / norm / fc / hidden_norm names, the target's tokenizer) and its
 * loader src/models/dflash.cpp (llama_model_dflash::load_arch_hparams / load_arch_tensors: the
 * dflash.* keys, `target_layers` required, optional sliding_window + per-layer bool
 * sliding_window_pattern, logit_scale / final_logit_softcapping, d2t {n_vocab_draft} with
 * output.weight {n_embd, n_vocab_draft}, selector_hidden {n_embd, rank}, selector_predecessor /
 * _successor {rank, n_vocab}, blk.N.attn_conv_base / ffn_conv_base {n_embd, kernel, 2} without a
 * .weight suffix, blk.N.*_conv_proj.weight {n_embd, 2*kernel*n_groups}); ggml dims are torch's
 * reversed, so every tensor keeps its bytes. dflash.target_layers holds HF target_layer_ids + 1: the
 * loader taps the INPUT of that target layer, which is the output of layer id (HF hidden_states[id+1]),
 * as docs/dflash-format.md records and llama.cpp's run of our v1 draft confirmed. */
#include "convert/hf_convert.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/errf.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "formats/json.h"
#include "formats/quant.h"
#include "convert/requantize.h"
#include "formats/safetensors.h"
#include "convert/vocab_import.h"

#define GGML_TYPE_I64 27 /* ggml's id for d2t */

enum { ARCH_QWEN3 = 0, ARCH_DFLASH = 1, ARCH_DFLASH2 = 2 };

typedef struct {
    const char *dir;
    char cfg_path[4096];
    char *err;
    pf_rc rc; /* the kind of the failure err describes */
    const pf_convert_opts *o;
    const pf_json *cfg, *dcfg; /* config.json, its dflash_config (or NULL) */
    pf_safetensors *st;
    bool *used;
    gguf_writer *w;
    int arch;
    const char *prefix; /* GGUF key prefix */
    int64_t H, F, L, nh, nkv, hd, ctx, V;
    double eps, theta;
    /* drafts */
    gguf_file *target;
    int64_t tgt_layers, tgt_embd, tgt_vocab;
    int64_t conv_k, conv_g, sel_rank, sel_topk, n_taps, vocab_draft;
} conv;

/* A failure of kind rc (memory, a bad option, a missing file): -1 with err filled. */
static int fail_kind(conv *c, pf_rc rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, PF_ERR_LEN, fmt, ap);
    va_end(ap);
    pf_err_one_line(c->err); /* it quotes config.json's strings, which may hold a newline */
    c->rc = rc;
    return -1;
}
/* A checkpoint that does not fit. */
#define fail(c, ...) fail_kind((c), PF_RC_FORMAT, __VA_ARGS__)

/* A reader's failure (its message already in err): -1 unless rc is PF_RC_OK. */
static int kept(conv *c, pf_rc rc) {
    c->rc = rc;
    return rc == PF_RC_OK ? 0 : -1;
}

static void warn(conv *c, const char *fmt, ...) {
    if (!c->o->warn) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pf_err_one_line(msg);
    c->o->warn(c->o->warn_ctx, msg);
}

/* ---------------------------------------------------------------- config.json */

/* A draft key: dflash_config first (z-lab's files), then the top level (older files). */
static const pf_json *dkey(const conv *c, const char *k) {
    const pf_json *v = c->dcfg ? pf_json_get(c->dcfg, k) : NULL;
    return v ? v : pf_json_get(c->cfg, k);
}

static int get_int(conv *c, const pf_json *v, const char *k, int64_t lo, int64_t hi, int64_t *out) {
    if (!v || v->type != PF_JSON_NUMBER || !v->u.num.is_int || v->u.num.i < lo || v->u.num.i > hi)
        return fail(c, "%s: %s: %s (expected an integer in %lld..%lld)", c->cfg_path, k, v ? "out of range" : "missing",
                    (long long)lo, (long long)hi);
    *out = v->u.num.i;
    return 0;
}

/* required (def < lo) or defaulted */
static int cfg_int(conv *c, const pf_json *v, const char *k, int64_t lo, int64_t hi, int64_t def, int64_t *out) {
    if ((!v || v->type == PF_JSON_NULL) && def >= lo) {
        *out = def;
        return 0;
    }
    return get_int(c, v, k, lo, hi, out);
}

static int cfg_num(conv *c, const pf_json *v, const char *k, double def, double *out) {
    if (!v || v->type == PF_JSON_NULL) {
        *out = def;
        return 0;
    }
    if (v->type != PF_JSON_NUMBER || !(v->u.num.d > 0) || !isfinite(v->u.num.d))
        return fail(c, "%s: %s: expected a positive number", c->cfg_path, k);
    *out = v->u.num.d;
    return 0;
}

static bool cfg_true(const pf_json *v) { return v && v->type == PF_JSON_BOOL && v->u.b; }

static int read_shape(conv *c) {
    const pf_json *g = c->cfg;
    if (cfg_int(c, pf_json_get(g, "hidden_size"), "hidden_size", 1, 1 << 16, -1, &c->H) < 0 ||
        cfg_int(c, pf_json_get(g, "intermediate_size"), "intermediate_size", 1, 1 << 20, -1, &c->F) < 0 ||
        cfg_int(c, pf_json_get(g, "num_hidden_layers"), "num_hidden_layers", 1, 1024, -1, &c->L) < 0 ||
        cfg_int(c, pf_json_get(g, "num_attention_heads"), "num_attention_heads", 1, 1024, -1, &c->nh) < 0 ||
        cfg_int(c, pf_json_get(g, "num_key_value_heads"), "num_key_value_heads", 1, 1024, c->nh, &c->nkv) < 0 ||
        cfg_int(c, pf_json_get(g, "head_dim"), "head_dim", 2, 1024, c->H / c->nh >= 2 ? c->H / c->nh : 2, &c->hd) < 0 ||
        cfg_int(c, pf_json_get(g, "max_position_embeddings"), "max_position_embeddings", 1, 1 << 30, 40960, &c->ctx) < 0 ||
        cfg_num(c, pf_json_get(g, "rms_norm_eps"), "rms_norm_eps", 1e-6, &c->eps) < 0)
        return -1;
    if (c->nh % c->nkv) return fail(c, "%s: num_key_value_heads: %lld does not divide num_attention_heads %lld", c->cfg_path,
                                    (long long)c->nkv, (long long)c->nh);
    if (c->hd % 2) return fail(c, "%s: head_dim: %lld is odd (RoPE pairs dimensions)", c->cfg_path, (long long)c->hd);
    /* rope_theta, or transformers' newer rope_parameters.rope_theta; Qwen3Config's default 10000 */
    const pf_json *th = pf_json_get(g, "rope_theta");
    if (!th) th = pf_json_get(pf_json_get(g, "rope_parameters"), "rope_theta");
    if (cfg_num(c, th, "rope_theta", 10000.0, &c->theta) < 0) return -1;
    const pf_json *rs = pf_json_get(g, "rope_scaling");
    if (!rs) rs = pf_json_get(g, "rope_parameters");
    const pf_json *rt = rs ? pf_json_get(rs, "rope_type") : NULL;
    if (!rt) rt = rs ? pf_json_get(rs, "type") : NULL;
    if (rs && rs->type == PF_JSON_OBJECT && rt && !pf_json_str_eq(rt, "default"))
        return fail(c, "%s: rope_scaling: type \"%.20s\" is not supported (plain RoPE only)", c->cfg_path,
                    rt->type == PF_JSON_STRING ? rt->u.str.s : "?");
    const pf_json *act = pf_json_get(g, "hidden_act");
    if (act && !pf_json_str_eq(act, "silu")) return fail(c, "%s: hidden_act: only \"silu\" (SwiGLU) is supported", c->cfg_path);
    if (cfg_true(pf_json_get(g, "attention_bias")))
        return fail(c, "%s: attention_bias: true is not supported (Qwen3 projections have no bias)", c->cfg_path);
    return 0;
}

/* ---------------------------------------------------------------- tensors */

/* The checkpoint's tensor `name` (drafts may carry a "model." prefix), shape-checked against dims
 * (outermost first) and marked used; NULL with err filled when absent and required. */
static const pf_st_tensor *tensor(conv *c, const char *name, int n_dims, const int64_t *dims, bool required) {
    const pf_st_tensor *t = pf_st_find(c->st, name);
    char alt[256];
    if (!t && c->arch != ARCH_QWEN3) {
        snprintf(alt, sizeof alt, "model.%s", name);
        t = pf_st_find(c->st, alt);
    }
    size_t nl = strlen(name);
    if (!t && (nl < 7 || strcmp(name + nl - 7, ".weight"))) { /* some exporters suffix the codebooks */
        snprintf(alt, sizeof alt, "%s.weight", name);
        t = pf_st_find(c->st, alt);
    }
    if (!t) {
        if (required) fail(c, "%s: tensor '%s': missing", c->dir, name);
        return NULL;
    }
    c->used[t - pf_st_at(c->st, 0)] = true;
    bool ok = t->n_dims == n_dims;
    for (int d = 0; ok && d < n_dims; d++) ok = dims[d] < 0 || t->shape[d] == dims[d];
    if (!ok) {
        char got[128] = "", want[128] = "";
        for (int d = 0; d < t->n_dims; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        for (int d = 0; d < n_dims; d++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? ", " : "", (long long)dims[d]);
        fail(c, "%s: tensor '%s': shape [%s], expected [%s]", pf_st_shard_path(c->st, t->shard), t->name, got, want);
        return NULL;
    }
    if (t->dtype != PF_ST_F32 && t->dtype != PF_ST_F16 && t->dtype != PF_ST_BF16) {
        fail(c, "%s: tensor '%s': dtype %s is not supported (F32, F16, BF16)", pf_st_shard_path(c->st, t->shard), t->name,
             pf_st_dtype_name(t->dtype));
        return NULL;
    }
    return t;
}

static int st_type_of(int dtype) {
    return dtype == PF_ST_F32 ? PF_TYPE_F32 : dtype == PF_ST_F16 ? PF_TYPE_F16 : PF_TYPE_BF16;
}

/* Write t as GGUF tensor gname: 2-D -> the output type, everything else -> F32 (see hf_convert.h). */
static int emit(conv *c, const pf_st_tensor *t, const char *gname) {
    int64_t ne[4] = {1, 1, 1, 1};
    if (t->n_dims > 4) return fail(c, "%s: tensor '%s': %d dimensions (at most 4)", c->dir, t->name, t->n_dims);
    for (int d = 0; d < t->n_dims; d++) ne[d] = t->shape[t->n_dims - 1 - d];
    uint32_t n_dims = t->n_dims ? (uint32_t)t->n_dims : 1;
    uint32_t type = PF_TYPE_F32;
    if (t->n_dims == 2) {
        type = c->o->type;
        if (pf_type_info(type)->block > 1 && ne[0] % PF_QK) type = PF_TYPE_F16;
    }
    if ((uint32_t)st_type_of(t->dtype) == type) { /* same bytes: borrowed from the mapping */
        gguf_w_tensor(c->w, gname, type, n_dims, ne, t->data, t->nbytes);
        return 0;
    }
    float *f = malloc((t->nel ? t->nel : 1) * sizeof *f);
    if (!f) return fail_kind(c, PF_RC_OOM, "%s: tensor '%s': out of memory", c->dir, t->name);
    if (pf_st_to_f32(t, f) < 0) { /* tensor() admits the float dtypes only */
        free(f);
        return fail_kind(c, PF_RC_INTERNAL, "%s: tensor '%s': dtype %s is not a float type", c->dir, t->name,
                         pf_st_dtype_name(t->dtype));
    }
    if (type == PF_TYPE_F32) {
        gguf_w_tensor(c->w, gname, type, n_dims, ne, gguf_w_own(c->w, f), t->nel * 4);
        return 0;
    }
    size_t nb = 0;
    void *q = pf_convert_matrix(type, f, ne[1], ne[0], &nb);
    free(f);
    if (!q) /* the type was checked up front: only memory is left to fail */
        return fail_kind(c, PF_RC_OOM, "%s: tensor '%s': out of memory converting to %s", c->dir, t->name,
                         pf_type_info(type)->name);
    gguf_w_tensor(c->w, gname, type, n_dims, ne, gguf_w_own(c->w, q), nb);
    return 0;
}

static int map(conv *c, const char *hf, const char *gg, int n_dims, const int64_t *dims) {
    const pf_st_tensor *t = tensor(c, hf, n_dims, dims, true);
    return t ? emit(c, t, gg) : -1;
}

static int map_layers(conv *c, const char *hf_prefix) {
    const int64_t H = c->H, F = c->F, qd = c->nh * c->hd, kvd = c->nkv * c->hd, hd = c->hd;
    struct { const char *hf, *gg; int nd; int64_t d0, d1; } m[] = {
        {"input_layernorm.weight", "attn_norm.weight", 1, H, 0},
        {"self_attn.q_proj.weight", "attn_q.weight", 2, qd, H},
        {"self_attn.k_proj.weight", "attn_k.weight", 2, kvd, H},
        {"self_attn.v_proj.weight", "attn_v.weight", 2, kvd, H},
        {"self_attn.o_proj.weight", "attn_output.weight", 2, H, qd},
        {"self_attn.q_norm.weight", "attn_q_norm.weight", 1, hd, 0},
        {"self_attn.k_norm.weight", "attn_k_norm.weight", 1, hd, 0},
        {"post_attention_layernorm.weight", "ffn_norm.weight", 1, H, 0},
        {"mlp.gate_proj.weight", "ffn_gate.weight", 2, F, H},
        {"mlp.up_proj.weight", "ffn_up.weight", 2, F, H},
        {"mlp.down_proj.weight", "ffn_down.weight", 2, H, F},
    };
    for (int64_t l = 0; l < c->L; l++) {
        for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
            char hf[256], gg[128];
            snprintf(hf, sizeof hf, "%slayers.%lld.%s", hf_prefix, (long long)l, m[i].hf);
            snprintf(gg, sizeof gg, "blk.%lld.%s", (long long)l, m[i].gg);
            int64_t dims[2] = {m[i].d0, m[i].d1};
            if (map(c, hf, gg, m[i].nd, dims) < 0) return -1;
        }
        if (c->arch != ARCH_DFLASH2) continue;
        /* base_kernel (2 sides, K taps, H) -> {H, K, 2}; kernel_projection (2*K*G, H) */
        const int64_t base[3] = {2, c->conv_k, H}, proj[2] = {2 * c->conv_k * (H / c->conv_g), H};
        const char *sub[2][2] = {{"attention_conv", "attn_conv"}, {"mlp_conv", "ffn_conv"}};
        for (int s = 0; s < 2; s++) {
            char hf[256], gg[128];
            snprintf(hf, sizeof hf, "layers.%lld.%s.base_kernel", (long long)l, sub[s][0]);
            snprintf(gg, sizeof gg, "blk.%lld.%s_base", (long long)l, sub[s][1]);
            if (map(c, hf, gg, 3, base) < 0) return -1;
            snprintf(hf, sizeof hf, "layers.%lld.%s.kernel_projection.weight", (long long)l, sub[s][0]);
            snprintf(gg, sizeof gg, "blk.%lld.%s_proj.weight", (long long)l, sub[s][1]);
            if (map(c, hf, gg, 2, proj) < 0) return -1;
        }
    }
    return 0;
}

/* Tensors nothing mapped: an error (a checkpoint of another layout), except the rotary cache some
 * exporters keep and t2d (the reverse of d2t), which llama.cpp's converter skips too. */
static int check_unused(conv *c) {
    for (size_t i = 0; i < pf_st_count(c->st); i++) {
        const pf_st_tensor *t = pf_st_at(c->st, i);
        if (c->used[i] || strstr(t->name, "rotary_emb.inv_freq") || strcmp(t->name, "t2d") == 0) continue;
        return fail(c, "%s: tensor '%s': not part of a %s checkpoint", pf_st_shard_path(c->st, t->shard), t->name,
                    c->arch == ARCH_QWEN3 ? "Qwen3ForCausalLM" : c->arch == ARCH_DFLASH ? "DFlashDraftModel" : "DFlash2DraftModel");
    }
    return 0;
}

static void shape_keys(conv *c) {
    char k[128];
#define KEY(s) (snprintf(k, sizeof k, "%s.%s", c->prefix, s), k)
    gguf_w_u32(c->w, KEY("block_count"), (uint32_t)c->L);
    gguf_w_u32(c->w, KEY("context_length"), (uint32_t)c->ctx);
    gguf_w_u32(c->w, KEY("embedding_length"), (uint32_t)c->H);
    gguf_w_u32(c->w, KEY("feed_forward_length"), (uint32_t)c->F);
    gguf_w_u32(c->w, KEY("attention.head_count"), (uint32_t)c->nh);
    gguf_w_u32(c->w, KEY("attention.head_count_kv"), (uint32_t)c->nkv);
    gguf_w_f32(c->w, KEY("rope.freq_base"), (float)c->theta);
    gguf_w_f32(c->w, KEY("attention.layer_norm_rms_epsilon"), (float)c->eps);
    gguf_w_u32(c->w, KEY("attention.key_length"), (uint32_t)c->hd);
    gguf_w_u32(c->w, KEY("attention.value_length"), (uint32_t)c->hd);
#undef KEY
}

static void general_keys(conv *c) {
    gguf_w_str(c->w, "general.architecture", c->prefix);
    /* the last component of _name_or_path, else of the folder */
    const pf_json *nm = pf_json_get(c->cfg, "_name_or_path");
    char buf[256];
    snprintf(buf, sizeof buf, "%s", nm && nm->type == PF_JSON_STRING && nm->u.str.len ? nm->u.str.s : c->dir);
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/') buf[--n] = 0;
    const char *slash = strrchr(buf, '/');
    gguf_w_str(c->w, "general.name", slash && slash[1] ? slash + 1 : buf);
    gguf_w_u32(c->w, "general.file_type", pf_file_type_of(c->o->type));
}

/* A target: sliding-window layers are not something its forward does. */
static int target_no_swa(conv *c) {
    const pf_json *lt = pf_json_get(c->cfg, "layer_types");
    if (lt && lt->type == PF_JSON_ARRAY)
        for (size_t i = 0; i < lt->u.arr.n; i++)
            if (pf_json_str_eq(&lt->u.arr.items[i], "sliding_attention"))
                return fail(c, "%s: layer_types[%zu]: sliding-window layers in a target are not supported", c->cfg_path, i);
    if (cfg_true(pf_json_get(c->cfg, "use_sliding_window")) && !lt) {
        int64_t mwl = 0;
        if (cfg_int(c, pf_json_get(c->cfg, "max_window_layers"), "max_window_layers", 0, 1 << 20, c->L, &mwl) < 0) return -1;
        if (mwl < c->L) return fail(c, "%s: use_sliding_window: sliding-window layers in a target are not supported", c->cfg_path);
    }
    return 0;
}

static int convert_target(conv *c) {
    if (c->o->target) return fail_kind(c, PF_RC_ARG, "--target: only a draft takes its target's GGUF (%s is a Qwen3ForCausalLM)", c->dir);
    if (target_no_swa(c) < 0) return -1;
    int64_t V = 0;
    if (cfg_int(c, pf_json_get(c->cfg, "vocab_size"), "vocab_size", 1, 1 << 24, -1, &V) < 0) return -1;
    c->V = V;
    bool tied = cfg_true(pf_json_get(c->cfg, "tie_word_embeddings"));
    general_keys(c);
    shape_keys(c);
    char tok[4096], tcfg[4096];
    snprintf(tok, sizeof tok, "%s/tokenizer.json", c->dir);
    snprintf(tcfg, sizeof tcfg, "%s/tokenizer_config.json", c->dir);
    struct stat sb;
    if (stat(tok, &sb) != 0) return fail_kind(c, PF_RC_IO, "%s: missing (a target's tokenizer)", tok);
    int64_t n_tok = 0;
    if (kept(c, pf_vocab_import_into(c->w, tok, stat(tcfg, &sb) == 0 ? tcfg : NULL, V, &n_tok, c->err)) < 0) return -1;
    if (n_tok != V)
        return fail(c, "%s: %lld tokens, but config.json's vocab_size (the embedding rows) is %lld", tok, (long long)n_tok,
                    (long long)V);
    int64_t bos = -1;
    if (cfg_int(c, pf_json_get(c->cfg, "bos_token_id"), "bos_token_id", 0, V - 1, V, &bos) < 0) return -1;
    if (bos < V) gguf_w_u32(c->w, "tokenizer.ggml.bos_token_id", (uint32_t)bos);
    const int64_t emb[2] = {V, c->H}, vec[1] = {c->H};
    if (map(c, "model.embed_tokens.weight", "token_embd.weight", 2, emb) < 0) return -1;
    if (map(c, "model.norm.weight", "output_norm.weight", 1, vec) < 0) return -1;
    const pf_st_tensor *head = tensor(c, "lm_head.weight", 2, emb, false);
    if (!head && c->err[0]) return -1;
    if (!tied && !head) return fail(c, "%s: tensor 'lm_head.weight': missing (tie_word_embeddings is false)", c->dir);
    if (!tied && emit(c, head, "output.weight") < 0) return -1; /* tied: an lm_head copy is dropped, as llama.cpp does */
    return map_layers(c, "model.");
}

/* ---------------------------------------------------------------- drafts */

static bool tokenizer_key(const char *k) {
    return strncmp(k, "tokenizer.", 10) != 0 || strcmp(k, "tokenizer.ggml.mask_token_id") == 0;
}

static int open_target(conv *c) {
    if (!c->o->target)
        return fail_kind(c, PF_RC_ARG, "--target: a draft needs its target's GGUF (its tokenizer is copied into the draft)");
    if (kept(c, gguf_open_file(c->o->target, &c->target, c->err)) < 0) return -1;
    gguf_str a;
    if (gguf_get_str(c->target, "general.architecture", &a) != 0 || !gguf_str_eq(a, "qwen3"))
        return fail(c, "%s: general.architecture: the target must be a qwen3 GGUF", c->o->target);
    uint32_t u;
    if (gguf_get_u32(c->target, "qwen3.block_count", &u) != 0) return fail(c, "%s: qwen3.block_count: missing", c->o->target);
    c->tgt_layers = u;
    if (gguf_get_u32(c->target, "qwen3.embedding_length", &u) != 0)
        return fail(c, "%s: qwen3.embedding_length: missing", c->o->target);
    c->tgt_embd = u;
    const gguf_kv *toks = gguf_get_arr(c->target, "tokenizer.ggml.tokens", GGUF_STR);
    if (!toks || !gguf_find(c->target, "tokenizer.ggml.model"))
        return fail(c, "%s: tokenizer.ggml.tokens: the target carries no tokenizer to copy", c->o->target);
    c->tgt_vocab = (int64_t)toks->v.arr.n;
    return 0;
}

/* dflash.target_layers from target_layer_ids (+1: the input of the next layer, see the top). */
static int draft_taps(conv *c) {
    const pf_json *ids = dkey(c, "target_layer_ids");
    if (!ids || ids->type != PF_JSON_ARRAY || ids->u.arr.n < 1 || ids->u.arr.n > 256)
        return fail(c, "%s: dflash_config.target_layer_ids: %s", c->cfg_path, ids ? "expected an array of 1..256 layer ids" : "missing");
    c->n_taps = (int64_t)ids->u.arr.n;
    int32_t v[256];
    for (int64_t i = 0; i < c->n_taps; i++) {
        int64_t id = 0;
        char k[64];
        snprintf(k, sizeof k, "dflash_config.target_layer_ids[%lld]", (long long)i);
        if (get_int(c, &ids->u.arr.items[i], k, 0, c->tgt_layers - 1, &id) < 0) return -1;
        if (id == c->tgt_layers - 1)
            warn(c, "%s: %s = %lld taps the target's last layer (dflash.target_layers %lld): llama.cpp's loader refuses "
                 "such a draft (a dense target has no input of layer %lld), and HF's hidden_states[%lld] is after the "
                 "final norm while pocketflash taps the residual before it",
                 c->cfg_path, k, (long long)id, (long long)id + 1, (long long)id + 1, (long long)id + 1);
        v[i] = (int32_t)(id + 1);
    }
    gguf_w_arr(c->w, "dflash.target_layers", GGUF_I32, v, (uint64_t)c->n_taps);
    return 0;
}

/* layer_types + sliding_window -> dflash.attention.sliding_window and the per-layer bool pattern. */
static int draft_swa(conv *c) {
    const pf_json *lt = pf_json_get(c->cfg, "layer_types");
    if (!lt || lt->type == PF_JSON_NULL) return 0;
    if (lt->type != PF_JSON_ARRAY || (int64_t)lt->u.arr.n != c->L)
        return fail(c, "%s: layer_types: expected %lld entries (one per layer)", c->cfg_path, (long long)c->L);
    uint8_t pat[1024];
    int n_swa = 0;
    for (int64_t l = 0; l < c->L; l++) {
        const pf_json *e = &lt->u.arr.items[l];
        if (!pf_json_str_eq(e, "sliding_attention") && !pf_json_str_eq(e, "full_attention"))
            return fail(c, "%s: layer_types[%lld]: expected \"sliding_attention\" or \"full_attention\"", c->cfg_path, (long long)l);
        pat[l] = pf_json_str_eq(e, "sliding_attention");
        n_swa += pat[l];
    }
    if (!n_swa) return 0;
    int64_t win = 0;
    if (cfg_int(c, pf_json_get(c->cfg, "sliding_window"), "sliding_window", 1, 1 << 30, -1, &win) < 0) return -1;
    gguf_w_u32(c->w, "dflash.attention.sliding_window", (uint32_t)win);
    gguf_w_arr(c->w, "dflash.attention.sliding_window_pattern", GGUF_BOOL, pat, (uint64_t)c->L);
    return 0;
}

/* Optional output transforms (llama.cpp: dflash.logit_scale, dflash.final_logit_softcapping) and the
 * input embedding scale. */
static int draft_scales(conv *c) {
    struct { const char *hf[2], *gg; } s[] = {
        {{"logit_scale", "output_multiplier"}, "dflash.logit_scale"},
        {{"final_logit_softcapping", NULL}, "dflash.final_logit_softcapping"},
        {{"embedding_scale", "input_embedding_scale"}, "dflash.embedding_scale"},
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        for (int j = 0; j < 2 && s[i].hf[j]; j++) {
            const pf_json *v = dkey(c, s[i].hf[j]);
            if (!v || v->type == PF_JSON_NULL) continue;
            double d = 1.0;
            if (cfg_num(c, v, s[i].hf[j], 1.0, &d) < 0) return -1;
            gguf_w_f32(c->w, s[i].gg, (float)d);
            break;
        }
    return 0;
}

static int draft_v2_keys(conv *c) {
    if (cfg_int(c, dkey(c, "conv_kernel_size"), "dflash_config.conv_kernel_size", 1, 64, -1, &c->conv_k) < 0 ||
        cfg_int(c, dkey(c, "conv_group_size"), "dflash_config.conv_group_size", 1, c->H, -1, &c->conv_g) < 0 ||
        cfg_int(c, dkey(c, "selector_rank"), "dflash_config.selector_rank", 1, 65536, -1, &c->sel_rank) < 0 ||
        cfg_int(c, dkey(c, "selector_top_k"), "dflash_config.selector_top_k", 1, 1024, -1, &c->sel_topk) < 0)
        return -1;
    if (c->H % c->conv_g)
        return fail(c, "%s: dflash_config.conv_group_size: %lld does not divide hidden_size %lld", c->cfg_path,
                    (long long)c->conv_g, (long long)c->H);
    if (c->H < c->sel_topk * (c->sel_topk + 1))
        warn(c, "%s: hidden_size %lld < selector_top_k*(selector_top_k+1) = %lld: llama.cpp's loader refuses this draft "
             "(\"hidden size is too small for the selector lattice\"); pocketflash runs it", c->cfg_path, (long long)c->H,
             (long long)(c->sel_topk * (c->sel_topk + 1)));
    gguf_w_u32(c->w, "dflash.conv_kernel_size", (uint32_t)c->conv_k);
    gguf_w_u32(c->w, "dflash.conv_group_size", (uint32_t)c->conv_g);
    gguf_w_u32(c->w, "dflash.selector_rank", (uint32_t)c->sel_rank);
    gguf_w_u32(c->w, "dflash.selector_top_k", (uint32_t)c->sel_topk);
    return 0;
}

/* Optional own embedding and head; a head with fewer rows than the vocabulary needs d2t (EAGLE-3 style
 * offsets in HF: target id = i + d2t[i]; llama.cpp's GGUF holds the absolute ids as I64). */
static int draft_io(conv *c) {
    const int64_t any[2] = {-1, c->H}, emb[2] = {c->tgt_vocab, c->H};
    const pf_st_tensor *e = tensor(c, "embed_tokens.weight", 2, emb, false);
    if (!e && c->err[0]) return -1;
    if (e && emit(c, e, "token_embd.weight") < 0) return -1;
    const pf_st_tensor *h = tensor(c, "lm_head.weight", 2, any, false);
    if (!h && c->err[0]) return -1;
    const pf_st_tensor *d2t = pf_st_find(c->st, "d2t");
    if (!d2t) d2t = pf_st_find(c->st, "model.d2t");
    if (!h) {
        if (d2t) return fail(c, "%s: tensor 'd2t': present without 'lm_head.weight' (the reduced head)", c->dir);
        return 0;
    }
    int64_t Vd = h->shape[0];
    if (Vd < 1 || Vd > c->tgt_vocab)
        return fail(c, "%s: tensor 'lm_head.weight': %lld rows, expected 1..%lld (the target's vocabulary)", c->dir,
                    (long long)Vd, (long long)c->tgt_vocab);
    if (Vd < c->tgt_vocab && !d2t)
        return fail(c, "%s: tensor 'd2t': missing (lm_head.weight has %lld rows, the vocabulary %lld)", c->dir, (long long)Vd,
                    (long long)c->tgt_vocab);
    if (emit(c, h, "output.weight") < 0) return -1;
    if (!d2t) return 0;
    c->used[d2t - pf_st_at(c->st, 0)] = true;
    if (d2t->n_dims != 1 || d2t->shape[0] != Vd || (d2t->dtype != PF_ST_I64 && d2t->dtype != PF_ST_I32))
        return fail(c, "%s: tensor 'd2t': expected I64 or I32 of shape [%lld]", c->dir, (long long)Vd);
    int64_t *ids = malloc((size_t)Vd * sizeof *ids);
    if (!ids) return fail_kind(c, PF_RC_OOM, "%s: out of memory", c->dir);
    for (int64_t i = 0; i < Vd; i++) {
        int64_t off;
        if (d2t->dtype == PF_ST_I64) {
            memcpy(&off, d2t->data + 8 * i, 8);
        } else {
            int32_t o32;
            memcpy(&o32, d2t->data + 4 * i, 4);
            off = o32;
        }
        ids[i] = i + off;
        if (off < -c->tgt_vocab || off > c->tgt_vocab || ids[i] < 0 || ids[i] >= c->tgt_vocab) {
            free(ids);
            return fail(c, "%s: tensor 'd2t': entry %lld maps to target id %lld, outside the vocabulary of %lld", c->dir,
                        (long long)i, (long long)(i + off), (long long)c->tgt_vocab);
        }
    }
    const int64_t ne[4] = {Vd, 1, 1, 1};
    gguf_w_tensor(c->w, "d2t", GGML_TYPE_I64, 1, ne, gguf_w_own(c->w, ids), (size_t)Vd * 8);
    c->vocab_draft = Vd;
    return 0;
}

static int convert_draft(conv *c) {
    if (open_target(c) < 0) return -1;
    if (c->H != c->tgt_embd)
        return fail(c, "%s: hidden_size: %lld differs from the target's %lld (the draft embeds and projects with the target's "
                    "matrices)", c->cfg_path, (long long)c->H, (long long)c->tgt_embd);
    /* a draft made for another target: its depth or vocabulary says so */
    const pf_json *ntl = pf_json_get(c->cfg, "num_target_layers"), *vs = pf_json_get(c->cfg, "vocab_size");
    int64_t v = 0;
    if (ntl && ntl->type != PF_JSON_NULL &&
        (cfg_int(c, ntl, "num_target_layers", 1, 4096, -1, &v) < 0 || v != c->tgt_layers))
        return c->err[0] ? -1 : fail(c, "%s: num_target_layers: %lld, but the target %s has %lld layers", c->cfg_path,
                                     (long long)v, c->o->target, (long long)c->tgt_layers);
    if (vs && vs->type != PF_JSON_NULL && (cfg_int(c, vs, "vocab_size", 1, 1 << 24, -1, &v) < 0 || v != c->tgt_vocab))
        return c->err[0] ? -1 : fail(c, "%s: vocab_size: %lld, but the target %s has %lld tokens", c->cfg_path, (long long)v,
                                     c->o->target, (long long)c->tgt_vocab);
    general_keys(c);
    shape_keys(c);
    int64_t block = 0, mask = 0;
    if (cfg_int(c, dkey(c, "block_size"), "dflash_config.block_size", 2, 4096, -1, &block) < 0) return -1;
    gguf_w_u32(c->w, "dflash.block_size", (uint32_t)block);
    if (draft_taps(c) < 0) return -1;
    gguf_w_bool(c->w, "dflash.attention.causal", cfg_true(pf_json_get(c->cfg, "is_causal")));
    if (draft_swa(c) < 0 || draft_scales(c) < 0) return -1;
    if (c->arch == ARCH_DFLASH2 && draft_v2_keys(c) < 0) return -1;
    gguf_w_copy_kv(c->w, c->target, tokenizer_key);
    if (cfg_int(c, dkey(c, "mask_token_id"), "dflash_config.mask_token_id", 0, c->tgt_vocab - 1, -1, &mask) < 0) return -1;
    gguf_w_u32(c->w, "tokenizer.ggml.mask_token_id", (uint32_t)mask);

    const int64_t fc[2] = {c->H, c->n_taps * c->tgt_embd}, vec[1] = {c->H};
    if (map(c, "fc.weight", "fc.weight", 2, fc) < 0 || map(c, "hidden_norm.weight", "enc.output_norm.weight", 1, vec) < 0 ||
        map(c, "norm.weight", "output_norm.weight", 1, vec) < 0)
        return -1;
    if (draft_io(c) < 0) return -1;
    if (c->arch == ARCH_DFLASH2) {
        const int64_t sh[2] = {c->sel_rank, c->H}, cb[2] = {c->tgt_vocab, c->sel_rank};
        if (map(c, "candidate_selector.hidden_projection.weight", "selector_hidden.weight", 2, sh) < 0 ||
            map(c, "candidate_selector.predecessor_codebook", "selector_predecessor.weight", 2, cb) < 0 ||
            map(c, "candidate_selector.successor_codebook", "selector_successor.weight", 2, cb) < 0)
            return -1;
    }
    return map_layers(c, "");
}

/* config.json's architectures[0]: which of the three kinds of checkpoint this is. */
static int read_arch(conv *c) {
    const pf_json *archs = pf_json_get(c->cfg, "architectures");
    const pf_json *a0 = archs && archs->type == PF_JSON_ARRAY && archs->u.arr.n ? &archs->u.arr.items[0] : NULL;
    if (pf_json_str_eq(a0, "Qwen3ForCausalLM")) c->arch = ARCH_QWEN3;
    else if (pf_json_str_eq(a0, "DFlashDraftModel")) c->arch = ARCH_DFLASH;
    else if (pf_json_str_eq(a0, "DFlash2DraftModel")) c->arch = ARCH_DFLASH2;
    else {
        bool s = a0 && a0->type == PF_JSON_STRING;
        return fail(c, "%s: architectures: %s%.60s%s is not supported (Qwen3ForCausalLM, DFlashDraftModel, DFlash2DraftModel)",
                    c->cfg_path, s ? "\"" : "", s ? a0->u.str.s : "missing", s ? "\"" : "");
    }
    const pf_json *dc = pf_json_get(c->cfg, "dflash_config");
    c->dcfg = dc && dc->type == PF_JSON_OBJECT ? dc : NULL;
    c->prefix = c->arch == ARCH_QWEN3 ? "qwen3" : "dflash";
    return 0;
}

/* config.json read, the checkpoint's tensors opened and the writer made: what both kinds convert from. */
static int open_checkpoint(conv *c, pf_json_doc **doc) {
    snprintf(c->cfg_path, sizeof c->cfg_path, "%s/config.json", c->dir);
    if (kept(c, pf_json_load(c->cfg_path, doc, c->err)) < 0) return -1;
    c->cfg = pf_json_root(*doc);
    if (c->cfg->type != PF_JSON_OBJECT) return fail(c, "%s: expected a JSON object", c->cfg_path);
    if (read_arch(c) < 0 || read_shape(c) < 0) return -1;
    if (kept(c, pf_st_open_dir(c->dir, &c->st, c->err)) < 0) return -1;
    c->used = calloc(pf_st_count(c->st) + 1, sizeof *c->used);
    c->w = gguf_writer_new();
    if (!c->used || !c->w) return fail_kind(c, PF_RC_OOM, "%s: out of memory", c->dir);
    return 0;
}

pf_rc pf_hf_convert(const char *hf_dir, const char *out, const pf_convert_opts *o, int *arch, char err[PF_ERR_LEN]) {
    conv c = {.dir = hf_dir, .err = err, .o = o};
    err[0] = 0;
    pf_json_doc *doc = NULL;
    if (!pf_type_info(o->type)) return pf_err_rc(err, PF_RC_ARG, "--type: unsupported output type %u", o->type);
    bool ok = open_checkpoint(&c, &doc) == 0 && (c.arch == ARCH_QWEN3 ? convert_target(&c) : convert_draft(&c)) == 0 &&
              check_unused(&c) == 0 && kept(&c, gguf_w_save(c.w, out, err)) == 0;
    if (ok && arch) *arch = c.arch;
    if (!ok && c.rc == PF_RC_OK) c.rc = PF_RC_INTERNAL; /* every failure above names its kind */
    gguf_writer_free(c.w);
    free(c.used);
    pf_st_close(c.st);
    gguf_close(c.target);
    pf_json_free(doc);
    return c.rc;
}
