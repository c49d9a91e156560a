/* Function-preserving expansion of a small Qwen3 target (and its DFlash / DFlash2 drafts) to a
 * larger shape, by default MNN-Pocket-0.3B's (28 layers, hidden 896, FFN 2560, 14/2 heads of 64,
 * vocabulary 65,536): the "Pocket-shape stand-in". The expanded model computes the small model's
 * function (greedy tokens identical, real-token logits equal up to float rounding and, when tied,
 * a uniform shift) with exactly the big shape's compute, so speed measured on it is the speed of a
 * Pocket-shape model running a trained model's acceptance.
 *
 * Construction (every "random" entry only ever meets a zero activation or a zero weight):
 *  - layers: the small layers first (tapped-layer indices keep their meaning), then extra layers
 *    with random weights and zero attn_output / ffn_down;
 *  - hidden: small dims first, extra dims zero in the residual stream (zero embedding columns,
 *    zero attn_output / ffn_down rows); hidden RMSNorm weights of the small dims scaled by
 *    sqrt(H/H') and the stored eps by H/H', so x / sqrt(mean(x^2) + eps) * w is the small model's
 *    exactly (up to rounding); q/k projection rows scaled by sqrt(H/H') so the per-head QK-norm,
 *    which shares that eps but is not widened, is exact too;
 *  - heads: small query head h of KV group j = h / g goes to slot j*g' + h % g of the big model
 *    (g, g' = query heads per KV head), new heads and heads of new KV groups get random q/k/v and
 *    zero attn_output columns;
 *  - FFN: extra gate/up rows random, extra ffn_down columns zero;
 *  - vocabulary: a guard dimension G = H (the first extra hidden dim) carries a constant c in every
 *    real token's embedding row; no layer reads it (norm weight 0) or writes it; the final
 *    output_norm weight at G is large, so u_G > 0 after the final norm, and every extra token's
 *    output row is -A at G and zero elsewhere: its logit is -A*u_G, far below every real logit.
 *    Tied heads shift every real logit by the same c*u_G (softmax and argmax invariant).
 *    The tokenizer is padded with unused (type 5) tokens "[PAD<id>]" that encoding never produces.
 *  - drafts: the same maps (their own layer count; heads and FFN follow the target's when the
 *    draft used the small target's, else are kept), fc rows for extra dims zero and the guard
 *    column of every tap zero, the conv's dynamic rows re-indexed to the same channel groups,
 *    selector_hidden columns for extra dims zero (the final-normed row is u_G there), selector
 *    tables padded with zero rows. */
#ifndef PF_EXPAND_H
#define PF_EXPAND_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/hparams.h"
#include "convert/synth.h"
#include "formats/gguf.h"

typedef struct {
    pf_synth_shape shape; /* the big shape (shape.name is informational) */
    uint32_t type;        /* matrices of the outputs: f32, f16, bf16, q8_0, q4_0, q4_1 (norms stay f32) */
    uint64_t seed;        /* the random entries; the same seed writes the same files */
    bool keep_eps;        /* store the source eps unchanged (effective eps grows by H'/H) instead of
                           * scaling it; for measuring that choice only */
} pf_expand_opts;

/* What a target expansion decided and measured; the draft expansion needs it. */
typedef struct {
    pf_hparams src;          /* the small target */
    bool tied;
    int guard;               /* hidden index of the guard dimension, -1 when the vocabulary is unchanged */
    float guard_c;           /* guard value in real tokens' embedding rows, as stored */
    float guard_a;           /* A: extra tokens' output rows hold -A at the guard */
    float guard_w;           /* the target's output_norm weight at the guard */
    float norm_scale;        /* sqrt(H/H') */
    float eps;               /* the eps stored in the expanded target */
    double e_rms;            /* rms of the small model's real embedding rows */
    double rho;              /* largest rms of the small target's final residual rows on a probe */
    double rho_min;          /* smallest one */
    double out_row_max;      /* largest L2 norm of a real output row (small dims) */
    double logit_bound;      /* |real logit - shift| <= this for every input (sqrt(H) max|w| out_row_max) */
    double guard_gap;        /* A*u_G - logit_bound on the probe's largest residual: the least margin */
    double shift_max;        /* c*u_G at the probe's smallest residual (tied only, else 0) */
    double norm_perturb;     /* c^2 / (2 min ||embedding row||^2): the guard's relative effect on a norm */
} pf_expand_info;

/* Margin of the guard: u_G is sized for a final residual this many times larger than measured. */
#define PF_EXPAND_GUARD_MARGIN 1e4

/* Can `dst` hold a model of hyper-parameters `src` function-preservingly? 0, or -1 with a one-line
 * reason (head_dim differs, a dimension shrinks, fewer query heads per KV head, no room for the
 * guard, dims not multiples of 32). */
int pf_expand_check(const pf_hparams *src, const pf_synth_shape *dst, char err[PF_ERR_LEN]);
/* Big query-head slot of small head h (g, g_dst: query heads per KV head). */
int pf_expand_head_slot(int h, int g, int g_dst);
/* GGUF dims (innermost first) of target tensor `name` in the expanded file. Returns n_dims, or 0 if
 * `name` is not a tensor of a qwen3 target of that shape (output.weight only when untied). */
int pf_expand_tensor_shape(const pf_synth_shape *dst, bool tied, const char *name, int64_t ne[4]);

/* Expand the qwen3 GGUF at `in` into `out` (temporary file renamed into place). info may be NULL.
 * PF_RC_OK, or with err the reader's kinds for the input (PF_RC_IO, PF_RC_FORMAT, PF_RC_OOM),
 * PF_RC_ARG (a shape or type the input cannot be expanded to), the writer's for out. */
pf_rc pf_expand_target(const char *in, const char *out, const pf_expand_opts *o, pf_expand_info *info,
                       char err[PF_ERR_LEN]);
/* Expand a dflash draft made for the small target at `small_target` (validated against it), with
 * the info its target's expansion returned and the same options; pf_expand_target's kinds. */
pf_rc pf_expand_draft(const char *in, const char *small_target, const char *out, const pf_expand_opts *o,
                      const pf_expand_info *info, char err[PF_ERR_LEN]);

#endif
