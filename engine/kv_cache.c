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
    size_t n = (size_t)hp->n_layer * (size_t)kv->layer_stride;
    /* zeroed: attention reads whole key tiles, also the not yet written positions of the last
     * one (their scores are never used, but they are read) */
    if (type == PF_KV_Q8) {
        kv->scale_stride = kv->head_stride / hp->head_dim;
        size_t ns = (size_t)hp->n_layer * (size_t)hp->n_head_kv * (size_t)kv->scale_stride;
        kv->k8 = calloc(n, 1);
        kv->v8 = calloc(n, 1);
        kv->ks = calloc(ns, sizeof(float));
        kv->vs = calloc(ns, sizeof(float));
    } else {
        kv->k = calloc(n, sizeof(pf_half));
        kv->v = calloc(n, sizeof(pf_half));
    }
    bool ok = type == PF_KV_Q8 ? kv->k8 && kv->v8 && kv->ks && kv->vs : kv->k && kv->v;
    if (!ok) {
        pf_kv_free(kv);
        return NULL;
    }
    return kv;
}

void pf_kv_free(pf_kv_cache *kv) {
    if (!kv) return;
    free(kv->k);
    free(kv->v);
    free(kv->k8);
    free(kv->v8);
    free(kv->ks);
    free(kv->vs);
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

