/* Attention over the f16 KV cache for the ARM64 levels (baseline NEON, used by all three).
 *
 * The scalar reference's head walk (attention_walk.h: same chunks, online softmax, pf_exp_ref,
 * the sum's 16 partials, value accumulation through the level's axpy_f16), with the scores of
 * four keys of one tile computed at once: the tile layout puts dimension d of 16 consecutive keys side by side, so lane t does
 * key t's fmaf chain over the head dims in order, the reference's chain exactly. The results are
 * the scalar level's bits; the gain is the score loop (hd fmaf per key), most of the work at
 * depth. The 8-bit cache has its own files (attention_q8_neon.c, attention_q8_dotprod.c). */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "kernels/attention_walk.h"
#include "kernels/kernels_impl.h"

/* s[t] = (q . key c0+t) * scale for t < n, each dot one fmaf chain over d = 0..hd-1 */
static void scores(const pf_attn_job *j, const pf_attn_head *a, int64_t c0, int n, float *s) {
    const int hd = a->hd;
    const float *qh = a->q, scale = j->scale;
    for (int t = 0; t < n;) {
        int64_t k = c0 + t;
        const pf_half *kt = a->K + pf_kv_key_at(k, 0, hd);
        if (k % PF_KV_TILE <= PF_KV_TILE - 4 && t + 4 <= n) { /* four keys of one tile */
            float32x4_t acc = vdupq_n_f32(0.0f);
            for (int d = 0; d < hd; d++)
                acc = vfmaq_f32(acc, vdupq_n_f32(qh[d]), vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(kt + d * PF_KV_TILE))));
            vst1q_f32(s + t, vmulq_n_f32(acc, scale));
            t += 4;
        } else {
            float acc = 0.0f;
            for (int d = 0; d < hd; d++) acc = fmaf(qh[d], pf_fp16_to_fp32(kt[d * PF_KV_TILE]), acc);
            s[t++] = acc * scale;
        }
    }
}

static void attend_head(const pf_attn_job *j, int b, int h) { pf_attend_head_walk(j, b, h, scores, pf_attn_values_ref); }

int pf_attend_group_neon_f16(const pf_attn_job *j, int b, int kvh) {
    if (j->q8) return 0;
    int g = j->n_head / j->n_kv_head;
    for (int h = kvh * g; h < (kvh + 1) * g; h++) attend_head(j, b, h);
    return 1;
}
