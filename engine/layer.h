/* The pieces of one transformer layer that the target's forward (forward.c) and the DFlash
 * draft's (draft/dflash_forward.c) share: the scratch rows of a chunk, the linear (activation
 * rows prepared, then one pooled matmul), a row's q/k head norms, RoPE and its cache write, and
 * SwiGLU. Each forward orders them its own way (the target splits the per-row steps over the pool,
 * the draft adds its convolutions), but a row's arithmetic is this code in both. */
#ifndef PF_LAYER_H
#define PF_LAYER_H

#include "engine/kv_cache.h"

typedef struct pf_layer_scratch pf_layer_scratch;

/* Rows of one chunk: the target's forward and the draft's context append take longer inputs
 * through the layer this many rows at a time, so their scratch holds rows x width, not the input. */
#define PF_CHUNK_ROWS 32

/* Rows of one chunk through a layer: x (residual stream), xn (its norm), q, kbuf, vbuf (the
 * projections), att (attention output), tmp (o and down outputs), gate, up (FFN), act (prepared
 * activation rows of act_row bytes each), rope (each row's RoPE angles, head_dim floats a row:
 * computed once for all layers). */
struct pf_layer_scratch {
    int rows;
    float *x, *xn, *q, *kbuf, *vbuf, *att, *tmp, *gate, *up, *rope;
    void *act;
    /* logits rows of several sequences made by one matmul before they go to their buffers (the
     * target's output head; grown on first use, head_cap floats) */
    float *head;
    size_t head_cap;
};

/* Scratch for rows rows of a model of hp, act_row bytes a prepared activation row; NULL when out
 * of memory. */
pf_layer_scratch *pf_layer_scratch_new(const pf_hparams *hp, int rows, size_t act_row);
void pf_layer_scratch_free(pf_layer_scratch *s);

/* The first of n weights reading the same rows when all take the same activation format and width
 * (their rows are then prepared once, for all), else NULL. */
const pf_weight *pf_shared_input(int n, const pf_weight *const *W);

/* y rows (ldy) = W . x rows (ldx): the rows prepared into act (unless prepared: a row step did
 * already), then one pooled matmul. */
void pf_linear(const pf_kernels *k, pf_pool *pool, void *act, const pf_weight *W, const float *x, int64_t ldx, int B,
               float *y, int64_t ldy, int prepared);
/* Several weights reading the same rows (q/k/v, gate/up): when pf_shared_input, the rows are
 * prepared once and the matmuls share one pool run (the same bytes as one pf_linear each, which
 * is what runs otherwise). */
void pf_linear_n(const pf_kernels *k, pf_pool *pool, void *act, int n, const pf_weight *const *W, const float *x,
                 int64_t ldx, int B, float *const *y, const int64_t *ldy, int prepared);

/* The RoPE angles (pf_rope_angles) of rows 0..B-1 at positions pos0.. into s->rope. */
void pf_layer_rope_table(pf_layer_scratch *s, const pf_hparams *hp, int64_t pos0, int B);

/* One row at position pos of layer l: q (NULL: none, as for a draft's context rows) and kr get
 * their head RMS norms (q_norm, k_norm) and NEOX RoPE (cs: the position's angles, its row of
 * pf_layer_rope_table; the bits of pf_rope_neox), then kr and vr go into the cache. */
void pf_layer_qk_row(const pf_kernels *k, const pf_hparams *hp, const float *q_norm, const float *k_norm,
                     pf_kv_cache *kv, int l, int64_t pos, const float *cs, float *q, float *kr, const float *vr);

/* gate = swiglu(gate, up) over B rows of n_ff. */
void pf_swiglu_rows(const pf_kernels *k, float *gate, const float *up, int B, int n_ff);

#endif
