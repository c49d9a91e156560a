/* DFlash / DFlash2 block drafts (docs/dflash-format.md): a small Qwen3-style transformer without its own
 * embedding or head. It reads the target's tapped residual rows as context (fused by `fc`, turned
 * into per-layer K/V once and cached), then fills a block [bonus, MASK x (B-1)] in ONE non-causal
 * forward and projects rows 1..B-1 with the target's output head. DFlash2 adds a short causal conv
 * around every sublayer and a low-rank candidate selector walked left to right.
 *
 * The draft's hidden size must equal the target's: its rows go through the target's head and its
 * input rows are the target's embedding rows, unless the file carries its own token_embd.weight and
 * output.weight (a reduced vocabulary maps its rows to target ids with d2t, as llama.cpp's loader
 * reads it). dflash.logit_scale / final_logit_softcapping / embedding_scale are applied; the parts
 * of llama.cpp's dflash format not implemented here (DSpark, DeepSeek-V4, attention sinks) are
 * refused by name at load. */
#ifndef PF_DFLASH_H
#define PF_DFLASH_H

#include <stdbool.h>
#include <stdint.h>

#include "draft/drafter.h"
#include "engine/model.h"
#include "engine/sampler.h"
#include "formats/gguf.h"
#include "kernels/kernels.h"

typedef struct pf_dflash pf_dflash; /* weights of a dflash GGUF; borrows the target's token_embd and output head */

/* Load and validate against the target (hidden size, fc width = n_taps * target hidden, tapped
 * layers within the target's depth, mask id and selector vocabulary within the target's vocabulary).
 * path is a draft GGUF or a .pfb bundle that holds a draft (pfb_model_open; the draft keeps the
 * bundle open). Errors are one line naming the file and the field. The target must outlive the
 * draft. Into *out: PF_RC_OK, or with err PF_RC_IO (the path cannot be opened or mapped),
 * PF_RC_FORMAT (truncated, malformed, unsupported, not a draft of this target), PF_RC_OOM. */
pf_rc pf_dflash_open(const char *path, const pf_model *target, pf_dflash **out, char err[PF_ERR_LEN]);
/* pf_dflash_open for callers that need no kind (tools, tests): NULL with err. */
pf_dflash *pf_dflash_load(const char *path, const pf_model *target, char err[PF_ERR_LEN]);
/* Over an already parsed file into *out; takes ownership of f when own_file (closed on failure
 * too). PF_RC_OK, or PF_RC_FORMAT / PF_RC_OOM with err. */
pf_rc pf_dflash_from_gguf(gguf_file *f, int own_file, const pf_model *target, pf_dflash **out, char err[PF_ERR_LEN]);
void pf_dflash_free(pf_dflash *d);

int pf_dflash_block_size(const pf_dflash *d); /* dflash.block_size (trained B) */
/* The file the weights were built over (for what it carries beside them, such as a Dec head). */
const gguf_file *pf_dflash_file(const pf_dflash *d);
/* A draft file's trained block, dflash.block_size (2..4096), without loading it: 0, or -1 with err
 * (not a draft, no or a bad block size). */
int pf_dflash_read_block(const gguf_file *f, int *block, char err[PF_ERR_LEN]);
int pf_dflash_version(const pf_dflash *d);    /* 1 = DFlash, 2 = DFlash2 (conv + selector present) */
/* Target layers whose residual rows the draft needs, as 0-based "after layer L" indices for
 * pf_batch.tap_layers (dflash.target_layers stores L+1: the INPUT of layer L+1 = the output of L). */
const int *pf_dflash_tap_layers(const pf_dflash *d, int *n_taps);
int32_t pf_dflash_mask_token(const pf_dflash *d);
int pf_dflash_n_layer(const pf_dflash *d);
int pf_dflash_n_embd(const pf_dflash *d);   /* == the target's hidden size */
int pf_dflash_kv_dim(const pf_dflash *d);   /* head_count_kv * key_length of the draft */
int pf_dflash_selector_top_k(const pf_dflash *d); /* 0 for DFlash v1 */
bool pf_dflash_causal(const pf_dflash *d);  /* dflash.attention.causal */
/* Sliding window of draft layer l (0 = full attention). */
int64_t pf_dflash_layer_window(const pf_dflash *d, int l);

typedef struct pf_dflash_state pf_dflash_state; /* per generation: per-layer context K/V cache, scratch */

/* n_ctx: positions the context cache holds (context rows plus the block being drafted must fit).
 * pool: borrowed, may be NULL (single thread); k NULL selects the best kernels for this CPU. */
pf_dflash_state *pf_dflash_state_new(const pf_dflash *d, int64_t n_ctx, pf_pool *pool, const pf_kernels *k,
                                     char err[PF_ERR_LEN]);
void pf_dflash_state_free(pf_dflash_state *s);
void pf_dflash_reset(pf_dflash_state *s); /* context length back to 0 */
int64_t pf_dflash_context_len(const pf_dflash_state *s);
/* Context length back to len (<= the current length): a length change, no copy. */
void pf_dflash_truncate(pf_dflash_state *s, int64_t len);

/* Append n committed positions: taps = n rows of n_taps*Ht floats (the layout pf_batch.taps
 * produces: row b, tap t at (b*n_taps+t)*Ht), at positions context_len .. context_len+n-1:
 * ctx = rmsnorm(fc @ feat)*enc.output_norm, then per draft layer K = rope(k_norm(attn_k @ ctx), pos),
 * V = attn_v @ ctx, appended to that layer's f16 cache. Row for row the same arithmetic whatever
 * n is and however the rows are split over calls. PF_RC_OK, or (cache unchanged) PF_RC_CONTEXT when the
 * rows do not fit, PF_RC_ARG for bad rows, PF_RC_OOM, with err. */
pf_rc pf_dflash_append_context(pf_dflash_state *s, const float *taps, int n, char err[PF_ERR_LEN]);

/* One non-causal block forward of B rows [bonus, MASK x (B-1)] at positions start = context_len ..
 * start+B-1 (block K/V are written after the context for attention, then dropped: the context
 * length is unchanged afterwards). Needs context_len + B <= n_ctx.
 * Writes B-1 draft tokens draft[k-1] for positions start+k, k = 1..B-1.
 * Greedy (samp == NULL or samp->temp <= 0): DFlash v1 = argmax of the target head on draft row k
 * (lowest id among ties); DFlash2 = selector walk argmax (docs/dflash-format.md; first candidate among ties).
 * Sampled: v1 draws draft[k-1] from q_k = pf_sampling_probs(samp, row-k logits) independently per
 * row; v2 draws from softmax(score/T) over the selector's top-k candidates given the previous token
 * (top_k / top_p of samp are not applied to the selector). rng is required when sampling.
 * If q != NULL, q[k-1] receives the exact distribution draft[k-1] was drawn from (greedy: a point
 * mass); every q[i] must have been pf_dist_init'ed with cap >= the target's vocabulary.
 * If hidden != NULL it receives the B final-normed draft rows, row b at hidden + b*n_embd (row 0
 * is the bonus row). B may be any value >= 2 that fits, not only the trained block size. PF_RC_OK, or
 * PF_RC_CONTEXT (the block does not fit), PF_RC_ARG (a bad bonus, q or no rng), PF_RC_OOM with err. */
pf_rc pf_dflash_propose(pf_dflash_state *s, int32_t bonus, int B, const pf_sampling *samp, pf_rng *rng,
                      int32_t *draft, pf_dist *q, float *hidden, char err[PF_ERR_LEN]);

/* One state's block in a batched proposal: pf_dflash_propose's arguments for it. */
typedef struct {
    pf_dflash_state *s;
    int32_t bonus;
    int B;
    const pf_sampling *samp;
    pf_rng *rng;
    int32_t *draft;
    pf_dist *q;
    float *hidden;
} pf_dflash_block;

typedef struct pf_dflash_batch pf_dflash_batch; /* the scratch of batched proposals over one draft */

/* Scratch for batched proposals of draft d (grows with the rows asked for); NULL when out of memory. */
pf_dflash_batch *pf_dflash_batch_new(const pf_dflash *d);
void pf_dflash_batch_free(pf_dflash_batch *b);
/* pf_dflash_propose for n states of b's draft (distinct, with the same kernels; the first one's
 * pool runs it) in ONE forward over all their blocks' rows: every matmul, the head included,
 * reads the draft's weights once for all rows, while embedding, RoPE, the DFlash2 convolutions
 * and attention over each state's own context go state by state. Each state's drafts, q, hidden
 * rows, last logits and selector are bitwise those pf_dflash_propose gives it alone. PF_RC_OK,
 * or pf_dflash_propose's codes (the first state that fails, named in err), or PF_RC_ARG for
 * states of another draft or kernels. */
pf_rc pf_dflash_propose_batch(pf_dflash_batch *b, const pf_dflash_block *blk, int n, char err[PF_ERR_LEN]);

/* Structured output: with a filter (draft/drafter.h) each position's logits (DFlash) or selector
 * candidates (DFlash2) are restricted to the allowed tokens (q is then that restricted
 * distribution), and the block ends where none of them is allowed. NULL: no filter. */
void pf_dflash_set_filter(pf_dflash_state *s, const pf_draft_filter *f);
/* Drafts the last propose made (B-1 without a filter). */
int pf_dflash_n_proposed(const pf_dflash_state *s);

/* ---- inspection (tests, tools) ---- */
/* Position pos of layer l's context cache, keys (keys != 0) or values, as one f16 row of kv_dim;
 * valid for pos < context_len. */
void pf_dflash_cache_row(const pf_dflash_state *s, int layer, int keys, int64_t pos, pf_half *row);
/* Logits of draft rows 1..B-1 of the last propose: row k-1 at + (k-1)*n_vocab. *n_rows = B-1. */
const float *pf_dflash_last_logits(const pf_dflash_state *s, int *n_rows);

/* Draft-head vocabulary. A draft may rank token ids by training frequency (dflash.head_tokens,
 * with a default count dflash.head_vocab); its head can then score only the n most frequent
 * instead of the whole vocabulary (the head is the target's output matrix, most of a draft pass
 * for a 65,536-token vocabulary). Proposals then come from those tokens only; speculation stays
 * lossless (the target verifies every token, and a sampled draft's q is its own distribution).
 * pf_dflash_set_head: n = 0 the whole vocabulary (the default of a new state), n < 0 the draft's
 * default (0 when it ranks nothing), else 1..ranked (DFlash2: at least its selector's top-k);
 * PF_RC_OK, or PF_RC_ARG (n out of range) / PF_RC_OOM with err.
 * With a subset, pf_dflash_last_logits rows have pf_dflash_head() columns, for the token ids
 * *ids (ascending); the values are those the whole head gives these tokens. */
int pf_dflash_head_default(const pf_dflash *d); /* dflash.head_vocab, 0 without ranked tokens */
int pf_dflash_head_ranked(const pf_dflash *d);  /* entries of dflash.head_tokens (0: none) */
pf_rc pf_dflash_set_head(pf_dflash_state *s, int n, char err[PF_ERR_LEN]);
int pf_dflash_head(const pf_dflash_state *s, const int32_t **ids); /* columns (0: the whole vocabulary) */
/* DFlash2, last propose: for draft row k (1..B-1), the top-k candidates cand[(k-1)*top_k + j]
 * (by decreasing logit, ties by id) and their scores given the previous token of the walk
 * score[(k-1)*top_k + j]. Returns top_k, or 0 for a v1 draft / before any propose. */
int pf_dflash_last_selector(const pf_dflash_state *s, const int32_t **cand, const float **score);

#endif
