/* Attention over the 8-bit KV cache for the ARM64 levels: the scalar reference's head walk
 * (attention_walk.h: same chunks, online softmax, pf_exp_ref, the sum's 16 partials, values in
 * key order), with the integer
 * scores of 16 or 4 keys of one tile at once and the value accumulation across lanes of the head
 * dim (a chunk's keys in order, 16 output elements held in registers). Included by a level's file
 * after it defines
 *   keys16(kt, q, hd, d[4]): d[i] = the exact int32 dots (key - 128) . q of keys 4i..4i+3 at kt
 *   keys4(kt, q, hd):        the same for 4 keys at kt (kt may sit at any key <= 12 of a tile)
 * (kt: the key's bytes for dims 0-3, dims 4d4.. at + 64 d4: the [hd/4][16][4] tile layout). The
 * integer dot is the scalar's isum - 128 qsum exactly, the float ops on it are the scalar's in its
 * order, and each output element gets the scalar's fused multiply-adds in key order: the results
 * are the scalar level's bits (tests/test_kernels.c checks it). */
#ifndef PF_NEON_ATTENTION_Q8_H
#define PF_NEON_ATTENTION_Q8_H

#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "kernels/attention_walk.h"
#include "kernels/kernels_impl.h"

/* ((dot * qs) * ks) * scale, the scalar's order, for 4 keys */
PF_FORCE_INLINE void q8_store_scores(int32x4_t d, float qs, const float *ks, float scale, float *s) {
    float32x4_t a = vmulq_f32(vmulq_n_f32(vcvtq_f32_s32(d), qs), vld1q_f32(ks));
    vst1q_f32(s, vmulq_n_f32(a, scale));
}

/* s[t] for keys c0 .. c0+n-1: whole tiles 16 keys at once, 4 within a tile, else one by one */
static void q8_scores(const uint8_t *K8, const int8_t *q8, float qs, int32_t qsum, const float *ks, int hd,
                      int64_t c0, int n, float scale, float *s) {
    for (int t = 0; t < n;) {
        int64_t j = c0 + t;
        const uint8_t *kt = K8 + pf_kv_key_at_q8(j, 0, hd);
        if (j % PF_KV_TILE == 0 && t + 16 <= n) {
            int32x4_t d[4];
            keys16(kt, q8, hd, d);
            for (int i = 0; i < 4; i++) q8_store_scores(d[i], qs, ks + j + 4 * i, scale, s + t + 4 * i);
            t += 16;
        } else if (j % PF_KV_TILE <= PF_KV_TILE - 4 && t + 4 <= n) {
            q8_store_scores(keys4(kt, q8, hd), qs, ks + j, scale, s + t);
            t += 4;
        } else { /* the scalar reference's loop */
            int32_t isum = 0;
            for (int d = 0; d < hd; d++) isum += (int32_t)q8[d] * kt[d / 4 * (PF_KV_TILE * 4) + d % 4];
            s[t++] = (float)(isum - 128 * qsum) * qs * ks[j] * scale;
        }
    }
}

/* o[i] = fmaf(w[t], v_t[i], o[i]) for t = 0 .. n-1 in order (the scalar's per-key updates, loops
 * swapped: each element sees the same fused operations in the same order), 16 elements of o held
 * in registers across the keys; v_t = V + t hd. */
PF_FORCE_INLINE void q8_values(const float *w, const int8_t *V, int n, float *o, int hd) {
    int i = 0;
    for (; i + 16 <= hd; i += 16) {
        float32x4_t a0 = vld1q_f32(o + i), a1 = vld1q_f32(o + i + 4);
        float32x4_t a2 = vld1q_f32(o + i + 8), a3 = vld1q_f32(o + i + 12);
        for (int t = 0; t < n; t++) {
            int8x16_t b = vld1q_s8(V + (int64_t)t * hd + i);
            int16x8_t lo = vmovl_s8(vget_low_s8(b)), hi = vmovl_high_s8(b);
            float32x4_t wv = vdupq_n_f32(w[t]);
            a0 = vfmaq_f32(a0, wv, vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))));
            a1 = vfmaq_f32(a1, wv, vcvtq_f32_s32(vmovl_high_s16(lo)));
            a2 = vfmaq_f32(a2, wv, vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))));
            a3 = vfmaq_f32(a3, wv, vcvtq_f32_s32(vmovl_high_s16(hi)));
        }
        vst1q_f32(o + i, a0), vst1q_f32(o + i + 4, a1), vst1q_f32(o + i + 8, a2), vst1q_f32(o + i + 12, a3);
    }
    for (; i < hd; i++) {
        float a = o[i];
        for (int t = 0; t < n; t++) a = fmaf(w[t], (float)V[(int64_t)t * hd + i], a);
        o[i] = a;
    }
}

static void q8_chunk_scores(const pf_attn_job *j, const pf_attn_head *a, int64_t c0, int n, float *s) {
    q8_scores(a->K8, a->q8, a->qs, a->qsum, a->ks, a->hd, c0, n, j->scale, s);
}

/* the softmax weights with the value rows' scales, then the values */
static void q8_chunk_values(const pf_attn_job *j, const pf_attn_head *a, int64_t c0, int n, const float *e, float *o) {
    (void)j;
    float w[PF_ATTN_KCHUNK];
    for (int t = 0; t < n; t++) w[t] = e[t] * a->vs[c0 + t];
    q8_values(w, a->V8 + c0 * a->hd, n, o, a->hd);
}

static void q8_attend_head(const pf_attn_job *j, int b, int h) {
    pf_attend_head_walk(j, b, h, q8_chunk_scores, q8_chunk_values);
}

/* The f16 cache on every NEON level (attention_neon.c); 0 for the 8-bit cache. */
int pf_attend_group_neon_f16(const pf_attn_job *j, int b, int kvh);

/* All query heads of KV head kvh for row b (every shape the 8-bit cache allows: hd % 4 == 0) */
static int q8_attend_group(const pf_attn_job *j, int b, int kvh) {
    if (!j->q8) return 0;
    int g = j->n_head / j->n_kv_head;
    for (int h = kvh * g; h < (kvh + 1) * g; h++) q8_attend_head(j, b, h);
    return 1;
}

#endif
