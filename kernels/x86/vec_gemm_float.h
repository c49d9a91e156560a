/* The x86 levels' float-weight (F32/F16/BF16 -> f32) gemm, written once on vec.h and compiled at
 * both widths (through vec_kernels.h), with the shared tile driver kernels/gemm_float_tiles.h.
 * Per (weight row, activation row) float_order.h's dot product: the 16 partials are VNP
 * accumulator vectors (one at 512 bits, two at 256), column i fused (vfmadd) into partial i % 16,
 * the last partial chunk by a masked fma, then the tree (vf_tree16): every level gives the scalar
 * reference's bits. Register blocks of FR_MAX weight rows x FB_MAX activation rows share every
 * load; each output's operations are the same whatever the block. */
#ifndef PF_X86_VEC_GEMM_FLOAT_H
#define PF_X86_VEC_GEMM_FLOAT_H

#include "kernels/x86/vec.h"

#if VL == 16
#define FR_MAX 4 /* 4 weight rows x 4 activation rows: 16 accumulators + 4 weights + 1 activation of 32 */
#define FB_MAX 4
#define ROW_TILE 32 /* weight rows per tile, whole blocks of FR_MAX */
#define FPF_MIN_B 2 /* software prefetch of the weights from this many rows (one row streams as
                       fast on the hardware prefetcher alone) */
#else
#define FR_MAX 3 /* 3 weight rows x 2 activation rows: 12 accumulators + 3 weights + 1 activation of 16 */
#define FB_MAX 2
#define ROW_TILE 30 /* whole blocks of FR_MAX */
#define FPF_MIN_B 1
#endif
#define FPF_DIST 1024 /* weight prefetch distance, bytes */

PF_FORCE_INLINE vf wload(uint32_t wt, const void *w, int64_t i) {
    if (wt == PF_TYPE_F32) return vf_load((const float *)w + i);
    if (wt == PF_TYPE_F16) return vf_load_h((const pf_half *)w + i);
    return vf_load_bf16((const uint16_t *)w + i);
}

PF_FORCE_INLINE vf wload_mask(uint32_t wt, const void *w, int64_t i, vmask m) {
    if (wt == PF_TYPE_F32) return vf_maskz_load(m, (const float *)w + i);
    if (wt == PF_TYPE_F16) return vf_maskz_load_h(m, (const pf_half *)w + i);
    return vf_maskz_load_bf16(m, (const uint16_t *)w + i);
}

/* Dot products of NR weight rows (w[r]) with NB activation rows into out[r][b]. */
PF_FORCE_INLINE void fdot_block(uint32_t wt, const void *const *w, int64_t n, const float *const *x,
                                float (*out)[FB_MAX], int NR, int NB) {
    const size_t es = wt == PF_TYPE_F32 ? 4 : 2;
    vf acc[VNP][FR_MAX][FB_MAX]; /* acc[v][r][b]: partials v * VL .. v * VL + VL - 1 */
#pragma GCC unroll 2
    for (int v = 0; v < VNP; v++)
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++)
#pragma GCC unroll 8
            for (int b = 0; b < NB; b++) acc[v][r][b] = vf_zero();
    int64_t i = 0;
    for (; i + PF_NPART <= n; i += PF_NPART) {
        if (NB >= FPF_MIN_B && (i * es) % 64 == 0)
#pragma GCC unroll 4
            for (int r = 0; r < NR; r++) _mm_prefetch((const char *)w[r] + (size_t)i * es + FPF_DIST, _MM_HINT_T0);
#pragma GCC unroll 2
        for (int v = 0; v < VNP; v++) {
            vf wv[FR_MAX];
#pragma GCC unroll 4
            for (int r = 0; r < NR; r++) wv[r] = wload(wt, w[r], i + v * VL);
#pragma GCC unroll 8
            for (int b = 0; b < NB; b++) {
                vf xv = vf_load(x[b] + i + v * VL);
#pragma GCC unroll 4
                for (int r = 0; r < NR; r++) acc[v][r][b] = vf_fmadd(wv[r], xv, acc[v][r][b]);
            }
        }
    }
    /* the last partial chunk of 16 columns: the lanes past n keep their partials */
    for (int v = 0; v < VNP && i + v * VL < n; v++) {
        vmask m = vmask_n(n - i - v * VL);
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            vf wv = wload_mask(wt, w[r], i + v * VL, m);
#pragma GCC unroll 8
            for (int b = 0; b < NB; b++)
                acc[v][r][b] = vf_mask_fmadd(m, wv, vf_maskz_load(m, x[b] + i + v * VL), acc[v][r][b]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 8
        for (int b = 0; b < NB; b++) {
            vf p[VNP];
#pragma GCC unroll 2
            for (int v = 0; v < VNP; v++) p[v] = acc[v][r][b];
            out[r][b] = vf_tree16(p);
        }
}

#include "kernels/gemm_float_tiles.h"

#endif
