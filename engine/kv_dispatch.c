/* The forward's access to the KV cache by its type (f16 or 8-bit): row writes and attention go to
 * the matching kernels. Kept apart from kv_cache.c (allocation), which the prompt-cache fuzz
 * target links without the attention kernels. */
#include <stdio.h>

#include "engine/kv_cache.h"

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

pf_kv_view pf_kv_layer(const pf_kv_cache *kv, int l) {
    size_t lo = (size_t)l * (size_t)kv->layer_stride;
    pf_kv_view v = {.type = kv->type, .head_stride = kv->head_stride, .n_kv_head = kv->n_kv_head,
                    .head_dim = kv->head_dim};
    if (kv->type == PF_KV_Q8) {
        size_t so = (size_t)l * (size_t)kv->n_kv_head * (size_t)kv->scale_stride;
        v.k8 = kv->k8 + lo, v.v8 = kv->v8 + lo, v.ks = kv->ks + so, v.vs = kv->vs + so;
        v.scale_stride = kv->scale_stride;
    } else {
        v.k = kv->k + lo, v.v = kv->v + lo;
    }
    return v;
}

void pf_kv_attend(const pf_kernels *k, pf_pool *pool, const pf_kv_cache *kv, int l, const pf_attn_rows *rows) {
    pf_kv_view v = pf_kv_layer(kv, l);
    pf_attention(k, pool, &v, rows);
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
