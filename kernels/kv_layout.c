/* Writing and reading rows of the KV cache layout pf_attention reads (kv_layout.h): keys in
 * dimension-major tiles of PF_KV_TILE positions, values position-major, one region per KV head. */
#include "kernels/kv_layout.h"

#include <math.h>

#include "kernels/kernels.h"

void pf_kv_store(const pf_kernels *k, pf_half *K, pf_half *V, int64_t head_stride, int n_kv_head, int hd,
                 int64_t pos, const float *krow, const float *vrow) {
    pf_half tmp[256];
    for (int h = 0; h < n_kv_head; h++) {
        pf_half *kh = K + h * head_stride;
        for (int d0 = 0; d0 < hd; d0 += 256) {
            int n = hd - d0 < 256 ? hd - d0 : 256;
            k->f32_to_f16(krow + (int64_t)h * hd + d0, tmp, n);
            for (int d = 0; d < n; d++) kh[pf_kv_key_at(pos, d0 + d, hd)] = tmp[d];
        }
        k->f32_to_f16(vrow + (int64_t)h * hd, V + h * head_stride + pos * hd, hd);
    }
}

void pf_kv_row_get(const pf_half *X, int keys, int64_t head_stride, int n_kv_head, int hd, int64_t pos,
                   pf_half *row) {
    for (int h = 0; h < n_kv_head; h++)
        for (int d = 0; d < hd; d++)
            row[h * hd + d] = X[h * head_stride + (keys ? pf_kv_key_at(pos, d, hd) : pos * hd + d)];
}

void pf_kv_row_put(pf_half *X, int keys, int64_t head_stride, int n_kv_head, int hd, int64_t pos,
                   const pf_half *row) {
    for (int h = 0; h < n_kv_head; h++)
        for (int d = 0; d < hd; d++)
            X[h * head_stride + (keys ? pf_kv_key_at(pos, d, hd) : pos * hd + d)] = row[h * hd + d];
}

/* hd values as int8 with one scale (max |x| / 127; 0 for an all-zero row). */
static float quantize_q8(const float *x, int hd, int8_t *q) {
    float amax = 0;
    for (int d = 0; d < hd; d++) amax = fmaxf(amax, fabsf(x[d]));
    float inv = amax > 0 ? 127.0f / amax : 0;
    /* round half away from zero, in plain arithmetic (lrintf is a libm call here) */
    for (int d = 0; d < hd; d++) {
        float y = x[d] * inv;
        q[d] = (int8_t)(int)(y + (y >= 0 ? 0.5f : -0.5f));
    }
    return amax / 127.0f;
}

void pf_attn_quantize_q(const float *q, int hd, int8_t *q8, float *qs, int32_t *qsum) {
    *qs = quantize_q8(q, hd, q8);
    int32_t sum = 0;
    for (int d = 0; d < hd; d++) sum += q8[d];
    *qsum = sum;
}

void pf_kv_store_q8(uint8_t *K, int8_t *V, float *ks, float *vs, int64_t head_stride, int64_t scale_stride,
                    int n_kv_head, int hd, int64_t pos, const float *krow, const float *vrow) {
    int8_t tmp[PF_KV_Q8_MAX_HD];
    if (hd > PF_KV_Q8_MAX_HD || hd % 4) return; /* outside the layout (kernels.h); refused by pf_ctx_set_kv_type */
    for (int h = 0; h < n_kv_head; h++) {
        ks[h * scale_stride + pos] = quantize_q8(krow + (int64_t)h * hd, hd, tmp);
        for (int d = 0; d < hd; d++) K[h * head_stride + pf_kv_key_at_q8(pos, d, hd)] = (uint8_t)(tmp[d] + 128);
        vs[h * scale_stride + pos] = quantize_q8(vrow + (int64_t)h * hd, hd, V + h * head_stride + pos * hd);
    }
}

void pf_kv_row_get_q8(const void *X, int keys, int64_t head_stride, int n_kv_head, int hd, int64_t pos, int8_t *row) {
    for (int h = 0; h < n_kv_head; h++)
        for (int d = 0; d < hd; d++)
            row[h * hd + d] = keys ? (int8_t)(((const uint8_t *)X)[h * head_stride + pf_kv_key_at_q8(pos, d, hd)] - 128)
                                   : ((const int8_t *)X)[h * head_stride + pos * hd + d];
}

void pf_kv_row_put_q8(void *X, int keys, int64_t head_stride, int n_kv_head, int hd, int64_t pos, const int8_t *row) {
    for (int h = 0; h < n_kv_head; h++)
        for (int d = 0; d < hd; d++) {
            if (keys) ((uint8_t *)X)[h * head_stride + pf_kv_key_at_q8(pos, d, hd)] = (uint8_t)(row[h * hd + d] + 128);
            else ((int8_t *)X)[h * head_stride + pos * hd + d] = row[h * hd + d];
        }
}
