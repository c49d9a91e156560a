/* ARM64 i8mm level (compiled with -march=armv8.2-a+dotprod+i8mm; run only where the CPU reports
 * both): pairs of activation rows go through SMMLA, which multiplies a 2x8 int8 block of two
 * weight rows by the transposed 2x8 block of two activation rows into a 2x2 int32 tile: 32
 * products per instruction against SDOT's 16. An odd last activation row takes SDOT. The
 * operands are paired on the fly (ZIP1/ZIP2 of 64-bit halves) from the GGUF layout, or read
 * ready-paired from the packed layout (kernels/arm/repack_i8mm.c) where the model has one; then
 * every activation row goes through SMMLA (an odd last one paired with itself). The integer sums
 * are exact either way, so the float part (neon_quant_gemm.h's) gives the reference's bits. */
#include <arm_neon.h>

#include "kernels/arm/neon_elementwise.h"
#include "kernels/arm/neon_float_gemm.h"
#include "kernels/kernels_impl.h"

#define QNB 4

PF_FORCE_INLINE int32x4_t row_isum(int8x16_t wlo, int8x16_t whi, int8x16_t xlo, int8x16_t xhi) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), wlo, xlo), whi, xhi);
}

#define PF_LEVEL_BLOCK_ISUMS /* its own below, four_rows_isum for an odd last row */
#include "kernels/arm/neon_row_sums.h"

/* p[c] = [elements 8c..8c+7 of a, the same of b] for c = 0..3: the 2x8 SMMLA operands */
PF_FORCE_INLINE void pair_rows(int8x16_t alo, int8x16_t ahi, int8x16_t blo, int8x16_t bhi, int8x16_t p[4]) {
    int64x2_t al = vreinterpretq_s64_s8(alo), ah = vreinterpretq_s64_s8(ahi);
    int64x2_t bl = vreinterpretq_s64_s8(blo), bh = vreinterpretq_s64_s8(bhi);
    p[0] = vreinterpretq_s8_s64(vzip1q_s64(al, bl));
    p[1] = vreinterpretq_s8_s64(vzip2q_s64(al, bl));
    p[2] = vreinterpretq_s8_s64(vzip1q_s64(ah, bh));
    p[3] = vreinterpretq_s8_s64(vzip2q_s64(ah, bh));
}

/* [a0.x0, a0.x1, a1.x0, a1.x1] over the 32 elements */
PF_FORCE_INLINE int32x4_t tile(const int8x16_t wp[4], const int8x16_t xp[4]) {
    int32x4_t t = vmmlaq_s32(vdupq_n_s32(0), wp[0], xp[0]);
    t = vmmlaq_s32(t, wp[1], xp[1]);
    t = vmmlaq_s32(t, wp[2], xp[2]);
    return vmmlaq_s32(t, wp[3], xp[3]);
}

PF_FORCE_INLINE void block_isums(const int8x16_t w[4][2], const pf_block_q8_act *const *xb, int nb, int32x4_t *is) {
    int b = 0;
    if (nb >= 2) {
        int8x16_t w01[4], w23[4];
        pair_rows(w[0][0], w[0][1], w[1][0], w[1][1], w01);
        pair_rows(w[2][0], w[2][1], w[3][0], w[3][1], w23);
#pragma GCC unroll 4
        for (; b + 2 <= nb; b += 2) {
            int8x16_t xp[4];
            pair_rows(vld1q_s8(xb[b]->qs), vld1q_s8(xb[b]->qs + 16), vld1q_s8(xb[b + 1]->qs),
                      vld1q_s8(xb[b + 1]->qs + 16), xp);
            int32x4_t t01 = tile(w01, xp), t23 = tile(w23, xp);
            is[b] = vuzp1q_s32(t01, t23);     /* [r0.x0, r1.x0, r2.x0, r3.x0] */
            is[b + 1] = vuzp2q_s32(t01, t23); /* the same with x1 */
        }
    }
    if (b < nb) is[b] = four_rows_isum(w, xb[b]);
}

/* ---- the packed layout (kernels/arm/repack_i8mm.c) ----
 * Block k of a group of four rows is [4 d][4 m (Q4_1)][rows 0,1 interleaved][rows 2,3 interleaved]:
 * the weight operands of tile() are plain loads (Q8_0) or a load and a nibble split (Q4: the low
 * nibbles of [a q0..7, b q0..7] are elements 0..7 of the two rows, the high ones 16..23), and the
 * four scales one 8-byte load. The activation operands are paired once per call for every group
 * (xpairs below), so a block costs loads, SMMLA, two unzips and the float part, which is
 * neon_quant_gemm.h's, operation for operation. */
#define PQNB 8   /* activation rows per pass over a group's blocks */
#define PSUPER 16 /* activation rows whose pairs are made at once (a super-pass over the groups) */
#define PKC 64    /* blocks per k-chunk of paired activations: PSUPER / 2 * PKC * 64 bytes = 32 KiB */

/* xp[(p * nk + k) * 4 + c] = the SMMLA operand c of activation rows 2p, 2p+1 (an odd last row
 * paired with itself) for block k0 + k: their elements 8c..8c+7 side by side. */
PF_FORCE_INLINE void pair_acts(const pf_block_q8_act *const *x, int nb, int64_t k0, int64_t nk, int8x16_t *xp) {
    for (int b = 0; b < nb; b += 2) {
        const pf_block_q8_act *xa = x[b] + k0, *xc = (b + 1 < nb ? x[b + 1] : x[b]) + k0;
        for (int64_t k = 0; k < nk; k++, xp += 4)
            pair_rows(vld1q_s8(xa[k].qs), vld1q_s8(xa[k].qs + 16), vld1q_s8(xc[k].qs), vld1q_s8(xc[k].qs + 16), xp);
    }
}

/* Blocks [k0, k0 + nk) of one group (g at block k0) against nb rows (x[b] their blocks, xp their
 * pairs with stride nk per pair), continuing acc[b]. */
PF_FORCE_INLINE void packed_rows4(uint32_t wt, const uint8_t *g, int64_t k0, int64_t nk, const pf_block_q8_act *const *x,
                                  const int8x16_t *xp, int nb, float32x4_t *acc) {
    const size_t bs = 4 * (wt == PF_TYPE_Q8_0 ? sizeof(pf_block_q8_0)
                           : wt == PF_TYPE_Q4_0 ? sizeof(pf_block_q4_0) : sizeof(pf_block_q4_1));
    const size_t qoff = wt == PF_TYPE_Q4_1 ? 16 : 8;
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    for (int64_t k = 0; k < nk; k++, g += bs) {
        float32x4_t d = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)g))), m = vdupq_n_f32(0.0f);
        if (wt == PF_TYPE_Q4_0) m = vmulq_f32(vdupq_n_f32(-8.0f), d);
        if (wt == PF_TYPE_Q4_1) m = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)(g + 8))));
        int8x16_t w01[4], w23[4];
        if (wt == PF_TYPE_Q8_0) {
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                w01[c] = vld1q_s8((const int8_t *)g + qoff + 16 * c);
                w23[c] = vld1q_s8((const int8_t *)g + qoff + 64 + 16 * c);
            }
        } else {
            uint8x16_t a0 = vld1q_u8(g + qoff), a1 = vld1q_u8(g + qoff + 16);
            uint8x16_t b0 = vld1q_u8(g + qoff + 32), b1 = vld1q_u8(g + qoff + 48);
            w01[0] = vreinterpretq_s8_u8(vandq_u8(a0, m4)), w01[2] = vreinterpretq_s8_u8(vshrq_n_u8(a0, 4));
            w01[1] = vreinterpretq_s8_u8(vandq_u8(a1, m4)), w01[3] = vreinterpretq_s8_u8(vshrq_n_u8(a1, 4));
            w23[0] = vreinterpretq_s8_u8(vandq_u8(b0, m4)), w23[2] = vreinterpretq_s8_u8(vshrq_n_u8(b0, 4));
            w23[1] = vreinterpretq_s8_u8(vandq_u8(b1, m4)), w23[3] = vreinterpretq_s8_u8(vshrq_n_u8(b1, 4));
        }
        int32x4_t is[PQNB];
#pragma GCC unroll 4
        for (int b = 0; b < nb; b += 2) {
            const int8x16_t *p = xp + ((size_t)(b / 2) * (size_t)nk + (size_t)k) * 4;
            const int8x16_t pp[4] = {p[0], p[1], p[2], p[3]};
            int32x4_t t01 = tile(w01, pp), t23 = tile(w23, pp);
            is[b] = vuzp1q_s32(t01, t23);                     /* [r0.x0, r1.x0, r2.x0, r3.x0] */
            if (b + 1 < nb) is[b + 1] = vuzp2q_s32(t01, t23); /* the same with x1 */
        }
#pragma GCC unroll 8
        for (int b = 0; b < nb; b++) {
            const pf_block_q8_act *xb = x[b] + k0 + k;
            float32x4_t t = vmulq_f32(vmulq_n_f32(d, xb->d), vcvtq_f32_s32(is[b]));
            if (wt == PF_TYPE_Q8_0)
                acc[b] = vaddq_f32(acc[b], t);
            else
                acc[b] = vaddq_f32(acc[b], vaddq_f32(t, vmulq_n_f32(m, xb->s)));
        }
    }
}

/* Rows [r0, r1) from the packed groups that hold them (ranges need not start on a group). Order:
 * super-passes of PSUPER activation rows; k-chunks of PKC blocks, whose pairs are made once;
 * groups; passes of PQNB rows. Across k-chunks a row's accumulator waits in y (stored and
 * reloaded exactly), so each output is still acc + block after block from 0, as the reference. */
static void gemm_quant_packed(uint32_t wt, const pf_weight *W, const void *act, size_t stride, int B, float *y,
                              int64_t ldy, int64_t r0, int64_t r1) {
    const int64_t nblk = W->cols / PF_QK;
    const size_t bs = 4 * (wt == PF_TYPE_Q8_0 ? sizeof(pf_block_q8_0)
                           : wt == PF_TYPE_Q4_0 ? sizeof(pf_block_q4_0) : sizeof(pf_block_q4_1));
    int8x16_t xpairs[PSUPER / 2 * PKC * 4];
    for (int s0 = 0; s0 < B; s0 += PSUPER) {
        const int ns = B - s0 < PSUPER ? B - s0 : PSUPER;
        const pf_block_q8_act *xs[PSUPER];
        for (int b = 0; b < ns; b++) xs[b] = (const pf_block_q8_act *)((const char *)act + (size_t)(s0 + b) * stride);
        for (int64_t k0 = 0; k0 < nblk; k0 += PKC) {
            const int64_t nk = nblk - k0 < PKC ? nblk - k0 : PKC;
            pair_acts(xs, ns, k0, nk, xpairs);
            for (int64_t gi = r0 / 4; gi * 4 < r1; gi++) {
                const uint8_t *g = (const uint8_t *)W->packed + ((size_t)gi * (size_t)nblk + (size_t)k0) * bs;
                const int64_t lo = r0 > gi * 4 ? r0 : gi * 4, hi = r1 < gi * 4 + 4 ? r1 : gi * 4 + 4;
                for (int p0 = 0; p0 < ns; p0 += PQNB) {
                    const int nb = ns - p0 < PQNB ? ns - p0 : PQNB;
                    const int8x16_t *xp = xpairs + (size_t)(p0 / 2) * (size_t)nk * 4;
                    float32x4_t acc[PQNB];
                    for (int b = 0; b < nb; b++) {
                        float o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                        if (k0) /* the previous chunks' sums of this group's rows in range */
                            for (int64_t r = lo; r < hi; r++) o[r - gi * 4] = y[(s0 + p0 + b) * ldy + r];
                        acc[b] = vld1q_f32(o);
                    }
                    switch (nb) { /* constant nb: the per-row loops unroll */
                    case 1: packed_rows4(wt, g, k0, nk, xs + p0, xp, 1, acc); break;
                    case 2: packed_rows4(wt, g, k0, nk, xs + p0, xp, 2, acc); break;
                    case 3: packed_rows4(wt, g, k0, nk, xs + p0, xp, 3, acc); break;
                    case 4: packed_rows4(wt, g, k0, nk, xs + p0, xp, 4, acc); break;
                    case 5: packed_rows4(wt, g, k0, nk, xs + p0, xp, 5, acc); break;
                    case 6: packed_rows4(wt, g, k0, nk, xs + p0, xp, 6, acc); break;
                    case 7: packed_rows4(wt, g, k0, nk, xs + p0, xp, 7, acc); break;
                    default: packed_rows4(wt, g, k0, nk, xs + p0, xp, PQNB, acc); break;
                    }
                    for (int b = 0; b < nb; b++) {
                        float o[4];
                        vst1q_f32(o, acc[b]);
                        for (int64_t r = lo; r < hi; r++) y[(s0 + p0 + b) * ldy + r] = o[r - gi * 4];
                    }
                }
            }
        }
    }
}
#define PF_LEVEL_PACKED_GEMM

#include "kernels/arm/neon_quant_gemm.h"

PF_DEFINE_KERNELS(pf_kernels_i8mm_table, PF_LEVEL_I8MM, "i8mm", quantize_act, NULL,
                  pf_attend_group_dotprod, 1); /* reads the i8mm packed layout (repack_i8mm.c) */
