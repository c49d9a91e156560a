/* Level tables, activation preparation, the pooled matmul, RoPE and softmax. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "kernels/kernels_impl.h"

const pf_kernels *pf_kernels_get(pf_level level) {
    if (!pf_level_supported(level)) return NULL;
    switch (level) {
    case PF_LEVEL_SCALAR: return &pf_kernels_scalar_table;
#ifdef __x86_64__
    case PF_LEVEL_AVX2: return &pf_kernels_avx2_table;
    case PF_LEVEL_AVXVNNI: return &pf_kernels_avxvnni_table;
    case PF_LEVEL_AVX512: return &pf_kernels_avx512_table;
#endif
#ifdef __aarch64__
    case PF_LEVEL_NEON: return &pf_kernels_neon_table;
    case PF_LEVEL_DOTPROD: return &pf_kernels_dotprod_table;
    case PF_LEVEL_I8MM: return &pf_kernels_i8mm_table;
#endif
    default: return NULL;
    }
}

const pf_kernels *pf_kernels_best(void) { return pf_kernels_get(pf_best_level()); }

size_t pf_act_row_bytes(uint32_t wtype, int64_t cols) {
    const pf_type_traits *t = pf_type_info(wtype);
    if (!t || cols < 0) return 0;
    if (t->quantized) return cols % PF_QK ? 0 : (size_t)(cols / PF_QK) * sizeof(pf_block_q8_act);
    return (size_t)cols * sizeof(float);
}

void pf_act_prepare(const pf_kernels *k, uint32_t wtype, const float *x, int64_t ldx, int B,
                    int64_t cols, void *act) {
    const pf_type_traits *t = pf_type_info(wtype);
    size_t rb = pf_act_row_bytes(wtype, cols);
    if (!t || !rb) return;
    for (int b = 0; b < B; b++) {
        char *dst = (char *)act + (size_t)b * rb;
        if (t->quantized)
            k->quantize_act(x + b * ldx, (pf_block_q8_act *)dst, cols);
        else
            memcpy(dst, x + b * ldx, rb);
    }
}

/* ---- matmul over the pool ---- */

#define ROW_ALIGN 16            /* chunks of output rows are multiples of this */
#define INLINE_WORK (1 << 17)  /* weights x rows below which waking the pool costs more than it saves */
#define MAX_PARTS 4

typedef struct {
    pf_gemm_fn fn;
    const pf_weight *W;
    float *y;
    int64_t ldy;
    int64_t chunk;  /* rows per chunk */
    int64_t first;  /* index of this part's first chunk in the job */
} matmul_part;

typedef struct {
    const void *act;
    size_t stride;
    int B, n;
    matmul_part part[MAX_PARTS];
    int64_t total;        /* chunks over all parts */
    _Atomic int64_t next; /* next unclaimed chunk */
} matmul_job;

/* Threads claim chunks dynamically (a core shared with another process just takes fewer); each
 * output row is computed whole by one gemm call, so the split never changes the arithmetic. */
static void matmul_worker(void *arg, int ith, int nth) {
    (void)ith;
    (void)nth;
    matmul_job *j = arg;
    for (;;) {
        int64_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (c >= j->total) break;
        int p = 0;
        while (p + 1 < j->n && c >= j->part[p + 1].first) p++;
        const matmul_part *m = &j->part[p];
        int64_t rows = m->W->rows, r0 = (c - m->first) * m->chunk;
        int64_t r1 = r0 + m->chunk < rows ? r0 + m->chunk : rows;
        m->fn(m->W, j->act, j->stride, j->B, m->y, m->ldy, r0, r1);
    }
}

static int no_kernel(const pf_kernels *k, const pf_weight *W, int B, float *y, int64_t ldy) {
    if (W->type < PF_TYPE_MAX && k->gemm[W->type]) return 0;
    /* Model loaders reject unsupported types; reaching this is a bug, make it visible. */
    fprintf(stderr, "pocketflash: pf_matmul: no %s kernel for weight type %u\n", k->name, (unsigned)W->type);
    for (int b = 0; b < B; b++)
        for (int64_t r = 0; r < W->rows; r++) y[b * ldy + r] = NAN;
    return 1;
}

void pf_matmul_n(const pf_kernels *k, pf_pool *pool, int n, const pf_weight *const *W, const void *act, int B,
                 float *const *y, const int64_t *ldy) {
    if (B <= 0) return;
    if (n > MAX_PARTS) { /* more than one job holds */
        pf_matmul_n(k, pool, MAX_PARTS, W, act, B, y, ldy);
        pf_matmul_n(k, pool, n - MAX_PARTS, W + MAX_PARTS, act, B, y + MAX_PARTS, ldy + MAX_PARTS);
        return;
    }
    int nth = pf_pool_size(pool);
    matmul_job job = {.act = act, .B = B, .n = 0, .total = 0};
    int64_t work = 0;
    for (int i = 0; i < n; i++) {
        if (W[i]->rows <= 0 || no_kernel(k, W[i], B, y[i], ldy[i])) continue;
        /* ~4 chunks per thread per matrix for balance, rounded up to whole ROW_ALIGN groups */
        int64_t chunk = (W[i]->rows + 4 * nth - 1) / (4 * nth);
        chunk = (chunk + ROW_ALIGN - 1) / ROW_ALIGN * ROW_ALIGN;
        matmul_part *m = &job.part[job.n++];
        *m = (matmul_part){k->gemm[W[i]->type], W[i], y[i], ldy[i], chunk, job.total};
        job.total += (W[i]->rows + chunk - 1) / chunk;
        job.stride = pf_act_row_bytes(W[i]->type, W[i]->cols);
        work += W[i]->rows * W[i]->cols * (int64_t)B;
    }
    if (job.n == 0) return;
    if (nth <= 1 || work < INLINE_WORK || job.total < 2) {
        for (int i = 0; i < job.n; i++)
            job.part[i].fn(job.part[i].W, act, job.stride, B, job.part[i].y, job.part[i].ldy, 0, job.part[i].W->rows);
        return;
    }
    pf_pool_run(pool, matmul_worker, &job);
}

void pf_matmul(const pf_kernels *k, pf_pool *pool, const pf_weight *W, const void *act, int B,
               float *y, int64_t ldy) {
    pf_matmul_n(k, pool, 1, &W, act, B, &y, &ldy);
}

/* ---- RoPE, softmax ---- */

void pf_rope_angles(int hd, int64_t pos, float theta, float *cs) {
    int half = hd / 2;
    for (int i = 0; i < half; i++) {
        double freq = pow((double)theta, -2.0 * i / hd);
        double s, c;
        sincos((double)pos * freq, &s, &c);
        cs[i] = (float)c;
        cs[half + i] = (float)s;
    }
}

void pf_rope_neox_cs(float *x, int n_heads, int hd, const float *cs) {
    int half = hd / 2;
    for (int i = 0; i < half; i++) {
        float cf = cs[i], sf = cs[half + i];
        for (int h = 0; h < n_heads; h++) {
            float *v = x + (int64_t)h * hd;
            float a = v[i], b = v[i + half];
            v[i] = a * cf - b * sf;
            v[i + half] = a * sf + b * cf;
        }
    }
}

void pf_rmsnorm_heads(const pf_kernels *k, float *x, int n_heads, int hd, const float *w, float eps) {
    for (int h = 0; h < n_heads; h++) k->rmsnorm(x + (size_t)h * hd, w, hd, eps, x + (size_t)h * hd);
}

void pf_rope_neox(float *x, int n_heads, int hd, int64_t pos, float theta) {
    float cs[512];
    if (hd <= 512) {
        pf_rope_angles(hd, pos, theta, cs);
        pf_rope_neox_cs(x, n_heads, hd, cs);
        return;
    }
    int half = hd / 2;
    for (int i = 0; i < half; i++) {
        double freq = pow((double)theta, -2.0 * i / hd);
        double s, c;
        sincos((double)pos * freq, &s, &c);
        float cf = (float)c, sf = (float)s;
        for (int h = 0; h < n_heads; h++) {
            float *v = x + (int64_t)h * hd;
            float a = v[i], b = v[i + half];
            v[i] = a * cf - b * sf;
            v[i + half] = a * sf + b * cf;
        }
    }
}

void pf_softmax(float *x, int64_t n) { pf_kernels_scalar_table.softmax(x, n); }
