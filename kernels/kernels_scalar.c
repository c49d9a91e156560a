/* Scalar reference kernels: the arbiter every SIMD path is tested against, and the fallback on
 * CPUs without AVX2. Plain sequential float accumulation (the build's -std=c11 turns off FMA
 * contraction, so every add and multiply rounds as written).
 *
 * Quantized dot products: per 32-weight block the integer sum of products is exact in int32; the
 * block then adds in float:
 *   Q8_0: acc += (d_w * x.d) * isum
 *   Q4_0: acc += (d_w * x.d) * isum_nib + (-8 * d_w) * x.s     (w = d*(nib-8); x.s = x.d*sum(q))
 *   Q4_1: acc += (d_w * x.d) * isum_nib + m_w * x.s            (w = d*nib + m) */
#include <math.h>

#include "formats/quant.h"
#include "kernels/kernels_impl.h"

static const float *act_f32(const void *act, size_t stride, int b) {
    return (const float *)((const char *)act + (size_t)b * stride);
}

static const pf_block_q8_act *act_q8(const void *act, size_t stride, int b) {
    return (const pf_block_q8_act *)((const char *)act + (size_t)b * stride);
}

static void gemm_f32(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                     int64_t ldy, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
        const float *w = (const float *)((const char *)W->data + (size_t)r * W->row_bytes);
        for (int b = 0; b < B; b++) {
            const float *x = act_f32(act, stride, b);
            float acc = 0.0f;
            for (int64_t i = 0; i < W->cols; i++) acc += w[i] * x[i];
            y[b * ldy + r] = acc;
        }
    }
}

static void gemm_f16(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                     int64_t ldy, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
        const pf_half *w = (const pf_half *)((const char *)W->data + (size_t)r * W->row_bytes);
        for (int b = 0; b < B; b++) {
            const float *x = act_f32(act, stride, b);
            float acc = 0.0f;
            for (int64_t i = 0; i < W->cols; i++) acc += pf_fp16_to_fp32(w[i]) * x[i];
            y[b * ldy + r] = acc;
        }
    }
}

static void gemm_bf16(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                      int64_t ldy, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
        const uint16_t *w = (const uint16_t *)((const char *)W->data + (size_t)r * W->row_bytes);
        for (int b = 0; b < B; b++) {
            const float *x = act_f32(act, stride, b);
            float acc = 0.0f;
            for (int64_t i = 0; i < W->cols; i++) acc += pf_bf16_to_fp32(w[i]) * x[i];
            y[b * ldy + r] = acc;
        }
    }
}

static void gemm_q8_0(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                      int64_t ldy, int64_t r0, int64_t r1) {
    int64_t nb = W->cols / PF_QK;
    for (int64_t r = r0; r < r1; r++) {
        const pf_block_q8_0 *w =
            (const pf_block_q8_0 *)((const char *)W->data + (size_t)r * W->row_bytes);
        for (int b = 0; b < B; b++) {
            const pf_block_q8_act *x = act_q8(act, stride, b);
            float acc = 0.0f;
            for (int64_t k = 0; k < nb; k++) {
                int32_t isum = 0;
                for (int j = 0; j < PF_QK; j++) isum += w[k].qs[j] * x[k].qs[j];
                acc += (pf_fp16_to_fp32(w[k].d) * x[k].d) * (float)isum;
            }
            y[b * ldy + r] = acc;
        }
    }
}

static int32_t nib_dot(const uint8_t *qs, const int8_t *q) {
    int32_t isum = 0;
    for (int j = 0; j < PF_QK / 2; j++)
        isum += (qs[j] & 15) * q[j] + (qs[j] >> 4) * q[j + PF_QK / 2];
    return isum;
}

static void gemm_q4_0(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                      int64_t ldy, int64_t r0, int64_t r1) {
    int64_t nb = W->cols / PF_QK;
    for (int64_t r = r0; r < r1; r++) {
        const pf_block_q4_0 *w =
            (const pf_block_q4_0 *)((const char *)W->data + (size_t)r * W->row_bytes);
        for (int b = 0; b < B; b++) {
            const pf_block_q8_act *x = act_q8(act, stride, b);
            float acc = 0.0f;
            for (int64_t k = 0; k < nb; k++) {
                float d = pf_fp16_to_fp32(w[k].d);
                int32_t isum = nib_dot(w[k].qs, x[k].qs);
                acc += (d * x[k].d) * (float)isum + (-8.0f * d) * x[k].s;
            }
            y[b * ldy + r] = acc;
        }
    }
}

static void gemm_q4_1(const pf_weight *W, const void *act, size_t stride, int B, float *y,
                      int64_t ldy, int64_t r0, int64_t r1) {
    int64_t nb = W->cols / PF_QK;
    for (int64_t r = r0; r < r1; r++) {
        const pf_block_q4_1 *w =
            (const pf_block_q4_1 *)((const char *)W->data + (size_t)r * W->row_bytes);
        for (int b = 0; b < B; b++) {
            const pf_block_q8_act *x = act_q8(act, stride, b);
            float acc = 0.0f;
            for (int64_t k = 0; k < nb; k++) {
                float d = pf_fp16_to_fp32(w[k].d), m = pf_fp16_to_fp32(w[k].m);
                int32_t isum = nib_dot(w[k].qs, x[k].qs);
                acc += (d * x[k].d) * (float)isum + m * x[k].s;
            }
            y[b * ldy + r] = acc;
        }
    }
}

/* Sum of squares in double: each float square is exact in double, so only the additions round. */
static void rmsnorm(const float *x, const float *w, int64_t n, float eps, float *out) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    float scale = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    for (int64_t i = 0; i < n; i++) out[i] = (x[i] * scale) * w[i];
}

static void swiglu(const float *gate, const float *up, float *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

static int32_t argmax(const float *x, int64_t n) {
    int32_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = (int32_t)i;
    return best;
}

static int64_t first_above(const float *x, int64_t n, float t) {
    for (int64_t i = 0; i < n; i++)
        if (x[i] > t) return i;
    return n;
}

static void f32_to_f16(const float *x, pf_half *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = pf_fp32_to_fp16(x[i]);
}

static void axpy_f16(float a, const pf_half *x, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] += a * pf_fp16_to_fp32(x[i]);
}

PF_DEFINE_KERNELS(pf_kernels_scalar_table, PF_LEVEL_SCALAR, "scalar", pf_quantize_row_q8_act);
