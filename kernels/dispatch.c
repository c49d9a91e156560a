/* Level tables, activation preparation, the pooled matmul, RoPE and softmax. */
#include <math.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels_impl.h"
#include "kernels/matmul_prof.h"

pf_matmul_prof *pf_matmul_prof_on;

static double prof_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

void pf_act_prepare_row(const pf_kernels *k, uint32_t wtype, const float *x, int64_t cols, void *act_row) {
    const pf_type_traits *t = pf_type_info(wtype);
    size_t rb = pf_act_row_bytes(wtype, cols);
    if (!t || !rb) return;
    if (t->quantized)
        k->quantize_act(x, (pf_block_q8_act *)act_row, cols);
    else
        memcpy(act_row, x, rb);
}

void pf_act_prepare(const pf_kernels *k, uint32_t wtype, const float *x, int64_t ldx, int B,
                    int64_t cols, void *act) {
    size_t rb = pf_act_row_bytes(wtype, cols);
    if (!rb) return;
    pf_matmul_prof *prof = pf_matmul_prof_on;
    double t0 = prof ? prof_now() : 0;
    for (int b = 0; b < B; b++) pf_act_prepare_row(k, wtype, x + b * ldx, cols, (char *)act + (size_t)b * rb);
    if (prof) prof->last_prepare_s = prof_now() - t0, prof->last_cols = cols;
}

/* ---- matmul over the pool ---- */

#define ROW_ALIGN 16            /* chunks of output rows are multiples of this */
#define INLINE_WORK (1 << 17)  /* weights x rows below which waking the pool costs more than it saves */
#define MAX_PARTS 4
#define MAX_REGIONS 16 /* threads with a region of their own (more share them) */

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
    int nreg;
    struct {
        alignas(64) _Atomic int64_t next; /* next unclaimed chunk of the region */
        int64_t end;
    } reg[MAX_REGIONS];
    pf_prof_shape *prof;  /* NULL unless profiling */
} matmul_job;

static void matmul_chunk(matmul_job *j, int64_t c, int ith) {
    int p = 0;
    while (p + 1 < j->n && c >= j->part[p + 1].first) p++;
    const matmul_part *m = &j->part[p];
    int64_t rows = m->W->rows, r0 = (c - m->first) * m->chunk;
    int64_t r1 = r0 + m->chunk < rows ? r0 + m->chunk : rows;
    double t0 = j->prof ? prof_now() : 0;
    m->fn(m->W, j->act, j->stride, j->B, m->y, m->ldy, r0, r1);
    if (j->prof && ith < PF_PROF_THREADS) j->prof->busy_s[ith] += prof_now() - t0;
}

/* Threads claim chunks dynamically (a core shared with another process just takes fewer): each
 * thread first claims, in order, the chunks of a contiguous region of its own, then what is left
 * of the others' (a thread streams adjacent rows, so the gemm's weight prefetch past its chunk
 * fetches what this thread reads next, not rows another core reads). Each output row is computed
 * whole by one gemm call, so the split never changes the arithmetic. */
static void matmul_worker(void *arg, int ith, int nth) {
    (void)nth;
    matmul_job *j = arg;
    for (int k = 0; k < j->nreg; k++) {
        int r = (ith + k) % j->nreg;
        for (int64_t c; (c = atomic_fetch_add_explicit(&j->reg[r].next, 1, memory_order_relaxed)) < j->reg[r].end;)
            matmul_chunk(j, c, ith);
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

/* The profile's record for a call whose first weight is W (NULL when not profiling or full); the
 * last prepare of the same width is charged to it. */
static pf_prof_shape *prof_slot(const pf_weight *W, int parts) {
    pf_matmul_prof *p = pf_matmul_prof_on;
    if (!p) return NULL;
    pf_prof_shape *s = NULL;
    for (int i = 0; i < p->n && !s; i++)
        if (p->s[i].rows == W->rows && p->s[i].cols == W->cols && p->s[i].parts == parts) s = &p->s[i];
    if (!s && p->n < PF_PROF_SHAPES) {
        s = &p->s[p->n++];
        s->rows = W->rows, s->cols = W->cols, s->parts = parts;
    }
    if (s && p->last_cols == W->cols) s->prepare_s += p->last_prepare_s;
    p->last_cols = -1;
    return s;
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
    job.prof = prof_slot(job.part[0].W, job.n);
    double t0 = job.prof ? prof_now() : 0;
    if (nth <= 1 || work < INLINE_WORK || job.total < 2) {
        for (int i = 0; i < job.n; i++)
            job.part[i].fn(job.part[i].W, act, job.stride, B, job.part[i].y, job.part[i].ldy, 0, job.part[i].W->rows);
        if (job.prof) job.prof->busy_s[0] += prof_now() - t0;
    } else {
        job.nreg = nth < MAX_REGIONS ? nth : MAX_REGIONS;
        for (int r = 0; r < job.nreg; r++) {
            atomic_init(&job.reg[r].next, job.total * r / job.nreg);
            job.reg[r].end = job.total * (r + 1) / job.nreg;
        }
        pf_pool_run(pool, matmul_worker, &job);
    }
    if (job.prof) {
        job.prof->matmul_s += prof_now() - t0;
        job.prof->calls++;
        for (int i = 0; i < job.n; i++)
            job.prof->blocks += (double)job.part[i].W->rows * B * (double)(job.part[i].W->cols / PF_QK);
    }
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
