/* AVX-512 (F, BW, VL, DQ, VNNI) kernels.
 *
 * gemm: each weight block is loaded and decoded once per chunk of up to NB_MAX activation rows;
 * every activation row b has its own accumulators and the per-b code is identical whatever the
 * chunk size, so output (r, b) is bitwise the same for B = 1 and B = 16 and for any row split.
 *   float weights (F32/F16/BF16 -> f32): vec_gemm_float.h (one source for every x86 level).
 *   quantized (Q8_0, Q4_0, Q4_1): register-blocked on groups of 16 consecutive weight rows, one
 *     row per 32-bit lane. Per block the group's 16 x 32 weights are loaded 16 bytes per row,
 *     transposed in registers (4x4 dword transposes within 128-bit lanes) and decoded once into
 *     8 registers of unsigned bytes (Q4: nibbles; Q8_0: w + 128); the scales come in with one
 *     gather. Each activation row then takes 8 vpdpbusd against broadcast dwords of its q8
 *     block, read in place (exact int32 block sums, one per lane), and the scalar reference's
 *     float ops per block in its order into its own 16-lane accumulator; so an output is one
 *     lane's chain of the reference's float ops in block order, with no horizontal reduction,
 *     whatever B, the group or the thread split: the reference's bits. Up to 16 activation rows
 *     share each decoded block. Q8_0's +128 offset is removed exactly with the activation
 *     block's integer sum; Q4_0's nibble - 8 as the reference does, with (-8 d) x.s in float.
 * RMSNorm, SwiGLU, softmax, the value axpy, argmax, first_above, f32_to_f16: vec_float.h (one
 * source for every x86 level). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "formats/quant.h"
#include "kernels/kernels_impl.h"
#include "kernels/x86/x86_quant.h"
#define PF_VEC_BITS 512
#include "kernels/x86/vec_float.h"
#include "kernels/x86/vec_gemm_float.h"


/* ---- quantized gemm ---- */

#define QNB 16           /* activation rows per pass over a group's blocks */
#define QKS 512          /* blocks per k super-chunk (accumulators parked in y between them) */
#define ASUM_INTS (16 * 1024) /* activation block sums per pass (Q8_0) */
#ifndef QPF_AHEAD
#define QPF_AHEAD 2      /* groups ahead that the weight prefetch reads */
#endif
#ifndef QPF_PACKED
#define QPF_PACKED 2     /* the same for packed weights (0: none) */
#endif
#ifndef QPF_MIN_B
#define QPF_MIN_B 2      /* packed weights: software prefetch from this many rows (see gemm_quant); from 2,
                            not 4, so 2 and 3 rows take 4 rows' path: a 3-row verify cost more than a
                            4-row one with the prefetch from 4 */
#endif

/* 16 bytes at byte offset off of each of 16 rows: row i at p[i / 4] + (i % 4) * rb. Returns
 * t[g] with lane i = dword g of row i. */
PF_FORCE_INLINE void load_transposed(const uint8_t *p0, const uint8_t *p1, const uint8_t *p2,
                                     const uint8_t *p3, size_t rb, size_t off, __m512i t[4]) {
    __m512i z[4];
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) { /* 128-bit lane l of z[m] = row 4l + m */
        size_t o = off + (size_t)m * rb;
        __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(p0 + o)));
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p1 + o)), 1);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p2 + o)), 2);
        z[m] = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p3 + o)), 3);
    }
    __m512i a = _mm512_unpacklo_epi32(z[0], z[1]), b = _mm512_unpackhi_epi32(z[0], z[1]);
    __m512i c = _mm512_unpacklo_epi32(z[2], z[3]), d = _mm512_unpackhi_epi32(z[2], z[3]);
    t[0] = _mm512_unpacklo_epi64(a, c);
    t[1] = _mm512_unpackhi_epi64(a, c);
    t[2] = _mm512_unpacklo_epi64(b, d);
    t[3] = _mm512_unpackhi_epi64(b, d);
}

/* One group of 16 consecutive weight rows (lane i = row i) against NB activation rows (row b at
 * act + b*stride, pointing at its block k0) over nk blocks: per block the weights are decoded
 * once into 8 registers w[j] (lane i = unsigned bytes 4j..4j+3 of row i's block), then per
 * activation row b
 *   isum = c_b + sum_j vpdpbusd(w[j], broadcast dword j of x_b)          (exact int32)
 *   Q8_0: acc_b += (d_w * x.d) * float(isum)
 *   Q4_0: acc_b += (d_w * x.d) * float(isum) + (-8 * d_w) * x.s   (isum over the nibbles 0..15)
 *   Q4_1: acc_b += (d_w * x.d) * float(isum) + m_w * x.s
 * with c_b = -128 sum(x) (Q8_0: w + 128 as unsigned), else 0: kernels_scalar.c's float ops in
 * its order, each rounded (-ffp-contract=off: no fused multiply-adds).
 * Every output is one lane's sequence of these ops in block order: nothing depends on NB, on
 * the lane, on the group, on the split of rows or on the layout the weights come from. acc
 * starts at 0 if first, else from y (parked there by the previous k super-chunk). Lanes outside
 * mask are not stored.
 *   GGUF layout (packed = 0): g points at row 0's block k0, rows rb bytes apart; per block the
 *     16 rows are transposed in registers and the scales gathered.
 *   packed layout (packed = 1, kernels.h): g points at the group's block k0, blocks 16 * ts
 *     bytes apart; per block the scales and the dword columns are plain loads. */
PF_FORCE_INLINE void qgroup(uint32_t wt, int packed, const uint8_t *g, size_t rb, int64_t nk, const uint8_t *act,
                            size_t stride, const int32_t *asum, int64_t ald, int first, __mmask16 mask, float *y,
                            int64_t ldy, const uint8_t *pf, int NB) {
    const size_t ts = qtype_size(wt);
    const uint8_t *p0 = g + (wt == PF_TYPE_Q4_1 ? 4 : 2), *p1 = p0 + 4 * rb, *p2 = p0 + 8 * rb,
                  *p3 = p0 + 12 * rb;
    __m512 acc[QNB];
#pragma GCC unroll 16
    for (int b = 0; b < NB; b++)
        acc[b] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask, y + b * ldy);
    const __m512i lo4 = _mm512_set1_epi8(0x0f), bias = _mm512_set1_epi8((char)0x80);
    /* gather offsets of the 16 rows (15 * rb < 2^31: see gemm_quant) */
    const __m512i gidx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32((int)rb));
    for (int64_t k = 0; k < nk; k++) {
        size_t ko = (size_t)k * ts;
        __m512i w[8], t[4];
        __m512 dv, mv = _mm512_setzero_ps();
        if (packed) {
            const uint8_t *blk = g + QRG * ko, *q = blk + (wt == PF_TYPE_Q4_1 ? 64 : 32);
            if (pf)
                for (size_t o = 0; o < QRG * ts; o += 64) _mm_prefetch((const char *)pf + QRG * ko + o, _MM_HINT_T1);
            dv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)blk));
            if (wt == PF_TYPE_Q4_1) mv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(blk + 32)));
            if (wt == PF_TYPE_Q8_0) {
#pragma GCC unroll 8
                for (int j = 0; j < 8; j++) w[j] = _mm512_xor_si512(_mm512_loadu_si512(q + 64 * j), bias);
            } else {
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    __m512i v = _mm512_loadu_si512(q + 64 * j);
                    w[j] = _mm512_and_si512(v, lo4);
                    w[4 + j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), lo4);
                }
            }
        } else {
            if (pf) /* the group QPF_AHEAD ahead, a block column of it per block: into L2 */
                for (size_t o = 0; o < QRG * ts; o += 64) _mm_prefetch((const char *)pf + QRG * ko + o, _MM_HINT_T1);
            if (wt == PF_TYPE_Q8_0) {
                load_transposed(p0, p1, p2, p3, rb, ko, t);
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) w[j] = _mm512_xor_si512(t[j], bias);
                load_transposed(p0, p1, p2, p3, rb, ko + 16, t);
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) w[4 + j] = _mm512_xor_si512(t[j], bias);
            } else { /* byte j of the block: weights j (low nibble) and j + 16 (high) */
                load_transposed(p0, p1, p2, p3, rb, ko, t);
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    w[j] = _mm512_and_si512(t[j], lo4);
                    w[4 + j] = _mm512_and_si512(_mm512_srli_epi16(t[j], 4), lo4);
                }
            }
            /* scales: lane i = the first dword of row i's block (d | m << 16 for Q4_1) */
            __m512i dm = _mm512_i32gather_epi32(gidx, g + ko, 1);
            dv = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm));
            if (wt == PF_TYPE_Q4_1) mv = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16)));
        }
        if (wt == PF_TYPE_Q4_0) mv = _mm512_mul_ps(_mm512_set1_ps(-8.0f), dv); /* nibble - 8: -8 d per x.s */
#pragma GCC unroll 16
        for (int b = 0; b < NB; b++) {
            const uint8_t *xb = act + (size_t)b * stride + (size_t)k * XB;
            /* two dependency chains of 4 (exact int32 sums: the split changes nothing) */
            __m512i s = wt == PF_TYPE_Q8_0 ? _mm512_set1_epi32(asum[b * ald + k]) : _mm512_setzero_si512();
            __m512i s1 = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                s = _mm512_dpbusd_epi32(s, w[j], _mm512_set1_epi32((int)load_u32(xb + 8 + 4 * j)));
                s1 = _mm512_dpbusd_epi32(s1, w[4 + j], _mm512_set1_epi32((int)load_u32(xb + 24 + 4 * j)));
            }
            s = _mm512_add_epi32(s, s1);
            __m512 sc = _mm512_mul_ps(dv, _mm512_set1_ps(load_f32(xb)));
            __m512 t = _mm512_mul_ps(sc, _mm512_cvtepi32_ps(s));
            if (wt != PF_TYPE_Q8_0) t = _mm512_add_ps(t, _mm512_mul_ps(mv, _mm512_set1_ps(load_f32(xb + 4))));
            acc[b] = _mm512_add_ps(acc[b], t);
        }
    }
#pragma GCC unroll 16
    for (int b = 0; b < NB; b++) _mm512_mask_storeu_ps(y + b * ldy, mask, acc[b]);
}

#define QGROUP_CASE(N) \
    case N: qgroup(wt, packed, g, rb, nk, act, stride, asum, ald, first, mask, y, ldy, pf, N); break;

PF_FORCE_INLINE void qgroup_nb(uint32_t wt, int packed, int nb, const uint8_t *g, size_t rb, int64_t nk,
                               const uint8_t *act, size_t stride,
                               const int32_t *asum, int64_t ald, int first, __mmask16 mask, float *y,
                               int64_t ldy, const uint8_t *pf) {
    switch (nb) {
        QGROUP_CASE(1) QGROUP_CASE(2) QGROUP_CASE(3) QGROUP_CASE(4) QGROUP_CASE(5) QGROUP_CASE(6)
        QGROUP_CASE(7) QGROUP_CASE(8) QGROUP_CASE(9) QGROUP_CASE(10) QGROUP_CASE(11) QGROUP_CASE(12)
        QGROUP_CASE(13) QGROUP_CASE(14) QGROUP_CASE(15)
        default: qgroup(wt, packed, g, rb, nk, act, stride, asum, ald, first, mask, y, ldy, pf, QNB); break;
    }
}

/* One group against sb activation rows (act at their block k0, asum their block sums), in
 * balanced passes of at most QNB rows (17 rows go as 9 + 8) while the group's weights are hot in
 * L1; only the first pass prefetches. */
PF_FORCE_INLINE void group_passes(uint32_t wt, int packed, const uint8_t *g, size_t grb, int64_t nk,
                                  const uint8_t *act, size_t stride, const int32_t *asum, int sb, int first,
                                  __mmask16 mask, float *y, int64_t ldy, const uint8_t *pf) {
    int npass = (sb + QNB - 1) / QNB;
    for (int c = 0, left = npass, nb; c < sb; c += nb, left--) {
        nb = (sb - c + left - 1) / left;
        qgroup_nb(wt, packed, nb, g, grb, nk, act + (size_t)c * stride, stride, asum + (size_t)c * nk, nk, first, mask,
                  y + c * ldy, ldy, c ? NULL : pf);
    }
}

/* Copy rows [r, r+n) of W's blocks [k0, k0+nk) into dst as 16 rows of nk*ts bytes (rows n.. are
 * zeros): the group layout for matrices of fewer than 16 rows or of rows too long for the gather
 * offsets. */
PF_NOIPA static void pad_rows(const pf_weight *W, size_t ts, int64_t r, int n, int64_t k0, int64_t nk,
                              uint8_t *dst) {
    size_t len = (size_t)nk * ts;
    for (int i = 0; i < QRG; i++) {
        if (i < n)
            memcpy(dst + i * len, (const uint8_t *)W->data + (size_t)(r + i) * W->row_bytes + k0 * ts, len);
        else
            memset(dst + i * len, 0, len);
    }
}

#define QPAD_BYTES (32 * 1024) /* padded copy of one group, per k chunk */

/* Rows [r0, r1) in groups of 16 consecutive rows of W; a partial group is shifted back to end at
 * W's last row (recomputing rows outside [r0, r1), bitwise the same values, never stored) or,
 * for matrices under 16 rows, read from a zero-padded copy (the same values in the same lanes'
 * operations). Per group the blocks' scales go into
 * a table once, then the activation rows pass over it QNB at a time (balanced: 17 rows go as
 * 9 + 8) while the group's weights are hot in L1. Rows over kc blocks run in k super-chunks, the
 * accumulators parked in y in between (a float store and reload changes nothing). */
PF_FORCE_INLINE void gemm_quant(uint32_t wt, const pf_weight *W, const void *act_, size_t stride,
                                int B, float *y, int64_t ldy, int64_t r0, int64_t r1) {
    const uint8_t *act = act_;
    const size_t ts = qtype_size(wt), rb = W->row_bytes;
    int64_t nblk = W->cols / PF_QK;
    if (nblk == 0) { /* no columns: empty sums */
        for (int b = 0; b < B; b++)
            for (int64_t r = r0; r < r1; r++) y[b * ldy + r] = 0.0f;
        return;
    }
    _Alignas(64) int32_t asum[wt == PF_TYPE_Q8_0 ? ASUM_INTS : 1];
    /* groups are read in place (gather offsets up to 15 * row_bytes must fit in int32) or from a
     * zero-padded copy when the matrix has under 16 rows */
    const int padded = !W->packed && (W->rows < QRG || rb > (size_t)INT32_MAX / QRG);
    _Alignas(64) uint8_t pad[padded ? QPAD_BYTES : 1];
    int64_t kc = QKS;
    if (padded && kc * ts * QRG > QPAD_BYTES) kc = QPAD_BYTES / (ts * QRG);
    for (int64_t k0 = 0; k0 < nblk; k0 += kc) {
        int64_t nk = nblk - k0 < kc ? nblk - k0 : kc;
        int first = k0 == 0;
        int sbmax = wt == PF_TYPE_Q8_0 ? (int)(ASUM_INTS / nk) : B; /* >= 32 */
        for (int s0 = 0; s0 < B; s0 += sbmax) {
            int sb = B - s0 < sbmax ? B - s0 : sbmax;
            const uint8_t *as = act + (size_t)s0 * stride;
            if (wt == PF_TYPE_Q8_0) act_sums(as, stride, sb, k0, nk, -128, asum);
            if (W->packed) {
                /* groups of the packed layout start at multiples of 16 rows; lanes outside
                 * [r0, r1) are computed (zero rows past the matrix) but never stored */
                const size_t gbytes = (size_t)nblk * QRG * ts; /* one group, all blocks */
                const int64_t ngroups = (W->rows + QRG - 1) / QRG;
                for (int64_t gs = r0 / QRG * QRG; gs < r1; gs += QRG) {
                    int64_t a = r0 > gs ? r0 : gs, e = r1 < gs + QRG ? r1 : gs + QRG;
                    __mmask16 mask = (__mmask16)(((1u << (e - a)) - 1) << (a - gs));
                    const uint8_t *g = (const uint8_t *)W->packed + (size_t)(gs / QRG) * gbytes + (size_t)k0 * QRG * ts;
                    /* one row streams at memory speed on the hardware prefetcher alone (software
                     * prefetch measured 8-14% slower there); with several rows the compute per
                     * byte hides a prefetch and it pays (17-23% at 8 rows); every row count from
                     * QPF_MIN_B on takes the same path, so t(n) grows with n */
                    const uint8_t *pf = QPF_PACKED && B >= QPF_MIN_B && gs / QRG + QPF_PACKED < ngroups
                                            ? g + QPF_PACKED * gbytes
                                            : NULL;
                    group_passes(wt, 1, g, 0, nk, as + (size_t)k0 * XB, stride, asum, sb, first, mask,
                                 y + s0 * ldy + gs, ldy, pf);
                }
                continue;
            }
            for (int64_t g0 = r0; g0 < r1; g0 += QRG) {
                int n = r1 - g0 < QRG ? (int)(r1 - g0) : QRG;
                int64_t gs = g0; /* first row of the 16 read */
                const uint8_t *g;
                size_t grb;
                __mmask16 mask = (__mmask16)((1u << n) - 1);
                if (padded) {
                    pad_rows(W, ts, g0, n, k0, nk, pad);
                    g = pad, grb = (size_t)nk * ts;
                } else {
                    if (gs > W->rows - QRG) gs = W->rows - QRG; /* a partial group ends at the last row */
                    mask = (__mmask16)(((1u << n) - 1) << (g0 - gs));
                    g = (const uint8_t *)W->data + (size_t)gs * rb + (size_t)k0 * ts, grb = rb;
                }
                /* prefetch: rows [gs + 16*QPF_AHEAD, +16) of this k chunk, when whole in W */
                const uint8_t *pf = NULL;
                if (!padded && gs + QRG * (QPF_AHEAD + 1) <= W->rows && nk == nblk)
                    pf = g + (size_t)QPF_AHEAD * QRG * rb;
                group_passes(wt, 0, g, grb, nk, as + (size_t)k0 * XB, stride, asum, sb, first, mask,
                             y + s0 * ldy + gs, ldy, pf);
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

PF_DEFINE_KERNELS(pf_kernels_avx512_table, PF_LEVEL_AVX512, "avx512", quantize_act, pf_attend_rows_avx512,
                  pf_attend_group_avx512, 1);
