/* The target model: a Qwen3 decoder loaded from GGUF (weights stay in the mapping), its KV cache,
 * and the ONE forward entry point over B rows (B = 1 decoding, B > 1 prefill or verification). */
#ifndef PF_MODEL_H
#define PF_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/gguf.h"
#include "formats/status.h"
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
    void *packed_store; /* the weights' packed copies (pf_model_pack_weights), or NULL */
    size_t packed_map_len; /* for pf_weights_free */
} pf_model;

/* Load a qwen3-architecture GGUF, or the target of a .pfb bundle (recognised by its magic, not
 * its name). Errors name the file and the field (wrong architecture, missing tensor, wrong shape
 * or type; for a bundle also the section). */
pf_model *pf_model_load(const char *path, char err[PF_ERR_LEN]);
/* Build a model over an already parsed file; takes ownership of f when own_file. */
pf_model *pf_model_from_gguf(gguf_file *f, int own_file, char err[PF_ERR_LEN]);
void pf_model_free(pf_model *m);
/* m was loaded from a .pfb bundle that also holds a draft (a front end speculates with it when
 * no draft is named). */
bool pf_model_bundles_draft(const pf_model *m);
/* Give every weight matrix the fast kernels can read packed (kernels.h) a packed copy, made
 * once (pf_model_load does this; nothing is packed when the environment has PF_REPACK=0). Where the file is
 * mapped, the pages of the originals are handed back to the OS (they are re-read from the file
 * if anything reads them again), so resident memory does not double. Returns -1 (err set) when
 * out of memory. */
int pf_model_pack_weights(pf_model *m, char err[PF_ERR_LEN]);
/* The same for any n weights (drafts; PF_REPACK=0 packs nothing): packed copies of those the kernels want packed, in one
 * allocation of pf_weights_alloc returned in *store and *map_len (NULL if none; the caller frees
 * it with pf_weights_free); release[i]
 * says whether weight i's original pages are a file mapping that may be handed back. */
int pf_weights_pack(pf_weight *const *ws, const bool *release, int n, void **store, size_t *map_len,
                    char err[PF_ERR_LEN]);
/* Memory for weights: 2 MiB aligned with transparent huge pages requested (PF_HUGEPAGES=0: plain
 * aligned_alloc); free with pf_weights_free(p, *map_len). NULL when out of memory. */
void *pf_weights_alloc(size_t size, size_t *map_len);
void pf_weights_free(void *p, size_t map_len);
/* Bytes of all weight tensors (what a decode step streams). */
size_t pf_model_weight_bytes(const pf_model *m);

/* Per-layer KV cache, f16 or 8-bit, in the layouts pf_attention reads (kernels.h); truncation is a
 * length change (no copy). The target's context and a draft's context keep one each. */
typedef struct {
    int n_layer, kv_dim, n_kv_head, head_dim;
    pf_kv_type type;     /* PF_KV_F16 (k, v) or PF_KV_Q8 (k8, v8 with scales ks, vs) */
    int64_t n_ctx, len;
    int64_t head_stride; /* elements per KV head of one layer (pf_kv_head_stride) */
    pf_half *k, *v;      /* layer l: k + l * layer_stride, n_kv_head regions of head_stride */
    int64_t layer_stride;
    uint8_t *k8;         /* the 8-bit cache (kernels.h) */
    int8_t *v8;
    float *ks, *vs;      /* layer l, head h, position p: ks[(l * n_kv_head + h) * scale_stride + p] */
    int64_t scale_stride;
} pf_kv_cache;

pf_kv_cache *pf_kv_new(const pf_hparams *hp, int64_t n_ctx, pf_kv_type type);
/* Bytes the cache holds per position (all layers, keys and values, scales included). */
size_t pf_kv_bytes_per_token(const pf_kv_cache *kv);
/* Layer l, position pos, from f32 key and value rows (n_kv_head * head_dim each), for either type. */
void pf_kv_write(const pf_kernels *k, pf_kv_cache *kv, int l, int64_t pos, const float *krow, const float *vrow);
/* Layer l of the cache as attention reads it (kernels.h). */
pf_kv_view pf_kv_layer(const pf_kv_cache *kv, int l);
/* Attention of rows over layer l's keys, for either type: the target's rows are causal over
 * [0, pos0 + B), the draft's block sees its context and the whole block, within a window. */
void pf_kv_attend(const pf_kernels *k, pf_pool *pool, const pf_kv_cache *kv, int l, const pf_attn_rows *rows);
/* 1 if kernels k read the 8-bit cache at speed (every SIMD level: AVX2, AVX-VNNI, AVX-512, NEON,
 * dotprod, i8mm; the scalar path is several times slower than the f16 cache), else 0 with the
 * reason in err. */
int pf_kv_q8_usable(const pf_kernels *k, char err[PF_ERR_LEN]);
void pf_kv_free(pf_kv_cache *kv);
void pf_kv_truncate(pf_kv_cache *kv, int64_t len);

/* The rows of a chunk through a layer (engine/layer.h), shared with the draft's forward. */
typedef struct pf_layer_scratch pf_layer_scratch;

/* Scratch + threads + kernel table for running forwards of one model. */
typedef struct pf_ctx {
    const pf_model *model;
    const pf_kernels *k;
    pf_pool *pool;
    pf_kv_cache *kv;
    int max_rows; /* rows per internal chunk */
    pf_layer_scratch *sc;
    /* Per-operation wall time in seconds, accumulated by every forward when not NULL (the
     * caller owns the PF_OP_COUNT doubles; bench-model --ops). */
    double *op_s;
} pf_ctx;

/* The forward's operations as op_s indexes them. */
enum {
    PF_OP_QKV,       /* q, k, v projections (activation quantization included) */
    PF_OP_ATTENTION, /* attention over the cache */
    PF_OP_O,         /* output projection */
    PF_OP_GATE_UP,   /* FFN gate and up projections */
    PF_OP_DOWN,      /* FFN down projection */
    PF_OP_HEAD,      /* final norm and the output head */
    PF_OP_ELEMENT,   /* embedding, norms, RoPE, cache writes, residual adds, SwiGLU */
    PF_OP_COUNT
};
extern const char *const pf_op_names[PF_OP_COUNT];

/* n_threads >= 1; k NULL selects the best kernels for this CPU. */
pf_ctx *pf_ctx_new(const pf_model *m, int64_t n_ctx, int n_threads, const pf_kernels *k,
                   char err[PF_ERR_LEN]);
/* Replace the (empty) KV cache by one of another type (PF_KV_F16 is what pf_ctx_new makes). */
int pf_ctx_set_kv_type(pf_ctx *c, pf_kv_type type, char err[PF_ERR_LEN]);
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

/* Runs the rows through the model, appending their K/V to the cache. PF_RC_OK, or with a message
 * and the cache unchanged: PF_RC_CONTEXT for rows beyond the context, PF_RC_ARG for no rows, a
 * token id outside the vocabulary or a tap layer outside the model. */
pf_rc pf_forward(pf_ctx *c, const pf_batch *b, char err[PF_ERR_LEN]);

#endif
