/* Baseline ARM64 level (armv8-a Advanced SIMD, every ARM64 core): quantized products with
 * widening multiplies (SMULL/SMLAL2 int8 -> int16 pairs, SADALP into int32); the float gemm and
 * the elementwise kernels are the shared NEON ones. */
#include <arm_neon.h>

#include "kernels/arm/neon_elementwise.h"
#include "kernels/arm/neon_float_gemm.h"
#include "kernels/kernels_impl.h"

#define QNB 4

/* Four int32 partial sums of one row's block: each int16 lane holds two products, at most
 * 2 * 128 * 127 = 32512 in magnitude, so nothing saturates. */
PF_FORCE_INLINE int32x4_t row_isum(int8x16_t wlo, int8x16_t whi, int8x16_t xlo, int8x16_t xhi) {
    int16x8_t p = vmlal_high_s8(vmull_s8(vget_low_s8(wlo), vget_low_s8(xlo)), wlo, xlo);
    int16x8_t q = vmlal_high_s8(vmull_s8(vget_low_s8(whi), vget_low_s8(xhi)), whi, xhi);
    return vpadalq_s16(vpaddlq_s16(p), q);
}

#include "kernels/arm/neon_row_sums.h"

#include "kernels/arm/neon_quant_gemm.h"

PF_DEFINE_KERNELS(pf_kernels_neon_table, PF_LEVEL_NEON, "neon", quantize_act, NULL,
                  pf_attend_group_neon, 0);
