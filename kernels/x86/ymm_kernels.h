/* The 256-bit x86 levels' kernels, written once: kernels_avx2.c (AVX2 + FMA + F16C) and
 * kernels_avxvnni.c (the same + AVX-VNNI, which defines PF_YMM_VNNI first) include this file and
 * add their table; each is compiled with its own flags.
 *
 * gemm: every output (r, b) has its own accumulators and its code is the same whatever the
 * block of rows it is computed in, so it is bitwise the same for B = 1 and B = 16 and for any
 * row split.
 *   float weights: vec_gemm_float.h (one source for every x86 level).
 *   quantized (Q8_0, Q4_0, Q4_1): the AVX-512 gemm's scheme on 8 lanes, over the packed layout
 *     (kernels.h; GGUF-layout weights are packed a group at a time on the fly): one weight row
 *     per 32-bit lane, each block decoded once per half-group into 8 registers of unsigned bytes,
 *     then every activation row takes 8 integer dot steps against broadcast dwords of its q8
 *     block, exact int32 block sums per lane, and the scalar reference's float ops per block in
 *     its order into its own accumulator: no horizontal sums, and the reference's bits.
 *       AVX2: vpmaddubsw + vpmaddwd (Q4: nibbles; Q8_0: |w|, the weights' signs put on the
 *         activation dwords).
 *       AVX-VNNI: vpdpbusd ymm (VEX), 4 products summed into each int32 lane per instruction
 *         (Q4: nibbles; Q8_0: w + 128, the offset removed with the activation block's integer sum,
 *         as the AVX-512 gemm does).
 * RMSNorm, SwiGLU, softmax, the value axpy, argmax, first_above, f32_to_f16: vec_float.h (one
 * source for every x86 level). */
#ifndef PF_YMM_KERNELS_H
#define PF_YMM_KERNELS_H

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "formats/quant.h"
#include "kernels/kernels_impl.h"
#include "kernels/x86/x86_quant.h"
#define PF_VEC_BITS 256
#include "kernels/x86/vec_float.h"
#include "kernels/x86/vec_gemm_float.h"

#ifdef PF_YMM_VNNI
#define YMM_VNNI 1
#else
#define YMM_VNNI 0
#endif
/* Activation block sums per pass: Q8_0's + 128 offset (AVX-VNNI only). */
#define YMM_ASUM(wt) (YMM_VNNI && (wt) == PF_TYPE_Q8_0)

/* ---- quantized gemm ---- */

#define QNB 16           /* activation rows per pass over a group's blocks */
#define QKS 512          /* blocks per k super-chunk (accumulators parked in y between them) */
#define ASUM_INTS (16 * 1024) /* activation block sums per pass (YMM_ASUM) */
#define QPAD_BYTES (32 * 1024) /* a GGUF-layout group packed on the fly, per k chunk */
#ifndef QPF_PACKED
#define QPF_PACKED 4     /* groups ahead that the weight prefetch reads (0: none); bench-model,
                            PF_KERNELS=avx2, Pocket Q4_1: 4 ahead 11.9 ms at B=4 vs 2 ahead 12.0-13.9
                            and none 14.8 */
#endif
#ifndef QPF_MIN_B
#define QPF_MIN_B 2      /* software prefetch from this many rows (as the AVX-512 gemm) */
#endif

/* Half h (rows 8h .. 8h+7, one per 32-bit lane) of one packed group (g at its block k0, blocks
 * 16 * ts bytes apart) against NB activation rows (row b at act + b*stride, at its block k0) over
 * nk blocks. Per block the half's weights are decoded once into 8 registers w[j] (lane i = four
 * unsigned bytes of row i: Q4 nibbles; Q8_0 |w| with its signs put on the activations (AVX2) or
 * w + 128 (AVX-VNNI)), then per activation row b
 *   AVX2:     isum = sum_j madd(maddubs(w[j], broadcast dword j of x_b))           (exact int32)
 *   AVX-VNNI: isum = asum + sum_j vpdpbusd(w[j], broadcast dword j of x_b)  (Q8_0: asum the
 *             -128 sum(x) of the offset; exact int32)
 *   Q8_0: acc_b += (d_w * x.d) * float(isum)
 *   Q4_0: acc_b += (d_w * x.d) * float(isum) + (-8 * d_w) * x.s     (isum over the nibbles 0..15)
 *   Q4_1: acc_b += (d_w * x.d) * float(isum) + m_w * x.s
 * the scalar reference's float ops in its order, each rounded (no fused multiply-add; the build's
 * -ffp-contract=off keeps the compiler from fusing them), so every level gives the reference's
 * bits. No pair sum can
 * saturate: Q4 nibbles sum all 8 maddubs in int16 (|sum| <= 16 * 15 * 128 < 2^15); Q8_0 pairs
 * are |w| <= 128 times |x| <= 127, widened to int32 per dword; vpdpbusd (not the saturating
 * vpdpbusds) sums in int32. Every output is one lane's chain in
 * block order, whatever NB, the half, the group or the row split. acc starts at 0 if first, else
 * from y (parked by the previous k super-chunk); lanes outside mask are not stored. */
PF_FORCE_INLINE void qhalf(uint32_t wt, const uint8_t *g, int h, int64_t nk, const uint8_t *act, size_t stride,
                           const int32_t *asum, int64_t ald, int first, __m256i mask, float *y, int64_t ldy,
                           const uint8_t *pf, int NB) {
    const size_t ts = qtype_size(wt), gb = QRG * ts; /* one block of the group */
    const size_t qoff = (wt == PF_TYPE_Q4_1 ? 64 : 32) + 32 * (size_t)h;
    __m256 acc[QNB];
#pragma GCC unroll 16
    for (int b = 0; b < NB; b++) acc[b] = first ? _mm256_setzero_ps() : _mm256_maskload_ps(y + b * ldy, mask);
    const __m256i lo4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1), bias = _mm256_set1_epi8((char)0x80);
    (void)ones, (void)bias, (void)asum, (void)ald; /* the AVX2 build uses neither offset nor its sums */
    for (int64_t k = 0; k < nk; k++) {
        const uint8_t *blk = g + (size_t)k * gb, *q = blk + qoff;
        if (pf)
            for (size_t o = 64 * (size_t)h; o < gb; o += 128) /* the halves take alternate lines */
                _mm_prefetch((const char *)pf + (size_t)k * gb + o, _MM_HINT_T1);
        __m256 dv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + 16 * h))), mv = _mm256_setzero_ps();
        if (wt == PF_TYPE_Q4_1) mv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + 32 + 16 * h)));
        if (wt == PF_TYPE_Q4_0) mv = _mm256_mul_ps(_mm256_set1_ps(-8.0f), dv); /* nibble - 8: -8 d per x.s */
        __m256i w[8];
        if (wt == PF_TYPE_Q8_0) {
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                w[j] = YMM_VNNI ? _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(q + 64 * j)), bias)
                                : _mm256_abs_epi8(_mm256_loadu_si256((const __m256i *)(q + 64 * j)));
        } else { /* byte j of the block: weights j (low nibble) and j + 16 (high) */
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(q + 64 * j));
                w[j] = _mm256_and_si256(v, lo4);
                w[4 + j] = _mm256_and_si256(_mm256_srli_epi16(v, 4), lo4);
            }
        }
#pragma GCC unroll 16
        for (int b = 0; b < NB; b++) {
            const uint8_t *xb = act + (size_t)b * stride + (size_t)k * XB;
            __m256i s;
#ifdef PF_YMM_VNNI
            /* two dependency chains of 4 (exact int32 sums: the split changes nothing) */
            s = wt == PF_TYPE_Q8_0 ? _mm256_set1_epi32(asum[b * ald + k]) : _mm256_setzero_si256();
            __m256i s1 = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                s = _mm256_dpbusd_avx_epi32(s, w[j], _mm256_set1_epi32((int)load_u32(xb + 8 + 4 * j)));
                s1 = _mm256_dpbusd_avx_epi32(s1, w[4 + j], _mm256_set1_epi32((int)load_u32(xb + 24 + 4 * j)));
            }
            s = _mm256_add_epi32(s, s1);
#else
            if (wt == PF_TYPE_Q8_0) {
                __m256i s1 = _mm256_setzero_si256();
                s = _mm256_setzero_si256();
#pragma GCC unroll 8
                for (int j = 0; j < 8; j += 2) { /* two chains (exact: the split changes nothing) */
                    __m256i x0 = _mm256_sign_epi8(_mm256_set1_epi32((int)load_u32(xb + 8 + 4 * j)),
                                                  _mm256_loadu_si256((const __m256i *)(q + 64 * j)));
                    __m256i x1 = _mm256_sign_epi8(_mm256_set1_epi32((int)load_u32(xb + 12 + 4 * j)),
                                                  _mm256_loadu_si256((const __m256i *)(q + 64 * j + 64)));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(w[j], x0), ones));
                    s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_maddubs_epi16(w[j + 1], x1), ones));
                }
                s = _mm256_add_epi32(s, s1);
            } else {
                __m256i p0 = _mm256_maddubs_epi16(w[0], _mm256_set1_epi32((int)load_u32(xb + 8)));
                __m256i p1 = _mm256_maddubs_epi16(w[4], _mm256_set1_epi32((int)load_u32(xb + 24)));
#pragma GCC unroll 4
                for (int j = 1; j < 4; j++) {
                    p0 = _mm256_add_epi16(p0, _mm256_maddubs_epi16(w[j], _mm256_set1_epi32((int)load_u32(xb + 8 + 4 * j))));
                    p1 = _mm256_add_epi16(p1, _mm256_maddubs_epi16(w[4 + j],
                                                                   _mm256_set1_epi32((int)load_u32(xb + 24 + 4 * j))));
                }
                s = _mm256_madd_epi16(_mm256_add_epi16(p0, p1), ones);
            }
#endif
            __m256 sc = _mm256_mul_ps(dv, _mm256_set1_ps(load_f32(xb)));
            __m256 t = _mm256_mul_ps(sc, _mm256_cvtepi32_ps(s));
            if (wt != PF_TYPE_Q8_0) t = _mm256_add_ps(t, _mm256_mul_ps(mv, _mm256_set1_ps(load_f32(xb + 4))));
            acc[b] = _mm256_add_ps(acc[b], t);
        }
    }
#pragma GCC unroll 16
    for (int b = 0; b < NB; b++) _mm256_maskstore_ps(y + b * ldy, mask, acc[b]);
}

#define QHALF_CASE(N) \
    case N: qhalf(wt, g, h, nk, act, stride, asum, ald, first, mask, y, ldy, pf, N); break;

PF_FORCE_INLINE void qhalf_nb(uint32_t wt, int nb, const uint8_t *g, int h, int64_t nk, const uint8_t *act,
                              size_t stride, const int32_t *asum, int64_t ald, int first, __m256i mask, float *y,
                              int64_t ldy, const uint8_t *pf) {
    switch (nb) {
        QHALF_CASE(1) QHALF_CASE(2) QHALF_CASE(3) QHALF_CASE(4) QHALF_CASE(5) QHALF_CASE(6)
        QHALF_CASE(7) QHALF_CASE(8) QHALF_CASE(9) QHALF_CASE(10) QHALF_CASE(11) QHALF_CASE(12)
        QHALF_CASE(13) QHALF_CASE(14) QHALF_CASE(15)
        default: qhalf(wt, g, h, nk, act, stride, asum, ald, first, mask, y, ldy, pf, QNB); break;
    }
}

/* Lanes [a, e) of a half (0 <= a <= e <= 8) as a maskload/maskstore mask. */
static inline __m256i lane_mask(int a, int e) {
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_si256(_mm256_cmpgt_epi32(iota, _mm256_set1_epi32(a - 1)),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32(e), iota));
}

/* One packed group (rows gs .. gs+15, of which [a, e) are stored) against sb activation rows, in
 * balanced passes of at most QNB rows (17 rows go as 9 + 8) per half while the group's weights are
 * hot in L1; only the first pass prefetches. */
PF_FORCE_INLINE void group_passes(uint32_t wt, const uint8_t *g, int64_t gs, int64_t a, int64_t e, int64_t nk,
                                  const uint8_t *act, size_t stride, const int32_t *asum, int sb, int first, float *y,
                                  int64_t ldy, const uint8_t *pf) {
    int npass = (sb + QNB - 1) / QNB;
    for (int h = 0; h < 2; h++) {
        int64_t ha = a - gs - 8 * h, he = e - gs - 8 * h; /* stored lanes of this half */
        ha = ha < 0 ? 0 : ha, he = he > 8 ? 8 : he;
        if (ha >= he) continue;
        __m256i mask = lane_mask((int)ha, (int)he);
        for (int c = 0, left = npass, nb; c < sb; c += nb, left--) {
            nb = (sb - c + left - 1) / left;
            qhalf_nb(wt, nb, g, h, nk, act + (size_t)c * stride, stride, asum + (size_t)c * nk, nk, first, mask,
                     y + c * ldy + gs + 8 * h, ldy, c ? NULL : pf);
        }
    }
}

/* Rows [r0, r1) in the packed layout's groups of 16 rows (a group reaching outside [r0, r1) is
 * computed whole, zero rows past the matrix included, and only its rows inside stored). GGUF-layout
 * weights are packed group by group into stack scratch first (pf_pack_group), so both layouts give
 * the micro-kernel the same bytes: the same results, bit for bit. Rows over kc blocks run in k
 * super-chunks, the accumulators parked in y in between (a float store and reload changes nothing). */
PF_FORCE_INLINE void gemm_quant(uint32_t wt, const pf_weight *W, const void *act_, size_t stride,
                                int B, float *y, int64_t ldy, int64_t r0, int64_t r1) {
    const uint8_t *act = act_;
    const size_t ts = qtype_size(wt);
    const int64_t nblk = W->cols / PF_QK;
    if (nblk == 0) { /* no columns: empty sums */
        for (int b = 0; b < B; b++)
            for (int64_t r = r0; r < r1; r++) y[b * ldy + r] = 0.0f;
        return;
    }
    _Alignas(64) int32_t asum[YMM_ASUM(wt) ? ASUM_INTS : 1];
    const int packed = W->packed != NULL;
    _Alignas(64) uint8_t pad[packed ? 1 : QPAD_BYTES];
    int64_t kc = packed ? QKS : (int64_t)(QPAD_BYTES / (ts * QRG));
    const size_t gbytes = (size_t)nblk * QRG * ts; /* one packed group, all blocks */
    const int64_t ngroups = (W->rows + QRG - 1) / QRG;
    for (int64_t k0 = 0; k0 < nblk; k0 += kc) {
        int64_t nk = nblk - k0 < kc ? nblk - k0 : kc;
        int first = k0 == 0;
        int sbmax = YMM_ASUM(wt) ? (int)(ASUM_INTS / nk) : B; /* >= 32 */
        for (int s0 = 0; s0 < B; s0 += sbmax) {
            int sb = B - s0 < sbmax ? B - s0 : sbmax;
            const uint8_t *as = act + (size_t)s0 * stride;
            if (YMM_ASUM(wt)) act_sums(as, stride, sb, k0, nk, wt == PF_TYPE_Q8_0 ? -128 : -8, asum);
            for (int64_t gs = r0 / QRG * QRG; gs < r1; gs += QRG) {
                int64_t a = r0 > gs ? r0 : gs, e = r1 < gs + QRG ? r1 : gs + QRG;
                const uint8_t *g, *pf = NULL;
                if (packed) {
                    g = (const uint8_t *)W->packed + (size_t)(gs / QRG) * gbytes + (size_t)k0 * QRG * ts;
                    /* one row streams at memory speed on the hardware prefetcher alone; with
                     * several rows the compute per byte hides a prefetch (as the AVX-512 gemm) */
                    if (QPF_PACKED && B >= QPF_MIN_B && gs / QRG + QPF_PACKED < ngroups) pf = g + QPF_PACKED * gbytes;
                } else {
                    pf_pack_group(W, gs / QRG, k0, nk, pad);
                    g = pad;
                }
                group_passes(wt, g, gs, a, e, nk, as + (size_t)k0 * XB, stride, asum, sb, first, y + s0 * ldy, ldy, pf);
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

#endif
