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

#include "kernels/arm/neon_row_sums.h"

#include "kernels/arm/neon_quant_gemm.h"

PF_DEFINE_KERNELS(pf_kernels_dotprod_table, PF_LEVEL_DOTPROD, "dotprod", quantize_act, NULL,
                  pf_attend_group_dotprod, 0);
