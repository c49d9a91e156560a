/* Scalar reference kernels (gemm, elementwise, attention): the arbiter every SIMD path is tested
 * against, and the fallback on CPUs without SIMD levels. Every add and multiply rounds as written
 * (the build's -ffp-contract=off keeps FMA contraction out; fmaf is written where one is meant).
 * The float gemms, RMSNorm, SwiGLU, softmax and attention follow float_order.h.
 *
 * Quantized dot products: per 32-weight block the integer sum of products is exact in int32; the
 * block then adds in float:
 *   Q8_0: acc += (d_w * x.d) * isum
 *   Q4_0: acc += (d_w * x.d) * isum_nib + (-8 * d_w) * x.s     (w = d*(nib-8); x.s = x.d*sum(q))
 *   Q4_1: acc += (d_w * x.d) * isum_nib + m_w * x.s            (w = d*nib + m) */
#include <math.h>
#include <string.h>

#include "formats/quant.h"
#include "kernels/attention_walk.h"
#include "kernels/kernels_impl.h"

static const float *act_f32(const void *act, size_t stride, int b) {
    return (const float *)((const char *)act + (size_t)b * stride);
}

static const pf_block_q8_act *act_q8(const void *act, size_t stride, int b) {
    return (const pf_block_q8_act *)((const char *)act + (size_t)b * stride);
}

/* weight element i of a float row */
PF_FORCE_INLINE float wval(uint32_t wt, const void *w, int64_t i) {
    if (wt == PF_TYPE_F32) return ((const float *)w)[i];
    if (wt == PF_TYPE_F16) return pf_fp16_to_fp32(((const pf_half *)w)[i]);
    return pf_bf16_to_fp32(((const uint16_t *)w)[i]);
}

PF_FORCE_INLINE void gemm_float(uint32_t wt, const pf_weight *W, const void *act, size_t stride, int B, float *y,
                                int64_t ldy, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
        const void *w = (const char *)W->data + (size_t)r * W->row_bytes;
        for (int b = 0; b < B; b++) {
            const float *x = act_f32(act, stride, b);
            float p[PF_NPART] = {0};
            for (int64_t i = 0; i < W->cols; i++) p[i % PF_NPART] = fmaf(wval(wt, w, i), x[i], p[i % PF_NPART]);
            y[b * ldy + r] = pf_tree16f(p);
        }
    }
}

static int32_t nib_dot(const uint8_t *qs, const int8_t *q) {
    int32_t isum = 0;
    for (int j = 0; j < PF_QK / 2; j++)
        isum += (qs[j] & 15) * q[j] + (qs[j] >> 4) * q[j + PF_QK / 2];
    return isum;
}

/* what block k of a weight row adds to the dot product with activation block x */
PF_FORCE_INLINE float block_term(uint32_t wt, const void *w, int64_t k, const pf_block_q8_act *x) {
    if (wt == PF_TYPE_Q8_0) {
        const pf_block_q8_0 *wb = (const pf_block_q8_0 *)w + k;
        int32_t isum = 0;
        for (int j = 0; j < PF_QK; j++) isum += wb->qs[j] * x->qs[j];
        return (pf_fp16_to_fp32(wb->d) * x->d) * (float)isum;
    }
    if (wt == PF_TYPE_Q4_0) {
        const pf_block_q4_0 *wb = (const pf_block_q4_0 *)w + k;
        float d = pf_fp16_to_fp32(wb->d);
        return (d * x->d) * (float)nib_dot(wb->qs, x->qs) + (-8.0f * d) * x->s;
    }
    const pf_block_q4_1 *wb = (const pf_block_q4_1 *)w + k;
    float d = pf_fp16_to_fp32(wb->d), m = pf_fp16_to_fp32(wb->m);
    return (d * x->d) * (float)nib_dot(wb->qs, x->qs) + m * x->s;
}

PF_FORCE_INLINE void gemm_quant(uint32_t wt, const pf_weight *W, const void *act, size_t stride, int B, float *y,
                                int64_t ldy, int64_t r0, int64_t r1) {
    int64_t nb = W->cols / PF_QK;
    for (int64_t r = r0; r < r1; r++) {
        const void *w = (const char *)W->data + (size_t)r * W->row_bytes;
        for (int b = 0; b < B; b++) {
            const pf_block_q8_act *x = act_q8(act, stride, b);
            float acc = 0.0f;
            for (int64_t k = 0; k < nb; k++) acc += block_term(wt, w, k, x + k);
            y[b * ldy + r] = acc;
        }
    }
}

PF_GEMM_ENTRIES_FLOAT(gemm_float)
PF_GEMM_ENTRIES_QUANT(gemm_quant)

/* The order of float_order.h: squares summed in double (each square of a float is exact in
 * double, so only the additions round) in 16 partials and the tree. */
static void rmsnorm(const float *x, const float *w, int64_t n, float eps, float *out) {
    double p[PF_NPART] = {0};
    for (int64_t i = 0; i < n; i++) p[i % PF_NPART] += (double)x[i] * x[i];
    double ss = pf_tree16d(p);
    float scale = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    for (int64_t i = 0; i < n; i++) out[i] = (x[i] * scale) * w[i];
}

static void swiglu(const float *gate, const float *up, float *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + pf_exp_ref(-g)) * up[i];
    }
}

static void softmax(float *x, int64_t n) {
    float mx;
    if (!pf_softmax_max(x, n, &mx)) return;
    double p[PF_NPART] = {0};
    for (int64_t i = 0; i < n; i++) {
        x[i] = pf_exp_ref(x[i] - mx);
        p[i % PF_NPART] += x[i];
    }
    float inv = (float)(1.0 / pf_tree16d(p));
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
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

/* one fused multiply-add per element, as the SIMD attention's value chains */
static void axpy_f16(float a, const pf_half *x, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = fmaf(a, pf_fp16_to_fp32(x[i]), y[i]);
}

/* ---- attention: one (row, head) pair at a time over its visible keys (attention_walk.h) ---- */

/* each score one fmaf chain over the head dim in order (f16), or the exact integer dot product of
 * the rounded query with the keys (stored + 128) */
static void scores_ref(const pf_attn_job *j, const pf_attn_head *a, int64_t c0, int n, float *s) {
    const int hd = a->hd;
    for (int t = 0; t < n; t++) {
        float d = 0.0f;
        if (j->q8) {
            const uint8_t *kt = a->K8 + pf_kv_key_at_q8(c0 + t, 0, hd);
            int32_t isum = 0;
            for (int i = 0; i < hd; i++) isum += (int32_t)a->q8[i] * kt[i / 4 * (PF_KV_TILE * 4) + i % 4];
            d = (float)(isum - 128 * a->qsum) * a->qs * a->ks[c0 + t];
        } else {
            const pf_half *kt = a->K + pf_kv_key_at(c0 + t, 0, hd);
            for (int i = 0; i < hd; i++) d = fmaf(a->q[i], pf_fp16_to_fp32(kt[i * PF_KV_TILE]), d);
        }
        s[t] = d * j->scale;
    }
}

static void attend_head(const pf_attn_job *j, int b, int h) {
    pf_attend_head_walk(j, b, h, scores_ref, pf_attn_values_ref);
}

int pf_attend_group_scalar(const pf_attn_job *j, int b, int kvh) {
    int g = j->n_head / j->n_kv_head;
    for (int h = kvh * g; h < (kvh + 1) * g; h++) attend_head(j, b, h);
    return 1;
}

PF_DEFINE_KERNELS(pf_kernels_scalar_table, PF_LEVEL_SCALAR, "scalar", pf_quantize_row_q8_act, NULL,
                  pf_attend_group_scalar, 0);
