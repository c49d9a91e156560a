/* DFlash / DFlash2 block draft: the types its files share (dflash.c loads a draft, dflash_head.c
 * builds head vocabularies, dflash_state.c holds a context and its scratch, dflash_forward.c the
 * context injection and block layers, dflash_propose.c the head and the DFlash2 selector walk).
 * Internal to draft/; users see draft/dflash.h. */
#ifndef PF_DFLASH_IMPL_H
#define PF_DFLASH_IMPL_H

#include "draft/dflash.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/layer.h"
#include "engine/tokenizer.h"
#include "engine/weights.h"
#include "formats/pfb.h"
#include "formats/quant.h"

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
    pfb_bundle *bundle; /* the .pfb pf_dflash_load opened for it (file points into it), or NULL */
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


struct pf_dflash_state {
    const pf_dflash *d;
    const pf_kernels *k;
    pf_pool *pool;
    /* the context's K/V (kv->len rows); a block's rows are written after them and dropped when
     * the block is done (kv->len does not move) */
    pf_kv_cache *kv;
    int rows;         /* scratch capacity in rows */
    pf_layer_scratch *sc; /* the layer's rows (engine/layer.h) */
    float *cu, *dyn, *hn, *logits; /* DFlash2's conv rows and dyn weights; the final norm; the head */
    /* selector scratch (v2) */
    float *g, *unary, *score, *succ, *ag, *pred_row;
    int32_t *cand;
    int last_B;
    const pf_draft_filter *filter; /* structured output (pf_dflash_set_filter), NULL: none */
    int n_proposed;
    pf_dist dist; /* v1 proposals when the caller keeps no q */
    /* head vocabulary (pf_dflash_set_head): the draft scores sub->n tokens instead of the whole
     * vocabulary; sub is the draft's shared default or own_head, NULL: the whole head */
    const head_subset *sub;
    head_subset own_head;
};


void dflash_head_free(head_subset *h);
/* A head of n rows: row i is row src_rows[i] of `out` (NULL: row i) and scores token ids[i],
 * packed as o says (the target's pf_load_opts). */
int dflash_head_rows(head_subset *h, const pf_weight *out, const int32_t *src_rows, const int32_t *ids, int n,
                     const pf_load_opts *o, char err[PF_ERR_LEN]);
/* The head over d's n most frequent tokens (1 <= n <= n_head_rank), ids ascending so that ties
 * resolve as in the full head. */
int dflash_head_build(head_subset *h, const pf_dflash *d, int n, char err[PF_ERR_LEN]);
void dflash_state_head_free(pf_dflash_state *s);
/* Scratch for R rows (R >= the internal chunk; grows for larger blocks). */
pf_rc dflash_ensure_rows(pf_dflash_state *s, int R, char *err); /* PF_RC_OK or PF_RC_OOM */
/* pf_linear through the state's scratch. */
void dflash_linear(pf_dflash_state *s, const pf_weight *W, const float *x, int64_t ldx, int B, float *y, int64_t ldy);
/* A sequence's rows in a pass of the draft's layers: rows r0..r0+B-1 of the pass's scratch, at
 * positions pos0.. of its own context cache kv. */
typedef struct {
    pf_kv_cache *kv;
    int64_t pos0;
    int r0, B;
} dflash_seq;

/* One pass of the draft's layers over the rows of one or more sequences (a state's block, a
 * state's context chunk, or several states' blocks at once, pf_dflash_propose_batch): the matmuls
 * take all rows together, reading the weights once; RoPE, the cache writes, attention and the
 * DFlash2 convolutions go sequence by sequence, so a sequence's rows get the bits they get alone.
 * Scratch: sc (rows), cu and dyn (DFlash2) of at least `rows` rows. */
typedef struct {
    const pf_dflash *d;
    const pf_kernels *k;
    pf_pool *pool;
    pf_layer_scratch *sc;
    float *cu, *dyn;
    const dflash_seq *seq;
    int n_seq, rows;
} dflash_pass;

/* The RoPE angles of every sequence's rows at their positions into sc->rope. */
void dflash_pass_rope(const dflash_pass *p);
/* One draft layer over the pass's block rows (the contexts are already cached, the rows' RoPE
 * angles are in sc->rope: dflash_pass_rope); their K/V go after each context and are dropped
 * when the block is done. */
void dflash_block_layer(const dflash_pass *p, int l);
/* The pass over state s's own scratch for one sequence of B rows at pos0 of its cache. */
dflash_pass dflash_state_pass(pf_dflash_state *s, dflash_seq *one, int B, int64_t pos0);

/* A proposal's steps (dflash_propose.c), shared by pf_dflash_propose and the batched
 * pf_dflash_propose_batch (dflash_batch.c). */
/* The arguments pf_dflash_propose cannot work with, reported. */
pf_rc dflash_check_propose(const pf_dflash_state *s, int32_t bonus, int B, int sampled, const pf_rng *rng,
                           const pf_dist *q, char err[PF_ERR_LEN]);
/* The embedding rows of a block [bonus, MASK x (B-1)] into x (B rows). */
void dflash_embed_block(const pf_dflash *d, int32_t bonus, int B, float *x);
/* The pass's layers over its rows (embedded in sc->x) and the final norm into hn. */
void dflash_pass_rows(const dflash_pass *p, float *hn);
/* The head s scores with (its subset's rows or the target's output) and its columns *NV. */
const pf_weight *dflash_state_head(const pf_dflash_state *s, int *NV);
/* logits (n rows of NV) = the trained output transform of W . hn rows (ldx n_embd). */
void dflash_head_logits(const dflash_pass *p, const pf_weight *W, const float *hn, int n, float *logits, int NV);
/* The drafts from a block's logits (and DFlash2's g rows) in s's scratch: v1 per row, v2 the
 * selector walk; sets last_B and n_proposed. */
void dflash_propose_rows(pf_dflash_state *s, int32_t bonus, int B, int NV, const pf_sampling *samp, pf_rng *rng,
                         int32_t *draft, pf_dist *q);

#endif
