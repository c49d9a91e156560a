/* The target model: a Qwen3 decoder loaded from GGUF (weights stay in the mapping), its KV cache,
 * and the ONE forward entry point over B rows (B = 1 decoding, B > 1 prefill or verification). */
#ifndef PF_MODEL_H
#define PF_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/gguf.h"
#include "kernels/kernels.h"

typedef struct pf_tokenizer pf_tokenizer;
typedef struct pfb_bundle pfb_bundle;

typedef struct {
    int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab;
    int64_t n_ctx_train;
    float rope_theta, rms_eps;
} pf_hparams;

typedef struct {
    pf_weight attn_q, attn_k, attn_v, attn_o, ffn_gate, ffn_up, ffn_down;
    const float *attn_norm, *ffn_norm, *q_norm, *k_norm;
} pf_layer;

typedef struct pf_model {
    gguf_file *file;
    int own_file; /* close file on free */
    pf_hparams hp;
    pf_layer *layers;
    pf_weight tok_embd, output; /* output aliases tok_embd when tied */
    const float *output_norm;
    bool tied;
    pf_tokenizer *tok;
    float *norm_store; /* norm vectors converted to f32 when stored otherwise */
    /* Set when loaded from a .pfb bundle: `file` and every weight point into it, and so does a
     * draft built from it (pfb_gguf(bundle, PFB_OWNER_DRAFT)), which must be freed before the
     * model. Closed by pf_model_free after `file`. */
    pfb_bundle *bundle;
} pf_model;

/* Load a qwen3-architecture GGUF, or the target of a .pfb bundle (recognised by its magic, not
 * its name). Errors name the file and the field (wrong architecture, missing tensor, wrong shape
 * or type; for a bundle also the section). */
pf_model *pf_model_load(const char *path, char err[PF_ERR_LEN]);
/* Build a model over an already parsed file; takes ownership of f when own_file. */
pf_model *pf_model_from_gguf(gguf_file *f, int own_file, char err[PF_ERR_LEN]);
void pf_model_free(pf_model *m);
/* Bytes of all weight tensors (what a decode step streams). */
size_t pf_model_weight_bytes(const pf_model *m);

/* Per-layer KV cache in f16; truncation is a length change (no copy). */
typedef struct {
    int n_layer, kv_dim;
    int64_t n_ctx, len;
    pf_half *k, *v; /* layer l, position p: k + (l*n_ctx + p)*kv_dim */
} pf_kv_cache;

pf_kv_cache *pf_kv_new(const pf_hparams *hp, int64_t n_ctx);
void pf_kv_free(pf_kv_cache *kv);
void pf_kv_truncate(pf_kv_cache *kv, int64_t len);

/* Scratch + threads + kernel table for running forwards of one model. */
typedef struct pf_ctx {
    const pf_model *model;
    const pf_kernels *k;
    pf_pool *pool;
    pf_kv_cache *kv;
    int max_rows; /* rows per internal chunk */
    float *x, *xn, *q, *kbuf, *vbuf, *att, *tmp, *gate, *up, *logit_row;
    void *act;
} pf_ctx;

/* n_threads >= 1; k NULL selects the best kernels for this CPU. */
pf_ctx *pf_ctx_new(const pf_model *m, int64_t n_ctx, int n_threads, const pf_kernels *k,
                   char err[PF_ERR_LEN]);
void pf_ctx_free(pf_ctx *c);

enum { PF_LOGITS_NONE = 0, PF_LOGITS_LAST = 1, PF_LOGITS_ALL = 2 };

typedef struct {
    const int32_t *tokens; /* n rows at positions kv->len .. kv->len + n - 1 */
    int n;
    int logits_mode; /* PF_LOGITS_*: logits gets n_vocab (LAST) or n*n_vocab (ALL) floats */
    float *logits;
    /* Residual-stream rows after layers tap_layers[t] (0-based layer index; n_layer-1 = last
     * layer, before the output norm). Row b, tap t at taps + (b*n_taps + t)*n_embd. */
    const int *tap_layers;
    int n_taps;
    float *taps;
} pf_batch;

/* Runs the rows through the model, appending their K/V to the cache. Rows beyond the context
 * or token ids outside the vocabulary fail with a message and leave the cache unchanged. */
int pf_forward(pf_ctx *c, const pf_batch *b, char err[PF_ERR_LEN]);

#endif
