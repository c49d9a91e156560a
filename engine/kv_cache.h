/* Per-layer KV cache, f16 or 8-bit, in the layouts pf_attention reads (kernels.h); truncation is a
 * length change (no copy). The target's context and a draft's context keep one each. */
#ifndef PF_KV_CACHE_H
#define PF_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/hparams.h"
#include "formats/gguf.h"
#include "kernels/kernels.h"
#include "kernels/kv_layout.h"

typedef struct {
    int n_layer, kv_dim, n_kv_head, head_dim;
    pf_kv_type type;     /* PF_KV_F16 (k, v) or PF_KV_Q8 (k8, v8 with scales ks, vs) */
    int64_t n_ctx, len;
    int64_t head_stride; /* elements per KV head of one layer (pf_kv_head_stride) */
    pf_half *k, *v;      /* layer l: k + l * layer_stride, n_kv_head regions of head_stride */
    int64_t layer_stride;
    uint8_t *k8;         /* the 8-bit cache (kernels.h) */
    int8_t *v8;
    float *ks, *vs;      /* layer l, head h, position p: ks[(l * n_kv_head + h) * scale_stride + p] */
    int64_t scale_stride;
    void *mem; /* the one block the arrays above point into */
} pf_kv_cache;

pf_kv_cache *pf_kv_new(const pf_hparams *hp, int64_t n_ctx, pf_kv_type type);
/* Bytes the cache holds per position (all layers, keys and values, scales included). */
size_t pf_kv_bytes_per_token(const pf_kv_cache *kv);
/* Layer l, position pos, from f32 key and value rows (n_kv_head * head_dim each), for either type. */
void pf_kv_write(const pf_kernels *k, pf_kv_cache *kv, int l, int64_t pos, const float *krow, const float *vrow);
/* Layer l of the cache as attention reads it (kernels.h). */
pf_kv_view pf_kv_layer(const pf_kv_cache *kv, int l);
/* Attention of rows over layer l's keys, for either type: the target's rows are causal over
 * [0, pos0 + B), the draft's block sees its context and the whole block, within a window. */
void pf_kv_attend(const pf_kernels *k, pf_pool *pool, const pf_kv_cache *kv, int l, const pf_attn_rows *rows);
/* 1 if kernels k read the 8-bit cache at speed (every SIMD level: AVX2, AVX-VNNI, AVX-512, NEON,
 * dotprod, i8mm; the scalar path is several times slower than the f16 cache), else 0 with the
 * reason in err. */
int pf_kv_q8_usable(const pf_kernels *k, char err[PF_ERR_LEN]);
void pf_kv_free(pf_kv_cache *kv);
void pf_kv_truncate(pf_kv_cache *kv, int64_t len);

#endif
