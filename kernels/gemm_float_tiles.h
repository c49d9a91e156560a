/* The float-weight (F32/F16/BF16) gemm driver shared by the SIMD kernel files. A file includes it
 * after defining NB_MAX (activation rows per fdot_rows call, 4 or 8), ROW_TILE and
 * fdot_rows(wt, w, n, x, out, NB) (one weight row against NB activation rows); it is then compiled
 * with that file's ISA flags and gives the file its static gemm_f32 / gemm_f16 / gemm_bf16.
 *
 * Rows go in tiles of ROW_TILE: each chunk of NB_MAX activation rows stays in L1 while the tile's
 * weight rows (in L2 after the first chunk) pass over it. */
#ifndef PF_GEMM_FLOAT_TILES_H
#define PF_GEMM_FLOAT_TILES_H

PF_FORCE_INLINE void gemm_float(uint32_t wt, const pf_weight *W, const void *act, size_t stride,
                                int B, float *y, int64_t ldy, int64_t r0, int64_t r1) {
    for (int64_t rt = r0; rt < r1; rt += ROW_TILE) {
        int64_t re = rt + ROW_TILE < r1 ? rt + ROW_TILE : r1;
        for (int b0 = 0; b0 < B; b0 += NB_MAX) {
            int nb = B - b0 < NB_MAX ? B - b0 : NB_MAX;
            const float *x[NB_MAX];
            for (int b = 0; b < nb; b++)
                x[b] = (const float *)((const char *)act + (size_t)(b0 + b) * stride);
            for (int64_t r = rt; r < re; r++) {
                const void *w = (const char *)W->data + (size_t)r * W->row_bytes;
                float out[NB_MAX] = {0};
                switch (nb) {
                case 1: fdot_rows(wt, w, W->cols, x, out, 1); break;
                case 2: fdot_rows(wt, w, W->cols, x, out, 2); break;
                case 3: fdot_rows(wt, w, W->cols, x, out, 3); break;
#if NB_MAX > 4
                case 4: fdot_rows(wt, w, W->cols, x, out, 4); break;
                case 5: fdot_rows(wt, w, W->cols, x, out, 5); break;
                case 6: fdot_rows(wt, w, W->cols, x, out, 6); break;
                case 7: fdot_rows(wt, w, W->cols, x, out, 7); break;
#endif
                default: fdot_rows(wt, w, W->cols, x, out, NB_MAX); break;
                }
                for (int b = 0; b < nb; b++) y[(b0 + b) * ldy + r] = out[b];
            }
        }
    }
}

static void gemm_f32(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                     int64_t ldy, int64_t r0, int64_t r1) {
    gemm_float(PF_TYPE_F32, W, act, stride, B, y, ldy, r0, r1);
}
static void gemm_f16(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                     int64_t ldy, int64_t r0, int64_t r1) {
    gemm_float(PF_TYPE_F16, W, act, stride, B, y, ldy, r0, r1);
}
static void gemm_bf16(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                      int64_t ldy, int64_t r0, int64_t r1) {
    gemm_float(PF_TYPE_BF16, W, act, stride, B, y, ldy, r0, r1);
}

#endif
