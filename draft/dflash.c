/* DFlash / DFlash2 block draft (dflash.md §1-2): loading a dflash GGUF against its target, the
 * context injection (fc -> per-layer K/V cache) and the one-pass block forward with the target's
 * head, the DFlash2 sublayer conv and the candidate-selector walk.
 *
 * Arithmetic rules, as in engine/forward.c: every matrix product goes through pf_matmul (split by
 * output rows), attention through pf_attention (per row and head), so no result depends on the
 * thread count, and a context row's K/V do not depend on how the rows were split over calls. */
#include "draft/dflash.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model.h"
#include "engine/tokenizer.h"
#include "engine/weights.h"
#include "formats/quant.h"

#define CHUNK_ROWS 32 /* context rows per internal pass of append_context */

typedef struct {
    pf_weight attn_q, attn_k, attn_v, attn_o, ffn_gate, ffn_up, ffn_down;
    const float *attn_norm, *ffn_norm, *q_norm, *k_norm;
    /* DFlash2: base [2 sides][K taps][H], proj [2*K*G, H] (dyn viewed as [side][tap][group]) */
    const float *attn_conv_base, *ffn_conv_base;
    pf_weight attn_conv_proj, ffn_conv_proj;
    int64_t window; /* 0 = full attention */
} dflash_layer;

/* A draft head over part of the vocabulary: the target's output rows of ids (ascending, so ties
 * resolve as in the full head), packed like the target's own matrices; n = 0: none. */
typedef struct {
    pf_weight w;
    int32_t *ids;
    int n;
    uint8_t *rows;
    void *packed;
    size_t map;
} head_subset;

struct pf_dflash {
    gguf_file *file;
    int own_file;
    const pf_model *target;
    pf_hparams hp; /* n_vocab is the target's */
    int version, block_size;
    int *taps, n_taps;
    int32_t mask;
    bool causal;
    pf_weight fc;
    const float *enc_norm, *output_norm;
    dflash_layer *layers;
    /* DFlash2 */
    int conv_k, conv_group, conv_groups;
    int sel_rank, sel_top_k;
    /* draft-head vocabulary (optional): token ids by decreasing training frequency and how many
     * of the most frequent the draft's head scores by default (dflash.head_tokens, .head_vocab) */
    int32_t *head_rank;
    int n_head_rank, head_default;
    head_subset def_head; /* the default head vocabulary's rows, built once at load, shared by states */
    /* a draft's own head (output.weight, llama.cpp's reduced draft vocabulary with d2t = the target id
     * of each row, or the whole vocabulary without it) replaces the target's; n = 0: none */
    head_subset base_head;
    pf_weight own_embd; /* token_embd.weight of the draft's own, data NULL: the target's */
    float logit_scale, softcap, embd_scale; /* dflash.logit_scale, .final_logit_softcapping, .embedding_scale */
    pf_weight sel_hidden, sel_pred, sel_succ;
    float *store; /* vectors converted to f32 when stored otherwise */
    void *packed_store; /* packed copies of the matrices (pf_weights_pack), or NULL */
    size_t packed_map_len;
    size_t act_max; /* widest prepared activation row of any matrix the draft multiplies */
};

static void head_subset_free(head_subset *h) {
    free(h->ids);
    free(h->rows);
    pf_weights_free(h->packed, h->map);
    memset(h, 0, sizeof *h);
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* A head of n rows: row i is row src_rows[i] of `out` (NULL: row i) and scores token ids[i]. */
static int head_rows_build(head_subset *h, const pf_weight *out, const int32_t *src_rows, const int32_t *ids, int n,
                           char err[PF_ERR_LEN]) {
    memset(h, 0, sizeof *h);
    h->ids = malloc((size_t)n * sizeof *h->ids);
    h->rows = malloc((size_t)n * out->row_bytes);
    if (!h->ids || !h->rows) {
        head_subset_free(h);
        snprintf(err, PF_ERR_LEN, "out of memory for a draft head of %d tokens", n);
        return -1;
    }
    memcpy(h->ids, ids, (size_t)n * sizeof *h->ids);
    for (int i = 0; i < n; i++)
        memcpy(h->rows + (size_t)i * out->row_bytes,
               (const uint8_t *)out->data + (size_t)(src_rows ? src_rows[i] : i) * out->row_bytes, out->row_bytes);
    h->w = (pf_weight){h->rows, out->type, n, out->cols, out->row_bytes, NULL};
    pf_weight *w = &h->w;
    bool rel = false;
    if (pf_weights_pack(&w, &rel, 1, &h->packed, &h->map, err) < 0) {
        head_subset_free(h);
        return -1;
    }
    h->n = n;
    return 0;
}

/* The head over d's n most frequent tokens (1 <= n <= n_head_rank), ids ascending so that ties
 * resolve as in the full head. */
static int head_subset_build(head_subset *h, const pf_dflash *d, int n, char err[PF_ERR_LEN]) {
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) {
        snprintf(err, PF_ERR_LEN, "out of memory for a draft head of %d tokens", n);
        return -1;
    }
    memcpy(ids, d->head_rank, (size_t)n * sizeof *ids);
    qsort(ids, (size_t)n, sizeof *ids, cmp_i32);
    int rc = head_rows_build(h, &d->target->output, ids, ids, n, err);
    free(ids);
    return rc;
}

/* ---------------------------------------------------------------- loading */

/* A matrix whose rows are looked up one at a time (selector predecessor/successor). */
static int bind_table(const gguf_file *f, const char *name, int64_t rows, int64_t cols, pf_weight *w, char *err) {
    const gguf_tensor *t = pf_find_tensor(f, name, err);
    if (!t) return -1;
    if (t->n_dims != 2 || t->ne[0] != cols || t->ne[1] != rows) {
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s' has shape [%lld, %lld], expected [%lld, %lld]", f->path, name,
                 (long long)t->ne[0], (long long)t->ne[1], (long long)cols, (long long)rows);
        return -1;
    }
    if (!pf_type_info(t->type) || !pf_row_bytes(t->type, cols)) {
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s': type %u with rows of %lld is not supported", f->path, name,
                 t->type, (long long)cols);
        return -1;
    }
    w->data = t->data;
    w->type = t->type;
    w->rows = rows;
    w->cols = cols;
    w->row_bytes = pf_row_bytes(t->type, cols);
    return 0;
}

static int read_hparams(pf_dflash *d, const gguf_file *f, char *err) {
    const pf_hparams *th = &d->target->hp;
    pf_hparams *hp = &d->hp;
    if (pf_check_architecture(f, "dflash", "is not a draft", err) < 0) return -1;
    hp->rope_theta = th->rope_theta;
    hp->rms_eps = th->rms_eps;
    if (pf_read_shape(f, "dflash", hp, err) < 0) return -1;
    uint32_t block = 0;
    if (pf_get_u32(f, "dflash.block_size", &block, 1, err) < 0) return -1;
    hp->n_vocab = th->n_vocab;
    hp->n_ctx_train = th->n_ctx_train;
    d->block_size = (int)block;
    if (hp->n_layer < 1 || hp->n_layer > 256 || hp->n_embd < 1 || hp->n_ff < 1 || hp->n_ff > 1 << 20 ||
        hp->n_head < 1 || hp->n_head > 1024 || hp->n_head_kv < 1 || hp->n_head % hp->n_head_kv ||
        hp->head_dim < 2 || hp->head_dim % 2 || hp->head_dim > 1024 || !(hp->rope_theta > 0) || !(hp->rms_eps > 0)) {
        snprintf(err, PF_ERR_LEN,
                 "%s: hyper-parameters out of range (layers %d, hidden %d, ffn %d, heads %d/%d, head_dim %d)", f->path,
                 hp->n_layer, hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv, hp->head_dim);
        return -1;
    }
    if (hp->n_embd != th->n_embd) {
        snprintf(err, PF_ERR_LEN,
                 "%s: dflash.embedding_length: %d differs from the target's hidden size %d (the draft uses the "
                 "target's embedding and output head)", f->path, hp->n_embd, th->n_embd);
        return -1;
    }
    if (d->block_size < 2 || d->block_size > 4096) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.block_size: %d is outside 2..4096", f->path, d->block_size);
        return -1;
    }
    return 0;
}

/* dflash.target_layers holds tapped layer + 1 (hidden_states index: 0 = embeddings). */
static int read_taps(pf_dflash *d, const gguf_file *f, char *err) {
    const char *key = "dflash.target_layers";
    const gguf_kv *kv = gguf_get_arr(f, key, GGUF_I32);
    if (!kv) {
        snprintf(err, PF_ERR_LEN, "%s: %s: %s", f->path, key,
                 gguf_find(f, key) ? "is not an integer array" : "missing");
        return -1;
    }
    int tl = d->target->hp.n_layer;
    if (kv->v.arr.n < 1 || kv->v.arr.n > 256) {
        snprintf(err, PF_ERR_LEN, "%s: %s: %llu entries (expected 1..256)", f->path, key,
                 (unsigned long long)kv->v.arr.n);
        return -1;
    }
    d->n_taps = (int)kv->v.arr.n;
    d->taps = malloc((size_t)d->n_taps * sizeof *d->taps);
    if (!d->taps) {
        snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
        return -1;
    }
    for (int i = 0; i < d->n_taps; i++) {
        int64_t v = gguf_arr_int(kv, (uint64_t)i);
        if (v < 1 || v > tl) {
            snprintf(err, PF_ERR_LEN,
                     "%s: %s[%d]: %lld is outside 1..%d (layer index + 1 within the target's %d layers)", f->path,
                     key, i, (long long)v, tl, tl);
            return -1;
        }
        d->taps[i] = (int)(v - 1);
    }
    return 0;
}

/* Per-layer sliding window: dflash.attention.sliding_window, applied to the layers that
 * dflash.attention.sliding_window_pattern marks (array: nonzero = sliding; integer n: layer l slides
 * iff n == 0 or l % n < n - 1, as llama.cpp reads it); every layer when there is no pattern. */
static int read_attention(pf_dflash *d, const gguf_file *f, char *err) {
    d->causal = false;
    const char *ck = "dflash.attention.causal";
    bool b;
    int r = gguf_get_bool(f, ck, &b);
    if (r == 0) {
        d->causal = b;
    } else if (r == -2) {
        int64_t iv;
        if (gguf_get_i64(f, ck, &iv) != 0) {
            snprintf(err, PF_ERR_LEN, "%s: %s: expected a bool", f->path, ck);
            return -1;
        }
        d->causal = iv != 0;
    }
    uint32_t window = 0;
    if (pf_get_u32(f, "dflash.attention.sliding_window", &window, 0, err) < 0) return -1;
    const char *pk = "dflash.attention.sliding_window_pattern";
    const gguf_kv *pat = gguf_find(f, pk);
    int n = d->hp.n_layer;
    for (int l = 0; l < n; l++) d->layers[l].window = window;
    if (!window || !pat) return 0;
    if (pat->type == GGUF_ARR) {
        const gguf_kv *a = gguf_get_arr(f, pk, GGUF_I32);
        if (!a) a = gguf_get_arr(f, pk, GGUF_BOOL);
        if (!a || a->v.arr.n != (uint64_t)n) {
            snprintf(err, PF_ERR_LEN, "%s: %s: expected %d bool/integer entries (one per layer)", f->path, pk, n);
            return -1;
        }
        for (int l = 0; l < n; l++) d->layers[l].window = gguf_arr_int(a, (uint64_t)l) ? window : 0;
        return 0;
    }
    int64_t np;
    if (gguf_get_i64(f, pk, &np) != 0 || np < 0) {
        snprintf(err, PF_ERR_LEN, "%s: %s: expected a per-layer array or a non-negative integer", f->path, pk);
        return -1;
    }
    for (int l = 0; l < n; l++) d->layers[l].window = (np == 0 || l % np < np - 1) ? window : 0;
    return 0;
}

static int read_mask(pf_dflash *d, const gguf_file *f, char *err) {
    const char *key = "tokenizer.ggml.mask_token_id";
    uint32_t m;
    int r = gguf_get_u32(f, key, &m);
    if (r == -2) {
        snprintf(err, PF_ERR_LEN, "%s: %s: has the wrong type or an out-of-range value", f->path, key);
        return -1;
    }
    if (r == -1) {
        int32_t tm = d->target->tok ? pf_tokenizer_mask(d->target->tok) : -1;
        if (tm < 0) {
            snprintf(err, PF_ERR_LEN, "%s: %s: missing (and the target has none)", f->path, key);
            return -1;
        }
        m = (uint32_t)tm;
    }
    if (m >= (uint32_t)d->hp.n_vocab) {
        snprintf(err, PF_ERR_LEN, "%s: %s: %u is outside the target's vocabulary (%d)", f->path, key, m,
                 d->hp.n_vocab);
        return -1;
    }
    d->mask = (int32_t)m;
    /* a draft made for another target usually carries a different vocabulary */
    const gguf_kv *toks = gguf_find(f, "tokenizer.ggml.tokens");
    if (toks && toks->type == GGUF_ARR && d->target->tok &&
        toks->v.arr.n != (uint64_t)pf_tokenizer_n_vocab(d->target->tok)) {
        snprintf(err, PF_ERR_LEN, "%s: tokenizer.ggml.tokens: %llu tokens but the target's tokenizer has %d",
                 f->path, (unsigned long long)toks->v.arr.n, pf_tokenizer_n_vocab(d->target->tok));
        return -1;
    }
    return 0;
}

/* DFlash2 metadata and selector; the per-layer conv tensors are bound with the layers. */
static int read_v2_globals(pf_dflash *d, const gguf_file *f, char *err) {
    uint32_t k = 2, g = 16, rank = 0, topk = 16;
    if (pf_get_u32(f, "dflash.conv_kernel_size", &k, 0, err) < 0 || pf_get_u32(f, "dflash.conv_group_size", &g, 0, err) < 0 ||
        pf_get_u32(f, "dflash.selector_rank", &rank, 0, err) < 0 || pf_get_u32(f, "dflash.selector_top_k", &topk, 0, err) < 0)
        return -1;
    int H = d->hp.n_embd;
    if (k < 1 || k > 64) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.conv_kernel_size: %u is outside 1..64", f->path, k);
        return -1;
    }
    if (g < 1 || H % (int)g) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.conv_group_size: %u does not divide the hidden size %d", f->path, g, H);
        return -1;
    }
    if (topk < 1 || topk > 1024 || (int)topk > d->hp.n_vocab) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.selector_top_k: %u is outside 1..min(1024, vocabulary)", f->path, topk);
        return -1;
    }
    const gguf_tensor *sh = pf_find_tensor(f, "selector_hidden.weight", err);
    if (!sh) return -1;
    if (!rank) rank = (uint32_t)sh->ne[1]; /* absent key: the tensor says */
    if (rank < 1 || rank > 65536) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.selector_rank: %u is outside 1..65536", f->path, rank);
        return -1;
    }
    d->conv_k = (int)k;
    d->conv_group = (int)g;
    d->conv_groups = H / (int)g;
    d->sel_rank = (int)rank;
    d->sel_top_k = (int)topk;
    if (pf_bind_matrix(f, "selector_hidden.weight", rank, H, &d->sel_hidden, err) < 0) return -1;
    if (bind_table(f, "selector_predecessor.weight", d->hp.n_vocab, rank, &d->sel_pred, err) < 0) return -1;
    if (bind_table(f, "selector_successor.weight", d->hp.n_vocab, rank, &d->sel_succ, err) < 0) return -1;
    return 0;
}

/* dflash.head_tokens (integer array: distinct token ids, most frequent first) and
 * dflash.head_vocab (how many of them the head scores by default; all when absent). */
static int read_head_tokens(pf_dflash *d, const gguf_file *f, char *err) {
    const gguf_kv *kv = gguf_find(f, "dflash.head_tokens");
    uint32_t nv = 0;
    if (pf_get_u32(f, "dflash.head_vocab", &nv, 0, err) < 0) return -1;
    if (!kv) {
        if (gguf_find(f, "dflash.head_vocab")) {
            snprintf(err, PF_ERR_LEN, "%s: dflash.head_vocab is set but dflash.head_tokens is missing", f->path);
            return -1;
        }
        return 0;
    }
    const int V = d->hp.n_vocab;
    kv = gguf_get_arr(f, "dflash.head_tokens", GGUF_I32); /* any integer element type */
    if (!kv || kv->v.arr.n < 1 || kv->v.arr.n > (uint64_t)V) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.head_tokens: expected an array of 1..%d token ids", f->path, V);
        return -1;
    }
    int n = (int)kv->v.arr.n;
    uint8_t *seen = calloc((size_t)V, 1);
    d->head_rank = malloc((size_t)n * sizeof *d->head_rank);
    if (!seen || !d->head_rank) {
        free(seen);
        snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int64_t id = gguf_arr_int(kv, (uint64_t)i);
        if (id < 0 || id >= V || seen[id]) {
            snprintf(err, PF_ERR_LEN, "%s: dflash.head_tokens[%d] = %lld is %s", f->path, i, (long long)id,
                     id < 0 || id >= V ? "outside the vocabulary" : "listed twice");
            free(seen);
            return -1;
        }
        seen[id] = 1;
        d->head_rank[i] = (int32_t)id;
    }
    free(seen);
    if (!gguf_find(f, "dflash.head_vocab")) nv = (uint32_t)n;
    if (nv < 1 || nv > (uint32_t)n) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.head_vocab: %u is outside 1..%d (the ranked tokens)", f->path, nv, n);
        return -1;
    }
    d->n_head_rank = n;
    d->head_default = (int)nv;
    return 0;
}

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

/* What else the dflash format can say (llama.cpp's loader, src/models/dflash.cpp): the draft's own
 * token_embd.weight; its own head output.weight {n_embd, n_vocab_draft} with d2t (I64, the target id
 * of every draft row; needed when n_vocab_draft < n_vocab); dflash.logit_scale,
 * .final_logit_softcapping and .embedding_scale. Parts of that format this runtime does not
 * implement (DSpark's Markov / confidence heads, the DeepSeek-V4 backbone, per-head attention sinks,
 * a scaled fc) are refused by name. */
static int read_io(pf_dflash *d, const gguf_file *f, char *err) {
    static const char *refused[] = {"markov_w1.weight", "conf_proj.weight", "fc.scale", "hc_head_fn.weight"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (gguf_find_tensor(f, refused[i])) {
            snprintf(err, PF_ERR_LEN, "%s: tensor '%s': not supported by this runtime (DSpark / DeepSeek-V4 drafts, scaled fc)",
                     f->path, refused[i]);
            return -1;
        }
    static const char sinks[] = ".attn_sinks.weight";
    const size_t ns = sizeof sinks - 1;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_str n = f->tensors[i].name;
        if (n.len > ns && memcmp(n.ptr + n.len - ns, sinks, ns) == 0) {
            snprintf(err, PF_ERR_LEN, "%s: tensor '%.*s': attention sinks are not supported by this runtime", f->path,
                     (int)n.len, n.ptr);
            return -1;
        }
    }
    if (gguf_find(f, "dflash.hyper_connection_count")) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.hyper_connection_count: DeepSeek-V4 DSpark drafts are not supported", f->path);
        return -1;
    }
    uint32_t th = 0;
    int r_th = gguf_get_u32(f, "dflash.target_hidden_size", &th);
    if (r_th == -2 || (r_th == 0 && (int)th != d->target->hp.n_embd)) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.target_hidden_size: %s the target's hidden size %d", f->path,
                 r_th == -2 ? "not an integer, expected" : "differs from", d->target->hp.n_embd);
        return -1;
    }
    struct { const char *key; float *out, def; } sc[] = {
        {"dflash.logit_scale", &d->logit_scale, 1.0f},
        {"dflash.final_logit_softcapping", &d->softcap, 0.0f},
        {"dflash.embedding_scale", &d->embd_scale, 1.0f},
    };
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
        float v = sc[i].def;
        int r = gguf_get_f32(f, sc[i].key, &v);
        if (r == -2 || (r == 0 && (!isfinite(v) || (v == 0 && sc[i].def != 0) || v < 0))) {
            snprintf(err, PF_ERR_LEN, "%s: %s: expected a positive f32", f->path, sc[i].key);
            return -1;
        }
        *sc[i].out = v;
    }
    const int H = d->hp.n_embd, V = d->hp.n_vocab;
    if (gguf_find_tensor(f, "token_embd.weight") && pf_bind_matrix(f, "token_embd.weight", V, H, &d->own_embd, err) < 0)
        return -1;
    const gguf_tensor *out = gguf_find_tensor(f, "output.weight"), *d2t = gguf_find_tensor(f, "d2t");
    if (!out) {
        if (d2t) {
            snprintf(err, PF_ERR_LEN, "%s: tensor 'd2t': present without output.weight (the draft's reduced head)", f->path);
            return -1;
        }
        return 0;
    }
    if (d->head_rank) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.head_tokens: cannot be combined with the draft's own output.weight", f->path);
        return -1;
    }
    int64_t Vd = out->n_dims == 2 ? out->ne[1] : -1;
    if (Vd < 1 || Vd > V || (Vd < V && !d2t)) {
        snprintf(err, PF_ERR_LEN, "%s: tensor 'output.weight': %lld rows %s", f->path, (long long)Vd,
                 Vd < V && Vd >= 1 ? "need d2t (a reduced draft vocabulary maps its rows to target ids)"
                                   : "(expected 1..the target's vocabulary)");
        return -1;
    }
    pf_weight w;
    if (pf_bind_matrix(f, "output.weight", Vd, H, &w, err) < 0) return -1;
    int32_t *ids = malloc((size_t)Vd * sizeof *ids);
    uint8_t *seen = calloc((size_t)V, 1);
    int rc = -1;
    if (!ids || !seen) {
        snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
        goto done;
    }
    if (d2t && (d2t->type != PF_TYPE_I64 || d2t->n_dims != 1 || d2t->ne[0] != Vd)) {
        snprintf(err, PF_ERR_LEN, "%s: tensor 'd2t': expected I64 of %lld entries (one per row of output.weight)", f->path,
                 (long long)Vd);
        goto done;
    }
    for (int64_t i = 0; i < Vd; i++) {
        int64_t id = i;
        if (d2t) memcpy(&id, (const uint8_t *)d2t->data + 8 * i, 8);
        if (id < 0 || id >= V || seen[id]) {
            snprintf(err, PF_ERR_LEN, "%s: tensor 'd2t': entry %lld = %lld is %s", f->path, (long long)i, (long long)id,
                     id < 0 || id >= V ? "outside the target's vocabulary" : "listed twice");
            goto done;
        }
        seen[id] = 1;
        ids[i] = (int32_t)id;
    }
    rc = head_rows_build(&d->base_head, &w, NULL, ids, (int)Vd, err);
done:
    free(ids);
    free(seen);
    return rc;
}

pf_dflash *pf_dflash_from_gguf(gguf_file *f, int own_file, const pf_model *target, char err[PF_ERR_LEN]) {
    pf_dflash *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
        if (own_file) gguf_close(f);
        return NULL;
    }
    d->file = f;
    d->own_file = own_file;
    d->target = target;
    pf_hparams *hp = &d->hp;
    if (read_hparams(d, f, err) < 0 || read_taps(d, f, err) < 0 || read_mask(d, f, err) < 0 ||
        read_head_tokens(d, f, err) < 0 || read_io(d, f, err) < 0)
        goto fail;
    const int H = hp->n_embd, hd = hp->head_dim;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_head_kv * hd;
    d->version = gguf_find_tensor(f, "selector_hidden.weight") || gguf_find_tensor(f, "blk.0.attn_conv_base") ? 2 : 1;
    if (d->version == 2 && read_v2_globals(d, f, err) < 0) goto fail;
    if (d->version == 2 && d->base_head.n && d->base_head.n < d->sel_top_k) {
        snprintf(err, PF_ERR_LEN, "%s: tensor 'output.weight': %d rows, fewer than dflash.selector_top_k %d", f->path,
                 d->base_head.n, d->sel_top_k);
        goto fail;
    }
    const int K = d->conv_k, G = d->conv_groups;
    d->layers = calloc((size_t)hp->n_layer, sizeof *d->layers);
    size_t per_layer = 2 * (size_t)H + 2 * (size_t)hd + (d->version == 2 ? 4 * (size_t)K * H : 0);
    d->store = malloc(((size_t)hp->n_layer * per_layer + 2 * (size_t)H) * sizeof(float));
    if (!d->layers || !d->store) {
        snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
        goto fail;
    }
    if (read_attention(d, f, err) < 0) goto fail;
    float *store = d->store;
    int64_t fc_in = (int64_t)d->n_taps * target->hp.n_embd;
    const gguf_tensor *fct = gguf_find_tensor(f, "fc.weight");
    if (fct && fct->n_dims == 2 && fct->ne[1] == H && fct->ne[0] != fc_in) {
        snprintf(err, PF_ERR_LEN,
                 "%s: tensor 'fc.weight' takes %lld inputs, expected %d taps x target hidden %d = %lld", f->path,
                 (long long)fct->ne[0], d->n_taps, target->hp.n_embd, (long long)fc_in);
        goto fail;
    }
    if (pf_bind_matrix(f, "fc.weight", H, fc_in, &d->fc, err) < 0) goto fail;
    if (pf_bind_vector(f, "enc.output_norm.weight", H, &d->enc_norm, store, err) < 0) goto fail;
    store += H;
    if (pf_bind_vector(f, "output_norm.weight", H, &d->output_norm, store, err) < 0) goto fail;
    store += H;
    char name[96];
    for (int l = 0; l < hp->n_layer; l++) {
        dflash_layer *L = &d->layers[l];
        struct { const char *name; int64_t rows, cols; pf_weight *w; } mats[] = {
            {"attn_q", qd, H, &L->attn_q},          {"attn_k", kvd, H, &L->attn_k},
            {"attn_v", kvd, H, &L->attn_v},         {"attn_output", H, qd, &L->attn_o},
            {"ffn_gate", hp->n_ff, H, &L->ffn_gate}, {"ffn_up", hp->n_ff, H, &L->ffn_up},
            {"ffn_down", H, hp->n_ff, &L->ffn_down},
        };
        for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, mats[i].name);
            if (pf_bind_matrix(f, name, mats[i].rows, mats[i].cols, mats[i].w, err) < 0) goto fail;
        }
        struct { const char *name; int64_t n; const float **out; } vecs[] = {
            {"attn_norm", H, &L->attn_norm}, {"ffn_norm", H, &L->ffn_norm},
            {"attn_q_norm", hd, &L->q_norm}, {"attn_k_norm", hd, &L->k_norm},
        };
        for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, vecs[i].name);
            if (pf_bind_vector(f, name, vecs[i].n, vecs[i].out, store, err) < 0) goto fail;
            store += vecs[i].n;
        }
        if (d->version == 2) {
            const int64_t ne[4] = {H, K, 2, 1};
            snprintf(name, sizeof name, "blk.%d.attn_conv_base", l);
            if (pf_bind_floats(f, name, ne, &L->attn_conv_base, store, err) < 0) goto fail;
            store += 2 * (size_t)K * H;
            snprintf(name, sizeof name, "blk.%d.ffn_conv_base", l);
            if (pf_bind_floats(f, name, ne, &L->ffn_conv_base, store, err) < 0) goto fail;
            store += 2 * (size_t)K * H;
            snprintf(name, sizeof name, "blk.%d.attn_conv_proj.weight", l);
            if (pf_bind_matrix(f, name, 2 * (int64_t)K * G, H, &L->attn_conv_proj, err) < 0) goto fail;
            snprintf(name, sizeof name, "blk.%d.ffn_conv_proj.weight", l);
            if (pf_bind_matrix(f, name, 2 * (int64_t)K * G, H, &L->ffn_conv_proj, err) < 0) goto fail;
        }
    }
    /* the widest prepared activation row of anything multiplied, incl. the target's head */
    size_t act = max_sz(pf_act_row_bytes(d->fc.type, d->fc.cols), pf_act_row_bytes(target->output.type, H));
    if (d->base_head.n) act = max_sz(act, pf_act_row_bytes(d->base_head.w.type, H));
    for (int l = 0; l < hp->n_layer; l++) {
        const dflash_layer *L = &d->layers[l];
        const pf_weight *ws[] = {&L->attn_q, &L->attn_k, &L->attn_v, &L->attn_o, &L->ffn_gate, &L->ffn_up,
                                 &L->ffn_down, &L->attn_conv_proj, &L->ffn_conv_proj};
        for (int i = 0; i < (d->version == 2 ? 9 : 7); i++) act = max_sz(act, pf_act_row_bytes(ws[i]->type, ws[i]->cols));
    }
    if (d->version == 2) act = max_sz(act, pf_act_row_bytes(d->sel_hidden.type, H));
    d->act_max = act;
    {
        /* packed copies for the fast gemm, as the target's (pf_model_pack_weights) */
        pf_weight **ws = malloc((1 + 9 * (size_t)hp->n_layer) * sizeof *ws);
        bool *rel = malloc((1 + 9 * (size_t)hp->n_layer) * sizeof *rel);
        if (!ws || !rel) {
            free(ws), free(rel);
            snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
            goto fail;
        }
        int n = 0;
        ws[n++] = &d->fc;
        for (int l = 0; l < hp->n_layer; l++) {
            dflash_layer *L = &d->layers[l];
            pf_weight *lw[] = {&L->attn_q, &L->attn_k, &L->attn_v, &L->attn_o, &L->ffn_gate, &L->ffn_up,
                               &L->ffn_down, &L->attn_conv_proj, &L->ffn_conv_proj};
            for (int i = 0; i < (d->version == 2 ? 9 : 7); i++) ws[n++] = lw[i];
        }
        for (int i = 0; i < n; i++) rel[i] = f->mapped;
        int rc = pf_weights_pack(ws, rel, n, &d->packed_store, &d->packed_map_len, err);
        free(ws), free(rel);
        if (rc < 0) goto fail;
    }
    /* the default head vocabulary, gathered once for every state that keeps it (where the
     * selector can take it; pf_dflash_set_head reports it otherwise) */
    if (d->head_rank && !(d->version == 2 && d->head_default < d->sel_top_k) &&
        head_subset_build(&d->def_head, d, d->head_default, err) < 0)
        goto fail;
    return d;
fail:
    pf_err_one_line(err);
    pf_dflash_free(d);
    return NULL;
}

pf_dflash *pf_dflash_load(const char *path, const pf_model *target, char err[PF_ERR_LEN]) {
    gguf_file *f = gguf_open(path, err);
    if (!f) return NULL;
    return pf_dflash_from_gguf(f, 1, target, err);
}

void pf_dflash_free(pf_dflash *d) {
    if (!d) return;
    if (d->own_file) gguf_close(d->file);
    free(d->taps);
    free(d->layers);
    free(d->store);
    free(d->head_rank);
    head_subset_free(&d->def_head);
    head_subset_free(&d->base_head);
    pf_weights_free(d->packed_store, d->packed_map_len);
    free(d);
}

int pf_dflash_block_size(const pf_dflash *d) { return d->block_size; }
int pf_dflash_version(const pf_dflash *d) { return d->version; }
const int *pf_dflash_tap_layers(const pf_dflash *d, int *n_taps) {
    if (n_taps) *n_taps = d->n_taps;
    return d->taps;
}
int32_t pf_dflash_mask_token(const pf_dflash *d) { return d->mask; }
int pf_dflash_n_layer(const pf_dflash *d) { return d->hp.n_layer; }
int pf_dflash_n_embd(const pf_dflash *d) { return d->hp.n_embd; }
int pf_dflash_kv_dim(const pf_dflash *d) { return d->hp.n_head_kv * d->hp.head_dim; }
int pf_dflash_selector_top_k(const pf_dflash *d) { return d->version == 2 ? d->sel_top_k : 0; }
bool pf_dflash_causal(const pf_dflash *d) { return d->causal; }
int64_t pf_dflash_layer_window(const pf_dflash *d, int l) {
    return l >= 0 && l < d->hp.n_layer ? d->layers[l].window : 0;
}

/* ---------------------------------------------------------------- state */

struct pf_dflash_state {
    const pf_dflash *d;
    const pf_kernels *k;
    pf_pool *pool;
    int64_t n_ctx, len;
    pf_half *kc, *vc; /* layer l at + l*layer_stride, in pf_attention's layout (kernels.h) */
    int64_t head_stride, layer_stride;
    int rows;         /* scratch capacity in rows */
    float *x, *xn, *cu, *tmp, *q, *att, *kbuf, *vbuf, *gate, *up, *dyn, *hn, *logits;
    void *act;
    /* selector scratch (v2) */
    float *g, *unary, *score, *succ, *ag, *pred_row;
    int32_t *cand;
    int last_B;
    pf_dist dist; /* v1 proposals when the caller keeps no q */
    /* head vocabulary (pf_dflash_set_head): the draft scores sub->n tokens instead of the whole
     * vocabulary; sub is the draft's shared default or own_head, NULL: the whole head */
    const head_subset *sub;
    head_subset own_head;
};

static void free_head(pf_dflash_state *s) {
    head_subset_free(&s->own_head);
    s->sub = s->d->base_head.n ? &s->d->base_head : NULL; /* "the whole vocabulary" is the draft's own head */
}

int pf_dflash_head_default(const pf_dflash *d) { return d->head_rank ? d->head_default : 0; }
int pf_dflash_head_ranked(const pf_dflash *d) { return d->n_head_rank; }

int pf_dflash_set_head(pf_dflash_state *s, int n, char err[PF_ERR_LEN]) {
    const pf_dflash *d = s->d;
    if (n < 0) n = pf_dflash_head_default(d);
    free_head(s);
    if (n == 0) return 0;
    if (n > d->n_head_rank) {
        snprintf(err, PF_ERR_LEN, "draft head of %d tokens: the draft ranks %d (dflash.head_tokens)", n, d->n_head_rank);
        return -1;
    }
    if (d->version == 2 && n < d->sel_top_k) {
        snprintf(err, PF_ERR_LEN, "draft head of %d tokens: the DFlash2 selector takes the top %d", n, d->sel_top_k);
        return -1;
    }
    if (n == d->def_head.n) { /* the default: built once with the draft */
        s->sub = &d->def_head;
        return 0;
    }
    if (head_subset_build(&s->own_head, d, n, err) < 0) return -1;
    s->sub = &s->own_head;
    return 0;
}

int pf_dflash_head(const pf_dflash_state *s, const int32_t **ids) {
    if (ids) *ids = s->sub ? s->sub->ids : NULL;
    return s->sub ? s->sub->n : 0;
}

static void free_scratch(pf_dflash_state *s) {
    free(s->x); free(s->xn); free(s->cu); free(s->tmp); free(s->q); free(s->att); free(s->kbuf); free(s->vbuf);
    free(s->gate); free(s->up); free(s->dyn); free(s->hn); free(s->logits); free(s->act);
    free(s->g); free(s->unary); free(s->score); free(s->succ); free(s->ag); free(s->pred_row); free(s->cand);
    s->x = s->xn = s->cu = s->tmp = s->q = s->att = s->kbuf = s->vbuf = s->gate = s->up = s->dyn = s->hn = NULL;
    s->logits = s->g = s->unary = s->score = s->succ = s->ag = s->pred_row = NULL;
    s->act = NULL;
    s->cand = NULL;
    s->rows = 0;
}

/* Scratch for R rows (R >= the internal chunk; grows for larger blocks). */
static int ensure_rows(pf_dflash_state *s, int R, char *err) {
    if (R <= s->rows) return 0;
    const pf_dflash *d = s->d;
    const pf_hparams *hp = &d->hp;
    free_scratch(s);
    size_t r = (size_t)R, H = (size_t)hp->n_embd;
    size_t qd = (size_t)hp->n_head * hp->head_dim, kvd = (size_t)hp->n_head_kv * hp->head_dim;
    size_t V = (size_t)hp->n_vocab, kk = (size_t)d->sel_top_k, rank = (size_t)d->sel_rank;
    s->x = malloc(r * H * sizeof(float));
    s->xn = malloc(r * H * sizeof(float));
    s->cu = malloc(r * H * sizeof(float));
    s->tmp = malloc(r * H * sizeof(float));
    s->hn = malloc(r * H * sizeof(float));
    s->q = malloc(r * qd * sizeof(float));
    s->att = malloc(r * qd * sizeof(float));
    s->kbuf = malloc(r * kvd * sizeof(float));
    s->vbuf = malloc(r * kvd * sizeof(float));
    s->gate = malloc(r * hp->n_ff * sizeof(float));
    s->up = malloc(r * hp->n_ff * sizeof(float));
    s->logits = malloc(r * V * sizeof(float));
    s->act = malloc(r * d->act_max);
    int ok = s->x && s->xn && s->cu && s->tmp && s->hn && s->q && s->att && s->kbuf && s->vbuf && s->gate && s->up &&
             s->logits && s->act;
    if (d->version == 2) {
        s->dyn = malloc(r * 2 * d->conv_k * d->conv_groups * sizeof(float));
        s->g = malloc(r * rank * sizeof(float));
        s->unary = malloc(r * kk * sizeof(float));
        s->score = malloc(r * kk * sizeof(float));
        s->cand = malloc(r * kk * sizeof(int32_t));
        s->succ = malloc(r * kk * rank * sizeof(float));
        s->ag = malloc(rank * sizeof(float));
        s->pred_row = malloc(rank * sizeof(float));
        ok = ok && s->dyn && s->g && s->unary && s->score && s->cand && s->succ && s->ag && s->pred_row;
    }
    if (!ok) {
        free_scratch(s);
        snprintf(err, PF_ERR_LEN, "dflash: out of memory for a block of %d rows", R);
        return -1;
    }
    s->rows = R;
    return 0;
}

pf_dflash_state *pf_dflash_state_new(const pf_dflash *d, int64_t n_ctx, pf_pool *pool, const pf_kernels *k,
                                     char err[PF_ERR_LEN]) {
    if (n_ctx < 2) {
        snprintf(err, PF_ERR_LEN, "dflash: context of %lld positions is too small", (long long)n_ctx);
        return NULL;
    }
    pf_dflash_state *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->d = d;
    s->sub = d->base_head.n ? &d->base_head : NULL;
    s->k = k ? k : pf_kernels_best();
    s->pool = pool;
    s->n_ctx = n_ctx;
    s->head_stride = pf_kv_head_stride(n_ctx, d->hp.head_dim);
    s->layer_stride = s->head_stride * d->hp.n_head_kv;
    size_t cells = (size_t)d->hp.n_layer * (size_t)s->layer_stride;
    /* zeroed: attention reads whole key tiles (kv_cache.c) */
    s->kc = calloc(cells, sizeof(pf_half));
    s->vc = calloc(cells, sizeof(pf_half));
    if (!s->kc || !s->vc || pf_dist_init(&s->dist, d->hp.n_vocab) < 0) goto oom;
    int R = d->block_size > CHUNK_ROWS ? d->block_size : CHUNK_ROWS;
    if (ensure_rows(s, R, err) < 0) goto fail;
    return s;
oom:
    snprintf(err, PF_ERR_LEN, "dflash: out of memory for a draft context of %lld positions", (long long)n_ctx);
fail:
    pf_dflash_state_free(s);
    return NULL;
}

void pf_dflash_state_free(pf_dflash_state *s) {
    if (!s) return;
    free_scratch(s);
    free_head(s);
    free(s->kc);
    free(s->vc);
    pf_dist_free(&s->dist);
    free(s);
}

void pf_dflash_reset(pf_dflash_state *s) { s->len = 0; }
int64_t pf_dflash_context_len(const pf_dflash_state *s) { return s->len; }
void pf_dflash_truncate(pf_dflash_state *s, int64_t len) {
    if (len >= 0 && len < s->len) s->len = len;
}

void pf_dflash_cache_row(const pf_dflash_state *s, int layer, int keys, int64_t pos, pf_half *row) {
    const pf_half *X = (keys ? s->kc : s->vc) + (size_t)layer * s->layer_stride;
    pf_kv_row_get(X, keys, s->head_stride, s->d->hp.n_head_kv, s->d->hp.head_dim, pos, row);
}

const float *pf_dflash_last_logits(const pf_dflash_state *s, int *n_rows) {
    if (n_rows) *n_rows = s->last_B > 0 ? s->last_B - 1 : 0;
    return s->last_B > 0 ? s->logits : NULL;
}

int pf_dflash_last_selector(const pf_dflash_state *s, const int32_t **cand, const float **score) {
    if (s->d->version != 2 || s->last_B <= 0) return 0;
    if (cand) *cand = s->cand;
    if (score) *score = s->score;
    return s->d->sel_top_k;
}

/* ---------------------------------------------------------------- forward pieces */

/* y rows (ldy) = W . x rows (ldx): activations prepared once, then one pooled matmul. */
static void linear(pf_dflash_state *s, const pf_weight *W, const float *x, int64_t ldx, int B, float *y, int64_t ldy) {
    pf_act_prepare(s->k, W->type, x, ldx, B, W->cols, s->act);
    pf_matmul(s->k, s->pool, W, s->act, B, y, ldy);
}

/* K/V rows of layer l from its input rows `in` (ctx rows for the context, block rows otherwise),
 * QK-normed, roped at pos0 + r and stored in f16 at cache position pos0 + r. */
static void store_kv(pf_dflash_state *s, int l, const float *in, int B, int64_t pos0) {
    const pf_dflash *d = s->d;
    const pf_hparams *hp = &d->hp;
    const dflash_layer *L = &d->layers[l];
    const int H = hp->n_embd, hd = hp->head_dim;
    const int64_t kvd = (int64_t)hp->n_head_kv * hd;
    linear(s, &L->attn_k, in, H, B, s->kbuf, kvd);
    linear(s, &L->attn_v, in, H, B, s->vbuf, kvd);
    pf_half *Kc = s->kc + (size_t)l * s->layer_stride, *Vc = s->vc + (size_t)l * s->layer_stride;
    for (int r = 0; r < B; r++) {
        float *kr = s->kbuf + (size_t)r * kvd, *vr = s->vbuf + (size_t)r * kvd;
        pf_rmsnorm_heads(s->k, kr, hp->n_head_kv, hd, L->k_norm, hp->rms_eps);
        pf_rope_neox(kr, hp->n_head_kv, hd, pos0 + r, hp->rope_theta);
        pf_kv_store(s->k, Kc, Vc, s->head_stride, hp->n_head_kv, hd, pos0 + r, kr, vr);
    }
}

int pf_dflash_append_context(pf_dflash_state *s, const float *taps, int n, char err[PF_ERR_LEN]) {
    const pf_dflash *d = s->d;
    const pf_hparams *hp = &d->hp;
    const int H = hp->n_embd;
    if (n < 0 || (n > 0 && !taps)) {
        snprintf(err, PF_ERR_LEN, "dflash: append_context: bad rows (%d)", n);
        return -1;
    }
    if (s->len + n > s->n_ctx) {
        snprintf(err, PF_ERR_LEN, "dflash: context full: %lld + %d rows exceed the draft context of %lld",
                 (long long)s->len, n, (long long)s->n_ctx);
        return -1;
    }
    if (ensure_rows(s, CHUNK_ROWS, err) < 0) return -1;
    const int64_t feat = d->fc.cols;
    for (int r0 = 0; r0 < n; r0 += CHUNK_ROWS) {
        int R = n - r0 < CHUNK_ROWS ? n - r0 : CHUNK_ROWS;
        linear(s, &d->fc, taps + (size_t)r0 * feat, feat, R, s->xn, H);
        for (int r = 0; r < R; r++) s->k->rmsnorm(s->xn + (size_t)r * H, d->enc_norm, H, hp->rms_eps, s->xn + (size_t)r * H);
        for (int l = 0; l < hp->n_layer; l++) store_kv(s, l, s->xn, R, s->len);
        s->len += R;
    }
    return 0;
}

/* DFlash2 conv over the B rows of the block (taps never reach before row 0):
 * out[t][c] = sum_tap (base[side][tap][c] + dyn[t][side][tap][c / group]) * z[t - tap][c]. */
static void conv_rows(const pf_dflash *d, const float *z, int B, const float *base, const float *dyn, int side,
                      float *out) {
    const int H = d->hp.n_embd, K = d->conv_k, G = d->conv_groups, gs = d->conv_group;
    for (int t = 0; t < B; t++) {
        const float *dy = dyn + ((size_t)t * 2 + side) * K * G;
        float *o = out + (size_t)t * H;
        for (int c = 0; c < H; c++) {
            float acc = (base[(size_t)side * K * H + c] + dy[c / gs]) * z[(size_t)t * H + c];
            for (int tap = 1; tap < K && tap <= t; tap++)
                acc += (base[((size_t)side * K + tap) * H + c] + dy[tap * G + c / gs]) * z[(size_t)(t - tap) * H + c];
            o[c] = acc;
        }
    }
}

static void add_rows(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

/* One draft layer over the B block rows at positions pos0.. (the context is already cached). */
static void block_layer(pf_dflash_state *s, int l, int B, int64_t pos0) {
    const pf_dflash *d = s->d;
    const pf_hparams *hp = &d->hp;
    const dflash_layer *L = &d->layers[l];
    const pf_kernels *k = s->k;
    const int H = hp->n_embd, hd = hp->head_dim, v2 = d->version == 2;
    const int64_t qd = (int64_t)hp->n_head * hd;
    const size_t BH = (size_t)B * H;
    const int64_t dynw = 2 * (int64_t)d->conv_k * d->conv_groups;

    /* attention: x += [conv1 o] attn([conv0] rmsnorm(x)) */
    for (int r = 0; r < B; r++) k->rmsnorm(s->x + (size_t)r * H, L->attn_norm, H, hp->rms_eps, s->xn + (size_t)r * H);
    const float *in = s->xn;
    if (v2) {
        linear(s, &L->attn_conv_proj, s->xn, H, B, s->dyn, dynw);
        conv_rows(d, s->xn, B, L->attn_conv_base, s->dyn, 0, s->cu);
        in = s->cu;
    }
    linear(s, &L->attn_q, in, H, B, s->q, qd);
    for (int r = 0; r < B; r++) {
        float *q = s->q + (size_t)r * qd;
        pf_rmsnorm_heads(k, q, hp->n_head, hd, L->q_norm, hp->rms_eps);
        pf_rope_neox(q, hp->n_head, hd, pos0 + r, hp->rope_theta);
    }
    store_kv(s, l, in, B, pos0); /* after the context; dropped when the block is done */
    const pf_half *Kc = s->kc + (size_t)l * s->layer_stride, *Vc = s->vc + (size_t)l * s->layer_stride;
    pf_attention(k, s->pool, s->q, qd, B, hp->n_head, hp->n_head_kv, hd, Kc, Vc, s->head_stride, pos0, pos0 + B, d->causal,
                 L->window, s->att, qd);
    linear(s, &L->attn_o, s->att, qd, B, s->tmp, H);
    if (v2) {
        conv_rows(d, s->tmp, B, L->attn_conv_base, s->dyn, 1, s->cu);
        add_rows(s->x, s->cu, BH);
    } else {
        add_rows(s->x, s->tmp, BH);
    }

    /* MLP: x += [conv1 o] swiglu([conv0] rmsnorm(x)) */
    for (int r = 0; r < B; r++) k->rmsnorm(s->x + (size_t)r * H, L->ffn_norm, H, hp->rms_eps, s->xn + (size_t)r * H);
    in = s->xn;
    if (v2) {
        linear(s, &L->ffn_conv_proj, s->xn, H, B, s->dyn, dynw);
        conv_rows(d, s->xn, B, L->ffn_conv_base, s->dyn, 0, s->cu);
        in = s->cu;
    }
    linear(s, &L->ffn_gate, in, H, B, s->gate, hp->n_ff);
    linear(s, &L->ffn_up, in, H, B, s->up, hp->n_ff);
    for (int r = 0; r < B; r++)
        k->swiglu(s->gate + (size_t)r * hp->n_ff, s->up + (size_t)r * hp->n_ff, s->gate + (size_t)r * hp->n_ff, hp->n_ff);
    linear(s, &L->ffn_down, s->gate, hp->n_ff, B, s->tmp, H);
    if (v2) {
        conv_rows(d, s->tmp, B, L->ffn_conv_base, s->dyn, 1, s->cu);
        add_rows(s->x, s->cu, BH);
    } else {
        add_rows(s->x, s->tmp, BH);
    }
}

/* The k largest logits, by decreasing value (ties: lower index first), in one pass. Once k are
 * held, only values above the k-th can enter, so the scan jumps to the next such value (kernel
 * first_above); the entries and their order are those of the plain loop. */
static void top_k(const pf_kernels *kn, const float *logits, int n, int k, int32_t *cand, float *unary) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m == k) {
            i += (int)kn->first_above(logits + i, n - i, unary[k - 1]);
            if (i >= n) break;
        }
        float v = logits[i];
        int p = m < k ? m : k - 1; /* slot freed at the end */
        while (p > 0 && v > unary[p - 1]) {
            unary[p] = unary[p - 1];
            cand[p] = cand[p - 1];
            p--;
        }
        unary[p] = v;
        cand[p] = i;
        if (m < k) m++;
    }
}

static float dot_f32(const float *a, const float *b, int n) {
    float acc = 0;
    for (int i = 0; i < n; i++) acc += a[i] * b[i];
    return acc;
}

static void weight_row(const pf_weight *w, int64_t row, float *out) {
    pf_dequantize_row(w->type, (const char *)w->data + (size_t)row * w->row_bytes, out, w->cols);
}

/* softmax(score / T) over the candidates, listed by decreasing score (ties: candidate order);
 * entries whose probability rounds to 0 are left out so a draw never lands on one. */
static void selector_dist(const float *score, const int32_t *cand, int k, float temp, pf_dist *out) {
    int idx[1024];
    for (int j = 0; j < k; j++) idx[j] = j;
    for (int j = 1; j < k; j++) { /* insertion sort: k is small and the order must be stable */
        int v = idx[j], p = j;
        while (p > 0 && score[v] > score[idx[p - 1]]) {
            idx[p] = idx[p - 1];
            p--;
        }
        idx[p] = v;
    }
    double mx = score[idx[0]], sum = 0;
    double e[1024];
    for (int j = 0; j < k; j++) sum += e[j] = exp(((double)score[idx[j]] - mx) / temp);
    int m = 0;
    for (int j = 0; j < k; j++) {
        float p = (float)(e[j] / sum);
        if (p > 0) {
            out->ids[m] = cand[idx[j]];
            out->p[m++] = p;
        }
    }
    out->n = m;
}

int pf_dflash_propose(pf_dflash_state *s, int32_t bonus, int B, const pf_sampling *samp, pf_rng *rng,
                      int32_t *draft, pf_dist *q, float *hidden, char err[PF_ERR_LEN]) {
    const pf_dflash *d = s->d;
    const pf_model *tm = d->target;
    const pf_hparams *hp = &d->hp;
    const int H = hp->n_embd, V = hp->n_vocab, v2 = d->version == 2;
    const int sampled = samp && samp->temp > 0;
    if (B < 2) {
        snprintf(err, PF_ERR_LEN, "dflash: block of %d rows (needs at least 2)", B);
        return -1;
    }
    if (s->len + B > s->n_ctx) {
        snprintf(err, PF_ERR_LEN, "dflash: context full: %lld context rows + a block of %d exceed %lld",
                 (long long)s->len, B, (long long)s->n_ctx);
        return -1;
    }
    if (bonus < 0 || bonus >= V) {
        snprintf(err, PF_ERR_LEN, "dflash: bonus token %d is outside the vocabulary (%d)", bonus, V);
        return -1;
    }
    if (sampled && !rng) {
        snprintf(err, PF_ERR_LEN, "dflash: sampling needs an rng");
        return -1;
    }
    for (int i = 0; q && i < B - 1; i++)
        if (q[i].cap < (v2 ? d->sel_top_k : V)) {
            snprintf(err, PF_ERR_LEN, "dflash: q[%d] holds %d entries, needs %d", i, q[i].cap, v2 ? d->sel_top_k : V);
            return -1;
        }
    if (ensure_rows(s, B, err) < 0) return -1;
    s->last_B = 0;

    const pf_weight *emb = d->own_embd.data ? &d->own_embd : &tm->tok_embd;
    for (int r = 0; r < B; r++) {
        float *x = s->x + (size_t)r * H;
        pf_dequantize_row(emb->type, (const char *)emb->data + (size_t)(r ? d->mask : bonus) * emb->row_bytes, x, H);
        if (d->embd_scale != 1.0f)
            for (int i = 0; i < H; i++) x[i] *= d->embd_scale;
    }
    for (int l = 0; l < hp->n_layer; l++) block_layer(s, l, B, s->len);
    for (int r = 0; r < B; r++) s->k->rmsnorm(s->x + (size_t)r * H, d->output_norm, H, hp->rms_eps, s->hn + (size_t)r * H);
    if (hidden) memcpy(hidden, s->hn, (size_t)B * H * sizeof(float));
    /* row k predicts the token at start + k (mask filling, no shift); row 0 is discarded. With a
     * head subset the logits are those of its NV tokens (the same values the whole head gives
     * them), and indices map back to token ids through sub->ids. */
    const int NV = s->sub ? s->sub->n : V;
    linear(s, s->sub ? &s->sub->w : &tm->output, s->hn + H, H, B - 1, s->logits, NV);
    if (d->logit_scale != 1.0f || d->softcap > 0) /* the trained output transform, as llama.cpp applies it */
        for (size_t i = 0; i < (size_t)(B - 1) * NV; i++) {
            float z = s->logits[i] * d->logit_scale;
            s->logits[i] = d->softcap > 0 ? d->softcap * tanhf(z / d->softcap) : z;
        }
    s->last_B = B;

    if (!v2) {
        pf_sampling greedy = {0, 0, 1};
        for (int t = 1; t < B; t++) {
            pf_dist *dist = q ? &q[t - 1] : &s->dist;
            pf_sampling_probs(sampled ? samp : &greedy, s->logits + (size_t)(t - 1) * NV, NV, dist);
            if (s->sub)
                for (int i = 0; i < dist->n; i++) dist->ids[i] = s->sub->ids[dist->ids[i]];
            draft[t - 1] = pf_dist_sample(dist, rng);
        }
        return 0;
    }

    /* DFlash2 selector: every row's candidates and g_t = selector_hidden @ h_t in parallel ... */
    const int kk = d->sel_top_k, R = d->sel_rank;
    linear(s, &d->sel_hidden, s->hn + H, H, B - 1, s->g, R);
    for (int t = 1; t < B; t++) {
        int32_t *cand = s->cand + (size_t)(t - 1) * kk;
        top_k(s->k, s->logits + (size_t)(t - 1) * NV, NV, kk, cand, s->unary + (size_t)(t - 1) * kk);
        if (s->sub)
            for (int j = 0; j < kk; j++) cand[j] = s->sub->ids[cand[j]];
        for (int j = 0; j < kk; j++) weight_row(&d->sel_succ, cand[j], s->succ + ((size_t)(t - 1) * kk + j) * R);
    }
    /* ... then the walk: score_t(prev, j) = unary_t[j] + <A[prev] * g_t, Bsucc[cand_t[j]]> */
    int32_t prev = bonus;
    for (int t = 1; t < B; t++) {
        const size_t o = (size_t)(t - 1) * kk;
        const float *g = s->g + (size_t)(t - 1) * R;
        weight_row(&d->sel_pred, prev, s->pred_row);
        for (int r = 0; r < R; r++) s->ag[r] = s->pred_row[r] * g[r];
        float *score = s->score + o;
        int best = 0;
        for (int j = 0; j < kk; j++) {
            score[j] = s->unary[o + j] + dot_f32(s->ag, s->succ + (o + j) * R, R);
            if (score[j] > score[best]) best = j;
        }
        int32_t tok;
        if (sampled) {
            pf_dist *dist = q ? &q[t - 1] : &s->dist;
            selector_dist(score, s->cand + o, kk, samp->temp, dist);
            tok = pf_dist_sample(dist, rng);
        } else {
            tok = s->cand[o + best];
            if (q) {
                q[t - 1].ids[0] = tok;
                q[t - 1].p[0] = 1.0f;
                q[t - 1].n = 1;
            }
        }
        draft[t - 1] = tok;
        prev = tok;
    }
    return 0;
}
