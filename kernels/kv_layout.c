/* Writing and reading rows of the KV cache layout pf_attention reads (kernels.h): keys in
 * dimension-major tiles of PF_KV_TILE positions, values position-major, one region per KV head. */
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
