/* The float-weight (F32/F16/BF16) gemm driver shared by the SIMD kernel files (x86
 * vec_gemm_float.h, ARM64 neon_float_gemm.h). A file includes it after defining FR_MAX and
 * FB_MAX (weight rows x activation rows per register block), ROW_TILE and
 * fdot_block(wt, w, n, x, out, NR, NB) (NR weight rows w[r] against NB activation rows x[b] into
 * out[r][b], NR and NB constants); it is then compiled with that file's ISA flags and gives the
 * file its static gemm_f32 / gemm_f16 / gemm_bf16. Each output's operations are fdot_block's,
 * whatever block it falls in: results do not depend on B or on the row split.
 *
 * Rows go in tiles of ROW_TILE: each chunk of FB_MAX activation rows stays in L1 while the tile's
 * weight rows (in L2 after the first chunk) pass over it in blocks of FR_MAX. */
#ifndef PF_GEMM_FLOAT_TILES_H
#define PF_GEMM_FLOAT_TILES_H

/* fdot_block with NB = nb as a constant */
PF_FORCE_INLINE void fdot_nb(uint32_t wt, const void *const *w, int64_t n, const float *const *x,
                             float (*out)[FB_MAX], int NR, int nb) {
    switch (nb) {
    case 1: fdot_block(wt, w, n, x, out, NR, 1); break;
#if FB_MAX > 2
    case 2: fdot_block(wt, w, n, x, out, NR, 2); break;
    case 3: fdot_block(wt, w, n, x, out, NR, 3); break;
#endif
#if FB_MAX > 4
    case 4: fdot_block(wt, w, n, x, out, NR, 4); break;
    case 5: fdot_block(wt, w, n, x, out, NR, 5); break;
    case 6: fdot_block(wt, w, n, x, out, NR, 6); break;
    case 7: fdot_block(wt, w, n, x, out, NR, 7); break;
#endif
    default: fdot_block(wt, w, n, x, out, NR, FB_MAX); break;
    }
}

PF_FORCE_INLINE void gemm_float(uint32_t wt, const pf_weight *W, const void *act, size_t stride,
                                int B, float *y, int64_t ldy, int64_t r0, int64_t r1) {
    for (int64_t rt = r0; rt < r1; rt += ROW_TILE) {
        int64_t re = rt + ROW_TILE < r1 ? rt + ROW_TILE : r1;
        for (int b0 = 0; b0 < B; b0 += FB_MAX) {
            int nb = B - b0 < FB_MAX ? B - b0 : FB_MAX;
            const float *x[FB_MAX];
            for (int b = 0; b < nb; b++)
                x[b] = (const float *)((const char *)act + (size_t)(b0 + b) * stride);
            for (int64_t r = rt; r < re; r += FR_MAX) {
                int nr = re - r < FR_MAX ? (int)(re - r) : FR_MAX;
                const void *w[FR_MAX];
                for (int i = 0; i < nr; i++) w[i] = (const char *)W->data + (size_t)(r + i) * W->row_bytes;
                float out[FR_MAX][FB_MAX];
                switch (nr) {
#if FR_MAX > 1
                case 1: fdot_nb(wt, w, W->cols, x, out, 1, nb); break;
#endif
#if FR_MAX > 2
                case 2: fdot_nb(wt, w, W->cols, x, out, 2, nb); break;
#endif
#if FR_MAX > 3
                case 3: fdot_nb(wt, w, W->cols, x, out, 3, nb); break;
#endif
                default: fdot_nb(wt, w, W->cols, x, out, FR_MAX, nb); break;
                }
                for (int i = 0; i < nr; i++)
                    for (int b = 0; b < nb; b++) y[(b0 + b) * ldy + r + i] = out[i][b];
            }
        }
    }
}

PF_GEMM_ENTRIES_FLOAT(gemm_float)

#endif
