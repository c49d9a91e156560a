#include "quant.h"

#include <math.h>

/* (int)v, except that a value no int holds (NaN or Inf from a model's bad weights reaching a
 * quantizer: undefined behaviour in C) becomes 0; in-range values convert unchanged. */
static inline int to_int(float v) { return v >= -2147483520.0f && v <= 2147483520.0f ? (int)v : 0; }

static void quantize_q8_0(const float *x, pf_block_q8_0 *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += PF_QK) {
        float amax = 0.0f;
        for (int j = 0; j < PF_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
        y[i].d = pf_fp32_to_fp16(d);
        for (int j = 0; j < PF_QK; j++) y[i].qs[j] = (int8_t)to_int(roundf(x[j] * id));
    }
}

/* Symmetric 4-bit: the value of largest magnitude maps to -8, as ggml does. */
static void quantize_q4_0(const float *x, pf_block_q4_0 *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += PF_QK) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < PF_QK; j++)
            if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
        float d = max / -8.0f, id = d ? 1.0f / d : 0.0f;
        y[i].d = pf_fp32_to_fp16(d);
        for (int j = 0; j < PF_QK / 2; j++) {
            int a = to_int(x[j] * id + 8.5f), b = to_int(x[j + PF_QK / 2] * id + 8.5f);
            a = a < 0 ? 0 : a > 15 ? 15 : a;
            b = b < 0 ? 0 : b > 15 ? 15 : b;
            y[i].qs[j] = (uint8_t)(a | (b << 4));
        }
    }
}

static void quantize_q4_1(const float *x, pf_block_q4_1 *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += PF_QK) {
        float mn = x[0], mx = x[0];
        for (int j = 1; j < PF_QK; j++) { mn = fminf(mn, x[j]); mx = fmaxf(mx, x[j]); }
        float d = (mx - mn) / 15.0f, id = d ? 1.0f / d : 0.0f;
        y[i].d = pf_fp32_to_fp16(d);
        y[i].m = pf_fp32_to_fp16(mn);
        for (int j = 0; j < PF_QK / 2; j++) {
            int a = to_int((x[j] - mn) * id + 0.5f), b = to_int((x[j + PF_QK / 2] - mn) * id + 0.5f);
            a = a > 15 ? 15 : a;
            b = b > 15 ? 15 : b;
            y[i].qs[j] = (uint8_t)(a | (b << 4));
        }
    }
}

void pf_quantize_row_q8_act(const float *x, pf_block_q8_act *y, int64_t n) {
    for (int64_t i = 0; i < n / PF_QK; i++, x += PF_QK) {
        float amax = 0.0f;
        for (int j = 0; j < PF_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
        int sum = 0;
        for (int j = 0; j < PF_QK; j++) {
            y[i].qs[j] = (int8_t)to_int(roundf(x[j] * id));
            sum += y[i].qs[j];
        }
        y[i].d = d;
        y[i].s = d * (float)sum;
    }
}

/* ---- each type's row converters, n values (a whole number of blocks) ---- */

static void f32_from(const float *x, void *y, int64_t n) { memcpy(y, x, (size_t)n * 4); }
static void f32_to(const void *x, float *y, int64_t n) { memcpy(y, x, (size_t)n * 4); }

static void f16_from(const float *x, void *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) ((pf_half *)y)[i] = pf_fp32_to_fp16(x[i]);
}
static void f16_to(const void *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = pf_fp16_to_fp32(((const pf_half *)x)[i]);
}

static void bf16_from(const float *x, void *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) ((uint16_t *)y)[i] = pf_fp32_to_bf16(x[i]);
}
static void bf16_to(const void *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = pf_bf16_to_fp32(((const uint16_t *)x)[i]);
}

static void q8_0_from(const float *x, void *y, int64_t n) { quantize_q8_0(x, y, n / PF_QK); }
static void q8_0_to(const void *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n / PF_QK; i++) {
        const pf_block_q8_0 *b = (const pf_block_q8_0 *)x + i;
        float d = pf_fp16_to_fp32(b->d);
        for (int j = 0; j < PF_QK; j++) y[i * PF_QK + j] = d * b->qs[j];
    }
}

static void q4_0_from(const float *x, void *y, int64_t n) { quantize_q4_0(x, y, n / PF_QK); }
static void q4_0_to(const void *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n / PF_QK; i++) {
        const pf_block_q4_0 *b = (const pf_block_q4_0 *)x + i;
        float d = pf_fp16_to_fp32(b->d);
        for (int j = 0; j < PF_QK / 2; j++) {
            y[i * PF_QK + j] = d * ((b->qs[j] & 15) - 8);
            y[i * PF_QK + j + PF_QK / 2] = d * ((b->qs[j] >> 4) - 8);
        }
    }
}

static void q4_1_from(const float *x, void *y, int64_t n) { quantize_q4_1(x, y, n / PF_QK); }
static void q4_1_to(const void *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n / PF_QK; i++) {
        const pf_block_q4_1 *b = (const pf_block_q4_1 *)x + i;
        float d = pf_fp16_to_fp32(b->d), m = pf_fp16_to_fp32(b->m);
        for (int j = 0; j < PF_QK / 2; j++) {
            y[i * PF_QK + j] = d * (b->qs[j] & 15) + m;
            y[i * PF_QK + j + PF_QK / 2] = d * (b->qs[j] >> 4) + m;
        }
    }
}

/* One row per weight type, as its traits in ggml_types.c: one place to add a type. */
static const struct {
    void (*from_f32)(const float *x, void *y, int64_t n);
    void (*to_f32)(const void *x, float *y, int64_t n);
} k_rows[PF_TYPE_MAX] = {
    [PF_TYPE_F32] = {f32_from, f32_to},    [PF_TYPE_F16] = {f16_from, f16_to},
    [PF_TYPE_BF16] = {bf16_from, bf16_to}, [PF_TYPE_Q8_0] = {q8_0_from, q8_0_to},
    [PF_TYPE_Q4_0] = {q4_0_from, q4_0_to}, [PF_TYPE_Q4_1] = {q4_1_from, q4_1_to},
};

int pf_quantize_row(uint32_t type, const float *src, void *dst, int64_t n) {
    const pf_type_traits *t = pf_type_info(type);
    if (!t || n % t->block || !k_rows[type].from_f32) return -1;
    k_rows[type].from_f32(src, dst, n);
    return 0;
}

int pf_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n) {
    const pf_type_traits *t = pf_type_info(type);
    if (!t || n % t->block || !k_rows[type].to_f32) return -1;
    k_rows[type].to_f32(src, dst, n);
    return 0;
}
