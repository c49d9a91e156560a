/* The x86 levels' elementwise kernels, written once on vec.h and compiled at both widths (through
 * vec_kernels.h): RMSNorm, SwiGLU, softmax and the value axpy in float_order.h's order; argmax,
 * first_above and the f16 rounding with the scalar loops' answers. Every level gives the scalar
 * reference's bits. */
#ifndef PF_X86_VEC_FLOAT_H
#define PF_X86_VEC_FLOAT_H

#include <math.h>

#include "formats/ggml_types.h"
#include "kernels/x86/vec.h"

/* acc (2 * VNP double vectors: the 16 partials) += the squares of x[0 .. min(n, 16)) */
PF_FORCE_INLINE void squares16(const float *x, int64_t n, vd *acc) {
#pragma GCC unroll 2
    for (int v = 0; v < VNP; v++) {
        vf xv = vf_load_n(x + v * VL, n - v * VL);
        vd lo = vd_lo(xv), hi = vd_hi(xv);
        acc[2 * v] = vd_fmadd(lo, lo, acc[2 * v]); /* a square of a float is exact in double */
        acc[2 * v + 1] = vd_fmadd(hi, hi, acc[2 * v + 1]);
    }
}

static void rmsnorm(const float *x, const float *w, int64_t n, float eps, float *out) {
    vd acc[2 * VNP];
    for (int a = 0; a < 2 * VNP; a++) acc[a] = vd_zero();
    int64_t i = 0;
    for (; i + PF_NPART <= n; i += PF_NPART) squares16(x + i, PF_NPART, acc);
    if (i < n) squares16(x + i, n - i, acc);
    float scale = (float)(1.0 / sqrt(vd_tree16(acc) / (double)n + (double)eps));
    const vf sv = vf_set1(scale);
    for (i = 0; i + VL <= n; i += VL) vf_store(out + i, vf_mul(vf_mul(vf_load(x + i), sv), vf_load(w + i)));
    if (i < n) vf_store_n(out + i, vf_mul(vf_mul(vf_load_n(x + i, n - i), sv), vf_load_n(w + i, n - i)), n - i);
}

PF_FORCE_INLINE vf silu_mul(vf g, vf u) { return vf_mul(vf_div(g, vf_add(vf_set1(1.0f), vf_exp(vf_neg(g)))), u); }

static void swiglu(const float *gate, const float *up, float *out, int64_t n) {
    int64_t i = 0;
    for (; i + VL <= n; i += VL) vf_store(out + i, silu_mul(vf_load(gate + i), vf_load(up + i)));
    if (i < n) vf_store_n(out + i, silu_mul(vf_load_n(gate + i, n - i), vf_load_n(up + i, n - i)), n - i);
}

/* y = fma(a, x, y) per element (the reference's value accumulation) */
static void axpy_f16(float a, const pf_half *x, float *y, int n) {
    const vf av = vf_set1(a);
    int i = 0;
    for (; i + VL <= n; i += VL) vf_store(y + i, vf_fmadd(av, vf_load_h(x + i), vf_load(y + i)));
    if (i < n) {
        vmask m = vmask_n(n - i);
        vf_mask_store(y + i, m, vf_fmadd(av, vf_maskz_load_h(m, x + i), vf_maskz_load(m, y + i)));
    }
}

/* x[0 .. min(n, 16)) = exp(x - mx) (0 past n), their sum added to the 16 partials */
PF_FORCE_INLINE void exp16(float *x, int64_t n, vf mx, vd *acc) {
#pragma GCC unroll 2
    for (int v = 0; v < VNP; v++) {
        int64_t left = n - v * VL;
        vf e = vf_keep(vmask_n(left), vf_exp(vf_sub(vf_load_n(x + v * VL, left), mx)));
        if (left > 0) vf_store_n(x + v * VL, e, left);
        acc[2 * v] = vd_add(acc[2 * v], vd_lo(e));
        acc[2 * v + 1] = vd_add(acc[2 * v + 1], vd_hi(e));
    }
}

static void softmax(float *x, int64_t n) {
    if (n <= 0) return;
    vf m = vf_set1(-INFINITY);
    int64_t i = 0;
    for (; i + VL <= n; i += VL) m = vf_max(vf_load(x + i), m); /* a NaN lane keeps m, as the reference skips it */
    float mx = vf_hmax(m);
    for (; i < n; i++)
        if (x[i] > mx) mx = x[i];
    if (mx == -INFINITY) { /* everything masked: uniform rather than NaN */
        for (i = 0; i < n; i++) x[i] = 1.0f / (float)n;
        return;
    }
    vd acc[2 * VNP];
    for (int a = 0; a < 2 * VNP; a++) acc[a] = vd_zero();
    const vf mv = vf_set1(mx);
    for (i = 0; i + PF_NPART <= n; i += PF_NPART) exp16(x + i, PF_NPART, mv, acc);
    if (i < n) exp16(x + i, n - i, mv, acc);
    const vf inv = vf_set1((float)(1.0 / vd_tree16(acc)));
    for (i = 0; i + VL <= n; i += VL) vf_store(x + i, vf_mul(vf_load(x + i), inv));
    if (i < n) vf_store_n(x + i, vf_mul(vf_load_n(x + i, n - i), inv), n - i);
}

/* The scalar loop's answer in two passes: the largest non-NaN value (the max instruction returns
 * its second operand when the first is NaN), then the first index holding it (-0 == +0, as the
 * loop keeps the first of equal values). */
static int32_t argmax(const float *x, int64_t n) {
    if (x[0] != x[0]) return 0; /* NaN first: nothing compares greater */
    vf m = vf_set1(-INFINITY);
    int64_t i = 0;
    for (; i + VL <= n; i += VL) m = vf_max(vf_load(x + i), m);
    float mx = vf_hmax(m);
    for (; i < n; i++)
        if (x[i] > mx) mx = x[i];
    const vf mv = vf_set1(mx);
    for (i = 0; i + VL <= n; i += VL) {
        unsigned bits = vf_eq_bits(vf_load(x + i), mv);
        if (bits) return (int32_t)(i + __builtin_ctz(bits));
    }
    for (; i < n; i++)
        if (x[i] == mx) return (int32_t)i;
    return 0; /* unreachable: mx is x[0] or larger and present */
}

static int64_t first_above(const float *x, int64_t n, float t) {
    const vf tv = vf_set1(t);
    int64_t i = 0;
    for (; i + VL <= n; i += VL) {
        unsigned bits = vf_gt_bits(vf_load(x + i), tv);
        if (bits) return i + __builtin_ctz(bits);
    }
    for (; i < n; i++)
        if (x[i] > t) return i;
    return n;
}

static void f32_to_f16(const float *x, pf_half *y, int64_t n) {
    int64_t i = 0;
    for (; i + VL <= n; i += VL) vf_store_f16(y + i, vf_load(x + i));
    for (; i < n; i++) y[i] = pf_fp32_to_fp16(x[i]);
}

#endif
