/* The KV cache layout the attention kernels read, f16 or 8-bit (docs/architecture.md, "KV cache
 * layout"): where a key or value of a position lies, storing a position's rows and copying them out
 * and in as the prompt cache's plain rows (kernels/kv_layout.c). */
#ifndef PF_KV_LAYOUT_H
#define PF_KV_LAYOUT_H

#include <stdint.h>

#include "formats/ggml_types.h" /* pf_half */

struct pf_kernels; /* kernels/kernels.h: pf_kv_store converts through its f32_to_f16 */

/* One layer's cache, what pf_attention reads (kernels/kernels.h: pf_kv_view): each KV head owns
 * head_stride halves (pf_kv_head_stride) holding its keys, then (separately) its values. Keys sit in tiles of
 * PF_KV_TILE positions, each tile dimension-major ([hd][PF_KV_TILE]: one vector load gives one
 * dimension of 16 keys, so scores need no horizontal sums); values are position-major ([pos][hd]).
 * Every head's keys and values are contiguous streams, which the hardware prefetchers follow. */
#define PF_KV_TILE 16
static inline int64_t pf_kv_head_stride(int64_t n_ctx, int hd) {
    return (n_ctx + PF_KV_TILE - 1) / PF_KV_TILE * PF_KV_TILE * hd;
}
/* Offset of key position j, dimension d, within its head's key region. */
static inline int64_t pf_kv_key_at(int64_t j, int d, int hd) {
    return j / PF_KV_TILE * PF_KV_TILE * hd + (int64_t)d * PF_KV_TILE + j % PF_KV_TILE;
}
/* Store position pos of all n_kv_head heads from f32 rows (key row, value row: n_kv_head * hd). */
void pf_kv_store(const struct pf_kernels *k, pf_half *K, pf_half *V, int64_t head_stride, int n_kv_head, int hd,
                 int64_t pos, const float *krow, const float *vrow);
/* The 8-bit cache (PF_KV_Q8): head_stride bytes of keys and of values a head, each (head, position)
 * with its own scale at ks / vs [h * scale_stride + pos] (scale_stride >= the padded positions):
 * x = scale * q, q = round(x / scale) in [-127, 127], scale = max |x| / 127. Keys are stored as
 * q + 128 (unsigned) in tiles of 16 positions laid out [hd/4][16][4], four consecutive dimensions of
 * a key in one 32-bit lane, as vpdpbusd multiplies them; values as int8, position-major. hd must be
 * a multiple of 4, at most PF_KV_Q8_MAX_HD. Half the bytes of f16 (attention at depth reads the
 * cache each step). */
typedef enum { PF_KV_F16, PF_KV_Q8 } pf_kv_type;
#define PF_KV_Q8_MAX_HD 256
static inline int64_t pf_kv_key_at_q8(int64_t j, int d, int hd) {
    return j / PF_KV_TILE * PF_KV_TILE * hd + (int64_t)(d / 4) * (PF_KV_TILE * 4) + j % PF_KV_TILE * 4 + d % 4;
}
void pf_kv_store_q8(uint8_t *K, int8_t *V, float *ks, float *vs, int64_t head_stride, int64_t scale_stride,
                    int n_kv_head, int hd, int64_t pos, const float *krow, const float *vrow);
/* Position pos of all heads of the 8-bit keys (keys != 0: X is the uint8 key region, values as
 * stored minus 128) or values (X the int8 value region) as one row of n_kv_head * hd int8 (the
 * prompt cache's layout; the scales are copied apart). */
void pf_kv_row_get_q8(const void *X, int keys, int64_t head_stride, int n_kv_head, int hd, int64_t pos, int8_t *row);
void pf_kv_row_put_q8(void *X, int keys, int64_t head_stride, int n_kv_head, int hd, int64_t pos, const int8_t *row);
/* Copy position pos of all heads out of / into the keys (keys != 0) or values as one f16 row of
 * n_kv_head * hd (the prompt cache's file layout). */
void pf_kv_row_get(const pf_half *X, int keys, int64_t head_stride, int n_kv_head, int hd, int64_t pos,
                   pf_half *row);
void pf_kv_row_put(pf_half *X, int keys, int64_t head_stride, int n_kv_head, int hd, int64_t pos,
                   const pf_half *row);

#endif
