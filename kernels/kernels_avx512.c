/* AVX-512 (F, BW, VL, DQ, VNNI) kernels.
 *
 * gemm: each weight block is loaded and decoded once per chunk of up to NB_MAX activation rows;
 * every activation row b has its own accumulators and the per-b code is identical whatever the
 * chunk size, so output (r, b) is bitwise the same for B = 1 and B = 16 and for any row split.
 *   float weights (F32/F16/BF16 -> f32): two 16-lane accumulators over alternating 16-column
 *     chunks (the last one masked), then one fixed horizontal sum.
 *   quantized: pairs of blocks fill a 512-bit register (block k in lanes 0..7, block k+1 in
 *     lanes 8..15; an odd last block pairs with zeros). Q4 nibbles are laid out low half / high
 *     half to match the activation's 32 bytes; VNNI vpdpbusd (u8 x s8, exact int32) gives 8
 *     partial sums per block, converted and fma'd with d_w * x.d broadcast per block. The
 *     m_w * x.s terms (Q4_1 minimum, m_w = -8 d_w for Q4_0) accumulate by fma in a separate
 *     128-bit sum (even blocks lane 0, odd lane 1) added after the 16-lane reduction. The
 *     activation rows are first repacked per pair (64 bytes of q, d broadcast, s) so the inner
 *     loop takes them as aligned memory operands. No gathers: they are microcoded and slow
 *     (~40 cycles each on the Zen 4 here).
 *     Q8_0 x q8 is signed x signed: |w| is the unsigned operand and x gets w's sign (x is never
 *     -128; |w| = 128 as unsigned is fine). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "formats/quant.h"
#include "kernels/kernels_impl.h"
#include "kernels/simd_avx512.h"

#define NB_MAX 8
#define ROW_TILE 32 /* weight rows per tile in the float gemm */
#define PF_DIST 1024 /* weight prefetch distance, bytes */

/* ---- float-weight gemm ---- */

PF_FORCE_INLINE __m512 wload16(uint32_t wt, const void *w, int64_t i) {
    if (wt == PF_TYPE_F32) return _mm512_loadu_ps((const float *)w + i);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + i));
    if (wt == PF_TYPE_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

PF_FORCE_INLINE __m512 wload16_mask(uint32_t wt, const void *w, int64_t i, __mmask16 m) {
    if (wt == PF_TYPE_F32) return _mm512_maskz_loadu_ps(m, (const float *)w + i);
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)w + i);
    if (wt == PF_TYPE_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

PF_FORCE_INLINE void fdot_rows(uint32_t wt, const void *w, int64_t n, const float *const *x,
                               float *out, int NB) {
    size_t es = wt == PF_TYPE_F32 ? 4 : 2;
    __m512 acc0[NB_MAX], acc1[NB_MAX];
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) acc0[b] = acc1[b] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        _mm_prefetch((const char *)w + (size_t)i * es + PF_DIST, _MM_HINT_T0);
        __m512 w0 = wload16(wt, w, i), w1 = wload16(wt, w, i + 16);
#pragma GCC unroll 8
        for (int b = 0; b < NB; b++) {
            acc0[b] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x[b] + i), acc0[b]);
            acc1[b] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x[b] + i + 16), acc1[b]);
        }
    }
    for (int c = 0; i < n; c++, i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 wv = wload16_mask(wt, w, i, m);
#pragma GCC unroll 8
        for (int b = 0; b < NB; b++) {
            __m512 xv = _mm512_maskz_loadu_ps(m, x[b] + i);
            if (c == 0)
                acc0[b] = _mm512_fmadd_ps(wv, xv, acc0[b]);
            else
                acc1[b] = _mm512_fmadd_ps(wv, xv, acc1[b]);
        }
    }
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) out[b] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[b], acc1[b]));
}

/* Rows go in tiles of ROW_TILE: each chunk of NB_MAX activation rows stays in L1 while the tile's
 * weight rows (in L2 after the first chunk) pass over it. */
PF_FORCE_INLINE void gemm_float(uint32_t wt, const pf_weight *W, const void *act, size_t stride,
                                int B, float *y, int64_t ldy, int64_t r0, int64_t r1) {
    for (int64_t rt = r0; rt < r1; rt += ROW_TILE) {
        int64_t re = rt + ROW_TILE < r1 ? rt + ROW_TILE : r1;
        for (int b0 = 0; b0 < B; b0 += NB_MAX) {
            int nb = B - b0 < NB_MAX ? B - b0 : NB_MAX;
            const float *x[NB_MAX];
            for (int b = 0; b < nb; b++)
                x[b] = (const float *)((const char *)act + (size_t)(b0 + b) * stride);
            for (int64_t r = rt; r < re; r++) {
                const void *w = (const char *)W->data + (size_t)r * W->row_bytes;
                float out[NB_MAX] = {0};
                switch (nb) {
                case 1: fdot_rows(wt, w, W->cols, x, out, 1); break;
                case 2: fdot_rows(wt, w, W->cols, x, out, 2); break;
                case 3: fdot_rows(wt, w, W->cols, x, out, 3); break;
                case 4: fdot_rows(wt, w, W->cols, x, out, 4); break;
                case 5: fdot_rows(wt, w, W->cols, x, out, 5); break;
                case 6: fdot_rows(wt, w, W->cols, x, out, 6); break;
                case 7: fdot_rows(wt, w, W->cols, x, out, 7); break;
                default: fdot_rows(wt, w, W->cols, x, out, 8); break;
                }
                for (int b = 0; b < nb; b++) y[(b0 + b) * ldy + r] = out[b];
            }
        }
    }
}

static void gemm_f32(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                     int64_t ldy, int64_t r0, int64_t r1) {
    gemm_float(PF_TYPE_F32, W, act, stride, B, y, ldy, r0, r1);
}
static void gemm_f16(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                     int64_t ldy, int64_t r0, int64_t r1) {
    gemm_float(PF_TYPE_F16, W, act, stride, B, y, ldy, r0, r1);
}
static void gemm_bf16(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                      int64_t ldy, int64_t r0, int64_t r1) {
    gemm_float(PF_TYPE_BF16, W, act, stride, B, y, ldy, r0, r1);
}

/* ---- quantized gemm ---- */

#define XB ((int)sizeof(pf_block_q8_act)) /* 40 */
/* Per pair of activation blocks in the repacked row: qs[64] | xd broadcast [16 floats] | xs[4]. */
#define PAIR_QS 64
#define PAIR_XD 64
#define PAIR_XS 16
/* Stack scratch for repacked activation rows: 16 rows of 3072 columns fit, so a verify pass of
 * up to 16 rows streams each weight row from memory once. */
#define SCRATCH_BYTES (128 * 1024)
#define QROW_TILE 32 /* weight rows per tile in the quantized gemm */

static inline uint32_t load_u32(const void *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint16_t load_u16(const void *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* A chunk of activation rows as the pair kernel reads them: either repacked (SoA per pair, the
 * fast path) or the original q8 blocks. Both feed the same values to the same float ops, so the
 * result does not depend on which one is used. */
typedef struct {
    const uint8_t *base; /* row b at base + b * stride: repacked, or the original q8 blocks */
    size_t stride;
    int64_t npair;
} act_rows;
#define AR_ROW(ar, b) ((ar)->base + (size_t)(b) * (ar)->stride)

/* Repacked row layout: [npair x 64 qs][npair x 16 floats d broadcast][npair x 4 floats s]. */
static size_t packed_row_bytes(int64_t npair) {
    return ((size_t)npair * (PAIR_QS + PAIR_XD + PAIR_XS) + 63) / 64 * 64;
}

PF_NOIPA static void repack_row(const pf_block_q8_act *x, int64_t nblk, uint8_t *dst) {
    int64_t npair = (nblk + 1) / 2;
    uint8_t *qs = dst;
    float *xd = (float *)(dst + npair * PAIR_QS), *xs = (float *)(dst + npair * (PAIR_QS + PAIR_XD));
    for (int64_t p = 0; p < npair; p++) {
        const pf_block_q8_act *a = x + 2 * p, *b = 2 * p + 1 < nblk ? a + 1 : NULL;
        __m256i qa = _mm256_loadu_si256((const __m256i *)a->qs);
        __m256i qb = b ? _mm256_loadu_si256((const __m256i *)b->qs) : _mm256_setzero_si256();
        _mm512_store_si512(qs + p * PAIR_QS, _mm512_inserti64x4(_mm512_castsi256_si512(qa), qb, 1));
        __m512 d = _mm512_mask_broadcastss_ps(_mm512_set1_ps(a->d), 0xff00,
                                              _mm_set_ss(b ? b->d : 0.0f));
        _mm512_store_ps(xd + p * 16, d);
        _mm_store_ps(xs + p * 4, _mm_setr_ps(a->s, b ? b->s : 0.0f, 0.0f, 0.0f));
    }
}

/* Activation operands of pair p for row b: qs (64 bytes), d broadcast per block, [s_k, s_k1, 0, 0]. */
PF_FORCE_INLINE __m512i act_qs(const act_rows *ar, int packed, int b, int64_t p, int full) {
    if (packed) return _mm512_load_si512(AR_ROW(ar, b) + p * PAIR_QS);
    const uint8_t *xk = AR_ROW(ar, b) + (size_t)(2 * p) * XB + 8;
    __m256i a = _mm256_loadu_si256((const __m256i *)xk);
    return full ? _mm512_inserti64x4(_mm512_castsi256_si512(a),
                                     _mm256_loadu_si256((const __m256i *)(xk + XB)), 1)
                : _mm512_inserti64x4(_mm512_setzero_si512(), a, 0);
}

PF_FORCE_INLINE __m512 act_xd(const act_rows *ar, int packed, int b, int64_t p, int full) {
    if (packed) return _mm512_load_ps(AR_ROW(ar, b) + ar->npair * PAIR_QS + p * PAIR_XD);
    const pf_block_q8_act *x = (const pf_block_q8_act *)AR_ROW(ar, b) + 2 * p;
    return _mm512_mask_broadcastss_ps(_mm512_set1_ps(x[0].d), 0xff00, _mm_set_ss(full ? x[1].d : 0.0f));
}

PF_FORCE_INLINE __m128 act_xs(const act_rows *ar, int packed, int b, int64_t p, int full) {
    if (packed)
        return _mm_load_ps((const float *)(AR_ROW(ar, b) + ar->npair * (PAIR_QS + PAIR_XD)) + p * 4);
    const pf_block_q8_act *x = (const pf_block_q8_act *)AR_ROW(ar, b) + 2 * p;
    return _mm_setr_ps(x[0].s, full ? x[1].s : 0.0f, 0.0f, 0.0f);
}

/* Pair p = blocks (2p, 2p+1) of one weight row (block 2p alone when !full), NB activation rows. */
PF_FORCE_INLINE void qdot_pair(uint32_t wt, const uint8_t *bk, int64_t p, int full, const act_rows *ar,
                               int packed, __m512 *acc, __m128 *accm, int NB) {
    const int ts = wt == PF_TYPE_Q8_0 ? (int)sizeof(pf_block_q8_0)
                   : wt == PF_TYPE_Q4_0 ? (int)sizeof(pf_block_q4_0) : (int)sizeof(pf_block_q4_1);
    const uint8_t *q0 = bk + (wt == PF_TYPE_Q4_1 ? 4 : 2);
    const __m512i zero = _mm512_setzero_si512();
    _mm_prefetch((const char *)bk + PF_DIST, _MM_HINT_T0);

    /* weight scales: wd = d per block broadcast over its 8 lanes; wm = [m_k, m_k1, ., .] where m
     * multiplies x.s: the Q4_1 minimum, -8 d for Q4_0 */
    __m512 wd;
    __m128 wm = _mm_setzero_ps();
    if (wt == PF_TYPE_Q4_1) {
        __m128i h = _mm_cvtsi32_si128((int)load_u32(bk));
        if (full) h = _mm_unpacklo_epi32(h, _mm_cvtsi32_si128((int)load_u32(bk + ts)));
        __m128 f = _mm_cvtph_ps(h); /* [d_k, m_k, d_k1, m_k1] */
        wd = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2),
                                   _mm512_castps128_ps512(f));
        wm = _mm_shuffle_ps(f, f, _MM_SHUFFLE(3, 1, 3, 1));
    } else {
        __m128i h = _mm_cvtsi32_si128(load_u16(bk));
        if (full) h = _mm_insert_epi16(h, load_u16(bk + ts), 1);
        __m128 f = _mm_cvtph_ps(h); /* [d_k, d_k1, 0, 0] */
        wd = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                   _mm512_castps128_ps512(f));
        if (wt == PF_TYPE_Q4_0) wm = _mm_mul_ps(f, _mm_set1_ps(-8.0f));
    }

    __m512i wv;
    __mmask64 neg = 0;
    if (wt == PF_TYPE_Q8_0) {
        __m256i a = _mm256_loadu_si256((const __m256i *)q0);
        __m512i v = full ? _mm512_inserti64x4(_mm512_castsi256_si512(a),
                                              _mm256_loadu_si256((const __m256i *)(q0 + ts)), 1)
                         : _mm512_inserti64x4(zero, a, 0);
        wv = _mm512_abs_epi8(v);
        neg = _mm512_movepi8_mask(v);
    } else {
        __m128i a = _mm_loadu_si128((const __m128i *)q0);
        __m512i v = full ? _mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(a), 0xff00,
                                                       _mm_loadu_si128((const __m128i *)(q0 + ts)))
                         : _mm512_maskz_broadcast_i32x4(0x00ff, a);
        /* 128-bit lanes 1 and 3 take the high nibbles (weights 16..31 of each block) */
        wv = _mm512_and_si512(_mm512_mask_srli_epi16(v, 0xff00ff00u, v, 4), _mm512_set1_epi8(0x0f));
    }
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) {
        __m512i xv = act_qs(ar, packed, b, p, full);
        if (wt == PF_TYPE_Q8_0) xv = _mm512_mask_sub_epi8(xv, neg, zero, xv);
        __m512i dot = _mm512_dpbusd_epi32(zero, wv, xv);
        __m512 sc = _mm512_mul_ps(wd, act_xd(ar, packed, b, p, full));
        acc[b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), sc, acc[b]);
        if (wt != PF_TYPE_Q8_0) accm[b] = _mm_fmadd_ps(wm, act_xs(ar, packed, b, p, full), accm[b]);
    }
}

PF_FORCE_INLINE void qdot_rows(uint32_t wt, const uint8_t *w, int64_t nblk, const act_rows *ar,
                               int packed, float *out, int NB) {
    const size_t ts = wt == PF_TYPE_Q8_0 ? sizeof(pf_block_q8_0)
                      : wt == PF_TYPE_Q4_0 ? sizeof(pf_block_q4_0) : sizeof(pf_block_q4_1);
    __m512 acc[NB_MAX];
    __m128 accm[NB_MAX];
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) {
        acc[b] = _mm512_setzero_ps();
        accm[b] = _mm_setzero_ps();
    }
    int64_t p = 0;
    for (; 2 * p + 2 <= nblk; p++) qdot_pair(wt, w + (size_t)(2 * p) * ts, p, 1, ar, packed, acc, accm, NB);
    if (2 * p < nblk) qdot_pair(wt, w + (size_t)(2 * p) * ts, p, 0, ar, packed, acc, accm, NB);
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) {
        float m = 0.0f;
        if (wt != PF_TYPE_Q8_0) /* lanes 0 and 1 hold the sums of m_w * x.s of even and odd blocks */
            m = _mm_cvtss_f32(_mm_add_ss(accm[b], _mm_movehdup_ps(accm[b])));
        out[b] = _mm512_reduce_add_ps(acc[b]) + m;
    }
}

/* Rows [r0, r1) for the nb <= NB_MAX activation rows in ar; outputs of row b go to y[b*ldy + r]. */
PF_FORCE_INLINE void qdot_range(uint32_t wt, const pf_weight *W, const act_rows *ar, int packed, int nb,
                                float *y, int64_t ldy, int64_t r0, int64_t r1) {
    int64_t nblk = W->cols / PF_QK;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
        float out[NB_MAX] = {0};
        switch (nb) {
        case 1: qdot_rows(wt, w, nblk, ar, packed, out, 1); break;
        case 2: qdot_rows(wt, w, nblk, ar, packed, out, 2); break;
        case 3: qdot_rows(wt, w, nblk, ar, packed, out, 3); break;
        case 4: qdot_rows(wt, w, nblk, ar, packed, out, 4); break;
        case 5: qdot_rows(wt, w, nblk, ar, packed, out, 5); break;
        case 6: qdot_rows(wt, w, nblk, ar, packed, out, 6); break;
        case 7: qdot_rows(wt, w, nblk, ar, packed, out, 7); break;
        default: qdot_rows(wt, w, nblk, ar, packed, out, 8); break;
        }
        for (int b = 0; b < nb; b++) y[b * ldy + r] = out[b];
    }
}

/* Activation rows are repacked once per call into stack scratch (as many as fit), then every
 * weight row of [r0, r1) is run against them NB_MAX at a time while it is hot in L1. Rows too
 * long for the scratch (over ~10K columns) read the q8 blocks in place: same values, same ops. */
PF_FORCE_INLINE void gemm_quant(uint32_t wt, const pf_weight *W, const void *act, size_t stride,
                                int B, float *y, int64_t ldy, int64_t r0, int64_t r1) {
    int64_t nblk = W->cols / PF_QK, npair = (nblk + 1) / 2;
    if (npair == 0) { /* no columns: empty sums */
        for (int b = 0; b < B; b++)
            for (int64_t r = r0; r < r1; r++) y[b * ldy + r] = 0.0f;
        return;
    }
    size_t prow = packed_row_bytes(npair);
    int fit = (int)(SCRATCH_BYTES / prow);
    act_rows ar;
    ar.npair = npair;
    if (fit == 0) {
        for (int b0 = 0; b0 < B; b0 += NB_MAX) {
            int nb = B - b0 < NB_MAX ? B - b0 : NB_MAX;
            ar.base = (const uint8_t *)act + (size_t)b0 * stride;
            ar.stride = stride;
            qdot_range(wt, W, &ar, 0, nb, y + b0 * ldy, ldy, r0, r1);
        }
        return;
    }
    _Alignas(64) uint8_t scratch[SCRATCH_BYTES];
    /* rows per chunk: the chunk's repacked rows should stay in L1 (~24 KB) while a weight row
     * passes; fewer rows per chunk never changes a result, only how often weights are decoded */
    int nbmax = (int)((24 * 1024) / prow);
    nbmax = nbmax < 1 ? 1 : nbmax > NB_MAX ? NB_MAX : nbmax;
    for (int s0 = 0; s0 < B; s0 += fit) {
        int sb = B - s0 < fit ? B - s0 : fit, nb;
        int nchunk = (sb + nbmax - 1) / nbmax;
        for (int b = 0; b < sb; b++)
            repack_row((const pf_block_q8_act *)((const char *)act + (size_t)(s0 + b) * stride), nblk,
                       scratch + (size_t)b * prow);
        for (int64_t rt = r0; rt < r1; rt += QROW_TILE) { /* row tiles stay in L1 across the chunks */
            int64_t re = rt + QROW_TILE < r1 ? rt + QROW_TILE : r1;
            for (int c = 0, left = nchunk; c < sb; c += nb, left--) {
                nb = (sb - c + left - 1) / left; /* balanced: 9 rows go as 5 + 4, not 8 + 1 */
                ar.base = scratch + (size_t)c * prow;
                ar.stride = prow;
                qdot_range(wt, W, &ar, 1, nb, y + (s0 + c) * ldy, ldy, rt, re);
            }
        }
    }
}

static void gemm_q8_0(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                      int64_t ldy, int64_t r0, int64_t r1) {
    gemm_quant(PF_TYPE_Q8_0, W, act, stride, B, y, ldy, r0, r1);
}
static void gemm_q4_0(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                      int64_t ldy, int64_t r0, int64_t r1) {
    gemm_quant(PF_TYPE_Q4_0, W, act, stride, B, y, ldy, r0, r1);
}
static void gemm_q4_1(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                      int64_t ldy, int64_t r0, int64_t r1) {
    gemm_quant(PF_TYPE_Q4_1, W, act, stride, B, y, ldy, r0, r1);
}

/* ---- activation quantization: bitwise equal to pf_quantize_row_q8_act ---- */

/* roundf (half away from zero) exactly: t - trunc(t) is exact for |t| < 2^23. */
static inline __m512 round_half_away(__m512 t) {
    __m512 r = _mm512_roundscale_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(t, r)), _mm512_set1_ps(0.5f),
                                      _CMP_GE_OQ);
    __m512 one = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_and_si512(_mm512_castps_si512(t), _mm512_set1_epi32((int)0x80000000u)),
        _mm512_castps_si512(_mm512_set1_ps(1.0f))));
    return _mm512_mask_add_ps(r, up, r, one);
}

static void quantize_act(const float *x, pf_block_q8_act *y, int64_t n) {
    for (int64_t i = 0; i < n / PF_QK; i++, x += PF_QK) {
        __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
        float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
        float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
        __m512 idv = _mm512_set1_ps(id);
        __m512i q0 = _mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(v0, idv)));
        __m512i q1 = _mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(v1, idv)));
        _mm_storeu_si128((__m128i *)y[i].qs, _mm512_cvtepi32_epi8(q0));
        _mm_storeu_si128((__m128i *)(y[i].qs + 16), _mm512_cvtepi32_epi8(q1));
        int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
        y[i].d = d;
        y[i].s = d * (float)sum;
    }
}

/* ---- elementwise ---- */

static void rmsnorm(const float *x, const float *w, int64_t n, float eps, float *out) {
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 16) {
        __m512 v = _mm512_maskz_loadu_ps(tail_mask(n - i), x + i);
        __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
        __m512d hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
        a0 = _mm512_fmadd_pd(lo, lo, a0);
        a1 = _mm512_fmadd_pd(hi, hi, a1);
    }
    double ss = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
    float scale = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    __m512 sv = _mm512_set1_ps(scale);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), sv),
                                 _mm512_maskz_loadu_ps(m, w + i));
        _mm512_mask_storeu_ps(out + i, m, v);
    }
}

static void swiglu(const float *gate, const float *up, float *out, int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
        __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, e));
        _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
    }
}

static float dot_f32_f16(const float *a, const pf_half *b, int n) {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i),
                               _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + i))), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16),
                               _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(b + i + 16))), acc1);
    }
    for (int c = 0; i < n; c++, i += 16) {
        __mmask16 m = tail_mask(n - i);
        __m512 av = _mm512_maskz_loadu_ps(m, a + i);
        __m512 bv = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, b + i));
        if (c == 0)
            acc0 = _mm512_fmadd_ps(av, bv, acc0);
        else
            acc1 = _mm512_fmadd_ps(av, bv, acc1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

static void axpy_f16(float a, const pf_half *x, float *y, int n) {
    __m512 av = _mm512_set1_ps(a);
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = tail_mask(n - i);
        __m512 xv = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i));
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(av, xv, _mm512_maskz_loadu_ps(m, y + i)));
    }
}

const pf_kernels pf_kernels_avx512_table = {
    .level = PF_LEVEL_AVX512,
    .name = "avx512",
    .gemm = {
        [PF_TYPE_F32] = gemm_f32,
        [PF_TYPE_F16] = gemm_f16,
        [PF_TYPE_BF16] = gemm_bf16,
        [PF_TYPE_Q8_0] = gemm_q8_0,
        [PF_TYPE_Q4_0] = gemm_q4_0,
        [PF_TYPE_Q4_1] = gemm_q4_1,
    },
    .quantize_act = quantize_act,
    .rmsnorm = rmsnorm,
    .swiglu = swiglu,
    .dot_f32_f16 = dot_f32_f16,
    .axpy_f16 = axpy_f16,
};
