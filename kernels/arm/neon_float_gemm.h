/* F32 / F16 / BF16 weight gemm for every ARM64 level (baseline NEON), through the shared tile
 * driver kernels/gemm_float_tiles.h. Per (weight row, activation row) float_order.h's dot
 * product: the 16 partials are four 4-lane FMLA accumulators (column i into partial i % 16); the
 * last partial chunk of 16 columns and the tree are the reference's own C on those partials, so
 * every level gives the scalar reference's bits. */
#ifndef PF_NEON_FLOAT_GEMM_H
#define PF_NEON_FLOAT_GEMM_H

#include <arm_neon.h>
#include <string.h>

#include "formats/ggml_types.h"
#include "kernels/kernels_impl.h"

#define FR_MAX 1 /* one weight row x 4 activation rows per register block: 16 accumulators */
#define FB_MAX 4
#define ROW_TILE 32 /* weight rows per tile */

PF_FORCE_INLINE float32x4_t wload4(uint32_t wt, const void *w, int64_t i) {
    if (wt == PF_TYPE_F32) return vld1q_f32((const float *)w + i);
    uint16x4_t h = vld1_u16((const uint16_t *)w + i);
    if (wt == PF_TYPE_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); /* bf16: the top half of an f32 */
}

/* weight element i, widened as wload4 does (exactly) */
PF_FORCE_INLINE float wload1(uint32_t wt, const void *w, int64_t i) {
    if (wt == PF_TYPE_F32) return ((const float *)w)[i];
    if (wt == PF_TYPE_F16) return pf_fp16_to_fp32(((const pf_half *)w)[i]);
    return pf_bf16_to_fp32(((const uint16_t *)w)[i]);
}

/* Dot products of one weight row (w[0], NR = 1) with NB activation rows into out[0][b]. */
PF_FORCE_INLINE void fdot_block(uint32_t wt, const void *const *wr, int64_t n, const float *const *x,
                                float (*out)[FB_MAX], int NR, int NB) {
    (void)NR;
    const void *w = wr[0];
    float32x4_t acc[4][FB_MAX]; /* acc[v][b]: partials 4v .. 4v + 3 */
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++)
#pragma GCC unroll 8
        for (int b = 0; b < NB; b++) acc[v][b] = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + PF_NPART <= n; i += PF_NPART)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) {
            float32x4_t wv = wload4(wt, w, i + 4 * v);
#pragma GCC unroll 8
            for (int b = 0; b < NB; b++) acc[v][b] = vfmaq_f32(acc[v][b], wv, vld1q_f32(x[b] + i + 4 * v));
        }
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) {
        float p[PF_NPART];
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) vst1q_f32(p + 4 * v, acc[v][b]);
        for (int64_t j = i; j < n; j++) p[j - i] = fmaf(wload1(wt, w, j), x[b][j], p[j - i]);
        out[0][b] = pf_tree16f(p);
    }
}

#include "kernels/gemm_float_tiles.h"

#undef FR_MAX
#undef FB_MAX
#undef ROW_TILE

#endif
