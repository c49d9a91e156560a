/* AVX2 + FMA + F16C kernels.
 *
 * gemm: each weight block is loaded and decoded once per chunk of up to NB_MAX activation rows.
 * Every activation row b has its own accumulators and the per-b code is identical whatever the
 * chunk size, so output (r, b) is bitwise the same for B = 1 and B = 16 and for any row split.
 *   float weights: two 8-lane accumulators over alternating 8-column chunks, then one fixed
 *     horizontal sum; the last partial chunk is zero padded.
 *   quantized: per block, int8 products with maddubs (u8 x s8 -> s16 pairs, no saturation is
 *     possible: |pair| <= 2*15*127 for nibbles, 2*128*127 for Q8_0 after the sign trick), madd to
 *     int32, convert, then acc = fma(isum_lanes, d_w*x.d, acc); the Q4 offset/minimum term
 *     (m_w * x.s, m_w = -8 d_w for Q4_0) is a separate scalar fma sum added at the end. The
 *     activation rows are repacked first (q aligned, x.d broadcast) so the inner loop takes them
 *     as memory operands; chunks of rows are sized to stay in L1, which never changes a result. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "formats/quant.h"
#include "kernels/kernels_impl.h"
#include "kernels/simd_avx2.h"

#define NB_MAX 4
#define ROW_TILE 32 /* weight rows per tile in the float gemm */
#define PF_DIST 1024 /* weight prefetch distance, bytes */

static inline double hsum256d(__m256d v) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}

static inline float half_at(const void *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* ---- float-weight gemm ---- */

PF_FORCE_INLINE __m256 wload8(uint32_t wt, const void *w, int64_t i) {
    if (wt == PF_TYPE_F32) return _mm256_loadu_ps((const float *)w + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
    if (wt == PF_TYPE_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* Dot products of one weight row with NB activation rows. */
PF_FORCE_INLINE void fdot_rows(uint32_t wt, const void *w, int64_t n, const float *const *x,
                               float *out, int NB) {
    size_t es = wt == PF_TYPE_F32 ? 4 : 2;
    __m256 acc0[NB_MAX], acc1[NB_MAX];
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) acc0[b] = acc1[b] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm_prefetch((const char *)w + (size_t)i * es + PF_DIST, _MM_HINT_T0);
        __m256 w0 = wload8(wt, w, i), w1 = wload8(wt, w, i + 8);
#pragma GCC unroll 8
        for (int b = 0; b < NB; b++) {
            acc0[b] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[b] + i), acc0[b]);
            acc1[b] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x[b] + i + 8), acc1[b]);
        }
    }
    /* at most two more 8-column chunks, the last one possibly partial (zero padded) */
    for (int c = 0; i < n; c++, i += 8) {
        int64_t m = n - i < 8 ? n - i : 8;
        uint8_t wbuf[32] = {0};
        memcpy(wbuf, (const char *)w + (size_t)i * es, (size_t)m * es);
        __m256 wv = wload8(wt, wbuf, 0);
#pragma GCC unroll 8
        for (int b = 0; b < NB; b++) {
            float xbuf[8] = {0};
            memcpy(xbuf, x[b] + i, (size_t)m * sizeof(float));
            __m256 xv = _mm256_loadu_ps(xbuf);
            if (c == 0)
                acc0[b] = _mm256_fmadd_ps(wv, xv, acc0[b]);
            else
                acc1[b] = _mm256_fmadd_ps(wv, xv, acc1[b]);
        }
    }
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) out[b] = hsum256(_mm256_add_ps(acc0[b], acc1[b]));
}

#include "kernels/gemm_float_tiles.h"

/* ---- quantized gemm ---- */

/* Activation rows as the block kernel reads them: repacked (the fast path: per block the 32 q
 * aligned, x.d broadcast to 8 floats, x.s) or the original q8 blocks. Both give the same values
 * to the same float ops, so the result does not depend on which one is used. */
#define BLK_QS 32
#define BLK_XD 32
#define BLK_XS 4
/* Stack scratch for repacked rows: 16 rows of 3072 columns fit (see the AVX-512 file). */
#define SCRATCH_BYTES (128 * 1024)
#define QROW_TILE 32

typedef struct {
    const uint8_t *base; /* row b at base + b * stride (rows as bytes: repacked or q8 blocks) */
    size_t stride;
    int64_t nblk;
} act_rows;
#define AR_ROW(ar, b) ((ar)->base + (size_t)(b) * (ar)->stride)

static size_t packed_row_bytes(int64_t nblk) {
    return ((size_t)nblk * (BLK_QS + BLK_XD + BLK_XS) + 31) / 32 * 32;
}

PF_NOIPA static void repack_row(const pf_block_q8_act *x, int64_t nblk, uint8_t *dst) {
    float *xd = (float *)(dst + nblk * BLK_QS), *xs = (float *)(dst + nblk * (BLK_QS + BLK_XD));
    for (int64_t k = 0; k < nblk; k++) {
        _mm256_store_si256((__m256i *)(dst + k * BLK_QS), _mm256_loadu_si256((const __m256i *)x[k].qs));
        _mm256_store_ps(xd + k * 8, _mm256_set1_ps(x[k].d));
        xs[k] = x[k].s;
    }
}

PF_FORCE_INLINE __m256i act_qs(const act_rows *ar, int packed, int b, int64_t k) {
    if (packed) return _mm256_load_si256((const __m256i *)(AR_ROW(ar, b) + k * BLK_QS));
    return _mm256_loadu_si256((const __m256i *)((const pf_block_q8_act *)AR_ROW(ar, b) + k)->qs);
}

PF_FORCE_INLINE __m256 act_xd(const act_rows *ar, int packed, int b, int64_t k) {
    if (packed) return _mm256_load_ps((const float *)(AR_ROW(ar, b) + ar->nblk * BLK_QS) + k * 8);
    return _mm256_set1_ps(((const pf_block_q8_act *)AR_ROW(ar, b) + k)->d);
}

PF_FORCE_INLINE __m128 act_xs(const act_rows *ar, int packed, int b, int64_t k) {
    if (packed) return _mm_load_ss((const float *)(AR_ROW(ar, b) + ar->nblk * (BLK_QS + BLK_XD)) + k);
    return _mm_set_ss(((const pf_block_q8_act *)AR_ROW(ar, b) + k)->s);
}

PF_FORCE_INLINE void qdot_rows(uint32_t wt, const uint8_t *w, const act_rows *ar, int packed,
                               float *out, int NB) {
    const size_t ts = wt == PF_TYPE_Q8_0 ? sizeof(pf_block_q8_0)
                      : wt == PF_TYPE_Q4_0 ? sizeof(pf_block_q4_0) : sizeof(pf_block_q4_1);
    const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    __m256 acc[NB_MAX];
    __m128 accm[NB_MAX];
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) {
        acc[b] = _mm256_setzero_ps();
        accm[b] = _mm_setzero_ps();
    }
    for (int64_t k = 0; k < ar->nblk; k++) {
        const uint8_t *blk = w + (size_t)k * ts;
        _mm_prefetch((const char *)blk + PF_DIST, _MM_HINT_T0);
        float d = half_at(blk);
        __m256 wd = _mm256_set1_ps(d);
        __m128 wm = _mm_setzero_ps();
        __m256i wv;
        if (wt == PF_TYPE_Q8_0) {
            wv = _mm256_loadu_si256((const __m256i *)(blk + 2));
        } else {
            const uint8_t *qs = blk + (wt == PF_TYPE_Q4_1 ? 4 : 2);
            __m128i q = _mm_loadu_si128((const __m128i *)qs);
            wv = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), m4);
            wm = _mm_set_ss(wt == PF_TYPE_Q4_1 ? half_at(blk + 2) : -8.0f * d);
        }
        __m256i wabs = wt == PF_TYPE_Q8_0 ? _mm256_sign_epi8(wv, wv) : wv;
#pragma GCC unroll 8
        for (int b = 0; b < NB; b++) {
            __m256i xv = act_qs(ar, packed, b, k);
            if (wt == PF_TYPE_Q8_0) xv = _mm256_sign_epi8(xv, wv);
            __m256i p32 = _mm256_madd_epi16(_mm256_maddubs_epi16(wabs, xv), ones);
            __m256 sc = _mm256_mul_ps(wd, act_xd(ar, packed, b, k));
            acc[b] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p32), sc, acc[b]);
            if (wt != PF_TYPE_Q8_0) accm[b] = _mm_fmadd_ss(wm, act_xs(ar, packed, b, k), accm[b]);
        }
    }
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) out[b] = hsum256(acc[b]) + _mm_cvtss_f32(accm[b]);
}

PF_FORCE_INLINE void qdot_range(uint32_t wt, const pf_weight *W, const act_rows *ar, int packed, int nb,
                                float *y, int64_t ldy, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
        float out[NB_MAX] = {0};
        switch (nb) {
        case 1: qdot_rows(wt, w, ar, packed, out, 1); break;
        case 2: qdot_rows(wt, w, ar, packed, out, 2); break;
        case 3: qdot_rows(wt, w, ar, packed, out, 3); break;
        default: qdot_rows(wt, w, ar, packed, out, 4); break;
        }
        for (int b = 0; b < nb; b++) y[b * ldy + r] = out[b];
    }
}

/* As in the AVX-512 file: repack the activation rows once per call into stack scratch, then run
 * tiles of weight rows against chunks of them; rows too long for the scratch read in place. */
PF_FORCE_INLINE void gemm_quant(uint32_t wt, const pf_weight *W, const void *act, size_t stride,
                                int B, float *y, int64_t ldy, int64_t r0, int64_t r1) {
    act_rows ar;
    ar.nblk = W->cols / PF_QK;
    size_t prow = packed_row_bytes(ar.nblk);
    int fit = prow ? (int)(SCRATCH_BYTES / prow) : 0;
    if (fit == 0) {
        for (int b0 = 0; b0 < B; b0 += NB_MAX) {
            int nb = B - b0 < NB_MAX ? B - b0 : NB_MAX;
            ar.base = (const uint8_t *)act + (size_t)b0 * stride;
            ar.stride = stride;
            qdot_range(wt, W, &ar, 0, nb, y + b0 * ldy, ldy, r0, r1);
        }
        return;
    }
    _Alignas(32) uint8_t scratch[SCRATCH_BYTES];
    int nbmax = (int)((24 * 1024) / prow);
    nbmax = nbmax < 1 ? 1 : nbmax > NB_MAX ? NB_MAX : nbmax;
    for (int s0 = 0; s0 < B; s0 += fit) {
        int sb = B - s0 < fit ? B - s0 : fit, nb;
        int nchunk = (sb + nbmax - 1) / nbmax;
        for (int b = 0; b < sb; b++)
            repack_row((const pf_block_q8_act *)((const char *)act + (size_t)(s0 + b) * stride), ar.nblk,
                       scratch + (size_t)b * prow);
        for (int64_t rt = r0; rt < r1; rt += QROW_TILE) {
            int64_t re = rt + QROW_TILE < r1 ? rt + QROW_TILE : r1;
            for (int c = 0, left = nchunk; c < sb; c += nb, left--) {
                nb = (sb - c + left - 1) / left;
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
static inline __m256 round_half_away(__m256 t) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 r = _mm256_round_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(t, r));
    __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    __m256 one = _mm256_or_ps(_mm256_and_ps(t, sign), _mm256_set1_ps(1.0f));
    return _mm256_add_ps(r, _mm256_and_ps(up, one));
}

static void quantize_act(const float *x, pf_block_q8_act *y, int64_t n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t i = 0; i < n / PF_QK; i++, x += PF_QK) {
        __m256 v[4];
        __m256 mx = _mm256_setzero_ps();
        for (int j = 0; j < 4; j++) {
            v[j] = _mm256_loadu_ps(x + 8 * j);
            mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, v[j]));
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
        float amax = _mm_cvtss_f32(m4);
        float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
        __m256 idv = _mm256_set1_ps(id);
        __m256i q[4];
        for (int j = 0; j < 4; j++)
            q[j] = _mm256_cvttps_epi32(round_half_away(_mm256_mul_ps(v[j], idv)));
        __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 1));
        int sum = _mm_cvtsi128_si32(s4);
        __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        _mm256_storeu_si256((__m256i *)y[i].qs, _mm256_permutevar8x32_epi32(p, perm));
        y[i].d = d;
        y[i].s = d * (float)sum;
    }
}

/* ---- elementwise ---- */

static void rmsnorm(const float *x, const float *w, int64_t n, float eps, float *out) {
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
        __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
        a0 = _mm256_fmadd_pd(lo, lo, a0);
        a1 = _mm256_fmadd_pd(hi, hi, a1);
    }
    double ss = hsum256d(_mm256_add_pd(a0, a1));
    for (; i < n; i++) ss += (double)x[i] * x[i];
    float scale = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    __m256 sv = _mm256_set1_ps(scale);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), sv),
                                                _mm256_loadu_ps(w + i)));
    for (; i < n; i++) out[i] = (x[i] * scale) * w[i];
}

static void swiglu(const float *gate, const float *up, float *out, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), neg = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 g = _mm256_loadu_ps(gate + i);
        __m256 e = exp256(_mm256_xor_ps(g, neg));
        __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, e));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
    }
    for (; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

/* The scalar loop's answer in two passes: the largest non-NaN value (vmaxps returns its second
 * operand when the first is NaN), then the first index holding it (-0 == +0, as the loop keeps the
 * first of equal values). */
static int32_t argmax(const float *x, int64_t n) {
    if (x[0] != x[0]) return 0; /* NaN first: nothing compares greater */
    __m256 m = _mm256_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_loadu_ps(x + i), m);
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ps(h, _mm_shuffle_ps(h, h, 1));
    float mx = _mm_cvtss_f32(h);
    for (; i < n; i++)
        if (x[i] > mx) mx = x[i];
    const __m256 mv = _mm256_set1_ps(mx);
    for (i = 0; i + 8 <= n; i += 8) {
        int bits = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), mv, _CMP_EQ_OQ));
        if (bits) return (int32_t)(i + __builtin_ctz((unsigned)bits));
    }
    for (; i < n; i++)
        if (x[i] == mx) return (int32_t)i;
    return 0; /* unreachable: mx is x[0] or larger and present */
}

static int64_t first_above(const float *x, int64_t n, float t) {
    const __m256 tv = _mm256_set1_ps(t);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        int bits = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), tv, _CMP_GT_OQ));
        if (bits) return i + __builtin_ctz((unsigned)bits);
    }
    for (; i < n; i++)
        if (x[i] > t) return i;
    return n;
}

/* F16C rounds to nearest even like pf_fp32_to_fp16 (overflow to inf, subnormals exact); NaNs
 * become its canonical quiet NaN (sign kept) instead of the hardware's truncated payload. */
static void f32_to_f16(const float *x, pf_half *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
        if (!_mm256_testz_ps(nan, nan)) {
            __m128i sign = _mm_and_si128(_mm_packs_epi32(_mm256_castsi256_si128(_mm256_srai_epi32(_mm256_castps_si256(v), 16)),
                                                         _mm256_extracti128_si256(_mm256_srai_epi32(_mm256_castps_si256(v), 16), 1)),
                                         _mm_set1_epi16((short)0x8000));
            __m128i qnan = _mm_or_si128(sign, _mm_set1_epi16(0x7e00));
            __m128i m = _mm_packs_epi32(_mm256_castsi256_si128(_mm256_castps_si256(nan)),
                                        _mm256_extracti128_si256(_mm256_castps_si256(nan), 1));
            h = _mm_blendv_epi8(h, qnan, m);
        }
        _mm_storeu_si128((__m128i *)(y + i), h);
    }
    for (; i < n; i++) y[i] = pf_fp32_to_fp16(x[i]);
}

static void axpy_f16(float a, const pf_half *x, float *y, int n) {
    __m256 av = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i)));
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, xv, _mm256_loadu_ps(y + i)));
    }
    for (; i < n; i++) y[i] = fmaf(a, _cvtsh_ss(x[i]), y[i]);
}

PF_DEFINE_KERNELS(pf_kernels_avx2_table, PF_LEVEL_AVX2, "avx2", quantize_act);
