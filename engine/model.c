/* Loading a qwen3 GGUF into pf_model: hyper-parameters, tensor lookup with shape/type checks. */
#include "engine/model.h"
#include "engine/weight_pack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer.h"
#include "engine/weights.h"
#include "formats/pfb.h"
#include "formats/quant.h"

static int read_hparams(const gguf_file *f, pf_hparams *hp, char *err) {
    if (pf_check_architecture(f, "qwen3", "is not supported", err) < 0) return -1;
    hp->rope_theta = 1e6f;
    hp->rms_eps = 1e-6f;
    if (pf_read_shape(f, "qwen3", hp, err) < 0) return -1;
    uint32_t ctx = 0;
    if (pf_get_u32(f, "qwen3.context_length", &ctx, 0, err) < 0) return -1;
    hp->n_ctx_train = ctx ? ctx : 4096;
    if (hp->n_layer < 1 || hp->n_layer > 1024 || hp->n_embd < 1 || hp->n_embd > 65536 || hp->n_ff < 1 ||
        hp->n_ff > 1 << 20 || hp->n_head < 1 || hp->n_head > 1024 || hp->n_head_kv < 1 ||
        hp->n_head % hp->n_head_kv || hp->head_dim < 2 || hp->head_dim % 2 || hp->head_dim > 1024 ||
        !(hp->rope_theta > 0) || !(hp->rms_eps > 0)) {
        snprintf(err, PF_ERR_LEN,
                 "%s: hyper-parameters out of range (layers %d, hidden %d, ffn %d, heads %d/%d, head_dim %d)",
                 f->path, hp->n_layer, hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv, hp->head_dim);
        return -1;
    }
    const gguf_tensor *te = gguf_find_tensor(f, "token_embd.weight");
    if (!te || te->n_dims != 2 || te->ne[0] != hp->n_embd) {
        snprintf(err, PF_ERR_LEN, "%s: tensor 'token_embd.weight' is missing or not [vocab, %d]", f->path,
                 hp->n_embd);
        return -1;
    }
    hp->n_vocab = (int)te->ne[1];
    return 0;
}

/* Layer l's matrices and norm vectors bound (the vectors copied to f32 at *store, which advances). 0, or -1 (format). */
static int bind_layer(const gguf_file *f, const pf_hparams *hp, int l, pf_layer *L, float **store, char *err) {
    int64_t qd = (int64_t)hp->n_head * hp->head_dim, kvd = (int64_t)hp->n_head_kv * hp->head_dim;
    struct { const char *name; int64_t rows, cols; pf_weight *w; } mats[] = {
        {"attn_q", qd, hp->n_embd, &L->attn_q},        {"attn_k", kvd, hp->n_embd, &L->attn_k},
        {"attn_v", kvd, hp->n_embd, &L->attn_v},       {"attn_output", hp->n_embd, qd, &L->attn_o},
        {"ffn_gate", hp->n_ff, hp->n_embd, &L->ffn_gate}, {"ffn_up", hp->n_ff, hp->n_embd, &L->ffn_up},
        {"ffn_down", hp->n_embd, hp->n_ff, &L->ffn_down},
    };
    char name[96];
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) {
        snprintf(name, sizeof name, "blk.%d.%s.weight", l, mats[i].name);
        if (pf_bind_matrix(f, name, mats[i].rows, mats[i].cols, mats[i].w, err) < 0) return -1;
    }
    struct { const char *name; int64_t n; const float **out; } vecs[] = {
        {"attn_norm", hp->n_embd, &L->attn_norm}, {"ffn_norm", hp->n_embd, &L->ffn_norm},
        {"attn_q_norm", hp->head_dim, &L->q_norm}, {"attn_k_norm", hp->head_dim, &L->k_norm},
    };
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) {
        snprintf(name, sizeof name, "blk.%d.%s.weight", l, vecs[i].name);
        if (pf_bind_vector(f, name, vecs[i].n, vecs[i].out, *store, err) < 0) return -1;
        *store += vecs[i].n;
    }
    return 0;
}

/* The embedding, the head (tied to the embedding when the file has none), the output norm and
 * every layer bound. 0, or -1 (format). */
static int bind_weights(pf_model *m, const gguf_file *f, char *err) {
    const pf_hparams *hp = &m->hp;
    float *store = m->norm_store;
    if (pf_bind_matrix(f, "token_embd.weight", hp->n_vocab, hp->n_embd, &m->tok_embd, err) < 0) return -1;
    if (gguf_find_tensor(f, "output.weight")) {
        if (pf_bind_matrix(f, "output.weight", hp->n_vocab, hp->n_embd, &m->output, err) < 0) return -1;
    } else {
        m->output = m->tok_embd;
        m->tied = true;
    }
    if (pf_bind_vector(f, "output_norm.weight", hp->n_embd, &m->output_norm, store, err) < 0) return -1;
    store += hp->n_embd;
    for (int l = 0; l < hp->n_layer; l++)
        if (bind_layer(f, hp, l, &m->layers[l], &store, err) < 0) return -1;
    return 0;
}

pf_rc pf_model_from_gguf(gguf_file *f, int own_file, pf_model **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    pf_model *m = gguf_loader_alloc(f, own_file, sizeof *m, err);
    if (!m) return PF_RC_OOM;
    m->file = f;
    m->own_file = own_file;
    m->opts = pf_load_opts_env();
    pf_hparams *hp = &m->hp;
    pf_rc rc = PF_RC_FORMAT; /* every check below is of the file, but the allocations */
    if (read_hparams(f, hp, err) < 0) goto fail;
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    /* room for every norm vector in f32: per layer 2*n_embd + 2*head_dim, plus the output norm */
    m->norm_store = malloc(((size_t)hp->n_layer * (2 * hp->n_embd + 2 * hp->head_dim) + hp->n_embd) * sizeof(float));
    if (!m->layers || !m->norm_store) {
        snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
        rc = PF_RC_OOM;
        goto fail;
    }
    if (bind_weights(m, f, err) < 0) goto fail;
    if ((rc = pf_tokenizer_load(f, &m->tok, err)) != PF_RC_OK) goto fail;
    rc = PF_RC_FORMAT;
    if (pf_tokenizer_n_vocab(m->tok) > hp->n_vocab) {
        snprintf(err, PF_ERR_LEN, "%s: tokenizer.ggml.tokens: %d tokens but the embedding has %d rows", f->path,
                 pf_tokenizer_n_vocab(m->tok), hp->n_vocab);
        goto fail;
    }
    *out = m;
    return PF_RC_OK;
fail:
    pf_err_one_line(err);
    pf_model_free(m);
    return rc;
}

bool pf_model_bundles_draft(const pf_model *m) { return m->bundle && pfb_has_model(m->bundle, PFB_OWNER_DRAFT); }

/* A GGUF, or the target of a .pfb bundle the model keeps open (its weights point into it). */
static pf_rc load_file(const char *path, pf_model **out, char err[PF_ERR_LEN]) {
    pfb_bundle *b;
    gguf_file *f;
    pf_rc rc = pfb_model_open(path, PFB_OWNER_TARGET, &b, &f, err);
    if (rc == PF_RC_OK) rc = pf_model_from_gguf(f, 1, out, err);
    if (rc != PF_RC_OK) {
        pfb_close(b);
        return rc;
    }
    (*out)->bundle = b;
    return PF_RC_OK;
}

pf_rc pf_model_open_with(const char *path, const pf_load_opts *o, pf_model **out, char err[PF_ERR_LEN]) {
    pf_rc rc = load_file(path, out, err);
    if (rc == PF_RC_OK) (*out)->opts = *o;
    if (rc == PF_RC_OK && pf_model_pack_weights(*out, err) < 0) { /* its only failure: memory */
        pf_model_free(*out);
        *out = NULL;
        return PF_RC_OOM;
    }
    return rc;
}

pf_rc pf_model_open(const char *path, pf_model **out, char err[PF_ERR_LEN]) {
    const pf_load_opts o = pf_load_opts_env();
    return pf_model_open_with(path, &o, out, err);
}

pf_model *pf_model_load(const char *path, char err[PF_ERR_LEN]) {
    pf_model *m = NULL;
    pf_model_open(path, &m, err);
    return m;
}

void pf_model_free(pf_model *m) {
    if (!m) return;
    if (m->tok) pf_tokenizer_free(m->tok);
    if (m->own_file) gguf_close(m->file);
    pfb_close(m->bundle); /* after the file, whose tables point into it */
    free(m->layers);
    free(m->norm_store);
    pf_weights_free(m->packed_store, m->packed_map_len);
    free(m);
}

size_t pf_model_weight_bytes(const pf_model *m) {
    size_t n = m->tied ? 0 : m->output.row_bytes * (size_t)m->output.rows;
    n += m->tok_embd.row_bytes; /* one embedding row is read per token */
    for (int l = 0; l < m->hp.n_layer; l++) {
        const pf_layer *L = &m->layers[l];
        const pf_weight *w[] = {&L->attn_q, &L->attn_k, &L->attn_v, &L->attn_o, &L->ffn_gate, &L->ffn_up, &L->ffn_down};
        for (int i = 0; i < 7; i++) n += w[i]->row_bytes * (size_t)w[i]->rows;
    }
    if (m->tied) n += m->output.row_bytes * (size_t)m->output.rows;
    return n;
}
