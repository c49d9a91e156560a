/* Memory-bandwidth and compute probes (probe.h). */
#include "eval/probe.h"

#include <stdlib.h>

#include "engine/clock.h"
#include "formats/ggml_types.h"

#define BW_PART (1 << 15) /* elements a thread claims at a time (256 KiB) */

typedef struct {
    const uint64_t *a;
    size_t n;
    size_t next; /* the next part a pool thread claims */
    uint64_t sums[64];
} bw_job;

/* each pool thread sums the parts of the array it claims */
static void bw_worker(void *arg, int ith, int nth) {
    (void)nth;
    bw_job *j = arg;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t lo; (lo = __atomic_fetch_add(&j->next, BW_PART, __ATOMIC_RELAXED)) < j->n;) {
        size_t hi = lo + BW_PART < j->n ? lo + BW_PART : j->n;
        for (size_t i = lo; i + 4 <= hi; i += 4) {
            s0 += j->a[i];
            s1 += j->a[i + 1];
            s2 += j->a[i + 2];
            s3 += j->a[i + 3];
        }
    }
    j->sums[ith & 63] += s0 + s1 + s2 + s3;
}

double pf_probe_bandwidth(pf_pool *pool, const uint64_t *a, size_t n, int passes) {
    bw_job j = {.a = a, .n = n};
    double best = 0;
    for (int r = 0; r < passes; r++) {
        double t0 = pf_now_s();
        j.next = 0;
        pf_pool_run(pool, bw_worker, &j);
        double gbs = (double)(n * sizeof *a) / (pf_now_s() - t0) / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

double pf_probe_compute(const pf_kernels *k, pf_pool *pool, int passes) {
    enum { B = 8, NH = 14, NKV = 2, HD = 64, NK = 512 };
    const int64_t hs = pf_kv_head_stride(NK, HD), qd = (int64_t)NH * HD;
    pf_half *K = malloc((size_t)(hs * NKV) * sizeof *K), *V = malloc((size_t)(hs * NKV) * sizeof *V);
    float *q = malloc((size_t)(B * qd) * sizeof *q), *o = malloc((size_t)(B * qd) * sizeof *o);
    double best = -1;
    if (K && V && q && o) {
        for (int64_t i = 0; i < hs * NKV; i++) {
            K[i] = pf_fp32_to_fp16((float)(i % 13) * 0.05f - 0.3f);
            V[i] = pf_fp32_to_fp16((float)(i % 7) * 0.1f - 0.3f);
        }
        for (int64_t i = 0; i < B * qd; i++) q[i] = (float)(i % 11) * 0.1f - 0.5f;
        const pf_kv_view view = {.type = PF_KV_F16, .k = K, .v = V, .head_stride = hs, .n_kv_head = NKV, .head_dim = HD};
        const pf_attn_rows rows = {.q = q, .ldq = qd, .B = B, .n_head = NH, .pos0 = NK - B, .n_keys = NK, .causal = 1,
                                   .out = o, .ldo = qd};
        double tbest = 1e30;
        for (int r = 0; r <= passes; r++) { /* the first call warms the caches, untimed */
            double t0 = pf_now_s();
            pf_attention(k, pool, &view, &rows);
            double t = pf_now_s() - t0;
            if (r > 0 && t < tbest) tbest = t;
        }
        /* scores and values: two multiply-adds per (row, head, visible key, dimension) */
        double macs = 2.0 * NH * HD * (double)B * (NK - B + (B + 1) / 2.0);
        best = macs / tbest / 1e9;
    }
    free(K), free(V), free(q), free(o);
    return best;
}
