/* The Q8_0 / Q4_0 / Q4_1 gemm driver of the ARM64 levels. A level file defines QNB (activation
 * rows per pass) and
 *   block_isums(w, xb, nb, is): w[i][0..1] the 32 quants of block k of weight rows i = 0..3 (as
 *   int8: Q8_0 as stored, Q4 nibbles 0..15, low nibbles = elements 0..15), xb[b] block k of
 *   activation row b < nb; is[b] = the four rows' exact int32 sums of products with row b
 * then includes this file, compiled with its ISA flags, for its static gemm_q8_0/q4_0/q4_1.
 * A level with a packed weight layout defines PF_LEVEL_PACKED_GEMM and gemm_quant_packed (same
 * arguments as gemm_quant), which runs where W->packed is set.
 *
 * Bitwise the scalar reference (kernels_scalar.c): lanes run across four output rows, not along
 * a row, so each lane does the reference's float operations in its order, block after block:
 *   Q8_0: acc = acc + (d_w * x.d) * isum
 *   Q4_0: acc = acc + ((d_w * x.d) * isum + (-8 * d_w) * x.s)
 *   Q4_1: acc = acc + ((d_w * x.d) * isum + m_w * x.s)
 * (plain multiplies and adds: the build has -ffp-contract=off, so nothing is fused). The integer
 * sums are exact whichever instruction forms them, so every level, B and row split gives the
 * same bits. Rows past r1 in the last group of four repeat row r1-1 (read, never stored). */
#ifndef PF_NEON_QUANT_GEMM_H
#define PF_NEON_QUANT_GEMM_H

#include <arm_neon.h>
#include <string.h>

#include "kernels/kernels_impl.h"

/* The f16 at p[i] + off of four blocks as floats (lane loads: blocks are 2-byte aligned, every
 * block size is even and GGUF data is aligned). */
PF_FORCE_INLINE float32x4_t halves4(const uint8_t *const *p, size_t off) {
    uint16x4_t h = vld1_dup_u16((const uint16_t *)(const void *)(p[0] + off));
    h = vld1_lane_u16((const uint16_t *)(const void *)(p[1] + off), h, 1);
    h = vld1_lane_u16((const uint16_t *)(const void *)(p[2] + off), h, 2);
    h = vld1_lane_u16((const uint16_t *)(const void *)(p[3] + off), h, 3);
    return vcvt_f32_f16(vreinterpret_f16_u16(h));
}

/* Four weight rows (wr) against nb <= QNB activation rows (x[b]: the row's q8 blocks). */
PF_FORCE_INLINE void qdot_rows4(uint32_t wt, const uint8_t *const *wr, int64_t nblk,
                                const pf_block_q8_act *const *x, int nb, float32x4_t *acc) {
    const size_t ts = wt == PF_TYPE_Q8_0 ? sizeof(pf_block_q8_0)
                      : wt == PF_TYPE_Q4_0 ? sizeof(pf_block_q4_0) : sizeof(pf_block_q4_1);
    const size_t qoff = wt == PF_TYPE_Q4_1 ? 4 : 2;
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++) acc[b] = vdupq_n_f32(0.0f);
    for (int64_t k = 0; k < nblk; k++) {
        const uint8_t *blk[4];
        for (int i = 0; i < 4; i++) blk[i] = wr[i] + (size_t)k * ts;
        float32x4_t d = halves4(blk, 0), m = vdupq_n_f32(0.0f);
        if (wt == PF_TYPE_Q4_0) m = vmulq_f32(vdupq_n_f32(-8.0f), d);
        if (wt == PF_TYPE_Q4_1) m = halves4(blk, 2);
        int8x16_t w[4][2];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            if (wt == PF_TYPE_Q8_0) {
                w[i][0] = vld1q_s8((const int8_t *)blk[i] + 2);
                w[i][1] = vld1q_s8((const int8_t *)blk[i] + 18);
            } else {
                uint8x16_t q = vld1q_u8(blk[i] + qoff);
                w[i][0] = vreinterpretq_s8_u8(vandq_u8(q, m4));
                w[i][1] = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
            }
        }
        const pf_block_q8_act *xb[QNB];
        int32x4_t is[QNB];
#pragma GCC unroll 8
        for (int b = 0; b < nb; b++) xb[b] = x[b] + k;
        block_isums(w, xb, nb, is);
#pragma GCC unroll 8
        for (int b = 0; b < nb; b++) {
            float32x4_t t = vmulq_f32(vmulq_n_f32(d, xb[b]->d), vcvtq_f32_s32(is[b]));
            if (wt == PF_TYPE_Q8_0)
                acc[b] = vaddq_f32(acc[b], t);
            else
                acc[b] = vaddq_f32(acc[b], vaddq_f32(t, vmulq_n_f32(m, xb[b]->s)));
        }
    }
}

PF_FORCE_INLINE void gemm_quant(uint32_t wt, const pf_weight *W, const void *act, size_t stride, int B, float *y,
                                int64_t ldy, int64_t r0, int64_t r1) {
#ifdef PF_LEVEL_PACKED_GEMM /* the level reads its packed layout where the weights have one */
    if (W->packed) {
        gemm_quant_packed(wt, W, act, stride, B, y, ldy, r0, r1);
        return;
    }
#endif
    const int64_t nblk = W->cols / PF_QK;
    for (int64_t r = r0; r < r1; r += 4) {
        int nr = r1 - r < 4 ? (int)(r1 - r) : 4;
        const uint8_t *wr[4];
        for (int i = 0; i < 4; i++)
            wr[i] = (const uint8_t *)W->data + (size_t)(r + (i < nr ? i : nr - 1)) * W->row_bytes;
        for (int b0 = 0; b0 < B; b0 += QNB) {
            int nb = B - b0 < QNB ? B - b0 : QNB;
            const pf_block_q8_act *x[QNB];
            for (int b = 0; b < nb; b++) x[b] = (const pf_block_q8_act *)((const char *)act + (size_t)(b0 + b) * stride);
            float32x4_t acc[QNB];
            switch (nb) { /* constant nb: the per-row loops unroll */
            case 1: qdot_rows4(wt, wr, nblk, x, 1, acc); break;
            case 2: qdot_rows4(wt, wr, nblk, x, 2, acc); break;
            case 3: qdot_rows4(wt, wr, nblk, x, 3, acc); break;
            default: qdot_rows4(wt, wr, nblk, x, QNB, acc); break;
            }
            for (int b = 0; b < nb; b++) {
                float o[4];
                vst1q_f32(o, acc[b]);
                for (int i = 0; i < nr; i++) y[(b0 + b) * ldy + r + i] = o[i];
            }
        }
    }
}

PF_GEMM_ENTRIES_QUANT(gemm_quant)

#endif
