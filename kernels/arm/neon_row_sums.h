/* The quantized block sums every ARM64 level shares, built on that level's
 *   row_isum(wlo, whi, xlo, xhi): four int32 partial sums of one weight row's 32 products
 * (defined by the level file before it includes this header). four_rows_isum gives the four
 * weight rows' exact sums against one activation block; block_isums (neon_quant_gemm.h's
 * contract) applies it to each activation row unless the level defines PF_LEVEL_BLOCK_ISUMS and
 * its own (i8mm: pairs of rows with SMMLA, this for an odd last row). */
#ifndef PF_NEON_ROW_SUMS_H
#define PF_NEON_ROW_SUMS_H

#include <arm_neon.h>

#include "kernels/kernels_impl.h"

PF_FORCE_INLINE int32x4_t four_rows_isum(const int8x16_t w[4][2], const pf_block_q8_act *x) {
    int8x16_t xlo = vld1q_s8(x->qs), xhi = vld1q_s8(x->qs + 16);
    int32x4_t s0 = row_isum(w[0][0], w[0][1], xlo, xhi), s1 = row_isum(w[1][0], w[1][1], xlo, xhi);
    int32x4_t s2 = row_isum(w[2][0], w[2][1], xlo, xhi), s3 = row_isum(w[3][0], w[3][1], xlo, xhi);
    return vpaddq_s32(vpaddq_s32(s0, s1), vpaddq_s32(s2, s3));
}

#ifndef PF_LEVEL_BLOCK_ISUMS
PF_FORCE_INLINE void block_isums(const int8x16_t w[4][2], const pf_block_q8_act *const *xb, int nb, int32x4_t *is) {
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++) is[b] = four_rows_isum(w, xb[b]);
}
#endif

#endif
