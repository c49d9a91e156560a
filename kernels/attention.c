/* Attention over the f16 KV cache with an online (streaming) softmax.
 *
 * Each (query row, head) pair walks its visible keys [lo, hi) in fixed chunks of PF_ATTN_KCHUNK
 * starting at lo: scores of a chunk, then one rescale of the running output if the maximum grew,
 * then the exp-weighted value accumulation. lo and hi depend only on the row's position, the mask
 * and the window, so a row's arithmetic is the same whatever B is, whichever thread runs it and
 * however long the cache is beyond what the row may see. No scratch beyond one chunk of scores.
 *
 * Work is split over (row, KV head) tasks: the query heads sharing a KV head (GQA) run together
 * so the SIMD variants convert each f16 key and value row once for the whole group. The scalar
 * level (and shapes the SIMD variants do not take) runs head by head: each score one fmaf chain
 * over the head dim in order (the same chain as one SIMD lane of the vector levels), values
 * through the level's axpy_f16. out must not alias q, K or V. */
#include <math.h>
#include <string.h>

#include "kernels/kernels_impl.h"

#define INLINE_WORK (1 << 16) /* keys x head dim x heads below which the pool is not woken */

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
    const pf_half *Kh = j->q8 ? NULL : j->K + kvh * j->head_stride, *Vh = j->q8 ? NULL : j->V + kvh * j->head_stride;
    const uint8_t *K8 = j->q8 ? j->K8 + kvh * j->head_stride : NULL;
    const int8_t *V8 = j->q8 ? j->V8 + kvh * j->head_stride : NULL;
    int8_t q8[PF_KV_Q8_MAX_HD];
    float qs = 0;
    int32_t qsum = 0;
    if (j->q8) pf_attn_quantize_q(qh, hd, q8, &qs, &qsum);
    const float *ks = j->q8 ? j->ks + kvh * j->scale_stride : NULL, *vs = j->q8 ? j->vs + kvh * j->scale_stride : NULL;
    float s[PF_ATTN_KCHUNK];
    float mx = -INFINITY, l = 0.0f;
    for (int64_t c0 = lo; c0 < hi; c0 += PF_ATTN_KCHUNK) {
        int n = hi - c0 < PF_ATTN_KCHUNK ? (int)(hi - c0) : PF_ATTN_KCHUNK;
        float cmax = -INFINITY;
        for (int t = 0; t < n; t++) {
            float a = 0.0f;
            if (j->q8) { /* exact integer dot product of the rounded query with the keys (stored + 128) */
                const uint8_t *kt = K8 + pf_kv_key_at_q8(c0 + t, 0, hd);
                int32_t isum = 0;
                for (int d = 0; d < hd; d++) isum += (int32_t)q8[d] * kt[d / 4 * (PF_KV_TILE * 4) + d % 4];
                a = (float)(isum - 128 * qsum) * qs * ks[c0 + t];
            } else {
                const pf_half *kt = Kh + pf_kv_key_at(c0 + t, 0, hd);
                for (int d = 0; d < hd; d++) a = fmaf(qh[d], pf_fp16_to_fp32(kt[d * PF_KV_TILE]), a);
            }
            s[t] = a * j->scale;
            if (s[t] > cmax) cmax = s[t];
        }
        float f = pf_attn_raise_max(cmax, &mx, &l);
        if (f != 1.0f)
            for (int i = 0; i < hd; i++) o[i] *= f;
        for (int t = 0; t < n; t++) {
            float e = expf(s[t] - mx);
            l += e;
            if (j->q8) {
                const int8_t *v = V8 + (c0 + t) * hd;
                float w = e * vs[c0 + t];
                for (int i = 0; i < hd; i++) o[i] = fmaf(w, (float)v[i], o[i]);
            } else {
                k->axpy_f16(e, Vh + (c0 + t) * hd, o, hd);
            }
        }
    }
    float inv = 1.0f / l;
    for (int i = 0; i < hd; i++) o[i] *= inv;
}

static void attend_group(const pf_attn_job *j, int b, int kvh) {
#ifdef __x86_64__
    if (j->k->level == PF_LEVEL_AVX512 && pf_attend_group_avx512(j, b, kvh)) return;
    if (j->k->level == PF_LEVEL_AVX2 && pf_attend_group_avx2(j, b, kvh)) return;
#endif
#ifdef __aarch64__
    if (j->k->level >= PF_LEVEL_DOTPROD && j->q8 && pf_attend_group_q8_dotprod(j, b, kvh)) return;
    if (j->k->level >= PF_LEVEL_NEON && j->q8 && pf_attend_group_q8_neon(j, b, kvh)) return;
    if (j->k->level >= PF_LEVEL_NEON && !j->q8 && pf_attend_group_neon(j, b, kvh)) return;
#endif
    int g = j->n_head / j->n_kv_head;
    for (int h = kvh * g; h < (kvh + 1) * g; h++) attend_head(j, b, h);
}

static void attn_worker(void *arg, int ith, int nth) {
    (void)ith;
    (void)nth;
    pf_attn_job *j = arg;
    int R = j->rows_per_task, groups = (j->B + R - 1) / R, total = groups * j->n_kv_head;
    for (;;) {
        int t = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (t >= total) break;
        int b0 = t / j->n_kv_head * R, kvh = t % j->n_kv_head, nr = j->B - b0 < R ? j->B - b0 : R;
#ifdef __x86_64__
        if (nr > 1 && j->k->level == PF_LEVEL_AVX512 && pf_attend_rows_avx512(j, b0, nr, kvh)) continue;
        if (nr > 1 && j->k->level == PF_LEVEL_AVX2 && pf_attend_rows_avx2(j, b0, nr, kvh)) continue;
#endif
        for (int b = b0; b < b0 + nr; b++) attend_group(j, b, kvh);
    }
}

/* Split j over the pool: rows per task so each thread gets about one task. */
static void run_attention(pf_attn_job *j, pf_pool *pool) {
    int B = j->B, n_kv_head = j->n_kv_head;
    int64_t work = (int64_t)B * j->n_head * (j->n_keys + 1) * j->hd;
    /* rows per task: up to 8 share each key/value conversion, about one task per thread (measured
     * 3-8% faster at B = 2..4 than two smaller tasks per thread; 8 rather than 4 rows a task: 6-9%
     * faster at B = 8 and 16, Pocket shape) */
    int nth = pf_pool_size(pool) < 1 ? 1 : pf_pool_size(pool);
    int R = B * n_kv_head / nth;
    j->rows_per_task = R < 1 ? 1 : R > 8 ? 8 : R;
    if (pf_pool_size(pool) <= 1 || work < INLINE_WORK || B * n_kv_head < 2)
        attn_worker(j, 0, 1);
    else
        pf_pool_run(pool, attn_worker, j);
}

void pf_attention(const pf_kernels *k, pf_pool *pool, const float *q, int64_t ldq, int B, int n_head,
                  int n_kv_head, int hd, const pf_half *K, const pf_half *V, int64_t head_stride,
                  int64_t pos0, int64_t n_keys, int causal, int64_t window, float *out, int64_t ldo) {
    if (B <= 0 || n_head <= 0 || n_kv_head <= 0 || hd <= 0 || n_head % n_kv_head) return;
    pf_attn_job j = {.k = k, .q = q, .ldq = ldq, .B = B, .n_head = n_head, .n_kv_head = n_kv_head, .hd = hd,
                     .K = K, .V = V, .head_stride = head_stride, .pos0 = pos0, .n_keys = n_keys, .causal = causal,
                     .window = window, .out = out, .ldo = ldo, .scale = (float)(1.0 / sqrt((double)hd))};
    run_attention(&j, pool);
}

void pf_attention_q8(const pf_kernels *k, pf_pool *pool, const float *q, int64_t ldq, int B, int n_head,
                     int n_kv_head, int hd, const uint8_t *K, const int8_t *V, const float *ks, const float *vs,
                     int64_t head_stride, int64_t scale_stride, int64_t pos0, int64_t n_keys, int causal,
                     int64_t window, float *out, int64_t ldo) {
    /* the 8-bit layout's preconditions (kernels.h); pf_ctx_set_kv_type refuses other models */
    if (B <= 0 || n_head <= 0 || n_kv_head <= 0 || hd <= 0 || n_head % n_kv_head || hd % 4 || hd > PF_KV_Q8_MAX_HD)
        return;
    pf_attn_job j = {.k = k, .q = q, .ldq = ldq, .B = B, .n_head = n_head, .n_kv_head = n_kv_head, .hd = hd,
                     .K8 = K, .V8 = V, .ks = ks, .vs = vs, .scale_stride = scale_stride, .q8 = 1,
                     .head_stride = head_stride, .pos0 = pos0, .n_keys = n_keys, .causal = causal,
                     .window = window, .out = out, .ldo = ldo, .scale = (float)(1.0 / sqrt((double)hd))};
    run_attention(&j, pool);
}
