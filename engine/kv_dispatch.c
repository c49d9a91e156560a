/* The forward's access to the KV cache by its type (f16 or 8-bit): row writes and attention go to
 * the matching kernels. Kept apart from kv_cache.c (allocation), which the prompt-cache fuzz
 * target links without the attention kernels. */
#include <stdio.h>

#include "engine/model.h"

void pf_kv_write(const pf_kernels *k, pf_kv_cache *kv, int l, int64_t pos, const float *krow, const float *vrow) {
    size_t lo = (size_t)l * (size_t)kv->layer_stride;
    if (kv->type == PF_KV_Q8) {
        size_t so = (size_t)l * (size_t)kv->n_kv_head * (size_t)kv->scale_stride;
        pf_kv_store_q8(kv->k8 + lo, kv->v8 + lo, kv->ks + so, kv->vs + so, kv->head_stride, kv->scale_stride,
                       kv->n_kv_head, kv->head_dim, pos, krow, vrow);
    } else {
        pf_kv_store(k, kv->k + lo, kv->v + lo, kv->head_stride, kv->n_kv_head, kv->head_dim, pos, krow, vrow);
    }
}

void pf_kv_attend(const pf_kernels *k, pf_pool *pool, const pf_kv_cache *kv, int l, const float *q, int64_t ldq, int B,
                  int n_head, int64_t pos0, float *out, int64_t ldo) {
    size_t lo = (size_t)l * (size_t)kv->layer_stride;
    if (kv->type == PF_KV_Q8) {
        size_t so = (size_t)l * (size_t)kv->n_kv_head * (size_t)kv->scale_stride;
        pf_attention_q8(k, pool, q, ldq, B, n_head, kv->n_kv_head, kv->head_dim, kv->k8 + lo, kv->v8 + lo, kv->ks + so,
                        kv->vs + so, kv->head_stride, kv->scale_stride, pos0, pos0 + B, 1, 0, out, ldo);
    } else {
        pf_attention(k, pool, q, ldq, B, n_head, kv->n_kv_head, kv->head_dim, kv->k + lo, kv->v + lo, kv->head_stride,
                     pos0, pos0 + B, 1, 0, out, ldo);
    }
}

int pf_kv_q8_usable(const pf_kernels *k, char err[PF_ERR_LEN]) {
    /* the scalar path is far slower than the f16 cache (docs/performance.md): refused, not run slowly;
     * every SIMD level has integer scores (x86: AVX2, AVX-512; ARM64: NEON, dotprod, i8mm) */
    if (k->level != PF_LEVEL_SCALAR) return 1;
    snprintf(err, PF_ERR_LEN,
             "the 8-bit KV cache needs SIMD kernels (AVX2 or AVX-512; NEON, dotprod or i8mm on ARM64; these are %s): "
             "use the f16 cache",
             k->name);
    return 0;
}
