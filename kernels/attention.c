/* Attention over the KV cache (f16 or 8-bit) with an online (streaming) softmax: the work split;
 * the arithmetic is each level's (pf_kernels.attend_rows / attend_group), the scalar reference's
 * in kernels_scalar.c.
 *
 * Each (query row, head) pair walks its visible keys [lo, hi) in fixed chunks of PF_ATTN_KCHUNK
 * starting at lo: scores of a chunk, then one rescale of the running output if the maximum grew,
 * then the exp-weighted value accumulation. lo and hi depend only on the row's position, the mask
 * and the window, so a row's arithmetic is the same whatever B is, whichever thread runs it and
 * however long the cache is beyond what the row may see. No scratch beyond one chunk of scores.
 *
 * Work is split over (row, KV head) tasks: the query heads sharing a KV head (GQA) run together
 * so the SIMD variants convert each key and value row once for the whole group. The scalar
 * reference (and the fallback for shapes a level's kernels do not take) runs head by head: each
 * score one fmaf chain over the head dim in order (the same chain as one SIMD lane of the vector
 * levels), weights by pf_exp_ref summed in 16 partials, values through the level's axpy_f16 (one
 * fmaf chain per output element in key order): what every level computes (float_order.h). out
 * must not alias q, K or V. */
#include <math.h>
#include <string.h>

#include "kernels/kernels_impl.h"

#define INLINE_WORK (1 << 16) /* keys x head dim x heads below which the pool is not woken */

/* One row's query heads of KV head kvh: the level's kernel, or the scalar reference for shapes
 * it does not take (the answer depends only on the shape, so a whole call takes one path). */
static void attend_group(const pf_attn_job *j, int b, int kvh) {
    if (!j->k->attend_group(j, b, kvh)) pf_attend_group_scalar(j, b, kvh);
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
        if (nr > 1 && j->k->attend_rows && j->k->attend_rows(j, b0, nr, kvh)) continue;
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

void pf_attention(const pf_kernels *k, pf_pool *pool, const pf_kv_view *kv, const pf_attn_rows *rows) {
    int B = rows->B, n_head = rows->n_head, n_kv_head = kv->n_kv_head, hd = kv->head_dim, q8 = kv->type == PF_KV_Q8;
    if (B <= 0 || n_head <= 0 || n_kv_head <= 0 || hd <= 0 || n_head % n_kv_head) return;
    /* the 8-bit layout's preconditions (kernels.h); pf_ctx_set_kv_type refuses other models */
    if (q8 && (hd % 4 || hd > PF_KV_Q8_MAX_HD)) return;
    pf_attn_job j = {.k = k, .q = rows->q, .ldq = rows->ldq, .B = B, .n_head = n_head, .n_kv_head = n_kv_head,
                     .hd = hd, .head_stride = kv->head_stride, .pos0 = rows->pos0, .n_keys = rows->n_keys,
                     .causal = rows->causal, .window = rows->window, .out = rows->out, .ldo = rows->ldo,
                     .scale = (float)(1.0 / sqrt((double)hd))};
    if (q8) {
        j.K8 = kv->k8, j.V8 = kv->v8, j.ks = kv->ks, j.vs = kv->vs, j.scale_stride = kv->scale_stride, j.q8 = 1;
    } else {
        j.K = kv->k, j.V = kv->v;
    }
    run_attention(&j, pool);
}
