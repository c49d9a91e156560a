/* ARM64 i8mm level (compiled with -march=armv8.2-a+dotprod+i8mm; run only where the CPU reports
 * both): pairs of activation rows go through SMMLA, which multiplies a 2x8 int8 block of two
 * weight rows by the transposed 2x8 block of two activation rows into a 2x2 int32 tile: 32
 * products per instruction against SDOT's 16. An odd last activation row takes SDOT. The
 * operands are paired on the fly (ZIP1/ZIP2 of 64-bit halves) from the GGUF layout, or read
 * ready-paired from the packed layout (kernels/arm/repack_i8mm.c) where the model has one; then
 * every activation row goes through SMMLA (an odd last one paired with itself). The integer sums
 * are exact either way, so the float part (neon_quant_gemm.h's) gives the reference's bits. */
#include <arm_neon.h>

#include "kernels/arm/neon_elementwise.h"
#include "kernels/arm/neon_float_gemm.h"
#include "kernels/kernels_impl.h"

#define QNB 4

PF_FORCE_INLINE int32x4_t row_isum(int8x16_t wlo, int8x16_t whi, int8x16_t xlo, int8x16_t xhi) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), wlo, xlo), whi, xhi);
}

#define PF_LEVEL_BLOCK_ISUMS /* its own below, four_rows_isum for an odd last row */
#include "kernels/arm/neon_row_sums.h"

/* p[c] = [elements 8c..8c+7 of a, the same of b] for c = 0..3: the 2x8 SMMLA operands */
PF_FORCE_INLINE void pair_rows(int8x16_t alo, int8x16_t ahi, int8x16_t blo, int8x16_t bhi, int8x16_t p[4]) {
    int64x2_t al = vreinterpretq_s64_s8(alo), ah = vreinterpretq_s64_s8(ahi);
    int64x2_t bl = vreinterpretq_s64_s8(blo), bh = vreinterpretq_s64_s8(bhi);
    p[0] = vreinterpretq_s8_s64(vzip1q_s64(al, bl));
    p[1] = vreinterpretq_s8_s64(vzip2q_s64(al, bl));
    p[2] = vreinterpretq_s8_s64(vzip1q_s64(ah, bh));
    p[3] = vreinterpretq_s8_s64(vzip2q_s64(ah, bh));
}

/* [a0.x0, a0.x1, a1.x0, a1.x1] over the 32 elements */
PF_FORCE_INLINE int32x4_t tile(const int8x16_t wp[4], const int8x16_t xp[4]) {
    int32x4_t t = vmmlaq_s32(vdupq_n_s32(0), wp[0], xp[0]);
    t = vmmlaq_s32(t, wp[1], xp[1]);
    t = vmmlaq_s32(t, wp[2], xp[2]);
    return vmmlaq_s32(t, wp[3], xp[3]);
}

PF_FORCE_INLINE void block_isums(const int8x16_t w[4][2], const pf_block_q8_act *const *xb, int nb, int32x4_t *is) {
    int b = 0;
    if (nb >= 2) {
        int8x16_t w01[4], w23[4];
        pair_rows(w[0][0], w[0][1], w[1][0], w[1][1], w01);
        pair_rows(w[2][0], w[2][1], w[3][0], w[3][1], w23);
#pragma GCC unroll 4
        for (; b + 2 <= nb; b += 2) {
            int8x16_t xp[4];
            pair_rows(vld1q_s8(xb[b]->qs), vld1q_s8(xb[b]->qs + 16), vld1q_s8(xb[b + 1]->qs),
                      vld1q_s8(xb[b + 1]->qs + 16), xp);
            int32x4_t t01 = tile(w01, xp), t23 = tile(w23, xp);
            is[b] = vuzp1q_s32(t01, t23);     /* [r0.x0, r1.x0, r2.x0, r3.x0] */
            is[b + 1] = vuzp2q_s32(t01, t23); /* the same with x1 */
        }
    }
    if (b < nb) is[b] = four_rows_isum(w, xb[b]);
}

/* ---- the packed layout (kernels/arm/repack_i8mm.c) ----
 * Block k of a group of four rows is [4 d][4 m (Q4_1)][rows 0,1 interleaved][rows 2,3 interleaved]:
 * the weight operands of tile() are plain loads (Q8_0) or a load and a nibble split (Q4: the low
 * nibbles of [a q0..7, b q0..7] are elements 0..7 of the two rows, the high ones 16..23), and the
 * four scales one 8-byte load. The float part is neon_quant_gemm.h's, operation for operation. */
#define PQNB 8 /* activation rows per pass over a group's blocks */

PF_FORCE_INLINE void packed_rows4(uint32_t wt, const uint8_t *g, int64_t nblk, const pf_block_q8_act *const *x,
                                  int nb, float32x4_t *acc) {
    const size_t bs = 4 * (wt == PF_TYPE_Q8_0 ? sizeof(pf_block_q8_0)
                           : wt == PF_TYPE_Q4_0 ? sizeof(pf_block_q4_0) : sizeof(pf_block_q4_1));
    const size_t qoff = wt == PF_TYPE_Q4_1 ? 16 : 8;
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++) acc[b] = vdupq_n_f32(0.0f);
    for (int64_t k = 0; k < nblk; k++, g += bs) {
        float32x4_t d = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)g))), m = vdupq_n_f32(0.0f);
        if (wt == PF_TYPE_Q4_0) m = vmulq_f32(vdupq_n_f32(-8.0f), d);
        if (wt == PF_TYPE_Q4_1) m = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)(g + 8))));
        int8x16_t w01[4], w23[4];
        if (wt == PF_TYPE_Q8_0) {
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                w01[c] = vld1q_s8((const int8_t *)g + qoff + 16 * c);
                w23[c] = vld1q_s8((const int8_t *)g + qoff + 64 + 16 * c);
            }
        } else {
            uint8x16_t a0 = vld1q_u8(g + qoff), a1 = vld1q_u8(g + qoff + 16);
            uint8x16_t b0 = vld1q_u8(g + qoff + 32), b1 = vld1q_u8(g + qoff + 48);
            w01[0] = vreinterpretq_s8_u8(vandq_u8(a0, m4)), w01[2] = vreinterpretq_s8_u8(vshrq_n_u8(a0, 4));
            w01[1] = vreinterpretq_s8_u8(vandq_u8(a1, m4)), w01[3] = vreinterpretq_s8_u8(vshrq_n_u8(a1, 4));
            w23[0] = vreinterpretq_s8_u8(vandq_u8(b0, m4)), w23[2] = vreinterpretq_s8_u8(vshrq_n_u8(b0, 4));
            w23[1] = vreinterpretq_s8_u8(vandq_u8(b1, m4)), w23[3] = vreinterpretq_s8_u8(vshrq_n_u8(b1, 4));
        }
        const pf_block_q8_act *xb[PQNB];
        int32x4_t is[PQNB];
#pragma GCC unroll 8
        for (int b = 0; b < nb; b++) xb[b] = x[b] + k;
#pragma GCC unroll 4
        for (int b = 0; b < nb; b += 2) {
            /* an odd last row is paired with itself: [r.x, r.x] in each half, half the products wasted */
            const pf_block_q8_act *x1 = b + 1 < nb ? xb[b + 1] : xb[b];
            int8x16_t xp[4];
            pair_rows(vld1q_s8(xb[b]->qs), vld1q_s8(xb[b]->qs + 16), vld1q_s8(x1->qs), vld1q_s8(x1->qs + 16), xp);
            int32x4_t t01 = tile(w01, xp), t23 = tile(w23, xp);
            is[b] = vuzp1q_s32(t01, t23);                        /* [r0.x0, r1.x0, r2.x0, r3.x0] */
            if (b + 1 < nb) is[b + 1] = vuzp2q_s32(t01, t23); /* the same with x1 */
        }
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

/* Rows [r0, r1) from the packed groups that hold them (ranges need not start on a group). */
static void gemm_quant_packed(uint32_t wt, const pf_weight *W, const void *act, size_t stride, int B, float *y,
                              int64_t ldy, int64_t r0, int64_t r1) {
    const int64_t nblk = W->cols / PF_QK;
    const size_t gbytes = (size_t)nblk * 4 * (wt == PF_TYPE_Q8_0 ? sizeof(pf_block_q8_0)
                                              : wt == PF_TYPE_Q4_0 ? sizeof(pf_block_q4_0) : sizeof(pf_block_q4_1));
    for (int64_t gi = r0 / 4; gi * 4 < r1; gi++) {
        const uint8_t *g = (const uint8_t *)W->packed + (size_t)gi * gbytes;
        const int64_t lo = r0 > gi * 4 ? r0 : gi * 4, hi = r1 < gi * 4 + 4 ? r1 : gi * 4 + 4;
        for (int b0 = 0; b0 < B; b0 += PQNB) {
            int nb = B - b0 < PQNB ? B - b0 : PQNB;
            const pf_block_q8_act *x[PQNB];
            for (int b = 0; b < nb; b++) x[b] = (const pf_block_q8_act *)((const char *)act + (size_t)(b0 + b) * stride);
            float32x4_t acc[PQNB];
            switch (nb) { /* constant nb: the per-row loops unroll */
            case 1: packed_rows4(wt, g, nblk, x, 1, acc); break;
            case 2: packed_rows4(wt, g, nblk, x, 2, acc); break;
            case 3: packed_rows4(wt, g, nblk, x, 3, acc); break;
            case 4: packed_rows4(wt, g, nblk, x, 4, acc); break;
            case 5: packed_rows4(wt, g, nblk, x, 5, acc); break;
            case 6: packed_rows4(wt, g, nblk, x, 6, acc); break;
            case 7: packed_rows4(wt, g, nblk, x, 7, acc); break;
            default: packed_rows4(wt, g, nblk, x, PQNB, acc); break;
            }
            for (int b = 0; b < nb; b++) {
                float o[4];
                vst1q_f32(o, acc[b]);
                for (int64_t r = lo; r < hi; r++) y[(b0 + b) * ldy + r] = o[r - gi * 4];
            }
        }
    }
}
#define PF_LEVEL_PACKED_GEMM

#include "kernels/arm/neon_quant_gemm.h"

PF_DEFINE_KERNELS(pf_kernels_i8mm_table, PF_LEVEL_I8MM, "i8mm", quantize_act);
