/* One inner loop of an ARM64 level's quantized gemm, alone in a function, for tools/arm64_model.py:
 * compiled to assembly (-O2 -S, the level's -march flags) and the loop over the weight blocks cut
 * out for llvm-mca. Defines: PF_MODEL_LEVEL (the level's kernels_*.c, included whole), PF_MODEL_WT (a
 * PF_TYPE_*), PF_MODEL_NB (activation rows per pass), PF_MODEL_PACKED (1: the i8mm level's packed layout). */
#ifndef PF_MODEL_LEVEL
#error "define PF_MODEL_LEVEL, PF_MODEL_WT, PF_MODEL_NB and PF_MODEL_PACKED (tools/arm64_model.py does)"
#endif
#include PF_MODEL_LEVEL

void pf_model_loop(const uint8_t *const *wr, const uint8_t *g, int64_t nblk, const pf_block_q8_act *const *x,
                   const int8x16_t *xp, float32x4_t *acc);
void pf_model_loop(const uint8_t *const *wr, const uint8_t *g, int64_t nblk, const pf_block_q8_act *const *x,
                   const int8x16_t *xp, float32x4_t *acc) {
    float32x4_t a[PF_MODEL_NB]; /* in registers across the loop, as in the gemm */
#if PF_MODEL_PACKED /* the loop over a k-chunk's blocks; the activation pairs (pair_acts) are made
                      * once per chunk for all the groups of a call, and left out */
    (void)wr;
    for (int b = 0; b < PF_MODEL_NB; b++) a[b] = vdupq_n_f32(0.0f);
    packed_rows4(PF_MODEL_WT, g, 0, nblk, x, xp, PF_MODEL_NB, a);
#else
    (void)g, (void)xp;
    qdot_rows4(PF_MODEL_WT, wr, nblk, x, PF_MODEL_NB, a);
#endif
    for (int b = 0; b < PF_MODEL_NB; b++) acc[b] = a[b];
}
