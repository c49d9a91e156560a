/* Kernel families behind one dispatch table per SIMD level. Every SIMD entry has a scalar
 * reference (level PF_LEVEL_SCALAR) it is tested against.
 *
 * Batch invariance (architecture.md): every output element is reduced in the same order whatever
 * B and the thread count are. Matmuls split work by output rows only; a B-row gemm computes each
 * (row, output) pair with exactly the arithmetic of the 1-row case. */
#ifndef PF_KERNELS_H
#define PF_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "formats/ggml_types.h"
#include "kernels/cpu.h"
#include "kernels/kv_layout.h"
#include "kernels/pool.h"

struct pf_attn_job;

/* A weight matrix as stored in GGUF: `rows` outputs of `cols` inputs, row r at data + r*row_bytes.
 * packed, when not NULL, holds the same weights in the row-group layout of pf_pack_weight, which
 * the x86 quantized gemms (ARM64: the i8mm one, in its own layout) read instead of data (same
 * results, bit for bit). */
typedef struct {
    const void *data;
    uint32_t type;
    int64_t rows, cols;
    size_t row_bytes;
    const void *packed;
} pf_weight;

/* gemm: y[b*ldy + r] = dot(W row r, activation row b) for r in [r0, r1), b in [0, B).
 * Activation row b is at (const char *)act + b*act_stride, in the format of pf_act_prepare. */
typedef void (*pf_gemm_fn)(const pf_weight *W, const void *act, size_t act_stride, int B,
                           float *y, int64_t ldy, int64_t r0, int64_t r1);

typedef struct pf_kernels {
    pf_level level;
    const char *name;
    pf_gemm_fn gemm[PF_TYPE_MAX]; /* NULL where the type is unsupported */
    /* one row of floats -> q8 activation blocks (n multiple of 32) */
    void (*quantize_act)(const float *x, pf_block_q8_act *y, int64_t n);
    /* out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i], the sum of squares in double in float_order.h's
     * order; out may alias x */
    void (*rmsnorm)(const float *x, const float *w, int64_t n, float eps, float *out);
    /* out[i] = gate[i] / (1 + pf_exp_ref(-gate[i])) * up[i]; out may alias gate */
    void (*swiglu)(const float *gate, const float *up, float *out, int64_t n);
    /* softmax of x[0..n) in place: exp(x - max) by pf_exp_ref, the sum in double in float_order.h's
     * 16 partials, times (float)(1 / sum); all -inf: uniform */
    void (*softmax)(float *x, int64_t n);
    /* y = fmaf(a, x, y) for float y and f16 x (attention value accumulation) */
    void (*axpy_f16)(float a, const pf_half *x, float *y, int n);
    /* y[i] = x[i] rounded to f16 (nearest even), bitwise pf_fp32_to_fp16 (KV cache writes) */
    void (*f32_to_f16)(const float *x, pf_half *y, int64_t n);
    /* index of the first maximum of x[0..n), n >= 1, NaNs skipped (0 when x[0] is NaN): exactly
     * the scalar loop "if (x[i] > x[best]) best = i" (greedy decoding and verification) */
    int32_t (*argmax)(const float *x, int64_t n);
    /* index of the first x[i] > t in [0, n), n if none (a NaN is never above): scans for top-k */
    int64_t (*first_above)(const float *x, int64_t n, float t);
    /* Attention (kernels/attention.c splits the work; internal job type in kernels_impl.h): rows
     * b0 .. b0+nr-1 of KV head kvh in one pass (NULL: the level has no multi-row kernel), and all
     * query heads of KV head kvh for row b. Each returns 0 without touching anything when the
     * level does not take the shape; the caller then goes row by row, then to the scalar
     * reference (pf_attend_group_scalar). */
    int (*attend_rows)(const struct pf_attn_job *j, int b0, int nr, int kvh);
    int (*attend_group)(const struct pf_attn_job *j, int b, int kvh);
    /* 1 if the quantized gemms read pf_pack_weight's layout (so loaders pack, repack.c) */
    int reads_packed;
} pf_kernels;

/* Table for a level, or NULL if this CPU cannot run it. */
const pf_kernels *pf_kernels_get(pf_level level);
/* Table for pf_best_level(). */
const pf_kernels *pf_kernels_best(void);

/* Bytes of one prepared activation row for weights of `wtype` with `cols` inputs
 * (q8 activation blocks for quantized types, floats otherwise). */
size_t pf_act_row_bytes(uint32_t wtype, int64_t cols);
/* Convert B rows of floats (row b at x + b*ldx) into the activation format for `wtype`;
 * row b goes to act + b*pf_act_row_bytes(wtype, cols). Done once per row per matmul input. */
void pf_act_prepare(const pf_kernels *k, uint32_t wtype, const float *x, int64_t ldx, int B,
                    int64_t cols, void *act);
/* One row of it into act_row (pf_act_row_bytes(wtype, cols) bytes), the same bytes; records no
 * profile, so pool workers may prepare rows of their own in parallel. */
void pf_act_prepare_row(const pf_kernels *k, uint32_t wtype, const float *x, int64_t cols, void *act_row);
/* y[b*ldy + r] = W row r . x row b, for all rows, split over the pool by output rows. */
void pf_matmul(const pf_kernels *k, pf_pool *pool, const pf_weight *W, const void *act, int B,
               float *y, int64_t ldy);
/* n matmuls over the same prepared activations (every W[i] of one type and width), in one pool
 * run: y[i] rows (ldy[i]) = W[i] . act rows. Each result equals pf_matmul's, bitwise. */
void pf_matmul_n(const pf_kernels *k, pf_pool *pool, int n, const pf_weight *const *W, const void *act, int B,
                 float *const *y, const int64_t *ldy);

/* Packed weights (kernels/repack.c). The x86 quantized gemms (AVX2, AVX-VNNI, AVX-512) work on
 * groups of 16 consecutive rows, one row per 32-bit lane (256-bit levels: two halves of 8 lanes);
 * in the GGUF layout every block of a group needs a register transpose and a gather of its scales.
 * Packed, a group's block k is one run of
 * [16 f16 scales d][16 f16 minimums m (Q4_1)][quant bytes as dword columns: column j holds dword j
 * of the 16 rows' quants] and groups follow each other (the last one padded with zero rows), so a
 * block is a few aligned loads. 1 if type (Q8_0, Q4_0, Q4_1) can be packed and kernels k read
 * packed weights. */
int pf_pack_wanted(const pf_kernels *k, uint32_t type);
/* Bytes of W in the packed layout. */
size_t pf_packed_bytes(const pf_weight *W);
/* Write W's weights into dst (pf_packed_bytes(W) bytes, 64-byte aligned) in the packed layout. */
void pf_pack_weight(const pf_weight *W, void *dst);
/* Blocks [k0, k0 + nk) of row group g (rows 16g .. 16g+15) in the packed layout (nk * 16 * block
 * bytes at dst): what pf_pack_weight writes there, for kernels that pack a GGUF-layout group on
 * the fly. */
void pf_pack_group(const pf_weight *W, int64_t g, int64_t k0, int64_t nk, void *dst);
/* The ARM64 i8mm gemm's packed layout (kernels/arm/repack_i8mm.c: groups of 4 rows, SMMLA row
 * pairs interleaved), what pf_packed_bytes / pf_pack_weight give on an ARM64 build. */
size_t pf_packed_bytes_i8mm(const pf_weight *W);
void pf_pack_weight_i8mm(const pf_weight *W, void *dst);

/* Qwen3's QK-norm: RMSNorm of each of n_heads heads of hd floats in place, with the same weight w. */
void pf_rmsnorm_heads(const pf_kernels *k, float *x, int n_heads, int hd, const float *w, float eps);

/* NEOX RoPE (rotate-half pairs (i, i+hd/2), angle pos * theta^(-2i/hd)) applied in place to
 * n_heads heads of hd floats. Angles are computed in double precision. */
void pf_rope_neox(float *x, int n_heads, int hd, int64_t pos, float theta);
/* The same in two steps, so the angles of a position are computed once for every layer and
 * both q and k: cs[0..hd/2) = cos, cs[hd/2..hd) = sin of the angles (as floats) of pos;
 * pf_rope_neox_cs then rotates exactly as pf_rope_neox does (bitwise the same results). */
void pf_rope_angles(int hd, int64_t pos, float theta, float *cs);
void pf_rope_neox_cs(float *x, int n_heads, int hd, const float *cs);

/* The query rounding the 8-bit attention applies to each (row, head) before its integer dot
 * products with the keys: the same rule as the cache (*qs = max |q| / 127), *qsum = sum of q8. */
void pf_attn_quantize_q(const float *q, int hd, int8_t *q8, float *qs, int32_t *qsum);

/* One layer's KV cache as attention reads it (its layouts: kernels/kv_layout.h): keys and values
 * of each of n_kv_head heads at + h * head_stride; PF_KV_F16 reads k, v, PF_KV_Q8 reads k8, v8 and the scales ks, vs
 * (head h at + h * scale_stride). */
typedef struct {
    pf_kv_type type;
    const pf_half *k, *v;
    const uint8_t *k8;
    const int8_t *v8;
    const float *ks, *vs;
    int64_t head_stride, scale_stride;
    int n_kv_head, head_dim;
} pf_kv_view;

/* B query rows of one attention call: row b at q + b*ldq, n_head heads of the view's head_dim,
 * at position pos0 + b; it sees key j < n_keys iff (!causal || j <= pos0 + b) and
 * (window == 0 || pos0 + b - j < window). Output row b at out + b*ldo (must not alias q or the
 * cache). */
typedef struct {
    const float *q;
    int64_t ldq;
    int B, n_head;
    int64_t pos0, n_keys;
    int causal;
    int64_t window;
    float *out;
    int64_t ldo;
} pf_attn_rows;

/* Attention of rows over the cache of one layer. Query head h reads KV head
 * h / (n_head/n_kv_head). Scale 1/sqrt(head_dim). Work split over (row, KV head) pairs. Over the
 * 8-bit cache a score is ((q8 . k8) * qs) * ks * scale with the query rounded by
 * pf_attn_quantize_q (exact integer dot products); values are weighted by p * vs. */
void pf_attention(const pf_kernels *k, pf_pool *pool, const pf_kv_view *kv, const pf_attn_rows *rows);

/* The scalar level's softmax (pf_kernels.softmax), which every level computes bit for bit. */
void pf_softmax(float *x, int64_t n);

#endif
