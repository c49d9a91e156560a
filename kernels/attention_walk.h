/* The one-row head walk of attention, shared by the scalar reference (kernels_scalar.c) and the
 * ARM64 levels (attention_neon.c, neon_attention_q8.h): one (row, query head) over its visible
 * keys in chunks of PF_ATTN_KCHUNK from the first, the online softmax of float_order.h (pf_exp_ref,
 * the sum's 16 partials, one rescale when the maximum rises), each output element one fmaf chain
 * in key order, then times 1 / sum. A level supplies the chunk's scores and value accumulation
 * (functions it passes as constants, inlined here); what they compute must be the reference's:
 *   scores(j, a, c0, n, s): s[t] = score of key c0 + t, t < n (f16: an fmaf chain over the head
 *       dims in order, times the scale; 8-bit: ((isum - 128 qsum) * qs) * ks * scale)
 *   values(j, a, c0, n, e, o): o[i] = fmaf(w_t, v_t[i], o[i]) for t = 0 .. n-1 in order, w_t the
 *       softmax weight e[t] (8-bit: e[t] * vs[c0 + t]) */
#ifndef PF_ATTENTION_WALK_H
#define PF_ATTENTION_WALK_H

#include <math.h>
#include <string.h>

#include "kernels/kernels_impl.h"

/* One query head and its KV head's cache. */
typedef struct {
    const float *q;
    int hd;
    const pf_half *K, *V;                 /* the f16 cache, or */
    const uint8_t *K8;                    /* the 8-bit one with its scales */
    const int8_t *V8;
    const float *ks, *vs;
    _Alignas(16) int8_t q8[PF_KV_Q8_MAX_HD]; /* the query rounded for the 8-bit cache */
    float qs;
    int32_t qsum;
} pf_attn_head;

typedef void pf_attn_scores_fn(const pf_attn_job *j, const pf_attn_head *a, int64_t c0, int n, float *s);
typedef void pf_attn_values_fn(const pf_attn_job *j, const pf_attn_head *a, int64_t c0, int n, const float *e,
                               float *o);

/* The reference's value accumulation: the level's axpy_f16 per key (f16), fmaf per element (8-bit). */
static inline void pf_attn_values_ref(const pf_attn_job *j, const pf_attn_head *a, int64_t c0, int n,
                                      const float *e, float *o) {
    for (int t = 0; t < n; t++) {
        if (j->q8) {
            const int8_t *v = a->V8 + (c0 + t) * a->hd;
            float w = e[t] * a->vs[c0 + t];
            for (int i = 0; i < a->hd; i++) o[i] = fmaf(w, (float)v[i], o[i]);
        } else {
            j->k->axpy_f16(e[t], a->V + (c0 + t) * a->hd, o, a->hd);
        }
    }
}

PF_FORCE_INLINE void pf_attend_head_walk(const pf_attn_job *j, int b, int h, pf_attn_scores_fn *scores,
                                         pf_attn_values_fn *values) {
    const int hd = j->hd;
    int64_t lo, hi;
    pf_attn_range(j, b, &lo, &hi);
    float *o = j->out + b * j->ldo + (int64_t)h * hd;
    memset(o, 0, (size_t)hd * sizeof *o);
    if (lo >= hi) return; /* nothing visible: zeros */
    const int64_t kvh = h / (j->n_head / j->n_kv_head), hoff = kvh * j->head_stride;
    pf_attn_head a = {.q = j->q + b * j->ldq + (int64_t)h * hd, .hd = hd};
    if (j->q8) {
        a.K8 = j->K8 + hoff, a.V8 = j->V8 + hoff;
        a.ks = j->ks + kvh * j->scale_stride, a.vs = j->vs + kvh * j->scale_stride;
        pf_attn_quantize_q(a.q, hd, a.q8, &a.qs, &a.qsum);
    } else {
        a.K = j->K + hoff, a.V = j->V + hoff;
    }
    float s[PF_ATTN_KCHUNK];
    float mx = -INFINITY, l[PF_NPART] = {0};
    for (int64_t c0 = lo; c0 < hi; c0 += PF_ATTN_KCHUNK) {
        int n = hi - c0 < PF_ATTN_KCHUNK ? (int)(hi - c0) : PF_ATTN_KCHUNK;
        scores(j, &a, c0, n, s);
        float f = pf_attn_chunk_max(s, n, &mx, l);
        if (f != 1.0f)
            for (int i = 0; i < hd; i++) o[i] *= f;
        for (int t = 0; t < n; t++) { /* the softmax weights, in place of the scores */
            s[t] = pf_exp_ref(s[t] - mx);
            l[t % PF_NPART] += s[t];
        }
        values(j, &a, c0, n, s, o);
    }
    float inv = 1.0f / pf_tree16f(l);
    for (int i = 0; i < hd; i++) o[i] *= inv;
}

#endif
