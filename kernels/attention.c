/* Attention over the f16 KV cache with an online (streaming) softmax.
 *
 * Each (query row, head) pair walks its visible keys [lo, hi) in fixed chunks of KCHUNK starting
 * at lo: scores of a chunk, then one rescale of the running output if the maximum grew, then the
 * exp-weighted value accumulation. lo and hi depend only on the row's position, the mask and the
 * window, so a row's arithmetic is the same whatever B is, whichever thread runs it and however
 * long the cache is beyond what the row may see. No scratch beyond one chunk of scores. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "kernels/kernels_impl.h"

#define KCHUNK 64
#define INLINE_WORK (1 << 16) /* keys x head dim x tasks below which the pool is not woken */

typedef struct {
    const pf_kernels *k;
    const float *q;
    int64_t ldq;
    int B, n_head, n_kv_head, hd;
    const pf_half *K, *V;
    int64_t kv_stride, pos0, n_keys;
    int causal;
    int64_t window;
    float *out;
    int64_t ldo;
    float scale;
    _Atomic int next; /* next unclaimed (row, head) task */
} attn_job;

static void attend(const attn_job *j, int b, int h) {
    const pf_kernels *k = j->k;
    int hd = j->hd;
    int64_t pos = j->pos0 + b;
    int64_t lo = 0, hi = j->n_keys;
    if (j->causal && pos + 1 < hi) hi = pos + 1;
    if (j->window > 0 && pos - j->window + 1 > lo) lo = pos - j->window + 1;
    float *o = j->out + b * j->ldo + (int64_t)h * hd;
    memset(o, 0, (size_t)hd * sizeof *o);
    if (lo >= hi) return; /* nothing visible: zeros */

    const float *qh = j->q + b * j->ldq + (int64_t)h * hd;
    int64_t kvoff = (int64_t)(h / (j->n_head / j->n_kv_head)) * hd;
    float s[KCHUNK];
    float mx = -INFINITY, l = 0.0f;
    for (int64_t c0 = lo; c0 < hi; c0 += KCHUNK) {
        int n = hi - c0 < KCHUNK ? (int)(hi - c0) : KCHUNK;
        float cmax = -INFINITY;
        for (int t = 0; t < n; t++) {
            s[t] = k->dot_f32_f16(qh, j->K + (c0 + t) * j->kv_stride + kvoff, hd) * j->scale;
            if (s[t] > cmax) cmax = s[t];
        }
        if (cmax > mx) {
            if (mx != -INFINITY) {
                float f = expf(mx - cmax);
                l *= f;
                for (int i = 0; i < hd; i++) o[i] *= f;
            }
            mx = cmax;
        }
        for (int t = 0; t < n; t++) {
            float e = expf(s[t] - mx);
            l += e;
            k->axpy_f16(e, j->V + (c0 + t) * j->kv_stride + kvoff, o, hd);
        }
    }
    float inv = 1.0f / l;
    for (int i = 0; i < hd; i++) o[i] *= inv;
}

static void attn_worker(void *arg, int ith, int nth) {
    (void)ith;
    (void)nth;
    attn_job *j = arg;
    int total = j->B * j->n_head;
    for (;;) {
        int t = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (t >= total) break;
        attend(j, t / j->n_head, t % j->n_head);
    }
}

void pf_attention(const pf_kernels *k, pf_pool *pool, const float *q, int64_t ldq, int B, int n_head,
                  int n_kv_head, int hd, const pf_half *K, const pf_half *V, int64_t kv_stride,
                  int64_t pos0, int64_t n_keys, int causal, int64_t window, float *out, int64_t ldo) {
    if (B <= 0 || n_head <= 0 || n_kv_head <= 0 || hd <= 0) return;
    attn_job j = {k,      q,      ldq,    B,      n_head, n_kv_head,
                  hd,     K,      V,      kv_stride, pos0, n_keys,
                  causal, window, out,    ldo,    (float)(1.0 / sqrt((double)hd)), 0};
    int64_t work = (int64_t)B * n_head * (n_keys + 1) * hd;
    if (pf_pool_size(pool) <= 1 || work < INLINE_WORK || B * n_head < 2)
        attn_worker(&j, 0, 1);
    else
        pf_pool_run(pool, attn_worker, &j);
}
