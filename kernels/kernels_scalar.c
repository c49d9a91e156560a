/* Scalar reference kernels (gemm, elementwise, attention): the arbiter every SIMD path is tested
 * against, and the fallback on CPUs without SIMD levels. Every add and multiply rounds as written
 * (the build's -ffp-contract=off keeps FMA contraction out; fmaf is written where one is meant).
 * The float gemms accumulate sequentially; RMSNorm, SwiGLU and attention follow float_order.h.
 *
 * Quantized dot products: per 32-weight block the integer sum of products is exact in int32; the
 * block then adds in float:
 *   Q8_0: acc += (d_w * x.d) * isum
 *   Q4_0: acc += (d_w * x.d) * isum_nib + (-8 * d_w) * x.s     (w = d*(nib-8); x.s = x.d*sum(q))
 *   Q4_1: acc += (d_w * x.d) * isum_nib + m_w * x.s            (w = d*nib + m) */
#include <math.h>
#include <string.h>

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
    if (n <= 0) return;
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (x[i] > mx) mx = x[i];
    if (mx == -INFINITY) { /* everything masked: uniform rather than NaN */
        for (int64_t i = 0; i < n; i++) x[i] = 1.0f / (float)n;
        return;
    }
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

/* ---- attention: one (row, head) pair at a time over its visible keys, in chunks of
 * PF_ATTN_KCHUNK (the online softmax of kernels/attention.c) ---- */

static void attend_head(const pf_attn_job *j, int b, int h) {
    const pf_kernels *k = j->k;
    int hd = j->hd;
    int64_t lo, hi;
    pf_attn_range(j, b, &lo, &hi);
    float *o = j->out + b * j->ldo + (int64_t)h * hd;
    memset(o, 0, (size_t)hd * sizeof *o);
    if (lo >= hi) return; /* nothing visible: zeros */

    const float *qh = j->q + b * j->ldq + (int64_t)h * hd;
    int64_t kvh = h / (j->n_head / j->n_kv_head);
    const pf_half *Kh = j->q8 ? NULL : j->K + kvh * j->head_stride, *Vh = j->q8 ? NULL : j->V + kvh * j->head_stride;
    const uint8_t *K8 = j->q8 ? j->K8 + kvh * j->head_stride : NULL;
    const int8_t *V8 = j->q8 ? j->V8 + kvh * j->head_stride : NULL;
    int8_t q8[PF_KV_Q8_MAX_HD];
    float qs = 0;
    int32_t qsum = 0;
    if (j->q8) pf_attn_quantize_q(qh, hd, q8, &qs, &qsum);
    const float *ks = j->q8 ? j->ks + kvh * j->scale_stride : NULL, *vs = j->q8 ? j->vs + kvh * j->scale_stride : NULL;
    float s[PF_ATTN_KCHUNK];
    float mx = -INFINITY, l[PF_NPART] = {0};
    for (int64_t c0 = lo; c0 < hi; c0 += PF_ATTN_KCHUNK) {
        int n = hi - c0 < PF_ATTN_KCHUNK ? (int)(hi - c0) : PF_ATTN_KCHUNK;
        float cmax = -INFINITY;
        for (int t = 0; t < n; t++) {
            float a = 0.0f;
            if (j->q8) { /* exact integer dot product of the rounded query with the keys (stored + 128) */
                const uint8_t *kt = K8 + pf_kv_key_at_q8(c0 + t, 0, hd);
                int32_t isum = 0;
                for (int d = 0; d < hd; d++) isum += (int32_t)q8[d] * kt[d / 4 * (PF_KV_TILE * 4) + d % 4];
                a = (float)(isum - 128 * qsum) * qs * ks[c0 + t];
            } else {
                const pf_half *kt = Kh + pf_kv_key_at(c0 + t, 0, hd);
                for (int d = 0; d < hd; d++) a = fmaf(qh[d], pf_fp16_to_fp32(kt[d * PF_KV_TILE]), a);
            }
            s[t] = a * j->scale;
            if (s[t] > cmax) cmax = s[t];
        }
        float f = pf_attn_raise_max(cmax, &mx, l);
        if (f != 1.0f)
            for (int i = 0; i < hd; i++) o[i] *= f;
        for (int t = 0; t < n; t++) {
            float e = pf_exp_ref(s[t] - mx);
            l[t % PF_NPART] += e;
            if (j->q8) {
                const int8_t *v = V8 + (c0 + t) * hd;
                float w = e * vs[c0 + t];
                for (int i = 0; i < hd; i++) o[i] = fmaf(w, (float)v[i], o[i]);
            } else {
                k->axpy_f16(e, Vh + (c0 + t) * hd, o, hd);
            }
        }
    }
    float inv = 1.0f / pf_tree16f(l);
    for (int i = 0; i < hd; i++) o[i] *= inv;
}

int pf_attend_group_scalar(const pf_attn_job *j, int b, int kvh) {
    int g = j->n_head / j->n_kv_head;
    for (int h = kvh * g; h < (kvh + 1) * g; h++) attend_head(j, b, h);
    return 1;
}

PF_DEFINE_KERNELS(pf_kernels_scalar_table, PF_LEVEL_SCALAR, "scalar", pf_quantize_row_q8_act, NULL,
                  pf_attend_group_scalar, 0);
