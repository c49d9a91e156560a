/* The float kernels' one order (docs/kernels.md): what the scalar reference computes and every
 * SIMD level computes with the same operations, so each level gives the reference's bits.
 *
 * Sums over a row use PF_NPART interleaved partial sums (element i goes to partial i % 16),
 * combined by a fixed halving tree: p[k] += p[k + 8], then + 4, + 2, + 1. 16 partials are one
 * AVX-512 vector, two AVX2 vectors, four NEON vectors; the tree's first steps add whole vectors,
 * the last ones halves of a register. An absent tail element adds +0, which changes nothing.
 * The float-weight gemms' dot products use the same partials in float: p[i % 16] = fmaf(w[i], x[i],
 * p[i % 16]) (f16 and bf16 weights widened exactly first), then pf_tree16f. There a SIMD tail
 * leaves the partials past the row's end as they are (a masked fma, not a zero-padded one: a
 * product that underflows makes a partial -0, and fmaf(0, 0, -0) is +0).
 *
 * exp is one polynomial (Cephes expf, ~1 ulp on its range) evaluated with explicit fused
 * multiply-adds in one order; plain C fmaf is the same single rounding as vfmadd / FMLA. */
#ifndef PF_FLOAT_ORDER_H
#define PF_FLOAT_ORDER_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define PF_NPART 16

#define PF_EXP_LO (-87.0f) /* below: 0 (so exp(-inf) = 0); above PF_EXP_HI clamped */
#define PF_EXP_HI 88.0f
#define PF_EXP_LOG2E 1.44269504088896341f
#define PF_EXP_C1 0.693359375f
#define PF_EXP_C2 (-2.12194440e-4f)
#define PF_EXP_P0 1.9875691500e-4f
#define PF_EXP_P1 1.3981999507e-3f
#define PF_EXP_P2 8.3334519073e-3f
#define PF_EXP_P3 4.1665795894e-2f
#define PF_EXP_P4 1.6666665459e-1f
#define PF_EXP_P5 5.0000001201e-1f

/* The clamps are written as the x86 max/min instructions behave (a NaN operand gives the second
 * one), so a NaN input gives the same (meaningless) bits on every level. */
static inline float pf_exp_ref(float x) {
    float c = x > PF_EXP_LO ? x : PF_EXP_LO;
    c = c < PF_EXP_HI ? c : PF_EXP_HI;
    float n = rintf(c * PF_EXP_LOG2E);
    float r = fmaf(-n, PF_EXP_C1, c);
    r = fmaf(-n, PF_EXP_C2, r);
    float p = PF_EXP_P0;
    p = fmaf(p, r, PF_EXP_P1);
    p = fmaf(p, r, PF_EXP_P2);
    p = fmaf(p, r, PF_EXP_P3);
    p = fmaf(p, r, PF_EXP_P4);
    p = fmaf(p, r, PF_EXP_P5);
    p = fmaf(p, r * r, r + 1.0f);
    int32_t e = ((int32_t)n + 127) * (1 << 23); /* 2^n, n in [-126, 127] */
    float s;
    memcpy(&s, &e, sizeof s);
    float y = p * s;
    return x < PF_EXP_LO ? 0.0f : y;
}

static inline double pf_tree16d(double p[PF_NPART]) {
    for (int h = PF_NPART / 2; h >= 1; h /= 2)
        for (int k = 0; k < h; k++) p[k] = p[k] + p[k + h];
    return p[0];
}

static inline float pf_tree16f(float p[PF_NPART]) {
    for (int h = PF_NPART / 2; h >= 1; h /= 2)
        for (int k = 0; k < h; k++) p[k] = p[k] + p[k + h];
    return p[0];
}

#endif
