/* ARM64 dotprod level (armv8.2-a +dotprod; compiled with -march=armv8.2-a+dotprod and only run
 * where the CPU reports it): quantized products with SDOT, four int8 products summed into each
 * int32 lane per instruction. Float gemm and elementwise kernels as on the NEON level. */
#include <arm_neon.h>

#include "kernels/arm/neon_elementwise.h"
#include "kernels/arm/neon_float_gemm.h"
#include "kernels/kernels_impl.h"

#define QNB 4

PF_FORCE_INLINE int32x4_t row_isum(int8x16_t wlo, int8x16_t whi, int8x16_t xlo, int8x16_t xhi) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), wlo, xlo), whi, xhi);
}

PF_FORCE_INLINE void block_isums(const int8x16_t w[4][2], const pf_block_q8_act *const *xb, int nb, int32x4_t *is) {
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++) {
        int8x16_t xlo = vld1q_s8(xb[b]->qs), xhi = vld1q_s8(xb[b]->qs + 16);
        int32x4_t s0 = row_isum(w[0][0], w[0][1], xlo, xhi), s1 = row_isum(w[1][0], w[1][1], xlo, xhi);
        int32x4_t s2 = row_isum(w[2][0], w[2][1], xlo, xhi), s3 = row_isum(w[3][0], w[3][1], xlo, xhi);
        is[b] = vpaddq_s32(vpaddq_s32(s0, s1), vpaddq_s32(s2, s3));
    }
}

#include "kernels/arm/neon_quant_gemm.h"

PF_DEFINE_KERNELS(pf_kernels_dotprod_table, PF_LEVEL_DOTPROD, "dotprod", quantize_act);
