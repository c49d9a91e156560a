/* DFlash / DFlash2 block draft (docs/dflash-format.md): loading a dflash GGUF against its target, and the
 * draft's accessors. The context injection (fc -> per-layer K/V cache) and the one-pass block
 * forward are in dflash_forward.c, the head and the DFlash2 candidate-selector walk in
 * dflash_propose.c.
 *
 * Arithmetic rules, as in engine/forward.c: every matrix product goes through pf_matmul (split by
 * output rows), attention through pf_attention (per row and head), so no result depends on the
 * thread count, and a context row's K/V do not depend on how the rows were split over calls. */
#include "draft/dflash_impl.h"
#include "engine/weight_pack.h"

/* ---------------------------------------------------------------- loading */

/* A matrix whose rows are looked up one at a time (selector predecessor/successor). */
static int bind_table(const gguf_file *f, const char *name, int64_t rows, int64_t cols, pf_weight *w, char *err) {
    const gguf_tensor *t = pf_find_matrix(f, name, rows, cols, err);
    if (!t) return -1;
    if (!pf_type_info(t->type) || !pf_row_bytes(t->type, cols)) {
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s': type %u with rows of %lld is not supported", f->path, name,
                 t->type, (long long)cols);
        return -1;
    }
    pf_weight_set(w, t, rows, cols);
    return 0;
}

static int read_hparams(pf_dflash *d, const gguf_file *f, char *err) {
    const pf_hparams *th = &d->target->hp;
    pf_hparams *hp = &d->hp;
    if (pf_dflash_read_block(f, &d->block_size, err) < 0) return -1; /* a draft file, its trained block */
    hp->rope_theta = th->rope_theta;
    hp->rms_eps = th->rms_eps;
    if (pf_read_shape(f, "dflash", hp, err) < 0) return -1;
    hp->n_vocab = th->n_vocab;
    hp->n_ctx_train = th->n_ctx_train;
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
    return 0;
}

int pf_dflash_read_block(const gguf_file *f, int *block, char err[PF_ERR_LEN]) {
    uint32_t b = 0;
    if (pf_check_architecture(f, "dflash", "is not a draft", err) < 0) return -1;
    if (pf_get_u32(f, "dflash.block_size", &b, 1, err) < 0) return -1;
    if (b < 2 || b > 4096) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.block_size: %u is outside 2..4096", f->path, b);
        return -1;
    }
    *block = (int)b;
    return 0;
}

/* dflash.target_layers holds tapped layer + 1 (hidden_states index: 0 = embeddings). */
static pf_rc read_taps(pf_dflash *d, const gguf_file *f, char *err) {
    const char *key = "dflash.target_layers";
    const gguf_kv *kv = gguf_get_arr(f, key, GGUF_I32);
    if (!kv) {
        snprintf(err, PF_ERR_LEN, "%s: %s: %s", f->path, key,
                 gguf_find(f, key) ? "is not an integer array" : "missing");
        return PF_RC_FORMAT;
    }
    int tl = d->target->hp.n_layer;
    if (kv->v.arr.n < 1 || kv->v.arr.n > 256) {
        snprintf(err, PF_ERR_LEN, "%s: %s: %llu entries (expected 1..256)", f->path, key,
                 (unsigned long long)kv->v.arr.n);
        return PF_RC_FORMAT;
    }
    d->n_taps = (int)kv->v.arr.n;
    d->taps = malloc((size_t)d->n_taps * sizeof *d->taps);
    if (!d->taps) {
        snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
        return PF_RC_OOM;
    }
    for (int i = 0; i < d->n_taps; i++) {
        int64_t v = gguf_arr_int(kv, (uint64_t)i);
        if (v < 1 || v > tl) {
            snprintf(err, PF_ERR_LEN,
                     "%s: %s[%d]: %lld is outside 1..%d (layer index + 1 within the target's %d layers)", f->path,
                     key, i, (long long)v, tl, tl);
            return PF_RC_FORMAT;
        }
        d->taps[i] = (int)(v - 1);
    }
    return PF_RC_OK;
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
static pf_rc read_v2_globals(pf_dflash *d, const gguf_file *f, char *err) {
    uint32_t k = 2, g = 16, rank = 0, topk = 16;
    if (pf_get_u32(f, "dflash.conv_kernel_size", &k, 0, err) < 0 || pf_get_u32(f, "dflash.conv_group_size", &g, 0, err) < 0 ||
        pf_get_u32(f, "dflash.selector_rank", &rank, 0, err) < 0 || pf_get_u32(f, "dflash.selector_top_k", &topk, 0, err) < 0)
        return PF_RC_FORMAT;
    int H = d->hp.n_embd;
    if (k < 1 || k > 64) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.conv_kernel_size: %u is outside 1..64", f->path, k);
        return PF_RC_FORMAT;
    }
    if (g < 1 || H % (int)g) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.conv_group_size: %u does not divide the hidden size %d", f->path, g, H);
        return PF_RC_FORMAT;
    }
    if (topk < 1 || topk > 1024 || (int)topk > d->hp.n_vocab) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.selector_top_k: %u is outside 1..min(1024, vocabulary)", f->path, topk);
        return PF_RC_FORMAT;
    }
    const gguf_tensor *sh = pf_find_tensor(f, "selector_hidden.weight", err);
    if (!sh) return PF_RC_FORMAT;
    if (!rank) rank = (uint32_t)sh->ne[1]; /* absent key: the tensor says */
    if (rank < 1 || rank > 65536) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.selector_rank: %u is outside 1..65536", f->path, rank);
        return PF_RC_FORMAT;
    }
    d->conv_k = (int)k;
    d->conv_group = (int)g;
    d->conv_groups = H / (int)g;
    d->sel_rank = (int)rank;
    d->sel_top_k = (int)topk;
    if (pf_bind_matrix(f, "selector_hidden.weight", rank, H, &d->sel_hidden, err) < 0) return PF_RC_FORMAT;
    if (bind_table(f, "selector_predecessor.weight", d->hp.n_vocab, rank, &d->sel_pred, err) < 0) return PF_RC_FORMAT;
    if (bind_table(f, "selector_successor.weight", d->hp.n_vocab, rank, &d->sel_succ, err) < 0) return PF_RC_FORMAT;
    return PF_RC_OK;
}

/* dflash.head_tokens (integer array: distinct token ids, most frequent first) and
 * dflash.head_vocab (how many of them the head scores by default; all when absent). */
static pf_rc read_head_tokens(pf_dflash *d, const gguf_file *f, char *err) {
    const gguf_kv *kv = gguf_find(f, "dflash.head_tokens");
    uint32_t nv = 0;
    if (pf_get_u32(f, "dflash.head_vocab", &nv, 0, err) < 0) return PF_RC_FORMAT;
    if (!kv) {
        if (gguf_find(f, "dflash.head_vocab")) {
            snprintf(err, PF_ERR_LEN, "%s: dflash.head_vocab is set but dflash.head_tokens is missing", f->path);
            return PF_RC_FORMAT;
        }
        return PF_RC_OK;
    }
    const int V = d->hp.n_vocab;
    kv = gguf_get_arr(f, "dflash.head_tokens", GGUF_I32); /* any integer element type */
    if (!kv || kv->v.arr.n < 1 || kv->v.arr.n > (uint64_t)V) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.head_tokens: expected an array of 1..%d token ids", f->path, V);
        return PF_RC_FORMAT;
    }
    int n = (int)kv->v.arr.n;
    uint8_t *seen = calloc((size_t)V, 1);
    d->head_rank = malloc((size_t)n * sizeof *d->head_rank);
    if (!seen || !d->head_rank) {
        free(seen);
        snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
        return PF_RC_OOM;
    }
    for (int i = 0; i < n; i++) {
        int64_t id = gguf_arr_int(kv, (uint64_t)i);
        if (id < 0 || id >= V || seen[id]) {
            snprintf(err, PF_ERR_LEN, "%s: dflash.head_tokens[%d] = %lld is %s", f->path, i, (long long)id,
                     id < 0 || id >= V ? "outside the vocabulary" : "listed twice");
            free(seen);
            return PF_RC_FORMAT;
        }
        seen[id] = 1;
        d->head_rank[i] = (int32_t)id;
    }
    free(seen);
    if (!gguf_find(f, "dflash.head_vocab")) nv = (uint32_t)n;
    if (nv < 1 || nv > (uint32_t)n) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.head_vocab: %u is outside 1..%d (the ranked tokens)", f->path, nv, n);
        return PF_RC_FORMAT;
    }
    d->n_head_rank = n;
    d->head_default = (int)nv;
    return PF_RC_OK;
}

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

/* Parts of the dflash format this runtime does not implement (DSpark's Markov / confidence heads,
 * the DeepSeek-V4 backbone, per-head attention sinks, a scaled fc), refused by name. */
static int refuse_unsupported(const gguf_file *f, char *err) {
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
    return 0;
}

/* The target's hidden size when the file names it, and the three scales. */
static int read_scales(pf_dflash *d, const gguf_file *f, char *err) {
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
    return 0;
}

/* The target ids of the Vd rows of the draft's own head: d2t's entries, or the rows' own indices
 * (Vd is then the whole vocabulary V); each inside the vocabulary and listed once. */
static pf_rc head_row_ids(const gguf_file *f, const gguf_tensor *d2t, int64_t Vd, int V, int32_t *ids, char *err) {
    uint8_t *seen = calloc((size_t)V, 1);
    if (!seen) {
        snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
        return PF_RC_OOM;
    }
    pf_rc rc = PF_RC_OK;
    for (int64_t i = 0; rc == PF_RC_OK && i < Vd; i++) {
        int64_t id = i;
        if (d2t) memcpy(&id, (const uint8_t *)d2t->data + 8 * i, 8);
        if (id < 0 || id >= V || seen[id]) {
            snprintf(err, PF_ERR_LEN, "%s: tensor 'd2t': entry %lld = %lld is %s", f->path, (long long)i, (long long)id,
                     id < 0 || id >= V ? "outside the target's vocabulary" : "listed twice");
            rc = PF_RC_FORMAT;
        } else {
            seen[id] = 1;
            ids[i] = (int32_t)id;
        }
    }
    free(seen);
    return rc;
}

/* The draft's own head output.weight (with d2t when it has fewer rows than the vocabulary). */
static pf_rc read_own_head(pf_dflash *d, const gguf_file *f, const gguf_tensor *out, const gguf_tensor *d2t, char *err) {
    const int H = d->hp.n_embd, V = d->hp.n_vocab;
    if (d->head_rank) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.head_tokens: cannot be combined with the draft's own output.weight", f->path);
        return PF_RC_FORMAT;
    }
    int64_t Vd = out->n_dims == 2 ? out->ne[1] : -1;
    if (Vd < 1 || Vd > V || (Vd < V && !d2t)) {
        snprintf(err, PF_ERR_LEN, "%s: tensor 'output.weight': %lld rows %s", f->path, (long long)Vd,
                 Vd < V && Vd >= 1 ? "need d2t (a reduced draft vocabulary maps its rows to target ids)"
                                   : "(expected 1..the target's vocabulary)");
        return PF_RC_FORMAT;
    }
    pf_weight w;
    if (pf_bind_matrix(f, "output.weight", Vd, H, &w, err) < 0) return PF_RC_FORMAT;
    int32_t *ids = malloc((size_t)Vd * sizeof *ids);
    pf_rc rc = PF_RC_FORMAT;
    if (!ids) {
        snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
        rc = PF_RC_OOM;
    } else if (d2t && (d2t->type != PF_TYPE_I64 || d2t->n_dims != 1 || d2t->ne[0] != Vd)) {
        snprintf(err, PF_ERR_LEN, "%s: tensor 'd2t': expected I64 of %lld entries (one per row of output.weight)", f->path,
                 (long long)Vd);
    } else if ((rc = head_row_ids(f, d2t, Vd, V, ids, err)) == PF_RC_OK &&
               dflash_head_rows(&d->base_head, &w, NULL, ids, (int)Vd, &d->target->opts, err) < 0) {
        rc = PF_RC_OOM; /* its only failure: allocation and packing */
    }
    free(ids);
    return rc;
}

/* What else the dflash format can say (llama.cpp's loader, src/models/dflash.cpp): the draft's own
 * token_embd.weight; its own head output.weight {n_embd, n_vocab_draft} with d2t (I64, the target id
 * of every draft row; needed when n_vocab_draft < n_vocab); dflash.logit_scale,
 * .final_logit_softcapping and .embedding_scale. What it does not implement is refused
 * by name (refuse_unsupported). */
static pf_rc read_io(pf_dflash *d, const gguf_file *f, char *err) {
    if (refuse_unsupported(f, err) < 0 || read_scales(d, f, err) < 0) return PF_RC_FORMAT;
    const int H = d->hp.n_embd, V = d->hp.n_vocab;
    if (gguf_find_tensor(f, "token_embd.weight") && pf_bind_matrix(f, "token_embd.weight", V, H, &d->own_embd, err) < 0)
        return PF_RC_FORMAT;
    const gguf_tensor *out = gguf_find_tensor(f, "output.weight"), *d2t = gguf_find_tensor(f, "d2t");
    if (out) return read_own_head(d, f, out, d2t, err);
    if (d2t) {
        snprintf(err, PF_ERR_LEN, "%s: tensor 'd2t': present without output.weight (the draft's reduced head)", f->path);
        return PF_RC_FORMAT;
    }
    return PF_RC_OK;
}

/* Layer L's matrices, in the order of the packed store: 7, and DFlash2's two conv projections. */
static int layer_matrices(dflash_layer *L, int version, pf_weight **out) {
    pf_weight *lw[] = {&L->attn_q, &L->attn_k, &L->attn_v, &L->attn_o, &L->ffn_gate, &L->ffn_up,
                       &L->ffn_down, &L->attn_conv_proj, &L->ffn_conv_proj};
    int n = version == 2 ? 9 : 7;
    for (int i = 0; i < n; i++) out[i] = lw[i];
    return n;
}

/* fc (checked against the target: one input per tapped hidden dim) and the two global norms, their
 * floats at *store. */
static int bind_globals(pf_dflash *d, const gguf_file *f, float **store, char *err) {
    const int H = d->hp.n_embd;
    int64_t fc_in = (int64_t)d->n_taps * d->target->hp.n_embd;
    const gguf_tensor *fct = gguf_find_tensor(f, "fc.weight");
    if (fct && fct->n_dims == 2 && fct->ne[1] == H && fct->ne[0] != fc_in) {
        snprintf(err, PF_ERR_LEN,
                 "%s: tensor 'fc.weight' takes %lld inputs, expected %d taps x target hidden %d = %lld", f->path,
                 (long long)fct->ne[0], d->n_taps, d->target->hp.n_embd, (long long)fc_in);
        return -1;
    }
    if (pf_bind_matrix(f, "fc.weight", H, fc_in, &d->fc, err) < 0) return -1;
    if (pf_bind_vector(f, "enc.output_norm.weight", H, &d->enc_norm, *store, err) < 0) return -1;
    *store += H;
    if (pf_bind_vector(f, "output_norm.weight", H, &d->output_norm, *store, err) < 0) return -1;
    *store += H;
    return 0;
}

/* Layer l's weights; its norms (and DFlash2's conv bases) as floats at *store. */
static int bind_layer(pf_dflash *d, const gguf_file *f, int l, float **store, char *err) {
    const pf_hparams *hp = &d->hp;
    const int H = hp->n_embd, hd = hp->head_dim, K = d->conv_k, G = d->conv_groups;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_head_kv * hd;
    dflash_layer *L = &d->layers[l];
    char name[96];
    struct { const char *name; int64_t rows, cols; pf_weight *w; } mats[] = {
        {"attn_q", qd, H, &L->attn_q},          {"attn_k", kvd, H, &L->attn_k},
        {"attn_v", kvd, H, &L->attn_v},         {"attn_output", H, qd, &L->attn_o},
        {"ffn_gate", hp->n_ff, H, &L->ffn_gate}, {"ffn_up", hp->n_ff, H, &L->ffn_up},
        {"ffn_down", H, hp->n_ff, &L->ffn_down},
    };
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) {
        snprintf(name, sizeof name, "blk.%d.%s.weight", l, mats[i].name);
        if (pf_bind_matrix(f, name, mats[i].rows, mats[i].cols, mats[i].w, err) < 0) return -1;
    }
    struct { const char *name; int64_t n; const float **out; } vecs[] = {
        {"attn_norm", H, &L->attn_norm}, {"ffn_norm", H, &L->ffn_norm},
        {"attn_q_norm", hd, &L->q_norm}, {"attn_k_norm", hd, &L->k_norm},
    };
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) {
        snprintf(name, sizeof name, "blk.%d.%s.weight", l, vecs[i].name);
        if (pf_bind_vector(f, name, vecs[i].n, vecs[i].out, *store, err) < 0) return -1;
        *store += vecs[i].n;
    }
    if (d->version != 2) return 0;
    const int64_t ne[4] = {H, K, 2, 1};
    snprintf(name, sizeof name, "blk.%d.attn_conv_base", l);
    if (pf_bind_floats(f, name, ne, &L->attn_conv_base, *store, err) < 0) return -1;
    *store += 2 * (size_t)K * H;
    snprintf(name, sizeof name, "blk.%d.ffn_conv_base", l);
    if (pf_bind_floats(f, name, ne, &L->ffn_conv_base, *store, err) < 0) return -1;
    *store += 2 * (size_t)K * H;
    snprintf(name, sizeof name, "blk.%d.attn_conv_proj.weight", l);
    if (pf_bind_matrix(f, name, 2 * (int64_t)K * G, H, &L->attn_conv_proj, err) < 0) return -1;
    snprintf(name, sizeof name, "blk.%d.ffn_conv_proj.weight", l);
    return pf_bind_matrix(f, name, 2 * (int64_t)K * G, H, &L->ffn_conv_proj, err);
}

/* The widest prepared activation row of anything multiplied, incl. the target's head. */
static size_t widest_act_row(pf_dflash *d) {
    const int H = d->hp.n_embd;
    size_t act = max_sz(pf_act_row_bytes(d->fc.type, d->fc.cols), pf_act_row_bytes(d->target->output.type, H));
    if (d->base_head.n) act = max_sz(act, pf_act_row_bytes(d->base_head.w.type, H));
    for (int l = 0; l < d->hp.n_layer; l++) {
        pf_weight *ws[9];
        int n = layer_matrices(&d->layers[l], d->version, ws);
        for (int i = 0; i < n; i++) act = max_sz(act, pf_act_row_bytes(ws[i]->type, ws[i]->cols));
    }
    if (d->version == 2) act = max_sz(act, pf_act_row_bytes(d->sel_hidden.type, H));
    return act;
}

/* Packed copies for the fast gemm, as the target's (pf_model_pack_weights): fc and every layer's
 * matrices. */
static int pack_weights(pf_dflash *d, const gguf_file *f, char *err) {
    const size_t cap = 1 + 9 * (size_t)d->hp.n_layer;
    pf_weight **ws = malloc(cap * sizeof *ws);
    bool *rel = malloc(cap * sizeof *rel);
    if (!ws || !rel) {
        free(ws), free(rel);
        snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
        return -1;
    }
    int n = 0;
    ws[n++] = &d->fc;
    for (int l = 0; l < d->hp.n_layer; l++) n += layer_matrices(&d->layers[l], d->version, ws + n);
    for (int i = 0; i < n; i++) rel[i] = f->mapped;
    int rc = pf_weights_pack(ws, rel, n, &d->target->opts, &d->packed_store, &d->packed_map_len, err);
    free(ws), free(rel);
    return rc;
}

pf_rc pf_dflash_from_gguf(gguf_file *f, int own_file, const pf_model *target, pf_dflash **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    pf_dflash *d = gguf_loader_alloc(f, own_file, sizeof *d, err);
    if (!d) return PF_RC_OOM;
    d->file = f;
    d->own_file = own_file;
    d->target = target;
    pf_hparams *hp = &d->hp;
    pf_rc rc = PF_RC_FORMAT; /* the readers below say memory where an allocation failed */
    if (read_hparams(d, f, err) < 0 || (rc = read_taps(d, f, err)) != PF_RC_OK) goto fail;
    rc = PF_RC_FORMAT;
    if (read_mask(d, f, err) < 0 || (rc = read_head_tokens(d, f, err)) != PF_RC_OK || (rc = read_io(d, f, err)) != PF_RC_OK)
        goto fail;
    const int H = hp->n_embd, hd = hp->head_dim;
    d->version = gguf_find_tensor(f, "selector_hidden.weight") || gguf_find_tensor(f, "blk.0.attn_conv_base") ? 2 : 1;
    if (d->version == 2 && (rc = read_v2_globals(d, f, err)) != PF_RC_OK) goto fail;
    rc = PF_RC_FORMAT;
    if (d->version == 2 && d->base_head.n && d->base_head.n < d->sel_top_k) {
        snprintf(err, PF_ERR_LEN, "%s: tensor 'output.weight': %d rows, fewer than dflash.selector_top_k %d", f->path,
                 d->base_head.n, d->sel_top_k);
        goto fail;
    }
    d->layers = calloc((size_t)hp->n_layer, sizeof *d->layers);
    size_t per_layer = 2 * (size_t)H + 2 * (size_t)hd + (d->version == 2 ? 4 * (size_t)d->conv_k * H : 0);
    d->store = malloc(((size_t)hp->n_layer * per_layer + 2 * (size_t)H) * sizeof(float));
    if (!d->layers || !d->store) {
        snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
        rc = PF_RC_OOM;
        goto fail;
    }
    if (read_attention(d, f, err) < 0) goto fail;
    float *store = d->store;
    if (bind_globals(d, f, &store, err) < 0) goto fail;
    for (int l = 0; l < hp->n_layer; l++)
        if (bind_layer(d, f, l, &store, err) < 0) goto fail;
    d->act_max = widest_act_row(d);
    rc = PF_RC_OOM; /* packing and the default head fail only for memory */
    if (pack_weights(d, f, err) < 0) goto fail;
    /* the default head vocabulary, gathered once for every state that keeps it (where the
     * selector can take it; pf_dflash_set_head reports it otherwise) */
    if (d->head_rank && !(d->version == 2 && d->head_default < d->sel_top_k) &&
        dflash_head_build(&d->def_head, d, d->head_default, err) < 0)
        goto fail;
    *out = d;
    return PF_RC_OK;
fail:
    pf_err_one_line(err);
    pf_dflash_free(d);
    return rc;
}

pf_rc pf_dflash_open(const char *path, const pf_model *target, pf_dflash **out, char err[PF_ERR_LEN]) {
    pfb_bundle *b;
    gguf_file *f;
    pf_rc rc = pfb_model_open(path, PFB_OWNER_DRAFT, &b, &f, err);
    if (rc == PF_RC_OK) rc = pf_dflash_from_gguf(f, 1, target, out, err);
    if (rc != PF_RC_OK) {
        pfb_close(b);
        return rc;
    }
    (*out)->bundle = b;
    return PF_RC_OK;
}

pf_dflash *pf_dflash_load(const char *path, const pf_model *target, char err[PF_ERR_LEN]) {
    pf_dflash *d = NULL;
    pf_dflash_open(path, target, &d, err);
    return d;
}

void pf_dflash_free(pf_dflash *d) {
    if (!d) return;
    if (d->own_file) gguf_close(d->file);
    pfb_close(d->bundle); /* after the file, whose tables point into it */
    free(d->taps);
    free(d->layers);
    free(d->store);
    free(d->head_rank);
    dflash_head_free(&d->def_head);
    dflash_head_free(&d->base_head);
    pf_weights_free(d->packed_store, d->packed_map_len);
    free(d);
}

int pf_dflash_block_size(const pf_dflash *d) { return d->block_size; }
const gguf_file *pf_dflash_file(const pf_dflash *d) { return d->file; }
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
