/* ARM64 i8mm level (compiled with -march=armv8.2-a+dotprod+i8mm; run only where the CPU reports
 * both): pairs of activation rows go through SMMLA, which multiplies a 2x8 int8 block of two
 * weight rows by the transposed 2x8 block of two activation rows into a 2x2 int32 tile: 32
 * products per instruction against SDOT's 16. An odd last activation row takes SDOT. The
 * operands are paired on the fly (ZIP1/ZIP2 of 64-bit halves) from the GGUF layout; the integer
 * sums are exact either way, so the float part (neon_quant_gemm.h) gives the reference's bits. */
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

#include "kernels/arm/neon_quant_gemm.h"

PF_DEFINE_KERNELS(pf_kernels_i8mm_table, PF_LEVEL_I8MM, "i8mm", quantize_act, NULL,
                  pf_attend_group_dotprod, 0);
