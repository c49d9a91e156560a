/* F32 / F16 / BF16 weight gemm for every ARM64 level (baseline NEON), through the shared tile
 * driver kernels/gemm_float_tiles.h. Per (weight row, activation row): two 4-lane FMLA
 * accumulators over alternating 4-column chunks, the last partial chunk zero padded, then one
 * fixed reduction; the per-row code is the same whatever B is, so results are batch-invariant
 * bitwise. Within the float tolerance of the scalar reference (lanes reorder the sum). */
#ifndef PF_NEON_FLOAT_GEMM_H
#define PF_NEON_FLOAT_GEMM_H

#include <arm_neon.h>
#include <string.h>

#include "kernels/kernels_impl.h"

#define FR_MAX 1 /* one weight row x 8 activation rows per register block */
#define FB_MAX 8
#define ROW_TILE 32 /* weight rows per tile */

PF_FORCE_INLINE float32x4_t wload4(uint32_t wt, const void *w, int64_t i) {
    if (wt == PF_TYPE_F32) return vld1q_f32((const float *)w + i);
    uint16x4_t h = vld1_u16((const uint16_t *)w + i);
    if (wt == PF_TYPE_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); /* bf16: the top half of an f32 */
}

/* Dot products of one weight row (w[0], NR = 1) with NB activation rows into out[0][b]. */
PF_FORCE_INLINE void fdot_block(uint32_t wt, const void *const *wr, int64_t n, const float *const *x,
                                float (*out)[FB_MAX], int NR, int NB) {
    (void)NR;
    const void *w = wr[0];
    size_t es = wt == PF_TYPE_F32 ? 4 : 2;
    float32x4_t acc0[FB_MAX], acc1[FB_MAX];
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) acc0[b] = acc1[b] = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float32x4_t w0 = wload4(wt, w, i), w1 = wload4(wt, w, i + 4);
#pragma GCC unroll 8
        for (int b = 0; b < NB; b++) {
            acc0[b] = vfmaq_f32(acc0[b], w0, vld1q_f32(x[b] + i));
            acc1[b] = vfmaq_f32(acc1[b], w1, vld1q_f32(x[b] + i + 4));
        }
    }
    /* at most two more 4-column chunks, the last one possibly partial (zero padded) */
    for (int c = 0; i < n; c++, i += 4) {
        int64_t m = n - i < 4 ? n - i : 4;
        uint8_t wbuf[16] = {0};
        memcpy(wbuf, (const char *)w + (size_t)i * es, (size_t)m * es);
        float32x4_t wv = wload4(wt, wbuf, 0);
#pragma GCC unroll 8
        for (int b = 0; b < NB; b++) {
            float xbuf[4] = {0};
            memcpy(xbuf, x[b] + i, (size_t)m * sizeof(float));
            if (c == 0)
                acc0[b] = vfmaq_f32(acc0[b], wv, vld1q_f32(xbuf));
            else
                acc1[b] = vfmaq_f32(acc1[b], wv, vld1q_f32(xbuf));
        }
    }
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) out[0][b] = vaddvq_f32(vaddq_f32(acc0[b], acc1[b]));
}

#include "kernels/gemm_float_tiles.h"

#undef FR_MAX
#undef FB_MAX
#undef ROW_TILE

#endif
