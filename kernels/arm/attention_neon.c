/* Attention over the f16 KV cache for the ARM64 levels (baseline NEON, used by all three).
 *
 * The scalar head walk of kernels/attention.c (same chunks, online softmax, pf_exp_ref, the
 * sum's 16 partials, value accumulation through the level's axpy_f16), with the scores of four keys of one tile computed
 * at once: the tile layout puts dimension d of 16 consecutive keys side by side, so lane t does
 * key t's fmaf chain over the head dims in order, the reference's chain exactly. The results are
 * the scalar level's bits; the gain is the score loop (hd fmaf per key), most of the work at
 * depth. The 8-bit cache has its own files (attention_q8_neon.c, attention_q8_dotprod.c). */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels_impl.h"

/* s[t] = (q . key c0+t) * scale for t < n, each dot one fmaf chain over d = 0..hd-1 */
static void scores(const float *qh, const pf_half *Kh, int hd, int64_t c0, int n, float scale, float *s) {
    for (int t = 0; t < n;) {
        int64_t j = c0 + t;
        const pf_half *kt = Kh + pf_kv_key_at(j, 0, hd);
        if (j % PF_KV_TILE <= PF_KV_TILE - 4 && t + 4 <= n) { /* four keys of one tile */
            float32x4_t a = vdupq_n_f32(0.0f);
            for (int d = 0; d < hd; d++)
                a = vfmaq_f32(a, vdupq_n_f32(qh[d]), vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(kt + d * PF_KV_TILE))));
            vst1q_f32(s + t, vmulq_n_f32(a, scale));
            t += 4;
        } else {
            float a = 0.0f;
            for (int d = 0; d < hd; d++) a = fmaf(qh[d], pf_fp16_to_fp32(kt[d * PF_KV_TILE]), a);
            s[t++] = a * scale;
        }
    }
}

static void attend_head(const pf_attn_job *j, int b, int h) {
    const pf_kernels *k = j->k;
    int hd = j->hd;
    int64_t lo, hi;
    pf_attn_range(j, b, &lo, &hi);
    float *o = j->out + b * j->ldo + (int64_t)h * hd;
    memset(o, 0, (size_t)hd * sizeof *o);
    if (lo >= hi) return; /* nothing visible: zeros */
    const float *qh = j->q + b * j->ldq + (int64_t)h * hd;
    int64_t kvh = h / (j->n_head / j->n_kv_head);
    const pf_half *Kh = j->K + kvh * j->head_stride, *Vh = j->V + kvh * j->head_stride;
    float s[PF_ATTN_KCHUNK];
    float mx = -INFINITY, l[PF_NPART] = {0};
    for (int64_t c0 = lo; c0 < hi; c0 += PF_ATTN_KCHUNK) {
        int n = hi - c0 < PF_ATTN_KCHUNK ? (int)(hi - c0) : PF_ATTN_KCHUNK;
        scores(qh, Kh, hd, c0, n, j->scale, s);
        float f = pf_attn_chunk_max(s, n, &mx, l);
        if (f != 1.0f)
            for (int i = 0; i < hd; i++) o[i] *= f;
        for (int t = 0; t < n; t++) {
            float e = pf_exp_ref(s[t] - mx);
            l[t % PF_NPART] += e;
            k->axpy_f16(e, Vh + (c0 + t) * hd, o, hd);
        }
    }
    float inv = 1.0f / pf_tree16f(l);
    for (int i = 0; i < hd; i++) o[i] *= inv;
}

int pf_attend_group_neon_f16(const pf_attn_job *j, int b, int kvh) {
    if (j->q8) return 0;
    int g = j->n_head / j->n_kv_head;
    for (int h = kvh * g; h < (kvh + 1) * g; h++) attend_head(j, b, h);
    return 1;
}
