/* Per-layer KV cache, f16 or 8-bit (kernels.h). Rollback after a rejected speculative block is a
 * length change: rows past `len` are simply overwritten by the next forward. */
#include <stdlib.h>

#include "engine/kv_cache.h"

pf_kv_cache *pf_kv_new(const pf_hparams *hp, int64_t n_ctx, pf_kv_type type) {
    pf_kv_cache *kv = calloc(1, sizeof *kv);
    if (!kv) return NULL;
    kv->n_layer = hp->n_layer;
    kv->kv_dim = hp->n_head_kv * hp->head_dim;
    kv->n_kv_head = hp->n_head_kv;
    kv->head_dim = hp->head_dim;
    kv->n_ctx = n_ctx;
    kv->head_stride = pf_kv_head_stride(n_ctx, hp->head_dim);
    kv->layer_stride = kv->head_stride * hp->n_head_kv;
    kv->type = type;
    size_t n = (size_t)hp->n_layer * (size_t)kv->layer_stride, ns = 0;
    if (type == PF_KV_Q8) {
        kv->scale_stride = kv->head_stride / hp->head_dim;
        ns = (size_t)hp->n_layer * (size_t)hp->n_head_kv * (size_t)kv->scale_stride;
    }
    /* one zeroed block: attention reads whole key tiles, also the not yet written positions of the
     * last one (their scores are never used, but they are read); n is a whole number of tiles, so
     * each part starts as aligned as the block */
    size_t elem = type == PF_KV_Q8 ? 1 : sizeof(pf_half);
    kv->mem = calloc(2 * n * elem + 2 * ns * sizeof(float), 1);
    if (!kv->mem) {
        free(kv);
        return NULL;
    }
    if (type == PF_KV_Q8) {
        kv->k8 = kv->mem;
        kv->v8 = (int8_t *)(kv->k8 + n);
        kv->ks = (float *)(kv->k8 + 2 * n);
        kv->vs = kv->ks + ns;
    } else {
        kv->k = kv->mem;
        kv->v = kv->k + n;
    }
    return kv;
}

void pf_kv_free(pf_kv_cache *kv) {
    if (!kv) return;
    free(kv->mem);
    free(kv);
}

size_t pf_kv_bytes_per_token(const pf_kv_cache *kv) {
    size_t per = (size_t)kv->n_layer * (size_t)kv->kv_dim * 2; /* keys and values */
    if (kv->type == PF_KV_Q8) return per + (size_t)kv->n_layer * (size_t)kv->n_kv_head * 2 * sizeof(float);
    return per * sizeof(pf_half);
}

void pf_kv_truncate(pf_kv_cache *kv, int64_t len) {
    if (len < 0) len = 0;
    if (len < kv->len) kv->len = len;
}

