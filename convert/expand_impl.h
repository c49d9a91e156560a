/* Function-preserving expansion (convert/expand.h): what the shared building blocks (expand.c),
 * the target's expansion (expand_target.c) and the drafts' (expand_draft.c) have in common.
 * Internal to convert/. */
#ifndef PF_EXPAND_IMPL_H
#define PF_EXPAND_IMPL_H

#include "convert/expand.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draft/dflash.h"
#include "engine/rng.h"
#include "engine/tokenizer.h"
#include "formats/ggml_types.h"
#include "formats/quant.h"
#include "convert/requantize.h"

/* Index maps from a big dimension to the small one: i >= 0 is the source index. */
enum { MAP_RANDOM = -1, MAP_ZERO = -2 };

#define GUARD_A 8192.0f    /* exact in f16; Q4_1 stores it as the block minimum, Q8_0 as 127*d */
#define PROBE_TOKENS 64

/* Tensors of the output file: the writer keeps their data until it has written them. */
typedef struct {
    gguf_writer *w;
    int oom;
} sink;

/* Maps of one layer between a small and a big configuration (the target's or a draft's). */
typedef struct {
    int H, Hd, hd;         /* hidden small / big, head size (both) */
    int nh, nkv, F;        /* small */
    int nh_d, nkv_d, F_d;  /* big */
    int guard;             /* -1 or the guard dim */
    int32_t *hid_in, *hid_out, *q_rows, *o_cols, *kv_rows, *ff_rows, *ff_cols, *ff_rand, *hid_rand, *q_rand, *kv_rand;
} layer_maps;

void *expand_own(sink *s, void *p);
/* Matrix [rows, cols] (GGUF dims {cols, rows}) stored as `type`; takes ownership of data. */
void expand_emit_matrix(sink *s, const char *name, float *data, int64_t rows, int64_t cols, uint32_t type);
void expand_emit_f32(sink *s, const char *name, float *data, uint32_t n_dims, const int64_t *ne);
/* dst[i][j] = 0 where either map is MAP_ZERO, src[r][c] * scale where both map to the source,
 * random (std) otherwise. src may be NULL (nothing maps to it). */
float *expand_build_matrix(const int32_t *rmap, int64_t rows, const int32_t *cmap, int64_t cols, const float *src,
                           int64_t src_cols, float scale, float std, pf_rng *rng);
int32_t *expand_map_new(int64_t n, int64_t n_src, int32_t extra);
/* A source tensor of exactly n values as floats (any type the dequantizer reads) into *out:
 * PF_RC_OK, or with err PF_RC_FORMAT (missing, another size, a type without a dequantizer) /
 * PF_RC_OOM. */
pf_rc expand_read_f32(const gguf_file *f, const char *name, int64_t n, float **out, char *err);
bool expand_output_type_ok(uint32_t t);
/* tokenizer.ggml.tokens / token_type / scores padded to n_vocab with unused (type 5) tokens
 * "[PAD<id>]": encoding never produces them (engine/tokenizer.c leaves type 5 out of its table).
 * A file without tokens gets none. PF_RC_FORMAT when it has more than n_vocab; PF_RC_OOM. */
pf_rc expand_pad_tokenizer(gguf_writer *w, const gguf_file *f, int64_t n_vocab, char *err);
bool expand_skip_target_key(const char *k);
bool expand_skip_draft_key(const char *k);
void expand_write_name(gguf_writer *w, const gguf_file *f, const pf_synth_shape *d, const char *fallback);
void expand_maps_free(layer_maps *m);
int expand_maps_init(layer_maps *m);
/* Norm vector of the hidden size: small dims scaled, guard 0 (never read), other extra dims 1. */
float *expand_hidden_norm(const float *src, const layer_maps *m, float scale, pf_rng *rng);
/* Layer l of the big model: from source layer l of `f` (prefix "blk.%d.") when f != NULL, else an
 * extra layer (random weights, zero attn_output and ffn_down). PF_RC_OK, PF_RC_FORMAT (f lacks a
 * tensor or has it at another size) or PF_RC_OOM. */
pf_rc expand_write_layer(sink *s, const gguf_file *f, int l, const layer_maps *m, float norm_scale, float qk_scale,
                         uint32_t type, pf_rng *rng, char *err);
double expand_max_abs(const float *v, int n);
/* u_G needed so that A*u_G exceeds twice the logit bound plus 100 nats, sized (times the margin)
 * for the largest residual measured; returned as the output_norm weight at the guard. */
float expand_guard_weight(const pf_expand_info *in, double logit_bound, const pf_synth_shape *d);
/* The q/k rows are scaled by sqrt(H/H') so the QK-norm sees the scaled eps exactly, unless that
 * would re-round stored weights (a non-power-of-two scale into f16, bf16 or a block format): a
 * quantized block scaled by 0.65 changes by up to 1 part in 2^11, far more than the QK-norm's
 * eps*(1 - H/H') / mean(q^2) that leaving them alone costs. */
float expand_qk_scale_for(const pf_expand_opts *o, float norm_scale);
/* The small target at path into *m: pf_model_open's kinds, PF_RC_FORMAT for a bundle, PF_RC_ARG
 * when d cannot hold it (pf_expand_check). */
pf_rc expand_open_target(const char *path, const pf_synth_shape *d, pf_model **m, char *err);

#endif
