/* The ONE forward entry point over B rows (B = 1 decoding, B > 1 prefill or verification) and the
 * context it runs in: a model, its KV cache, the threads, the kernel table and the layer scratch. */
#ifndef PF_FORWARD_H
#define PF_FORWARD_H

#include <stdint.h>

#include "engine/kv_cache.h"
#include "engine/model.h"
#include "formats/status.h"

typedef struct pf_batch pf_batch; /* engine/batch.h */
/* The rows of a chunk through a layer (engine/layer.h), shared with the draft's forward. */
typedef struct pf_layer_scratch pf_layer_scratch;

typedef struct pf_ctx {
    const pf_model *model;
    const pf_kernels *k;
    pf_pool *pool;
    pf_kv_cache *kv;
    int max_rows; /* rows per internal chunk */
    pf_layer_scratch *sc;
    /* Per-operation wall time in seconds (engine/op_timing.h), accumulated by every forward when
     * not NULL (the caller owns the PF_OP_COUNT doubles; bench-model --ops). */
    double *op_s;
} pf_ctx;

/* n_threads >= 1; k NULL selects the model's kernels (m->opts.level). NULL (with err) only when out of
 * memory. */
pf_ctx *pf_ctx_new(const pf_model *m, int64_t n_ctx, int n_threads, const pf_kernels *k,
                   char err[PF_ERR_LEN]);
/* Replace the (empty) KV cache by one of another type (PF_KV_F16 is what pf_ctx_new makes).
 * PF_RC_OK, or PF_RC_ARG (a head dimension the type cannot hold, a cache not empty) / PF_RC_OOM. */
pf_rc pf_ctx_set_kv_type(pf_ctx *c, pf_kv_type type, char err[PF_ERR_LEN]);
void pf_ctx_free(pf_ctx *c);

/* Runs the rows through the model, appending their K/V to the cache. PF_RC_OK, or with a message
 * and the cache unchanged: PF_RC_CONTEXT for rows beyond the context, PF_RC_ARG for no rows, a
 * token id outside the vocabulary or a tap layer outside the model. */
pf_rc pf_forward(pf_ctx *c, const pf_batch *b, char err[PF_ERR_LEN]);
/* One forward over the rows of n_seq sequences: seqs[i] is sequence i's rows, appended to its own
 * cache (seqs[i].kv; NULL: the context's), each sequence with its own position, logits and taps
 * (ragged: any number of rows each). The matmuls read the weights once for all the rows; each
 * row's RoPE, cache write and attention are its own sequence's, so every sequence's logits and
 * taps are bitwise those of pf_forward on its rows alone. The head runs one matmul per run of
 * wanted rows whose logits are consecutive in memory: sequences that want their last row's
 * logits give the fewest head passes with their logits buffers side by side, in order.
 * pf_forward(c, b) is pf_forward_seqs(c, b, 1). PF_RC_OK, or with a message and every cache
 * unchanged: pf_forward's errors for any sequence, and PF_RC_ARG for no sequences or two
 * sequences with one cache. */
pf_rc pf_forward_seqs(pf_ctx *c, const pf_batch *seqs, int n_seq, char err[PF_ERR_LEN]);

#endif
