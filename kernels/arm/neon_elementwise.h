/* The elementwise kernels of every ARM64 level (NEON, dotprod, i8mm), included by each level's
 * file so its table is complete; baseline armv8-a NEON only. axpy_f16, f32_to_f16, argmax,
 * first_above and quantize_act give bitwise the scalar reference's result (kernels_scalar.c,
 * formats/quant.c): the same operations in the same order per element, vectorised across
 * independent elements only; rmsnorm, swiglu and softmax reduce and take exp in float_order.h's
 * order, as every level does, so they too give the reference's bits. */
#ifndef PF_NEON_ELEMENTWISE_H
#define PF_NEON_ELEMENTWISE_H

#include <arm_neon.h>
#include <math.h>

#include "formats/quant.h"
#include "kernels/kernels_impl.h"

static inline float32x4_t pf_neon_half4(const pf_half *p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

/* float_order.h's order: element i of each 16 to partial i % 16, a[k] holding partials 2k, 2k+1
 * (squares of floats are exact in double, so FMLA = the reference's add); the tail and the tree
 * are the reference's own code. */
static void rmsnorm(const float *x, const float *w, int64_t n, float eps, float *out) {
    float64x2_t a[8];
    for (int k = 0; k < 8; k++) a[k] = vdupq_n_f64(0.0);
    int64_t i = 0;
    for (; i + PF_NPART <= n; i += PF_NPART)
        for (int v = 0; v < 4; v++) {
            float32x4_t xv = vld1q_f32(x + i + 4 * v);
            float64x2_t lo = vcvt_f64_f32(vget_low_f32(xv)), hi = vcvt_high_f64_f32(xv);
            a[2 * v] = vfmaq_f64(a[2 * v], lo, lo);
            a[2 * v + 1] = vfmaq_f64(a[2 * v + 1], hi, hi);
        }
    double p[PF_NPART];
    for (int k = 0; k < 8; k++) vst1q_f64(p + 2 * k, a[k]);
    for (; i < n; i++) p[i % PF_NPART] += (double)x[i] * x[i];
    float scale = (float)(1.0 / sqrt(pf_tree16d(p) / (double)n + (double)eps));
    float32x4_t sv = vdupq_n_f32(scale);
    for (i = 0; i + 4 <= n; i += 4) vst1q_f32(out + i, vmulq_f32(vmulq_f32(vld1q_f32(x + i), sv), vld1q_f32(w + i)));
    for (; i < n; i++) out[i] = (x[i] * scale) * w[i];
}

/* pf_exp_ref on four lanes, the same operations: BSL with compares is the x86 max/min's NaN rule,
 * FRINTN the default rounding's rintf, FMLS/FMLA fmaf. */
static inline float32x4_t pf_neon_exp4(float32x4_t x) {
    const float32x4_t lo = vdupq_n_f32(PF_EXP_LO), hi = vdupq_n_f32(PF_EXP_HI);
    float32x4_t c = vbslq_f32(vcgtq_f32(x, lo), x, lo);
    c = vbslq_f32(vcltq_f32(c, hi), c, hi);
    float32x4_t n = vrndnq_f32(vmulq_f32(c, vdupq_n_f32(PF_EXP_LOG2E)));
    float32x4_t r = vfmsq_f32(c, n, vdupq_n_f32(PF_EXP_C1));
    r = vfmsq_f32(r, n, vdupq_n_f32(PF_EXP_C2));
    float32x4_t p = vdupq_n_f32(PF_EXP_P0);
    p = vfmaq_f32(vdupq_n_f32(PF_EXP_P1), p, r);
    p = vfmaq_f32(vdupq_n_f32(PF_EXP_P2), p, r);
    p = vfmaq_f32(vdupq_n_f32(PF_EXP_P3), p, r);
    p = vfmaq_f32(vdupq_n_f32(PF_EXP_P4), p, r);
    p = vfmaq_f32(vdupq_n_f32(PF_EXP_P5), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
    int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    float32x4_t y = vmulq_f32(p, vreinterpretq_f32_s32(e));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), vcltq_f32(x, lo)));
}

static void swiglu(const float *gate, const float *up, float *out, int64_t n) {
    const float32x4_t one = vdupq_n_f32(1.0f);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t g = vld1q_f32(gate + i);
        float32x4_t sg = vdivq_f32(g, vaddq_f32(one, pf_neon_exp4(vnegq_f32(g))));
        vst1q_f32(out + i, vmulq_f32(sg, vld1q_f32(up + i)));
    }
    for (; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + pf_exp_ref(-g)) * up[i];
    }
}

/* The reference's order: exp by pf_neon_exp4, the sum's partials as on rmsnorm; the tail and the
 * tree the reference's code. */
static void softmax(float *x, int64_t n) {
    float mx;
    if (!pf_softmax_max(x, n, &mx)) return;
    float64x2_t a[8];
    for (int k = 0; k < 8; k++) a[k] = vdupq_n_f64(0.0);
    const float32x4_t mv = vdupq_n_f32(mx);
    int64_t i = 0;
    for (; i + PF_NPART <= n; i += PF_NPART)
        for (int v = 0; v < 4; v++) {
            float32x4_t e = pf_neon_exp4(vsubq_f32(vld1q_f32(x + i + 4 * v), mv));
            vst1q_f32(x + i + 4 * v, e);
            a[2 * v] = vaddq_f64(a[2 * v], vcvt_f64_f32(vget_low_f32(e)));
            a[2 * v + 1] = vaddq_f64(a[2 * v + 1], vcvt_high_f64_f32(e));
        }
    double p[PF_NPART];
    for (int k = 0; k < 8; k++) vst1q_f64(p + 2 * k, a[k]);
    for (; i < n; i++) {
        x[i] = pf_exp_ref(x[i] - mx);
        p[i % PF_NPART] += x[i];
    }
    float32x4_t inv = vdupq_n_f32((float)(1.0 / pf_tree16d(p)));
    for (i = 0; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_f32(vld1q_f32(x + i), inv));
    for (; i < n; i++) x[i] *= vgetq_lane_f32(inv, 0);
}

/* the reference's y = fmaf(a, x, y) (FMLA) */
static void axpy_f16(float a, const pf_half *x, float *y, int n) {
    float32x4_t av = vdupq_n_f32(a);
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_f32(vld1q_f32(y + i), av, pf_neon_half4(x + i)));
    for (; i < n; i++) y[i] = fmaf(a, pf_fp16_to_fp32(x[i]), y[i]);
}

/* FCVTN rounds to nearest even (FPCR default) like pf_fp32_to_fp16, overflow to inf, subnormals
 * exact; NaNs become the reference's quiet NaN 0x7e00 (sign kept) instead of a truncated payload. */
static void f32_to_f16(const float *x, pf_half *y, int64_t n) {
    const uint16x4_t qnan = vdup_n_u16(0x7e00), sign = vdup_n_u16(0x8000);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t v = vld1q_f32(x + i);
        uint16x4_t h = vreinterpret_u16_f16(vcvt_f16_f32(v));
        uint16x4_t nan = vmovn_u32(vmvnq_u32(vceqq_f32(v, v)));
        uint16x4_t s = vand_u16(vshrn_n_u32(vreinterpretq_u32_f32(v), 16), sign);
        vst1_u16(y + i, vbsl_u16(nan, vorr_u16(qnan, s), h));
    }
    for (; i < n; i++) y[i] = pf_fp32_to_fp16(x[i]);
}

/* As on x86: the largest non-NaN value (FMAXNM ignores a NaN operand), then the first index that
 * holds it (-0 == +0: the scalar loop keeps the first of equal values). */
static int32_t argmax(const float *x, int64_t n) {
    if (x[0] != x[0]) return 0; /* NaN first: nothing compares greater */
    float32x4_t m = vdupq_n_f32(-INFINITY);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) m = vmaxnmq_f32(m, vld1q_f32(x + i));
    float mx = vmaxnmvq_f32(m);
    for (; i < n; i++)
        if (x[i] > mx) mx = x[i];
    const float32x4_t mv = vdupq_n_f32(mx);
    for (i = 0; i + 4 <= n; i += 4)
        if (vmaxvq_u32(vceqq_f32(vld1q_f32(x + i), mv)))
            for (int j = 0; j < 4; j++)
                if (x[i + j] == mx) return (int32_t)(i + j);
    for (; i < n; i++)
        if (x[i] == mx) return (int32_t)i;
    return 0; /* unreachable: mx is x[0] or larger and present */
}

static int64_t first_above(const float *x, int64_t n, float t) {
    const float32x4_t tv = vdupq_n_f32(t);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        if (vmaxvq_u32(vcgtq_f32(vld1q_f32(x + i), tv)))
            for (int j = 0; j < 4; j++)
                if (x[i + j] > t) return i + j;
    for (; i < n; i++)
        if (x[i] > t) return i;
    return n;
}

/* pf_quantize_row_q8_act exactly: FMAXNM is fmaxf, FRINTA is roundf (half away from zero), the
 * same single-rounding divide and multiplies. */
static void quantize_act(const float *x, pf_block_q8_act *y, int64_t n) {
    for (int64_t i = 0; i < n / PF_QK; i++, x += PF_QK) {
        float32x4_t v[8], mx = vdupq_n_f32(0.0f);
        for (int j = 0; j < 8; j++) {
            v[j] = vld1q_f32(x + 4 * j);
            mx = vmaxnmq_f32(mx, vabsq_f32(v[j]));
        }
        float amax = vmaxnmvq_f32(mx);
        float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
        int32x4_t q[8], s = vdupq_n_s32(0);
        for (int j = 0; j < 8; j++) {
            q[j] = vcvtq_s32_f32(vrndaq_f32(vmulq_n_f32(v[j], id)));
            s = vaddq_s32(s, q[j]);
        }
        for (int j = 0; j < 8; j += 2) {
            int16x8_t h = vcombine_s16(vmovn_s32(q[j]), vmovn_s32(q[j + 1]));
            vst1_s8(y[i].qs + 4 * j, vmovn_s16(h));
        }
        y[i].d = d;
        y[i].s = d * (float)vaddvq_s32(s);
    }
}

#endif
