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
 *     partial sums per block, converted and fma'd with (d_w * x.d) broadcast per block. Scales go
 *     as one 4-float product [d_w*x.d, m_w*x.s] x 2 blocks per pair; the m_w*x.s lanes (Q4_1 min,
 *     -8 d_w for Q4_0) accumulate in a separate 128-bit sum added at the end. No gathers: they
 *     are microcoded and slow on the CPUs that matter (~40 cycles each on Zen 4 here).
 *     Q8_0 x q8 is signed x signed: |w| is the unsigned operand and x gets w's sign (x is never
 *     -128; |w| = 128 as unsigned is fine). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "formats/quant.h"
#include "kernels/kernels_impl.h"

#define NB_MAX 8
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

PF_FORCE_INLINE void gemm_float(uint32_t wt, const pf_weight *W, const void *act, size_t stride,
                                int B, float *y, int64_t ldy, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
        const void *w = (const char *)W->data + (size_t)r * W->row_bytes;
        for (int b0 = 0; b0 < B; b0 += NB_MAX) {
            int nb = B - b0 < NB_MAX ? B - b0 : NB_MAX;
            const float *x[NB_MAX];
            float out[NB_MAX];
            for (int b = 0; b < nb; b++)
                x[b] = (const float *)((const char *)act + (size_t)(b0 + b) * stride);
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

/* Weight scales of blocks k and k+1 (k+1 absent: zeros) as [d_k, m_k, d_k1, m_k1] where the "m"
 * lane multiplies x.s: the minimum for Q4_1, -8 d for Q4_0, 0 for Q8_0. */
PF_FORCE_INLINE __m128 pair_scales(uint32_t wt, const uint8_t *bk, int ts, int full) {
    if (wt == PF_TYPE_Q4_1) {
        __m128i h = _mm_cvtsi32_si128((int)load_u32(bk));
        if (full) h = _mm_unpacklo_epi32(h, _mm_cvtsi32_si128((int)load_u32(bk + ts)));
        return _mm_cvtph_ps(h);
    }
    __m128i h = _mm_cvtsi32_si128(load_u16(bk));
    if (full) h = _mm_insert_epi16(h, load_u16(bk + ts), 2);
    __m128 d = _mm_cvtph_ps(h); /* [d_k, 0, d_k1, 0] */
    if (wt == PF_TYPE_Q8_0) return d;
    /* [d_k, -8 d_k, d_k1, -8 d_k1] */
    return _mm_mul_ps(_mm_moveldup_ps(d), _mm_setr_ps(1.0f, -8.0f, 1.0f, -8.0f));
}

/* One pair of blocks (k, k+1), or block k alone when !full, for NB activation rows. */
PF_FORCE_INLINE void qdot_pair(uint32_t wt, const uint8_t *bk, int64_t k, int full,
                               const uint8_t *const *x, __m512 *acc, __m128 *accm, int NB) {
    const int ts = wt == PF_TYPE_Q8_0 ? (int)sizeof(pf_block_q8_0)
                   : wt == PF_TYPE_Q4_0 ? (int)sizeof(pf_block_q4_0) : (int)sizeof(pf_block_q4_1);
    const uint8_t *q0 = bk + (wt == PF_TYPE_Q4_1 ? 4 : 2);
    /* lanes 0..7 take scale lane 0 (block k), lanes 8..15 scale lane 2 (block k+1) */
    const __m512i sidx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
    const __m512i zero = _mm512_setzero_si512();
    _mm_prefetch((const char *)bk + PF_DIST, _MM_HINT_T0);
    __m128 wsc = pair_scales(wt, bk, ts, full);
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
        const uint8_t *xk = x[b] + (size_t)k * XB;
        /* [x.d_k, x.s_k, x.d_k1, x.s_k1] */
        __m128d ds = _mm_load_sd((const double *)xk);
        if (full) ds = _mm_loadh_pd(ds, (const double *)(xk + XB));
        __m128 prod = _mm_mul_ps(wsc, _mm_castpd_ps(ds));
        if (wt != PF_TYPE_Q8_0) accm[b] = _mm_add_ps(accm[b], prod);
        __m256i a = _mm256_loadu_si256((const __m256i *)(xk + 8));
        __m512i xv = full ? _mm512_inserti64x4(_mm512_castsi256_si512(a),
                                               _mm256_loadu_si256((const __m256i *)(xk + XB + 8)), 1)
                          : _mm512_inserti64x4(zero, a, 0);
        if (wt == PF_TYPE_Q8_0) xv = _mm512_mask_sub_epi8(xv, neg, zero, xv);
        __m512i dot = _mm512_dpbusd_epi32(zero, wv, xv);
        __m512 sc = _mm512_permutexvar_ps(sidx, _mm512_castps128_ps512(prod));
        acc[b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), sc, acc[b]);
    }
}

PF_FORCE_INLINE void qdot_rows(uint32_t wt, const uint8_t *w, int64_t nblk,
                               const uint8_t *const *x, float *out, int NB) {
    const size_t ts = wt == PF_TYPE_Q8_0 ? sizeof(pf_block_q8_0)
                      : wt == PF_TYPE_Q4_0 ? sizeof(pf_block_q4_0) : sizeof(pf_block_q4_1);
    __m512 acc[NB_MAX];
    __m128 accm[NB_MAX];
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) {
        acc[b] = _mm512_setzero_ps();
        accm[b] = _mm_setzero_ps();
    }
    int64_t k = 0;
    for (; k + 2 <= nblk; k += 2) qdot_pair(wt, w + (size_t)k * ts, k, 1, x, acc, accm, NB);
    if (k < nblk) qdot_pair(wt, w + (size_t)k * ts, k, 0, x, acc, accm, NB);
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) {
        float m = 0.0f;
        if (wt != PF_TYPE_Q8_0) /* lanes 1 and 3 hold the sums of m_w * x.s */
            m = _mm_cvtss_f32(_mm_add_ss(_mm_movehdup_ps(accm[b]),
                                         _mm_shuffle_ps(accm[b], accm[b], _MM_SHUFFLE(3, 3, 3, 3))));
        out[b] = _mm512_reduce_add_ps(acc[b]) + m;
    }
}

PF_FORCE_INLINE void gemm_quant(uint32_t wt, const pf_weight *W, const void *act, size_t stride,
                                int B, float *y, int64_t ldy, int64_t r0, int64_t r1) {
    int64_t nblk = W->cols / PF_QK;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
        for (int b0 = 0; b0 < B; b0 += NB_MAX) {
            int nb = B - b0 < NB_MAX ? B - b0 : NB_MAX;
            const uint8_t *x[NB_MAX];
            float out[NB_MAX];
            for (int b = 0; b < nb; b++) x[b] = (const uint8_t *)act + (size_t)(b0 + b) * stride;
            switch (nb) {
            case 1: qdot_rows(wt, w, nblk, x, out, 1); break;
            case 2: qdot_rows(wt, w, nblk, x, out, 2); break;
            case 3: qdot_rows(wt, w, nblk, x, out, 3); break;
            case 4: qdot_rows(wt, w, nblk, x, out, 4); break;
            case 5: qdot_rows(wt, w, nblk, x, out, 5); break;
            case 6: qdot_rows(wt, w, nblk, x, out, 6); break;
            case 7: qdot_rows(wt, w, nblk, x, out, 7); break;
            default: qdot_rows(wt, w, nblk, x, out, 8); break;
            }
            for (int b = 0; b < nb; b++) y[(b0 + b) * ldy + r] = out[b];
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

static inline __mmask16 tail_mask(int64_t left) {
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

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

/* exp(x): Cephes expf polynomial (~1 ulp), 2^n applied with scalef; x clamped to [-104, 88.7]
 * where the reduction stays accurate (results saturate to 0 / near FLT_MAX there). */
static inline __m512 exp512(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(88.7f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
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
