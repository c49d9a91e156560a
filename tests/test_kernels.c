/* Kernel tests: every SIMD level this CPU runs against the scalar reference, exact integer paths,
 * batch and thread invariance (bitwise), the pool, RoPE, softmax and attention against double
 * precision references. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "formats/quant.h"
#include "kernels/float_order.h"
#include "kernels/kernels.h"
#include "test.h"
#include "util.h"

/* ---- helpers ---- */

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static float rng_unit(uint64_t *s) { /* uniform in [-1, 1) */
    return (float)((double)(rng_next(s) >> 11) / (double)(1ull << 52) - 1.0);
}

static void fill(float *x, int64_t n, float scale, uint64_t *s) {
    for (int64_t i = 0; i < n; i++) x[i] = scale * rng_unit(s);
}

static const uint32_t k_types[] = {PF_TYPE_F32, PF_TYPE_F16,  PF_TYPE_BF16,
                                   PF_TYPE_Q8_0, PF_TYPE_Q4_0, PF_TYPE_Q4_1};
#define N_TYPES ((int)(sizeof k_types / sizeof k_types[0]))

/* Random weight matrix in `type`, rows scaled differently so scales vary. Caller frees W->data. */
static void make_weight(uint32_t type, int64_t rows, int64_t cols, uint64_t seed, pf_weight *W) {
    size_t rb = pf_row_bytes(type, cols);
    char *data = malloc(rb * (size_t)rows);
    float *tmp = malloc((size_t)cols * sizeof(float));
    uint64_t s = seed * 2654435761u + 1;
    for (int64_t r = 0; r < rows; r++) {
        fill(tmp, cols, 0.05f + 0.02f * (float)(r % 7), &s);
        pf_quantize_row(type, tmp, data + (size_t)r * rb, cols);
    }
    free(tmp);
    *W = (pf_weight){data, type, rows, cols, rb, NULL};
}

/* B activation rows, prepared with the scalar table so every level sees the same input. */
/* *P: W reading its packed copy (returned, 64-byte aligned, for the caller to free), in the layout
 * that pack writes (bytes its size). */
static void *make_packed(const pf_weight *W, size_t (*bytes)(const pf_weight *), void (*pack)(const pf_weight *, void *),
                         pf_weight *P) {
    void *packed = aligned_alloc(64, (bytes(W) + 63) / 64 * 64);
    pack(W, packed);
    *P = *W;
    P->packed = packed;
    return packed;
}

static void *make_act(uint32_t type, int64_t cols, int B, uint64_t seed, float **xout) {
    float *x = malloc((size_t)B * (size_t)cols * sizeof(float));
    uint64_t s = seed * 40503u + 7;
    for (int b = 0; b < B; b++) fill(x + (size_t)b * cols, cols, 1.0f + 0.5f * (float)b, &s);
    void *act = malloc((size_t)B * pf_act_row_bytes(type, cols));
    pf_act_prepare(pf_kernels_get(PF_LEVEL_SCALAR), type, x, cols, B, cols, act);
    if (xout) *xout = x;
    else free(x);
    return act;
}

/* The activation row as the weights see it (dequantized q8 for quantized types). */
static void act_values(uint32_t type, const void *act, int64_t cols, int b, double *out) {
    size_t rb = pf_act_row_bytes(type, cols);
    const char *row = (const char *)act + (size_t)b * rb;
    if (pf_type_info(type)->quantized) {
        const pf_block_q8_act *x = (const pf_block_q8_act *)row;
        for (int64_t i = 0; i < cols; i++) out[i] = (double)x[i / 32].d * x[i / 32].qs[i % 32];
    } else {
        for (int64_t i = 0; i < cols; i++) out[i] = ((const float *)row)[i];
    }
}

/* mag[b*rows + r] = sum |w_i x_i| over the row, the scale that float rounding error is relative to. */
static double *magnitudes(const pf_weight *W, const void *act, int B) {
    double *mag = calloc((size_t)B * (size_t)W->rows, sizeof(double));
    float *w = malloc((size_t)W->cols * sizeof(float));
    double *x = malloc((size_t)W->cols * sizeof(double));
    for (int b = 0; b < B; b++) {
        act_values(W->type, act, W->cols, b, x);
        for (int64_t r = 0; r < W->rows; r++) {
            pf_dequantize_row(W->type, (const char *)W->data + (size_t)r * W->row_bytes, w, W->cols);
            double m = 0;
            for (int64_t i = 0; i < W->cols; i++) m += fabs((double)w[i] * x[i]);
            mag[(size_t)b * W->rows + r] = m;
        }
    }
    free(w);
    free(x);
    return mag;
}

/* ---- CPU and dispatch ---- */

/* The best level without PF_KERNELS, and PF_KERNELS=L capping at L: the best supported level of
 * this build not above it (scalar at worst); a level another architecture's build has is ignored
 * (best level). Sets PF_KERNELS; the caller restores it. */
static void check_level_caps(void) {
    unsetenv("PF_KERNELS");
    pf_level best_uncapped = pf_best_level();
    CHECK(pf_level_supported(best_uncapped));
    CHECK(pf_kernels_best() == pf_kernels_get(best_uncapped));
    /* make test-arm64 names the level each qemu CPU model must get */
    const char *expect = getenv("PF_EXPECT_LEVEL");
    if (expect) CHECKF(strcmp(expect, pf_level_name(best_uncapped)) == 0, "best level %s, expected %s",
                       pf_level_name(best_uncapped), expect);
    for (int l = 0; l < PF_LEVEL_COUNT; l++) {
        setenv("PF_KERNELS", pf_level_name((pf_level)l), 1);
        pf_level want = best_uncapped;
        if (pf_level_built((pf_level)l)) {
            want = PF_LEVEL_SCALAR;
            for (int m = 1; m <= l; m++)
                if (pf_level_supported((pf_level)m)) want = (pf_level)m;
        }
        CHECKF(pf_best_level() == want, "PF_KERNELS=%s: %s, expected %s", pf_level_name((pf_level)l),
               pf_level_name(pf_best_level()), pf_level_name(want));
        if (!pf_level_built((pf_level)l)) CHECK(!pf_level_supported((pf_level)l) && !pf_kernels_get((pf_level)l));
    }
}

TEST(kernels_cpu_levels) {
    const pf_cpu_features *f = pf_cpu();
    CHECK(f != NULL);
    CHECK(pf_level_supported(PF_LEVEL_SCALAR));
    CHECK(pf_kernels_get(PF_LEVEL_SCALAR) != NULL);
    if (f->avx512f) CHECK(f->avx2);
    for (int l = 0; l < PF_LEVEL_COUNT; l++) {
        const pf_kernels *k = pf_kernels_get((pf_level)l);
        CHECK((k != NULL) == pf_level_supported((pf_level)l));
        if (k) {
            CHECK(k->level == (pf_level)l);
            CHECK(strcmp(k->name, pf_level_name((pf_level)l)) == 0);
            for (int t = 0; t < N_TYPES; t++) CHECK(k->gemm[k_types[t]] != NULL);
        }
    }
    printf("    cpu: avx2=%d fma=%d f16c=%d avxvnni=%d avx512f=%d bw=%d vl=%d dq=%d vnni=%d bf16=%d amx=%d neon=%d "
           "dotprod=%d i8mm=%d -> %s\n",
           f->avx2, f->fma, f->f16c, f->avxvnni, f->avx512f, f->avx512bw, f->avx512vl, f->avx512dq, f->avx512vnni,
           f->avx512bf16, f->amx_tile, f->neon, f->dotprod, f->i8mm, pf_level_name(pf_best_level()));
    if (pf_level_built(PF_LEVEL_AVXVNNI))
        printf("    avxvnni level: %s\n", pf_kernels_get(PF_LEVEL_AVXVNNI)
                                              ? "runs here, VEX-encoded vpdpbusd ymm natively (CPUID AVX-VNNI)"
                                              : "skipped, this CPU lacks AVX-VNNI (VEX vpdpbusd)");
    test_env saved;
    test_env_save(&saved, "PF_KERNELS");
    check_level_caps();
    test_env_restore(&saved);
}

TEST(kernels_act_row_bytes) {
    CHECK(pf_act_row_bytes(PF_TYPE_Q4_1, 896) == 28 * sizeof(pf_block_q8_act));
    CHECK(pf_act_row_bytes(PF_TYPE_Q8_0, 64) == 2 * sizeof(pf_block_q8_act));
    CHECK(pf_act_row_bytes(PF_TYPE_F16, 896) == 896 * sizeof(float));
    CHECK(pf_act_row_bytes(PF_TYPE_F32, 7) == 7 * sizeof(float));
    CHECK(pf_act_row_bytes(PF_TYPE_Q4_0, 33) == 0);
    CHECK(pf_act_row_bytes(12, 256) == 0);
}

/* ---- pool ---- */

/* A run's work is POOL_TASKS(nth) tasks the threads claim; each records who ran it. */
#define POOL_TASKS(nth) (3 * (nth) + 1)

typedef struct {
    _Atomic int run, returned; /* the run under way; the last run pf_pool_run returned from */
    int nth_expected;
    _Atomic int next;                /* the next task to claim */
    _Atomic int count[64];           /* times each task ran, over all runs */
    _Atomic int busy[16];            /* ith in fn now (two threads with one ith: bad) */
    _Atomic int bad;
} pool_probe;

static void pool_probe_fn(void *arg, int ith, int nth) {
    pool_probe *p = arg;
    if (nth != p->nth_expected || ith < 0 || ith >= nth || ith >= 16) {
        atomic_fetch_add(&p->bad, 1);
        return;
    }
    if (atomic_load(&p->returned) >= atomic_load(&p->run)) atomic_fetch_add(&p->bad, 1); /* late */
    if (atomic_exchange(&p->busy[ith], 1)) atomic_fetch_add(&p->bad, 1);
    for (int t; (t = atomic_fetch_add(&p->next, 1)) < POOL_TASKS(nth);) atomic_fetch_add(&p->count[t], 1);
    atomic_store(&p->busy[ith], 0);
}

/* Every task of every run done exactly once before the run returns, whichever threads joined; no
 * call after its run returned; ith unique among the threads in a run. */
TEST(kernels_pool_claimed_work_done_once) {
    const int sizes[] = {0, 1, 2, 3, 4, 8};
    for (int si = 0; si < (int)(sizeof sizes / sizeof sizes[0]); si++) {
        int n = sizes[si];
        pf_pool *pool = pf_pool_create(n);
        CHECK(pool != NULL);
        int nth = pf_pool_size(pool);
        CHECKF(nth == (n < 1 ? 1 : n), "pool of %d has size %d", n, nth);
        static pool_probe p;
        memset(&p, 0, sizeof p);
        p.nth_expected = nth;
        int runs = n > 4 ? 200 : n > 2 ? 1500 : 3000, tasks = POOL_TASKS(nth);
        for (int r = 1; r <= runs; r++) {
            atomic_store(&p.next, 0);
            atomic_store(&p.run, r);
            pf_pool_run(pool, pool_probe_fn, &p);
            atomic_store(&p.returned, r);
            for (int t = 0; t < tasks; t++)
                CHECKF(atomic_load(&p.count[t]) == r, "n=%d run %d: task %d ran %d times in all", n, r, t,
                       atomic_load(&p.count[t]));
            /* now and then let the workers fall asleep, to exercise the futex path */
            if (r % 500 == 0) usleep(2000);
        }
        CHECK(atomic_load(&p.bad) == 0);
        pf_pool_destroy(pool);
    }
    pf_pool_destroy(NULL);
    /* create/destroy churn, with and without runs */
    for (int i = 0; i < 20; i++) {
        pf_pool *pool = pf_pool_create(3);
        static pool_probe p;
        memset(&p, 0, sizeof p);
        p.nth_expected = 3;
        atomic_store(&p.run, 1);
        if (i % 2) pf_pool_run(pool, pool_probe_fn, &p);
        pf_pool_destroy(pool);
        CHECK(atomic_load(&p.bad) == 0);
        if (i % 2) CHECK(atomic_load(&p.count[POOL_TASKS(3) - 1]) == 1);
    }
}

/* ---- gemm ---- */

/* the first index where a and b differ in any bit, or -1 */
static int64_t first_diff(const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof a[i])) return i;
    return -1;
}

static void gemm_all(const pf_kernels *k, const pf_weight *W, const void *act, int B, float *y) {
    k->gemm[W->type](W, act, pf_act_row_bytes(W->type, W->cols), B, y, W->rows, 0, W->rows);
}

TEST(kernels_gemm_levels_vs_scalar) {
    const int64_t cols_list[] = {32, 96, 160, 896};
    const int64_t rows_list[] = {1, 7, 33, 130};
    const int b_list[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17};
    const pf_kernels *ks = pf_kernels_get(PF_LEVEL_SCALAR);
    double worst[PF_LEVEL_COUNT] = {0};
    for (int t = 0; t < N_TYPES; t++)
        for (int ci = 0; ci < 4; ci++)
            for (int ri = 0; ri < 4; ri++)
                for (int bi = 0; bi < (int)(sizeof b_list / sizeof b_list[0]); bi++) {
                    uint32_t type = k_types[t];
                    int64_t cols = cols_list[ci], rows = rows_list[ri];
                    int B = b_list[bi];
                    if (B > 5 && rows * cols > 33 * 160 && B != 17) continue; /* keep it quick */
                    pf_weight W;
                    make_weight(type, rows, cols, (uint64_t)(t * 1000 + ci * 100 + ri * 10 + bi), &W);
                    void *act = make_act(type, cols, B, (uint64_t)(ci + bi * 3 + 11), NULL);
                    float *yref = malloc((size_t)B * rows * sizeof(float));
                    float *y = malloc((size_t)B * rows * sizeof(float));
                    double *mag = magnitudes(&W, act, B);
                    gemm_all(ks, &W, act, B, yref);
                    int ok = 1;
                    for (int l = 0; l < PF_LEVEL_COUNT && ok; l++) {
                        const pf_kernels *k = test_kernels(l);
                        if (!k) continue;
                        gemm_all(k, &W, act, B, y);
                        for (int64_t i = 0; i < B * rows && ok; i++) {
                            double err = fabs((double)y[i] - yref[i]) / (mag[i] + 1e-30);
                            if (err > worst[l]) worst[l] = err;
                            if (!(err <= 1e-5)) {
                                ok = 0;
                                pf_test_fail(__FILE__, __LINE__, "gemm level mismatch");
                                printf("    %s %s rows=%lld cols=%lld B=%d i=%lld: %.9g vs scalar %.9g (mag %g)\n",
                                       k->name, pf_type_info(type)->name, (long long)rows,
                                       (long long)cols, B, (long long)i, y[i], yref[i], mag[i]);
                            }
                        }
                    }
                    free((void *)W.data), free(act), free(yref), free(y), free(mag);
                    if (!ok) return;
                }
    for (int l = 1; l < PF_LEVEL_COUNT; l++)
        if (!*test_level_missing(l))
            printf("    %s vs scalar: worst |diff| / sum|w x| = %.2e\n", pf_level_name((pf_level)l),
                   worst[l]);
}

/* float_order.h's dot product of weight row w (any float type) with x, written out here. */
static float float_order_dot(const pf_weight *W, int64_t r, const float *x) {
    float *w = malloc((size_t)W->cols * sizeof(float) + 1);
    pf_dequantize_row(W->type, (const char *)W->data + (size_t)r * W->row_bytes, w, W->cols);
    float p[PF_NPART] = {0};
    for (int64_t i = 0; i < W->cols; i++) p[i % PF_NPART] = fmaf(w[i], x[i], p[i % PF_NPART]);
    free(w);
    for (int h = PF_NPART / 2; h >= 1; h /= 2)
        for (int k = 0; k < h; k++) p[k] += p[k + h];
    return p[0];
}

/* One answer on every CPU (float_order.h): the F32, F16 and BF16 gemms of every level are the
 * scalar reference's bits, and the reference is the documented order (16 fused partials and the
 * tree), at every row length 1..70 (every tail of 4, 8 and 16 lanes) and model widths with odd
 * tails, 1..17 activation rows, row counts over and under every register block. Variant 1: every
 * product underflows to -0, so from 16 columns on every partial and the answer are -0, and a tail
 * that zero-padded its partials (fmaf(0, 0, -0) = +0) would give +0. */
TEST(kernels_gemm_float_levels_bitwise_scalar) {
    const uint32_t ftypes[] = {PF_TYPE_F32, PF_TYPE_F16, PF_TYPE_BF16};
    const int64_t rows_list[] = {1, 2, 3, 4, 5, 7, 9, 33};
    const pf_kernels *ks = pf_kernels_get(PF_LEVEL_SCALAR);
    int compared = 0;
    for (int variant = 0; variant < 2; variant++)
        for (int t = 0; t < 3; t++)
            for (int64_t ci = 0; ci < 74; ci++) {
                const int64_t big[] = {127, 903, 896, 2053};
                uint32_t type = ftypes[t];
                int64_t cols = ci < 70 ? ci + 1 : big[ci - 70], rows = rows_list[ci % 8];
                int B = variant ? 3 : (int)(ci % 17) + 1;
                if (cols > 1000) rows = 5, B = 17;
                pf_weight W;
                make_weight(type, rows, cols, (uint64_t)(t * 100 + ci + 1), &W);
                float *x = NULL;
                void *act = make_act(type, cols, B, (uint64_t)(ci + 5), &x);
                if (variant) { /* weights in [0.25, 0.5), activations -2^-149: products below half of it */
                    float *wf = malloc((size_t)cols * sizeof(float));
                    for (int64_t r = 0; r < rows; r++) {
                        for (int64_t i = 0; i < cols; i++) wf[i] = 0.25f + 0.0078125f * (float)((i + r) % 31);
                        pf_quantize_row(type, wf, (char *)W.data + (size_t)r * W.row_bytes, cols);
                    }
                    free(wf);
                    for (int64_t i = 0; i < (int64_t)B * cols; i++) x[i] = -0x1p-149f;
                    memcpy(act, x, (size_t)B * cols * sizeof(float));
                }
                size_t ny = (size_t)B * rows * sizeof(float);
                float *yref = malloc(ny), *y = malloc(ny);
                gemm_all(ks, &W, act, B, yref);
                for (int b = 0; b < B; b++)
                    for (int64_t r = 0; r < rows; r++) {
                        float e = float_order_dot(&W, r, x + (size_t)b * cols), got = yref[b * rows + r];
                        CHECKF(!memcmp(&e, &got, sizeof e), "scalar %s cols=%lld: %a, the order gives %a",
                               pf_type_info(type)->name, (long long)cols, got, e);
                        if (variant && cols >= PF_NPART) CHECKF(signbit(got) && got == 0.0f, "scalar %s cols=%lld: %a, not -0",
                                            pf_type_info(type)->name, (long long)cols, got);
                    }
                for (int l = 1; l < PF_LEVEL_COUNT; l++) {
                    const pf_kernels *k = test_kernels(l);
                    if (!k) continue;
                    memset(y, 0x7f, ny);
                    gemm_all(k, &W, act, B, y);
                    int64_t d = first_diff(yref, y, (int64_t)B * rows);
                    CHECKF(d < 0, "%s %s rows=%lld cols=%lld B=%d variant %d: y[%lld] = %a, scalar %a", k->name,
                           pf_type_info(type)->name, (long long)rows, (long long)cols, B, variant, (long long)d,
                           d < 0 ? 0.0 : y[d], d < 0 ? 0.0 : yref[d]);
                    compared++;
                }
                free((void *)W.data), free(act), free(x), free(yref), free(y);
            }
    printf("    %d gemms of other levels bitwise the scalar level's\n", compared);
}

/* Integer weights and activations with power-of-two scales: every partial sum is an integer
 * times the same power of two below 2^24, so every level must give the exact value. This fails
 * if any integer product or sum is wrong by one. */
TEST(kernels_gemm_quant_exact_integer) {
    const uint32_t qtypes[] = {PF_TYPE_Q8_0, PF_TYPE_Q4_0, PF_TYPE_Q4_1};
    const int64_t cols = 896, rows = 7, nb = cols / 32;
    const int B = 5;
    uint64_t s = 99;
    for (int variant = 0; variant < 2; variant++) {
        float wd = variant ? 0.125f : 1.0f, xd = variant ? 0.0625f : 1.0f;
        pf_block_q8_act *act = malloc((size_t)B * nb * sizeof *act);
        for (int b = 0; b < B; b++)
            for (int64_t k = 0; k < nb; k++) {
                pf_block_q8_act *a = &act[b * nb + k];
                int sum = 0;
                for (int j = 0; j < 32; j++) {
                    int v = (int)(rng_next(&s) % 255) - 127;
                    if (k == 0 && j < 2) v = j ? -127 : 127;
                    a->qs[j] = (int8_t)v;
                    sum += v;
                }
                a->d = xd;
                a->s = xd * (float)sum;
            }
        for (int t = 0; t < 3; t++) {
            uint32_t type = qtypes[t];
            size_t rb = pf_row_bytes(type, cols);
            uint8_t *data = malloc(rb * rows);
            double *expect = malloc((size_t)B * rows * sizeof(double));
            for (int64_t r = 0; r < rows; r++) {
                for (int64_t k = 0; k < nb; k++) {
                    uint8_t *blk = data + r * rb + k * pf_type_info(type)->type_size;
                    pf_half hd = pf_fp32_to_fp16(wd), hm = pf_fp32_to_fp16(wd * (float)((int)(r % 5) - 3));
                    memcpy(blk, &hd, 2);
                    if (type == PF_TYPE_Q8_0) {
                        for (int j = 0; j < 32; j++) {
                            int v = (int)(rng_next(&s) % 256) - 128;
                            if (k == 1 && j < 3) v = j == 0 ? -128 : j == 1 ? 127 : -127;
                            ((int8_t *)blk + 2)[j] = (int8_t)v;
                        }
                    } else {
                        uint8_t *qs = blk + (type == PF_TYPE_Q4_1 ? 4 : 2);
                        if (type == PF_TYPE_Q4_1) memcpy(blk + 2, &hm, 2);
                        for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(rng_next(&s) & 0xff);
                        if (k == 2) qs[0] = 0xf0, qs[15] = 0x0f;
                    }
                }
                float *wf = malloc((size_t)cols * sizeof(float));
                pf_dequantize_row(type, data + r * rb, wf, cols);
                for (int b = 0; b < B; b++) {
                    double e = 0;
                    for (int64_t i = 0; i < cols; i++)
                        e += (double)wf[i] * xd * act[b * nb + i / 32].qs[i % 32];
                    expect[b * rows + r] = e;
                }
                free(wf);
            }
            pf_weight W = {data, type, rows, cols, rb, NULL};
            float *y = malloc((size_t)B * rows * sizeof(float));
            for (int l = 0; l < PF_LEVEL_COUNT; l++) {
                const pf_kernels *k = test_kernels(l);
                if (!k) continue;
                gemm_all(k, &W, act, B, y);
                for (int64_t i = 0; i < B * rows; i++)
                    CHECKF((double)y[i] == expect[i], "%s %s variant %d i=%lld: %.9g != exact %.9g",
                           k->name, pf_type_info(type)->name, variant, (long long)i, y[i], expect[i]);
            }
            free(y), free(data), free(expect);
        }
        free(act);
    }
}

/* Q8_0 with realistic data against the exact products in double: the only error allowed is
 * float rounding of the scales and of the accumulation, (nb + 8) * 2^-24 of sum |w x|. */
TEST(kernels_gemm_q8_0_vs_double) {
    const int64_t cols_list[] = {32, 160, 896, 2560};
    for (int ci = 0; ci < 4; ci++) {
        int64_t cols = cols_list[ci], rows = 9, nb = cols / 32;
        int B = 3;
        pf_weight W;
        make_weight(PF_TYPE_Q8_0, rows, cols, 5 + ci, &W);
        void *act = make_act(PF_TYPE_Q8_0, cols, B, 17 + ci, NULL);
        float *y = malloc((size_t)B * rows * sizeof(float));
        for (int l = 0; l < PF_LEVEL_COUNT; l++) {
            const pf_kernels *k = test_kernels(l);
            if (!k) continue;
            gemm_all(k, &W, act, B, y);
            for (int b = 0; b < B; b++)
                for (int64_t r = 0; r < rows; r++) {
                    const pf_block_q8_0 *w = (const pf_block_q8_0 *)((char *)W.data + r * W.row_bytes);
                    const pf_block_q8_act *x = (const pf_block_q8_act *)act + b * nb;
                    double ref = 0, mag = 0;
                    for (int64_t kb = 0; kb < nb; kb++) {
                        double sc = (double)pf_fp16_to_fp32(w[kb].d) * x[kb].d;
                        long isum = 0, iabs = 0;
                        for (int j = 0; j < 32; j++) {
                            isum += w[kb].qs[j] * x[kb].qs[j];
                            iabs += labs((long)(w[kb].qs[j] * x[kb].qs[j]));
                        }
                        ref += sc * (double)isum;
                        mag += fabs(sc) * (double)iabs;
                    }
                    double tol = (double)(nb + 8) * 0x1p-24 * mag;
                    CHECKF(fabs(y[b * rows + r] - ref) <= tol, "%s cols=%lld: %.9g vs %.9g (tol %g)",
                           k->name, (long long)cols, y[b * rows + r], ref, tol);
                }
        }
        free((void *)W.data), free(act), free(y);
    }
}

/* Batch invariance: for every level and type, a B-row gemm equals B one-row gemms bitwise, and
 * computing the rows in pieces equals computing them at once. */
TEST(kernels_gemm_batch_invariance) {
    const struct { int64_t rows, cols; int B; } cases[] = {{33, 160, 17}, {130, 896, 9}, {7, 96, 16}};
    for (int ci = 0; ci < 3; ci++)
        for (int t = 0; t < N_TYPES; t++) {
            uint32_t type = k_types[t];
            int64_t rows = cases[ci].rows, cols = cases[ci].cols;
            int B = cases[ci].B;
            size_t stride = pf_act_row_bytes(type, cols);
            pf_weight W;
            make_weight(type, rows, cols, 300 + t + ci * 10, &W);
            void *act = make_act(type, cols, B, 400 + t, NULL);
            float *yb = malloc((size_t)B * rows * sizeof(float));
            float *y1 = malloc((size_t)B * rows * sizeof(float));
            float *yp = malloc((size_t)B * rows * sizeof(float));
            for (int l = 0; l < PF_LEVEL_COUNT; l++) {
                const pf_kernels *k = test_kernels(l);
                if (!k) continue;
                gemm_all(k, &W, act, B, yb);
                for (int b = 0; b < B; b++)
                    k->gemm[type](&W, (const char *)act + b * stride, stride, 1, y1 + b * rows, rows, 0, rows);
                /* uneven pieces, and a different B chunking (B split as 3 + rest) */
                int64_t cuts[] = {0, 1, 5, rows / 2, rows};
                for (int c = 0; c < 4; c++) {
                    int64_t a = cuts[c] < rows ? cuts[c] : rows, e = cuts[c + 1] < rows ? cuts[c + 1] : rows;
                    if (a >= e) continue;
                    k->gemm[type](&W, act, stride, 3, yp, rows, a, e);
                    k->gemm[type](&W, (const char *)act + 3 * stride, stride, B - 3, yp + 3 * rows, rows, a, e);
                }
                CHECKF(memcmp(yb, y1, (size_t)B * rows * sizeof(float)) == 0,
                       "%s %s rows=%lld: B-row gemm differs from 1-row gemms", k->name,
                       pf_type_info(type)->name, (long long)rows);
                CHECKF(memcmp(yb, yp, (size_t)B * rows * sizeof(float)) == 0,
                       "%s %s rows=%lld: row pieces differ", k->name, pf_type_info(type)->name,
                       (long long)rows);
            }
            free((void *)W.data), free(act), free(yb), free(y1), free(yp);
        }
}

/* Zero columns: every level writes zeros (empty sums), reads nothing. */
TEST(kernels_gemm_empty_rows) {
    static char dummy[64];
    for (int l = 0; l < PF_LEVEL_COUNT; l++) {
        const pf_kernels *k = test_kernels(l);
        if (!k) continue;
        for (int t = 0; t < N_TYPES; t++) {
            pf_weight W = {dummy, k_types[t], 3, 0, 0, NULL};
            float y[6] = {1, 1, 1, 1, 1, 1};
            k->gemm[k_types[t]](&W, dummy, 0, 2, y, 3, 0, 3);
            for (int i = 0; i < 6; i++) CHECKF(y[i] == 0.0f, "%s %s", k->name, pf_type_info(k_types[t])->name);
        }
    }
}

/* Rows longer than the AVX-512 kernel's activation scratch take its in-place path. */
TEST(kernels_gemm_long_rows) {
    const int64_t rows = 3, cols = 32 * 1850; /* over the AVX-512 scratch (128 KB) */
    const int B = 9;
    const pf_kernels *ks = pf_kernels_get(PF_LEVEL_SCALAR);
    for (int t = 0; t < N_TYPES; t++) {
        uint32_t type = k_types[t];
        size_t stride = pf_act_row_bytes(type, cols);
        pf_weight W;
        make_weight(type, rows, cols, 700 + t, &W);
        void *act = make_act(type, cols, B, 800 + t, NULL);
        double *mag = magnitudes(&W, act, B);
        float *yref = malloc((size_t)B * rows * sizeof(float)), *y = malloc((size_t)B * rows * sizeof(float));
        float *y1 = malloc((size_t)B * rows * sizeof(float));
        gemm_all(ks, &W, act, B, yref);
        for (int l = 1; l < PF_LEVEL_COUNT; l++) {
            const pf_kernels *k = test_kernels(l);
            if (!k) continue;
            gemm_all(k, &W, act, B, y);
            for (int b = 0; b < B; b++)
                k->gemm[type](&W, (const char *)act + b * stride, stride, 1, y1 + b * rows, rows, 0, rows);
            CHECKF(memcmp(y, y1, (size_t)B * rows * sizeof(float)) == 0, "%s %s: B rows != 1 row",
                   k->name, pf_type_info(type)->name);
            for (int64_t i = 0; i < B * rows; i++)
                CHECKF(fabs((double)y[i] - yref[i]) <= 1e-5 * mag[i], "%s %s i=%lld: %g vs %g", k->name,
                       pf_type_info(type)->name, (long long)i, y[i], yref[i]);
        }
        free((void *)W.data), free(act), free(mag), free(yref), free(y), free(y1);
    }
}

/* The packed layout (kernels/repack.c) gives every x86 level's gemm (AVX2, AVX-VNNI, AVX-512) the
 * same bits as the GGUF layout: matrices over and under 16 rows and not a multiple of it, row
 * ranges that start and end inside a group (and inside a half of the 256-bit gemms' 8 lanes), rows
 * long enough for several k super-chunks, B from 1 to 17. The levels run the same float ops per
 * block, so the results of every level that runs are compared bit for bit with the first's too. */
TEST(kernels_gemm_packed_bitwise) {
    static const pf_level lv[] = {PF_LEVEL_AVX2, PF_LEVEL_AVXVNNI, PF_LEVEL_AVX512};
    const pf_kernels *kl[3];
    int nl = 0;
    for (int i = 0; i < 3; i++) /* a level this build has but the CPU lacks (or PF_KERNELS caps): a named skip */
        if ((kl[nl] = test_kernels(lv[i]))) nl++;
    if (!nl) { /* ARM64 (the i8mm level packs its own layout, tested below), or every x86 level capped */
        CHECK(!pf_pack_wanted(pf_kernels_best(), PF_TYPE_Q4_1) || pf_kernels_best()->level == PF_LEVEL_I8MM);
        pf_test_skip_level("no x86 level runs here: the packed layout is read by the x86 levels only");
        return;
    }
    static const uint32_t qt[] = {PF_TYPE_Q8_0, PF_TYPE_Q4_0, PF_TYPE_Q4_1};
    static const int64_t shapes[][2] = {{1, 64}, {5, 96}, {16, 32}, {17, 256}, {40, 128}, {53, 32 * 1100}};
    static const int64_t ranges[][2] = {{0, -1}, {3, -1}, {0, 7}, {5, 21}, {17, 35}, {10, 13}};
    int compared = 0, across = 0;
    for (int t = 0; t < 3; t++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            int64_t rows = shapes[si][0], cols = shapes[si][1];
            pf_weight W, P;
            make_weight(qt[t], rows, cols, 900 + 10 * t + si, &W);
            void *packed = make_packed(&W, pf_packed_bytes, pf_pack_weight, &P);
            const int B = 17;
            size_t stride = pf_act_row_bytes(qt[t], cols), ny = (size_t)B * rows * sizeof(float);
            void *act = make_act(qt[t], cols, B, 1000 + t, NULL);
            float *y0 = malloc(ny), *y1 = malloc(ny), *y2 = malloc(ny);
            for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++) {
                int64_t r0 = ranges[ri][0], r1 = ranges[ri][1] < 0 ? rows : ranges[ri][1];
                if (r1 > rows) r1 = rows;
                if (r0 >= r1) continue;
                for (int nb = 1; nb <= B; nb += nb < 4 ? 1 : 6)
                    for (int l = 0; l < nl; l++) {
                        const pf_kernels *k = kl[l];
                        for (int64_t i = 0; i < (int64_t)B * rows; i++) y0[i] = y1[i] = -7.0f;
                        k->gemm[qt[t]](&W, act, stride, nb, y0, rows, r0, r1);
                        k->gemm[qt[t]](&P, act, stride, nb, y1, rows, r0, r1);
                        CHECKF(memcmp(y0, y1, ny) == 0, "%s %s %lldx%lld rows [%lld, %lld) B=%d: packed != GGUF layout",
                               k->name, pf_type_info(qt[t])->name, (long long)rows, (long long)cols, (long long)r0,
                               (long long)r1, nb);
                        compared++;
                        if (!l) memcpy(y2, y1, ny);
                        else {
                            CHECKF(memcmp(y1, y2, ny) == 0, "%s %lldx%lld rows [%lld, %lld) B=%d: %s != %s",
                                   pf_type_info(qt[t])->name, (long long)rows, (long long)cols, (long long)r0,
                                   (long long)r1, nb, k->name, kl[0]->name);
                            across++;
                        }
                    }
            }
            free((void *)W.data), free(packed), free(act), free(y0), free(y1), free(y2);
        }
    printf("    %d packed gemm calls bitwise equal to the GGUF-layout ones (outside rows untouched), %d across levels"
           " equal to %s's\n", compared, across, kl[0]->name);
    CHECKF(compared > 0 && (nl < 2 || across > 0), "compared %d packed calls, %d across levels", compared, across);
}

/* Weights between two PROT_NONE pages (the matrix ends exactly at the second one): every level
 * computes row ranges at both ends of the matrix, of matrices over and under 16 rows, without
 * reading outside it (a stray read faults), bitwise equal to the whole-matrix gemm. */
TEST(kernels_gemm_guard_pages) {
    const long pg = sysconf(_SC_PAGESIZE);
    const struct { int64_t rows, cols; } cases[] = {{40, 96}, {7, 64}, {16, 32}, {33, 160}};
    for (int ci = 0; ci < 4; ci++)
        for (int t = 0; t < N_TYPES; t++) {
            uint32_t type = k_types[t];
            int64_t rows = cases[ci].rows, cols = cases[ci].cols;
            const int B = 3;
            pf_weight W0;
            make_weight(type, rows, cols, 900 + t + 10 * ci, &W0);
            size_t bytes = W0.row_bytes * (size_t)rows, span = (bytes + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
            char *map = mmap(NULL, span + 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            CHECK(map != MAP_FAILED);
            if (map == MAP_FAILED) return;
            mprotect(map, (size_t)pg, PROT_NONE);
            mprotect(map + (size_t)pg + span, (size_t)pg, PROT_NONE);
            char *data = map + (size_t)pg + (span - bytes); /* ends at the guard page */
            memcpy(data, W0.data, bytes);
            pf_weight W = W0;
            W.data = data;
            void *act = make_act(type, cols, B, 950 + t, NULL);
            size_t stride = pf_act_row_bytes(type, cols);
            float *yf = malloc((size_t)B * rows * sizeof(float)), *yp = malloc((size_t)B * rows * sizeof(float));
            for (int l = 0; l < PF_LEVEL_COUNT; l++) {
                const pf_kernels *k = test_kernels(l);
                if (!k) continue;
                k->gemm[type](&W, act, stride, B, yf, rows, 0, rows);
                int64_t cuts[][2] = {{0, 1}, {0, 5}, {1, 3}, {rows - 3, rows}, {rows - 1, rows}, {rows / 2, rows}};
                memset(yp, 0, (size_t)B * rows * sizeof(float));
                for (int c = 0; c < 6; c++) {
                    int64_t a = cuts[c][0] < 0 ? 0 : cuts[c][0], e = cuts[c][1];
                    k->gemm[type](&W, act, stride, B, yp, rows, a, e);
                    for (int b = 0; b < B; b++)
                        for (int64_t r = a; r < e; r++)
                            CHECKF(yp[b * rows + r] == yf[b * rows + r], "%s %s rows=%lld [%lld,%lld) b=%d r=%lld",
                                   k->name, pf_type_info(type)->name, (long long)rows, (long long)a,
                                   (long long)e, b, (long long)r);
                }
            }
            /* the same with the matrix starting right at the first guard page */
            char *data2 = map + (size_t)pg;
            memmove(data2, data, bytes);
            W.data = data2;
            for (int l = 0; l < PF_LEVEL_COUNT; l++) {
                const pf_kernels *k = test_kernels(l);
                if (!k) continue;
                k->gemm[type](&W, act, stride, B, yf, rows, 0, rows);
                k->gemm[type](&W, act, stride, B, yp, rows, 0, rows < 5 ? rows : 5);
                for (int b = 0; b < B; b++)
                    for (int64_t r = 0; r < (rows < 5 ? rows : 5); r++)
                        CHECKF(yp[b * rows + r] == yf[b * rows + r], "%s %s rows=%lld start b=%d r=%lld", k->name,
                               pf_type_info(type)->name, (long long)rows, b, (long long)r);
            }
            munmap(map, span + 2 * (size_t)pg);
            free((void *)W0.data), free(act), free(yf), free(yp);
        }
}

/* pf_matmul with pools of 1, 2 and 3 threads (large enough to really split) == direct gemm. */
TEST(kernels_matmul_pool_invariance) {
    pf_pool *pools[3] = {pf_pool_create(1), pf_pool_create(2), pf_pool_create(3)};
    const struct { int64_t rows, cols; int B; } cases[] = {{1000, 256, 1}, {517, 896, 5}, {20, 64, 2}};
    for (int ci = 0; ci < 3; ci++)
        for (int t = 0; t < N_TYPES; t++) {
            uint32_t type = k_types[t];
            int64_t rows = cases[ci].rows, cols = cases[ci].cols;
            int B = cases[ci].B;
            pf_weight W;
            make_weight(type, rows, cols, 500 + t, &W);
            void *act = make_act(type, cols, B, 600 + t, NULL);
            int64_t ldy = rows + 3;
            float *yd = malloc((size_t)B * ldy * sizeof(float));
            float *ym = malloc((size_t)B * ldy * sizeof(float));
            for (int l = 0; l < PF_LEVEL_COUNT; l++) {
                const pf_kernels *k = test_kernels(l);
                if (!k) continue;
                memset(yd, 0, (size_t)B * ldy * sizeof(float));
                k->gemm[type](&W, act, pf_act_row_bytes(type, cols), B, yd, ldy, 0, rows);
                for (int p = 0; p < 3; p++) {
                    memset(ym, 0, (size_t)B * ldy * sizeof(float));
                    pf_matmul(k, pools[p], &W, act, B, ym, ldy);
                    CHECKF(memcmp(yd, ym, (size_t)B * ldy * sizeof(float)) == 0,
                           "%s %s rows=%lld: pf_matmul with %d threads differs", k->name,
                           pf_type_info(type)->name, (long long)rows, p + 1);
                }
                pf_matmul(k, NULL, &W, act, B, ym, ldy);
                CHECK(memcmp(yd, ym, (size_t)B * ldy * sizeof(float)) == 0);
            }
            free((void *)W.data), free(act), free(yd), free(ym);
        }
    for (int p = 0; p < 3; p++) pf_pool_destroy(pools[p]);
}

/* pf_matmul_n (several matrices over the same activations in one pool run) == one gemm each. */
TEST(kernels_matmul_n_equals_gemm) {
    pf_pool *pools[3] = {pf_pool_create(1), pf_pool_create(2), pf_pool_create(3)};
    const int64_t rows[3] = {700, 130, 7}, cols = 256;
    const int B = 5;
    for (int t = 0; t < N_TYPES; t++) {
        uint32_t type = k_types[t];
        pf_weight Ws[3];
        const pf_weight *W[3];
        float *yd[3], *ym[3];
        int64_t ldy[3];
        for (int i = 0; i < 3; i++) {
            make_weight(type, rows[i], cols, 1100 + t * 3 + i, &Ws[i]);
            W[i] = &Ws[i];
            ldy[i] = rows[i] + 1;
            yd[i] = calloc((size_t)B * ldy[i], sizeof(float));
            ym[i] = calloc((size_t)B * ldy[i], sizeof(float));
        }
        void *act = make_act(type, cols, B, 1200 + t, NULL);
        for (int l = 0; l < PF_LEVEL_COUNT; l++) {
            const pf_kernels *k = test_kernels(l);
            if (!k) continue;
            for (int i = 0; i < 3; i++)
                k->gemm[type](W[i], act, pf_act_row_bytes(type, cols), B, yd[i], ldy[i], 0, rows[i]);
            for (int p = 0; p < 3; p++) {
                for (int i = 0; i < 3; i++) memset(ym[i], 0, (size_t)B * ldy[i] * sizeof(float));
                pf_matmul_n(k, pools[p], 3, W, act, B, ym, ldy);
                for (int i = 0; i < 3; i++)
                    CHECKF(memcmp(yd[i], ym[i], (size_t)B * ldy[i] * sizeof(float)) == 0,
                           "%s %s matrix %d, %d threads", k->name, pf_type_info(type)->name, i, p + 1);
            }
        }
        for (int i = 0; i < 3; i++) free((void *)Ws[i].data), free(yd[i]), free(ym[i]);
        free(act);
    }
    for (int p = 0; p < 3; p++) pf_pool_destroy(pools[p]);
}

/* ---- activation quantization ---- */

TEST(kernels_quantize_act_bitwise) {
    const int64_t n = 32 * 12;
    float *x = malloc(n * sizeof(float));
    uint64_t s = 3;
    fill(x, n, 3.0f, &s);
    /* block 1: amax 127 -> d = 1, id = 1: exact .5 ties must round away from zero */
    for (int j = 0; j < 32; j++) x[32 + j] = (float)(j - 16) + 0.5f;
    x[32] = 127.0f;
    x[33] = -126.5f;
    /* block 2: amax 63.5 -> d = 0.5, id = 2: ties again */
    for (int j = 0; j < 32; j++) x[64 + j] = 0.25f * (float)(2 * j - 31);
    x[64] = -63.5f;
    memset(x + 96, 0, 32 * sizeof(float)); /* all zero: d = 0 */
    for (int j = 0; j < 32; j++) x[128 + j] = 1e-30f * (float)(j - 7); /* tiny values */
    for (int j = 0; j < 32; j++) x[160 + j] = 1e6f * rng_unit(&s);     /* large values */
    pf_block_q8_act *ref = malloc((size_t)n / 32 * sizeof *ref), *y = malloc((size_t)n / 32 * sizeof *y);
    pf_quantize_row_q8_act(x, ref, n);
    CHECK(ref[1].d == 1.0f && ref[1].qs[2] == -14 && ref[1].qs[31] == 16 && ref[1].qs[1] == -127);
    for (int l = 0; l < PF_LEVEL_COUNT; l++) {
        const pf_kernels *k = test_kernels(l);
        if (!k) continue;
        memset(y, 0x5a, (size_t)n / 32 * sizeof *y);
        k->quantize_act(x, y, n);
        for (int64_t i = 0; i < n / 32; i++)
            CHECKF(memcmp(&y[i], &ref[i], sizeof *y) == 0, "%s: block %lld differs from scalar",
                   k->name, (long long)i);
    }
    free(x), free(ref), free(y);
}

/* ---- elementwise ---- */

/* One answer on every CPU (float_order.h): RMSNorm and SwiGLU of every level are the scalar
 * reference's bits at every length 1..70 (every tail of 4, 8 and 16 lanes) and at model widths,
 * in place too, with gate values across exp's clamps. */
TEST(kernels_rmsnorm_swiglu_bitwise_scalar) {
    const pf_kernels *ks = pf_kernels_get(PF_LEVEL_SCALAR);
    uint64_t s = 11;
    int compared = 0;
    for (int64_t n = 1; n <= 3077; n = n < 70 ? n + 1 : n == 70 ? 896 : n == 896 ? 2560 : n == 2560 ? 3077 : 3078) {
        float *x = malloc(n * sizeof(float)), *w = malloc(n * sizeof(float)), *u = malloc(n * sizeof(float));
        float *ref = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float)), *g = malloc(n * sizeof(float));
        fill(x, n, 4.0f, &s);
        fill(w, n, 2.0f, &s);
        fill(u, n, 3.0f, &s);
        for (int64_t i = 0; i < n; i++) g[i] = x[i] * 5.0f;
        const float edge[] = {-100.0f, 100.0f, 0.0f, -87.5f, 87.0f, 88.5f, -87.0f, 1e-30f, -0.0f, 86.99f, -INFINITY};
        for (int64_t i = 0; i < n && i < 11; i++) g[(i * 7) % n] = edge[i];
        for (int l = 1; l < PF_LEVEL_COUNT; l++) {
            const pf_kernels *k = test_kernels(l);
            if (!k) continue;
            ks->rmsnorm(x, w, n, 1e-6f, ref);
            k->rmsnorm(x, w, n, 1e-6f, out);
            int64_t bad = first_diff(out, ref, n);
            CHECKF(bad < 0, "%s rmsnorm n=%lld i=%lld: %.9g vs %.9g", k->name, (long long)n, (long long)bad,
                   bad < 0 ? 0.0 : out[bad], bad < 0 ? 0.0 : ref[bad]);
            memcpy(out, x, n * sizeof(float)); /* in place */
            k->rmsnorm(out, w, n, 1e-6f, out);
            CHECKF(first_diff(out, ref, n) < 0, "%s rmsnorm in place n=%lld", k->name, (long long)n);
            ks->swiglu(g, u, ref, n);
            k->swiglu(g, u, out, n);
            bad = first_diff(out, ref, n);
            CHECKF(bad < 0, "%s swiglu n=%lld g=%g: %.9g vs %.9g", k->name, (long long)n, bad < 0 ? 0.0 : g[bad],
                   bad < 0 ? 0.0 : out[bad], bad < 0 ? 0.0 : ref[bad]);
            float *g2 = malloc(n * sizeof(float));
            memcpy(g2, g, n * sizeof(float));
            k->swiglu(g2, u, g2, n); /* out aliases gate */
            CHECK(first_diff(g2, ref, n) < 0);
            free(g2);
            compared++;
        }
        /* the reference itself: silu within 2e-6 of the double formula away from the clamps */
        for (int64_t i = 0; i < n; i++) {
            if (!(fabsf(g[i]) < 80.0f)) continue;
            double e = (double)g[i] / (1.0 + exp(-(double)g[i])) * u[i];
            CHECKF(fabs(ref[i] - e) <= 2e-6 * fabs(e) + 1e-37, "swiglu reference g=%g: %.9g vs %.9g", g[i], ref[i], e);
        }
        free(x), free(w), free(u), free(ref), free(out), free(g);
    }
    printf("    %d rmsnorm + swiglu comparisons with the scalar level, bitwise\n", compared);
}

/* pf_exp_ref (every level's exp): within 2 ulp of exp on its range, 0 below it (exp(-inf) = 0). */
TEST(kernels_exp_ref) {
    double worst = 0;
    for (int i = 0; i <= 200000; i++) {
        float x = -87.0f + 175.0f * (float)i / 200000.0f;
        double e = exp((double)x), got = pf_exp_ref(x);
        double rel = fabs(got - e) / e;
        if (rel > worst) worst = rel;
    }
    CHECKF(worst <= 2.5e-7, "largest relative error %.3g", worst);
    CHECK(pf_exp_ref(0.0f) == 1.0f && pf_exp_ref(-0.0f) == 1.0f);
    CHECK(pf_exp_ref(-INFINITY) == 0.0f && pf_exp_ref(-87.5f) == 0.0f && pf_exp_ref(-1e30f) == 0.0f);
    CHECK(pf_exp_ref(-87.0f) > 0.0f && isfinite(pf_exp_ref(INFINITY)));
    printf("    largest relative error on [-87, 88]: %.3g\n", worst);
}

TEST(kernels_rmsnorm_vs_double) {
    const int64_t n = 896;
    float x[896], w[896], out[896];
    uint64_t s = 12;
    fill(x, n, 10.0f, &s);
    fill(w, n, 1.5f, &s);
    double ss = 0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    double inv = 1.0 / sqrt(ss / n + 1e-6);
    for (int l = 0; l < PF_LEVEL_COUNT; l++) {
        const pf_kernels *k = test_kernels(l);
        if (!k) continue;
        k->rmsnorm(x, w, n, 1e-6f, out);
        for (int64_t i = 0; i < n; i++) {
            double ref = x[i] * inv * w[i];
            CHECKF(fabs(out[i] - ref) <= 3e-7 * fabs(ref) + 1e-30, "%s i=%lld", k->name, (long long)i);
        }
    }
}

/* The value accumulation y = fmaf(a, x, y): every level the scalar bits, every tail. */
TEST(kernels_axpy_f16_bitwise_scalar) {
    const pf_kernels *ks = pf_kernels_get(PF_LEVEL_SCALAR);
    uint64_t s = 21;
    for (int n = 1; n <= 128; n += n < 40 ? 1 : 29) {
        float bf[128], y0[128], yr[128], y[128];
        pf_half b[128];
        fill(bf, n, 3.0f, &s);
        fill(y0, 128, 1.0f, &s);
        for (int i = 0; i < n; i++) b[i] = pf_fp32_to_fp16(bf[i]);
        memcpy(yr, y0, sizeof y0);
        ks->axpy_f16(0.37f, b, yr, n);
        for (int i = 0; i < n; i++) CHECK(yr[i] == fmaf(0.37f, pf_fp16_to_fp32(b[i]), y0[i]));
        for (int l = 1; l < PF_LEVEL_COUNT; l++) {
            const pf_kernels *k = test_kernels(l);
            if (!k) continue;
            memcpy(y, y0, sizeof y0);
            k->axpy_f16(0.37f, b, y, n);
            CHECKF(first_diff(y, yr, n) < 0, "%s axpy n=%d: not the scalar bits", k->name, n);
            for (int i = n; i < 128; i++) CHECKF(y[i] == y0[i], "%s axpy wrote past n", k->name);
        }
    }
}

/* softmax of every level: the scalar bits at every length 1..70 and vocabulary-sized rows, with
 * -inf logits (masked tokens), all -inf (uniform), NaN-free extremes; the caller's row past n
 * untouched. */
TEST(kernels_softmax_bitwise_scalar) {
    const pf_kernels *ks = pf_kernels_get(PF_LEVEL_SCALAR);
    enum { N = 151936 + 5 };
    float *x = malloc((N + 1) * sizeof(float)), *ref = malloc((N + 1) * sizeof(float)), *got = malloc((N + 1) * sizeof(float));
    uint64_t s = 61;
    int compared = 0;
    for (int round = 0; round < 90; round++) {
        int64_t n = round < 80 ? 1 + round % 70 : N - round % 7;
        int kind = round % 5;
        for (int64_t i = 0; i < n; i++) {
            x[i] = 30.0f * rng_unit(&s);
            if (kind == 1 && i % 3 == 1) x[i] = -INFINITY;
            if (kind == 2) x[i] = -INFINITY;
            if (kind == 3 && i % 7 == 2) x[i] = -1e30f;
        }
        x[n] = 12345.0f;
        memcpy(ref, x, (n + 1) * sizeof(float));
        ks->softmax(ref, n);
        CHECK(ref[n] == 12345.0f);
        for (int l = 1; l < PF_LEVEL_COUNT; l++) {
            const pf_kernels *k = test_kernels(l);
            if (!k) continue;
            memcpy(got, x, (n + 1) * sizeof(float));
            k->softmax(got, n);
            int64_t bad = first_diff(got, ref, n + 1);
            CHECKF(bad < 0, "%s softmax n=%lld kind %d i=%lld: %.9g vs %.9g", k->name, (long long)n, kind,
                   (long long)bad, bad < 0 ? 0.0 : got[bad], bad < 0 ? 0.0 : ref[bad]);
            compared++;
        }
    }
    free(x), free(ref), free(got);
    printf("    %d softmax rows bitwise the scalar level\n", compared);
}

/* ---- RoPE, softmax ---- */

/* The KV cache's f32 -> f16 rounding: every level bitwise equal to pf_fp32_to_fp16 on random
 * values of every magnitude, on rounding ties, subnormals, overflow, infinities and NaNs, and at
 * every length (tails). */
TEST(kernels_f32_to_f16_bitwise) {
    enum { N = 4099 };
    float *x = malloc(N * sizeof(float));
    pf_half *ref = malloc(N * sizeof(pf_half)), *got = malloc(N * sizeof(pf_half));
    uint64_t s = 77;
    for (int i = 0; i < N; i++) {
        uint32_t bits = (uint32_t)rng_next(&s);
        switch (i % 5) {
        case 0: bits = (bits & 0x807fffffu) | ((uint32_t)(100 + i % 60) << 23); break; /* f16 range, subnormals */
        case 1: bits = (bits & 0x8000ffffu & ~0x1fffu) | 0x1000u | ((uint32_t)(113 + i % 30) << 23); break; /* ties */
        case 2: break;                                                                                  /* anything */
        default: memcpy(&bits, &(float){rng_unit(&s) * (float)(1 << (i % 20))}, 4); break;
        }
        memcpy(&x[i], &bits, 4);
    }
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 65504.0f, 65519.99f, 65520.0f, -65520.0f,
                             5.96046448e-08f, 2.98023224e-08f, 2.98023242e-08f, 6.10351562e-05f, 1e-10f, 1e10f};
    memcpy(x, special, sizeof special);
    uint32_t payload_nan = 0x7fa00001u; /* a signalling NaN with a payload */
    memcpy(&x[sizeof special / sizeof special[0]], &payload_nan, 4);
    for (int i = 0; i < N; i++) ref[i] = pf_fp32_to_fp16(x[i]);
    for (int l = 0; l < PF_LEVEL_COUNT; l++) {
        const pf_kernels *k = test_kernels(l);
        if (!k) continue;
        for (int n = 0; n <= 40; n++) { /* every tail length */
            memset(got, 0xab, 48 * sizeof(pf_half));
            k->f32_to_f16(x + 3, got, n);
            for (int i = 0; i < n; i++) CHECKF(got[i] == ref[3 + i], "%s n=%d i=%d", k->name, n, i);
            CHECKF(got[n] == 0xabab, "%s n=%d: wrote past the end", k->name, n);
        }
        k->f32_to_f16(x, got, N);
        for (int i = 0; i < N; i++)
            CHECKF(got[i] == ref[i], "%s i=%d: %a -> %04x, reference %04x", k->name, i, x[i], got[i], ref[i]);
    }
    free(x), free(ref), free(got);
}

/* argmax on every level equals the scalar loop: ties (first wins, -0 == +0), NaNs anywhere
 * (skipped; NaN at 0 gives 0), infinities, every length up to 70 and a vocabulary-sized row. */
TEST(kernels_argmax_first_above_levels) {
    enum { N = 65536 + 7 };
    float *x = malloc(N * sizeof(float));
    uint64_t s = 99;
    int checked = 0;
    for (int round = 0; round < 400; round++) {
        int64_t n = round < 280 ? 1 + round % 70 : N - (round % 9);
        int kind = round % 7;
        for (int64_t i = 0; i < n; i++) {
            float v = rng_unit(&s);
            if (kind == 1) v = (float)(int)(v * 3); /* many ties */
            if (kind == 2 && i % 5 == 3) v = NAN;
            if (kind == 3) v = (i % 2) ? -0.0f : 0.0f;
            if (kind == 4 && i % 11 == 7) v = INFINITY;
            if (kind == 5) v = -INFINITY;
            x[i] = v;
        }
        if (kind == 6) x[0] = NAN;
        if (kind == 2 && n > 1) x[n - 1] = 5.0f; /* the maximum in the tail */
        int32_t ref = pf_kernels_get(PF_LEVEL_SCALAR)->argmax(x, n);
        for (int l = 1; l < PF_LEVEL_COUNT; l++) {
            const pf_kernels *k = test_kernels(l);
            if (!k) continue;
            int32_t got = k->argmax(x, n);
            CHECKF(got == ref, "%s n=%lld kind %d: %d, scalar %d", k->name, (long long)n, kind, got, ref);
            checked++;
        }
    }
    /* first_above: every level equals the scalar scan, thresholds around the values, NaN rows */
    for (int round = 0; round < 300; round++) {
        int64_t n = round < 200 ? round % 70 : N - (round % 9);
        for (int64_t i = 0; i < n; i++) x[i] = round % 3 == 2 && i % 4 == 1 ? NAN : rng_unit(&s);
        float t = round % 5 == 0 ? 0.999f : round % 5 == 1 ? 2.0f : rng_unit(&s);
        int64_t ref = pf_kernels_get(PF_LEVEL_SCALAR)->first_above(x, n, t);
        for (int l = 1; l < PF_LEVEL_COUNT; l++) {
            const pf_kernels *k = test_kernels(l);
            if (!k) continue;
            int64_t got = k->first_above(x, n, t);
            CHECKF(got == ref, "%s first_above n=%lld t=%g: %lld, scalar %lld", k->name, (long long)n, t,
                   (long long)got, (long long)ref);
        }
    }
    /* the scalar references themselves on hand-made rows */
    CHECK(pf_kernels_get(PF_LEVEL_SCALAR)->first_above((const float[]){NAN, 1.0f, 3.0f}, 3, 2.0f) == 2);
    CHECK(pf_kernels_get(PF_LEVEL_SCALAR)->first_above((const float[]){NAN, 1.0f, 3.0f}, 3, 3.0f) == 3);
    float h[6] = {1.0f, NAN, 3.0f, -0.0f, 3.0f, 2.0f};
    CHECK(pf_kernels_get(PF_LEVEL_SCALAR)->argmax(h, 6) == 2);
    free(x);
    printf("    %d SIMD argmax calls equal to the scalar loop\n", checked);
}

TEST(kernels_rope_vs_double) {
    const int hd = 64, nh = 3;
    const int64_t positions[] = {0, 1, 17, 4095, 30000};
    float x[3 * 64], x0[3 * 64];
    uint64_t s = 31;
    fill(x0, nh * hd, 2.0f, &s);
    for (int pi = 0; pi < 5; pi++) {
        int64_t pos = positions[pi];
        memcpy(x, x0, sizeof x);
        pf_rope_neox(x, nh, hd, pos, 1e6f);
        for (int h = 0; h < nh; h++)
            for (int i = 0; i < hd / 2; i++) {
                double ang = (double)pos * pow(1e6, -2.0 * i / hd);
                double a = x0[h * hd + i], b = x0[h * hd + i + hd / 2];
                double ra = a * cos(ang) - b * sin(ang), rb = a * sin(ang) + b * cos(ang);
                double tol = 1e-6 * (fabs(a) + fabs(b)) + 1e-7;
                CHECKF(fabs(x[h * hd + i] - ra) <= tol && fabs(x[h * hd + i + hd / 2] - rb) <= tol,
                       "pos=%lld h=%d i=%d", (long long)pos, h, i);
            }
        if (pos == 0) CHECK(memcmp(x, x0, sizeof x) == 0);
    }
}

TEST(kernels_softmax) {
    float x[37];
    double e[37], sum = 0;
    uint64_t s = 41;
    fill(x, 37, 20.0f, &s);
    x[5] = -INFINITY;
    double mx = -INFINITY;
    for (int i = 0; i < 37; i++) mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < 37; i++) sum += e[i] = exp((double)x[i] - mx);
    pf_softmax(x, 37);
    double tot = 0;
    for (int i = 0; i < 37; i++) {
        CHECK(fabs(x[i] - e[i] / sum) <= 1e-6 * (e[i] / sum) + 1e-12);
        tot += x[i];
    }
    CHECK(x[5] == 0.0f);
    CHECK(fabs(tot - 1.0) < 1e-6);
    float m[3] = {-INFINITY, -INFINITY, -INFINITY};
    pf_softmax(m, 3);
    CHECK(fabsf(m[0] - 1.0f / 3) < 1e-7f && m[0] == m[2]);
}

/* ---- attention ---- */

typedef struct {
    int n_head, n_kv, hd;
    int64_t pos0, n_keys, window;
    int B, causal;
} attn_case;

/* Naive two-pass softmax attention in double over row-major keys and values (key j of KV head h
 * at j * kvs + h * hd). */
static void attention_ref(const attn_case *c, const float *q, int64_t ldq, const float *K,
                          const float *V, int64_t kvs, double *out) {
    int group = c->n_head / c->n_kv;
    double *sc = malloc((size_t)(c->n_keys + 1) * sizeof(double));
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->n_head; h++) {
            int64_t pos = c->pos0 + b;
            int kvh = h / group;
            double mx = -INFINITY;
            for (int64_t j = 0; j < c->n_keys; j++) {
                int vis = (!c->causal || j <= pos) && (c->window == 0 || pos - j < c->window);
                sc[j] = -INFINITY;
                if (!vis) continue;
                double d = 0;
                for (int i = 0; i < c->hd; i++)
                    d += (double)q[b * ldq + h * c->hd + i] * K[j * kvs + kvh * c->hd + i];
                sc[j] = d / sqrt((double)c->hd);
                if (sc[j] > mx) mx = sc[j];
            }
            double *o = out + ((size_t)b * c->n_head + h) * c->hd, sum = 0;
            for (int i = 0; i < c->hd; i++) o[i] = 0;
            if (mx == -INFINITY) continue;
            for (int64_t j = 0; j < c->n_keys; j++) {
                if (sc[j] == -INFINITY) continue;
                double p = exp(sc[j] - mx);
                sum += p;
                for (int i = 0; i < c->hd; i++) o[i] += p * V[j * kvs + kvh * c->hd + i];
            }
            for (int i = 0; i < c->hd; i++) o[i] /= sum;
        }
    free(sc);
}

static float *to_floats(const pf_half *h, int64_t n) {
    float *f = malloc((size_t)(n + 1) * sizeof *f);
    for (int64_t i = 0; i < n; i++) f[i] = pf_fp16_to_fp32(h[i]);
    return f;
}

static void make_kv(int64_t n_keys, int64_t kvs, pf_half **K, pf_half **V, uint64_t seed) {
    uint64_t s = seed;
    *K = malloc((size_t)(n_keys * kvs + 1) * sizeof(pf_half));
    *V = malloc((size_t)(n_keys * kvs + 1) * sizeof(pf_half));
    for (int64_t i = 0; i < n_keys * kvs; i++) {
        (*K)[i] = pf_fp32_to_fp16(2.0f * rng_unit(&s));
        (*V)[i] = pf_fp32_to_fp16(rng_unit(&s));
    }
}

/* The same keys and values in the cache layout pf_attention reads, with a head stride one tile
 * longer than needed; every slot no key was written to holds NaN, so a score or value of an
 * invisible or missing position that leaked into a result would show. */
static int64_t cache_layout(const attn_case *c, int64_t n_keys, const pf_half *K, const pf_half *V, int64_t kvs,
                            pf_half **Kc, pf_half **Vc) {
    int64_t hs = pf_kv_head_stride(n_keys, c->hd) + PF_KV_TILE * c->hd;
    size_t n = (size_t)(hs * c->n_kv);
    *Kc = malloc(n * sizeof(pf_half));
    *Vc = malloc(n * sizeof(pf_half));
    for (size_t i = 0; i < n; i++) (*Kc)[i] = (*Vc)[i] = 0x7e00; /* f16 NaN */
    for (int64_t j = 0; j < n_keys; j++) {
        pf_kv_row_put(*Kc, 1, hs, c->n_kv, c->hd, j, K + j * kvs);
        pf_kv_row_put(*Vc, 0, hs, c->n_kv, c->hd, j, V + j * kvs);
    }
    return hs;
}

/* The case's views of an f16 cache (cache_layout) and the rows of one call. */
static pf_kv_view f16_view(const attn_case *c, const pf_half *Kc, const pf_half *Vc, int64_t hs) {
    return (pf_kv_view){.type = PF_KV_F16, .k = Kc, .v = Vc, .head_stride = hs, .n_kv_head = c->n_kv, .head_dim = c->hd};
}

static pf_attn_rows case_rows(const attn_case *c, const float *q, int64_t ldq, float *out, int64_t ldo) {
    return (pf_attn_rows){.q = q, .ldq = ldq, .B = c->B, .n_head = c->n_head, .pos0 = c->pos0, .n_keys = c->n_keys,
                          .causal = c->causal, .window = c->window, .out = out, .ldo = ldo};
}

/* Row b of rows alone, the cache cut after it (causal rows one at a time). */
static pf_attn_rows one_row(pf_attn_rows r, int b, int64_t n_keys) {
    r.q += b * r.ldq, r.out += b * r.ldo, r.pos0 += b, r.B = 1, r.n_keys = n_keys;
    return r;
}

TEST(kernels_attention_vs_double) {
    const attn_case cases[] = {
        {14, 2, 64, 100, 105, 0, 5, 1},  /* causal decode/verify, GQA 7:1 */
        {14, 2, 64, 40, 56, 0, 16, 0},   /* non-causal block (draft style) */
        {4, 4, 32, 200, 204, 32, 4, 1},  /* causal + sliding window */
        {8, 2, 128, 127, 130, 0, 3, 1},  /* crosses a key-chunk boundary */
        {4, 2, 64, 50, 80, 20, 4, 0},    /* non-causal with window */
        {2, 1, 64, 0, 1, 0, 1, 1},       /* first token */
        {2, 1, 64, 0, 0, 0, 1, 0},       /* empty cache: zeros */
        {6, 3, 48, 300, 303, 0, 3, 1},   /* head dim not a multiple of 32 */
        {4, 2, 20, 30, 33, 0, 3, 1},     /* head dim not a multiple of 8: generic path */
        {20, 1, 16, 30, 33, 0, 2, 1},    /* 20 query heads on one KV head: generic path */
        {14, 2, 64, 1000, 1003, 0, 3, 1},/* many chunks, running max rescaled */
    };
    pf_pool *pool = pf_pool_create(3);
    for (int ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++) {
        const attn_case *c = &cases[ci];
        int64_t kvs = (int64_t)c->n_kv * c->hd + 8; /* padded key stride */
        int64_t ldq = (int64_t)c->n_head * c->hd + 5, ldo = (int64_t)c->n_head * c->hd + 3;
        pf_half *K, *V;
        make_kv(c->n_keys, kvs, &K, &V, 77 + ci);
        pf_half *Kc, *Vc;
        int64_t hs = cache_layout(c, c->n_keys, K, V, kvs, &Kc, &Vc);
        float *q = malloc((size_t)c->B * ldq * sizeof(float));
        uint64_t s = 5 + ci;
        fill(q, c->B * ldq, 1.5f, &s);
        double *ref = malloc((size_t)c->B * c->n_head * c->hd * sizeof(double));
        float *Kf = to_floats(K, c->n_keys * kvs), *Vf = to_floats(V, c->n_keys * kvs);
        attention_ref(c, q, ldq, Kf, Vf, kvs, ref);
        free(Kf), free(Vf);
        float *out = malloc((size_t)c->B * ldo * sizeof(float));
        for (int l = 0; l < PF_LEVEL_COUNT; l++) {
            const pf_kernels *k = test_kernels(l);
            if (!k) continue;
            for (int pi = 0; pi < 2; pi++) {
                const pf_kv_view v = f16_view(c, Kc, Vc, hs);
                const pf_attn_rows rows = case_rows(c, q, ldq, out, ldo);
                pf_attention(k, pi ? pool : NULL, &v, &rows);
                for (int b = 0; b < c->B; b++)
                    for (int i = 0; i < c->n_head * c->hd; i++) {
                        double r = ref[(size_t)b * c->n_head * c->hd + i];
                        CHECKF(fabs(out[b * ldo + i] - r) <= 2e-6, "%s case %d b=%d i=%d: %.8g vs %.8g",
                               k->name, ci, b, i, out[b * ldo + i], r);
                    }
            }
        }
        free(K), free(V), free(Kc), free(Vc), free(q), free(ref), free(out);
    }
    pf_pool_destroy(pool);
}

/* B causal rows at once == each row alone with the cache grown to it, bitwise; and the thread
 * count does not matter. */
TEST(kernels_attention_batch_invariance) {
    const attn_case cases[] = {{14, 2, 64, 61, 0, 0, 16, 1}, {4, 4, 32, 130, 0, 40, 9, 1},
                               {4, 2, 20, 70, 0, 0, 5, 1}};
    pf_pool *pool1 = pf_pool_create(1), *pool3 = pf_pool_create(3);
    for (int ci = 0; ci < 3; ci++) {
        const attn_case *c = &cases[ci];
        int64_t n_keys = c->pos0 + c->B, kvs = (int64_t)c->n_kv * c->hd;
        int64_t ld = (int64_t)c->n_head * c->hd;
        pf_half *K, *V;
        make_kv(n_keys, kvs, &K, &V, 900 + ci);
        pf_half *Kc, *Vc;
        int64_t hs = cache_layout(c, n_keys, K, V, kvs, &Kc, &Vc);
        float *q = malloc((size_t)c->B * ld * sizeof(float));
        uint64_t s = 50 + ci;
        fill(q, c->B * ld, 1.5f, &s);
        float *ob = malloc((size_t)c->B * ld * sizeof(float)), *o1 = malloc((size_t)c->B * ld * sizeof(float));
        float *o3 = malloc((size_t)c->B * ld * sizeof(float));
        for (int l = 0; l < PF_LEVEL_COUNT; l++) {
            const pf_kernels *k = test_kernels(l);
            if (!k) continue;
            const pf_kv_view v = f16_view(c, Kc, Vc, hs);
            pf_attn_rows rows = case_rows(c, q, ld, ob, ld);
            rows.n_keys = n_keys, rows.causal = 1;
            pf_attention(k, pool1, &v, &rows);
            rows.out = o3;
            pf_attention(k, pool3, &v, &rows);
            rows.out = o1;
            for (int b = 0; b < c->B; b++) {
                const pf_attn_rows r1 = one_row(rows, b, c->pos0 + b + 1);
                pf_attention(k, pool3, &v, &r1);
            }
            CHECKF(memcmp(ob, o1, (size_t)c->B * ld * sizeof(float)) == 0,
                   "%s case %d: B rows differ from one row at a time", k->name, ci);
            CHECKF(memcmp(ob, o3, (size_t)c->B * ld * sizeof(float)) == 0,
                   "%s case %d: 1 vs 3 threads differ", k->name, ci);
        }
        free(K), free(V), free(Kc), free(Vc), free(q), free(ob), free(o1), free(o3);
    }
    pf_pool_destroy(pool1);
    pf_pool_destroy(pool3);
}

/* One answer on every device: every level's quantized gemm (Q8_0, Q4_0, Q4_1; x86 and ARM64)
 * computes the scalar reference's per-block float operations in its order, so its outputs are the
 * scalar level's bits, for every row count 1..16 (and a partial group past 16), activation rows
 * 1..16, several widths (one block, a few, more than one k super-chunk of the x86 gemms), from the
 * GGUF layout and, on x86, from the packed one. A level this CPU lacks is reported as skipped. */
TEST(kernels_gemm_quant_levels_bitwise_scalar) {
    const pf_kernels *ks = pf_kernels_get(PF_LEVEL_SCALAR);
    static const uint32_t qt[] = {PF_TYPE_Q8_0, PF_TYPE_Q4_0, PF_TYPE_Q4_1};
    static const int64_t widths[] = {32, 96, 1024, 32 * 520};
    int compared[PF_LEVEL_COUNT] = {0}, packed_compared = 0;
    const pf_kernels *kl[PF_LEVEL_COUNT] = {0};
    for (int l = 1; l < PF_LEVEL_COUNT; l++) kl[l] = test_kernels(l); /* a named skip where it cannot run */
    for (int t = 0; t < 3; t++)
        for (int wi = 0; wi < 4; wi++)
            for (int64_t rows = 1; rows <= 17; rows++) {
                int64_t cols = widths[wi];
                if (wi == 3 && rows % 8 != 1) continue; /* the long rows: 1, 9, 17 */
                pf_weight W, P;
                make_weight(qt[t], rows, cols, (uint64_t)(t * 1000 + wi * 100 + rows + 7000), &W);
                void *packed = make_packed(&W, pf_packed_bytes, pf_pack_weight, &P);
                const int BMAX = 16;
                void *act = make_act(qt[t], cols, BMAX, (uint64_t)(t * 10 + wi + rows * 31), NULL);
                size_t ny = (size_t)BMAX * rows * sizeof(float);
                float *yref = malloc(ny), *y = malloc(ny);
                for (int B = 1; B <= BMAX; B += wi == 3 ? 5 : 1) {
                    gemm_all(ks, &W, act, B, yref);
                    for (int l = 1; l < PF_LEVEL_COUNT; l++) {
                        const pf_kernels *k = kl[l];
                        if (!k) continue;
                        for (int lay = 0; lay < 1 + k->reads_packed; lay++) {
                            memset(y, 0xff, ny);
                            gemm_all(k, lay ? &P : &W, act, B, y);
                            int64_t bad = -1;
                            for (int64_t i = 0; i < (int64_t)B * rows && bad < 0; i++)
                                if (memcmp(&y[i], &yref[i], sizeof y[i])) bad = i;
                            CHECKF(bad < 0, "%s %s%s rows=%lld cols=%lld B=%d: not the scalar bits (first at %lld: "
                                   "%.9g vs %.9g)", k->name, pf_type_info(qt[t])->name, lay ? " packed" : "",
                                   (long long)rows, (long long)cols, B, (long long)bad, bad < 0 ? 0.0 : y[bad],
                                   bad < 0 ? 0.0 : yref[bad]);
                            compared[l]++;
                            packed_compared += lay;
                        }
                    }
                }
                free((void *)W.data), free(packed), free(act), free(yref), free(y);
            }
    int levels = 0;
    for (int l = 1; l < PF_LEVEL_COUNT; l++)
        if (compared[l]) {
            printf("    %s: %d quantized gemm calls bitwise the scalar level\n", pf_level_name((pf_level)l), compared[l]);
            levels++;
        }
    printf("    (%d of them from the packed layout)\n", packed_compared);
    if (!levels) pf_test_skip_level("no SIMD level runs here: nothing to compare with the scalar level");
}

/* The ARM64 i8mm gemm on its packed layout (kernels/arm/repack_i8mm.c: groups of 4 rows, SMMLA
 * row pairs) gives the scalar level's bits, as on the GGUF layout: matrices under, at and over a
 * group of 4 rows and not a multiple of it, row ranges that start and end inside a group, several
 * widths up to rows of three k-chunks (their sums carried across chunks), every B from 1 to 16
 * (odd B pair the last row with itself; passes of 8) and 17 (a second super-pass of 16).
 * Packed == GGUF layout == scalar, bit for bit, rows outside the range untouched. Where i8mm does
 * not run (x86, other ARM64 cores) the test says so and returns. */
TEST(kernels_gemm_i8mm_packed_bitwise) {
    if (*test_level_missing(PF_LEVEL_I8MM)) {
        char why[160];
        snprintf(why, sizeof why, "i8mm %s; its packed layout is read by i8mm only", test_level_missing(PF_LEVEL_I8MM));
        pf_test_skip_level(why);
        return;
    }
    const pf_kernels *ki = pf_kernels_get(PF_LEVEL_I8MM);
#ifdef __aarch64__ /* the i8mm packer is built on ARM64 only */
    const pf_kernels *ks = pf_kernels_get(PF_LEVEL_SCALAR);
    CHECK(pf_pack_wanted(pf_kernels_best(), PF_TYPE_Q4_1) == (pf_kernels_best()->level == PF_LEVEL_I8MM));
    static const uint32_t qt[] = {PF_TYPE_Q8_0, PF_TYPE_Q4_0, PF_TYPE_Q4_1};
    static const int64_t shapes[][2] = {{1, 32}, {3, 64}, {4, 96}, {5, 256}, {13, 160}, {16, 32}, {23, 32 * 40}, {9, 32 * 130}};
    static const int64_t ranges[][2] = {{0, -1}, {1, -1}, {0, 3}, {2, 7}, {5, 13}, {6, 7}};
    int compared = 0;
    for (int t = 0; t < 3; t++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const int64_t rows = shapes[si][0], cols = shapes[si][1];
            pf_weight W, P;
            make_weight(qt[t], rows, cols, 7000 + 10 * t + si, &W);
            void *packed = make_packed(&W, pf_packed_bytes_i8mm, pf_pack_weight_i8mm, &P);
            const int BMAX = 17;
            const size_t stride = pf_act_row_bytes(qt[t], cols), ny = (size_t)BMAX * rows * sizeof(float);
            void *act = make_act(qt[t], cols, BMAX, 7100 + t + si, NULL);
            float *yr = malloc(ny), *y0 = malloc(ny), *y1 = malloc(ny);
            for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++) {
                const int64_t r0 = ranges[ri][0], r1 = ranges[ri][1] < 0 || ranges[ri][1] > rows ? rows : ranges[ri][1];
                if (r0 >= r1) continue;
                for (int nb = 1; nb <= BMAX; nb++) {
                    if (ri && nb > 4 && nb != 9 && nb != 16 && nb != 17) continue; /* every B on whole matrices */
                    for (size_t i = 0; i < (size_t)BMAX * rows; i++) yr[i] = y0[i] = y1[i] = -7.0f;
                    ks->gemm[qt[t]](&W, act, stride, nb, yr, rows, r0, r1);
                    ki->gemm[qt[t]](&W, act, stride, nb, y0, rows, r0, r1);
                    ki->gemm[qt[t]](&P, act, stride, nb, y1, rows, r0, r1);
                    CHECKF(!memcmp(y0, yr, ny) && !memcmp(y1, yr, ny),
                           "i8mm %s %lldx%lld rows [%lld, %lld) B=%d: GGUF layout %s, packed %s the scalar bits",
                           pf_type_info(qt[t])->name, (long long)rows, (long long)cols, (long long)r0, (long long)r1,
                           nb, memcmp(y0, yr, ny) ? "not" : "has", memcmp(y1, yr, ny) ? "not" : "has");
                    compared++;
                }
            }
            free((void *)W.data), free(packed), free(act), free(yr), free(y0), free(y1);
        }
    printf("    %d i8mm gemm calls, packed and GGUF layout, bitwise the scalar level\n", compared);
    CHECKF(compared > 0, "no i8mm gemm compared");
#else
    (void)ki;
#endif
}

/* The 8-bit cache (pf_kv_store_q8 / pf_attention over a PF_KV_Q8 view): row-major test keys and
 * values stored as int8 with per-(head, position) scales; the reference reads the dequantized values and the queries
 * rounded as the kernel rounds them (pf_attn_quantize_q), so this checks the kernels' arithmetic. Unwritten slots hold 127 and NaN scales, so a leak of a
 * position past the cache would show. Every level (AVX2 and AVX-512 with their integer scores;
 * head dims not a multiple of 8 take the scalar path), 1 and 3 threads; then B rows at once == one
 * row at a time, bitwise. The ARM64 levels (integer scores with SMULL or SDOT, the scalar walk)
 * must give the scalar level's bits as well. */
typedef struct {
    uint8_t *K;
    int8_t *V;
    float *ks, *vs;
    int64_t hs, ss;
    float *Kd, *Vd; /* dequantized, row-major (kvs = n_kv * hd) */
} q8_cache;

static void q8_cache_make(const attn_case *c, int64_t n_keys, uint64_t seed, q8_cache *qc) {
    int64_t kvs = (int64_t)c->n_kv * c->hd;
    qc->hs = pf_kv_head_stride(n_keys, c->hd) + PF_KV_TILE * c->hd;
    qc->ss = qc->hs / c->hd;
    qc->K = malloc((size_t)(qc->hs * c->n_kv));
    qc->V = malloc((size_t)(qc->hs * c->n_kv));
    qc->ks = malloc((size_t)(qc->ss * c->n_kv) * sizeof(float));
    qc->vs = malloc((size_t)(qc->ss * c->n_kv) * sizeof(float));
    memset(qc->K, 127, (size_t)(qc->hs * c->n_kv));
    memset(qc->V, 127, (size_t)(qc->hs * c->n_kv));
    for (int64_t i = 0; i < qc->ss * c->n_kv; i++) qc->ks[i] = qc->vs[i] = NAN;
    qc->Kd = malloc((size_t)(n_keys * kvs + 1) * sizeof(float));
    qc->Vd = malloc((size_t)(n_keys * kvs + 1) * sizeof(float));
    float *kr = malloc((size_t)kvs * sizeof(float)), *vr = malloc((size_t)kvs * sizeof(float));
    uint64_t s = seed;
    for (int64_t j = 0; j < n_keys; j++) {
        for (int64_t i = 0; i < kvs; i++) {
            kr[i] = 2.0f * rng_unit(&s);
            vr[i] = rng_unit(&s);
        }
        pf_kv_store_q8(qc->K, qc->V, qc->ks, qc->vs, qc->hs, qc->ss, c->n_kv, c->hd, j, kr, vr);
        for (int h = 0; h < c->n_kv; h++)
            for (int d = 0; d < c->hd; d++) {
                int kq = qc->K[h * qc->hs + pf_kv_key_at_q8(j, d, c->hd)] - 128, vq = qc->V[h * qc->hs + j * c->hd + d];
                qc->Kd[j * kvs + h * c->hd + d] = (float)kq * qc->ks[h * qc->ss + j];
                qc->Vd[j * kvs + h * c->hd + d] = (float)vq * qc->vs[h * qc->ss + j];
                /* the quantization itself: within half a step of the stored row */
                CHECK(fabsf(qc->Kd[j * kvs + h * c->hd + d] - kr[h * c->hd + d]) <= 0.5f * qc->ks[h * qc->ss + j] * 1.0001f);
            }
    }
    free(kr), free(vr);
}

static pf_kv_view q8_view(const attn_case *c, const q8_cache *qc) {
    return (pf_kv_view){.type = PF_KV_Q8, .k8 = qc->K, .v8 = qc->V, .ks = qc->ks, .vs = qc->vs, .head_stride = qc->hs,
                        .scale_stride = qc->ss, .n_kv_head = c->n_kv, .head_dim = c->hd};
}

static void q8_cache_free(q8_cache *qc) { free(qc->K), free(qc->V), free(qc->ks), free(qc->vs), free(qc->Kd), free(qc->Vd); }

TEST(kernels_attention_q8) {
    const attn_case cases[] = {
        {14, 2, 64, 100, 105, 0, 5, 1},   /* causal decode/verify, GQA 7:1 */
        {14, 2, 64, 40, 56, 0, 16, 0},    /* non-causal block */
        {4, 4, 32, 200, 204, 32, 4, 1},   /* causal + sliding window */
        {8, 2, 128, 127, 130, 0, 3, 1},   /* crosses a key-chunk boundary */
        {16, 8, 128, 30, 38, 0, 8, 1},    /* Qwen3-0.6B heads, group of 2 (values converted on the fly) */
        {6, 3, 48, 300, 303, 0, 3, 1},    /* head dim not a multiple of 32 */
        {4, 2, 20, 30, 33, 0, 3, 1},      /* head dim not a multiple of 16: scalar path */
        {14, 2, 64, 1000, 1003, 0, 3, 1}, /* many chunks, running max rescaled */
    };
    int vnni_compared = 0;
    pf_pool *pool1 = pf_pool_create(1), *pool3 = pf_pool_create(3);
    for (int ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++) {
        const attn_case *c = &cases[ci];
        q8_cache qc;
        q8_cache_make(c, c->n_keys, 300 + ci, &qc);
        int64_t ld = (int64_t)c->n_head * c->hd, kvs = (int64_t)c->n_kv * c->hd;
        float *q = malloc((size_t)c->B * ld * sizeof(float)), *out = malloc((size_t)c->B * ld * sizeof(float));
        float *o1 = malloc((size_t)c->B * ld * sizeof(float));
        uint64_t s = 40 + ci;
        fill(q, c->B * ld, 1.5f, &s);
        double *ref = malloc((size_t)c->B * ld * sizeof(double));
        float *qr = malloc((size_t)c->B * ld * sizeof(float)); /* the queries as the kernel rounds them */
        for (int64_t r = 0; r < (int64_t)c->B * c->n_head; r++) {
            int8_t q8[PF_KV_Q8_MAX_HD];
            float qs;
            int32_t qsum, sum = 0;
            pf_attn_quantize_q(q + r * c->hd, c->hd, q8, &qs, &qsum);
            for (int d = 0; d < c->hd; d++) {
                qr[r * c->hd + d] = (float)q8[d] * qs;
                sum += q8[d];
                CHECK(fabsf(qr[r * c->hd + d] - q[r * c->hd + d]) <= 0.5f * qs * 1.0001f);
            }
            CHECK(sum == qsum);
        }
        attention_ref(c, qr, ld, qc.Kd, qc.Vd, kvs, ref);
        free(qr);
        float *oscal = malloc((size_t)c->B * ld * sizeof(float)); /* the scalar level's output */
        float *oavx2 = malloc((size_t)c->B * ld * sizeof(float));  /* the AVX2 level's */
        int have_avx2 = 0;
        for (int l = 0; l < PF_LEVEL_COUNT; l++) {
            const pf_kernels *k = test_kernels(l);
            if (!k) continue;
            for (int pi = 0; pi < 2; pi++) {
                const pf_kv_view v = q8_view(c, &qc);
                const pf_attn_rows rows = case_rows(c, q, ld, out, ld);
                pf_attention(k, pi ? pool3 : pool1, &v, &rows);
                for (int64_t i = 0; i < c->B * ld; i++)
                    CHECKF(fabs(out[i] - ref[i]) <= 5e-6, "%s case %d i=%lld: %.8g vs %.8g", k->name, ci, (long long)i,
                           out[i], ref[i]);
                if (l == PF_LEVEL_SCALAR && pi == 0) memcpy(oscal, out, (size_t)c->B * ld * sizeof(float));
                if (l != PF_LEVEL_SCALAR)
                    CHECKF(memcmp(out, oscal, (size_t)c->B * ld * sizeof(float)) == 0,
                           "%s case %d (%d threads): not the scalar level's bits", k->name, ci, pi ? 3 : 1);
                /* AVX-VNNI: the AVX2 walk with vpdpbusd scores, exact integers: the AVX2 level's bits */
                if (l == PF_LEVEL_AVX2 && pi == 0) memcpy(oavx2, out, (size_t)c->B * ld * sizeof(float)), have_avx2 = 1;
                if (l == PF_LEVEL_AVXVNNI) {
                    CHECK(have_avx2);
                    CHECKF(memcmp(out, oavx2, (size_t)c->B * ld * sizeof(float)) == 0,
                           "avxvnni case %d (%d threads): not the avx2 level's bits", ci, pi ? 3 : 1);
                    vnni_compared++;
                }
            }
            if (!c->causal) continue;
            const pf_kv_view v = q8_view(c, &qc);
            const pf_attn_rows rows = case_rows(c, q, ld, o1, ld);
            for (int b = 0; b < c->B; b++) { /* causal rows one at a time, the cache cut at each */
                const pf_attn_rows r1 = one_row(rows, b, c->pos0 + b + 1 < c->n_keys ? c->pos0 + b + 1 : c->n_keys);
                pf_attention(k, pool3, &v, &r1);
            }
            CHECKF(memcmp(out, o1, (size_t)c->B * ld * sizeof(float)) == 0, "%s case %d: B rows != one at a time",
                   k->name, ci);
        }
        q8_cache_free(&qc);
        free(q), free(out), free(o1), free(ref), free(oscal), free(oavx2);
    }
    pf_pool_destroy(pool1);
    pf_pool_destroy(pool3);
    if (pf_kernels_get(PF_LEVEL_AVXVNNI))
        printf("    avxvnni (VEX vpdpbusd, native): %d calls bitwise equal to avx2's\n", vnni_compared);
    else
        printf("    avxvnni: skipped (this CPU lacks AVX-VNNI)\n");
}

/* One answer on every CPU: every level's attention (f16 and 8-bit cache; the x86 multi-row and
 * one-row kernels, the ARM walks, the scalar fallback for shapes a level does not take) is the
 * scalar level's bits: GQA groups 1..7 and 16, head dims 16..256 and ones no level's SIMD takes,
 * 1..16 rows, causal, windowed and block (non-causal) masks, depths over many chunks, 1 and 3
 * threads. */
TEST(kernels_attention_levels_bitwise_scalar) {
    const attn_case cases[] = {
        {14, 2, 64, 100, 105, 0, 5, 1},  {14, 2, 64, 40, 56, 0, 16, 0}, {4, 4, 32, 200, 204, 32, 4, 1},
        {8, 2, 128, 127, 130, 0, 3, 1},  {4, 2, 64, 50, 80, 20, 4, 0},  {2, 1, 64, 0, 1, 0, 1, 1},
        {6, 3, 48, 300, 303, 0, 3, 1},   {4, 2, 20, 30, 33, 0, 3, 1},   {16, 8, 128, 30, 38, 0, 8, 1},
        {14, 2, 64, 1000, 1016, 0, 16, 1}, {7, 7, 16, 70, 72, 0, 2, 1}, {2, 1, 256, 90, 99, 0, 9, 1},
        {32, 2, 64, 17, 18, 0, 1, 1},    {14, 2, 64, 511, 513, 0, 2, 1},
    };
    const pf_kernels *ks = pf_kernels_get(PF_LEVEL_SCALAR);
    pf_pool *pool3 = pf_pool_create(3);
    int compared = 0;
    for (int ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++) {
        const attn_case *c = &cases[ci];
        int64_t ld = (int64_t)c->n_head * c->hd, kvs = (int64_t)c->n_kv * c->hd;
        size_t no = (size_t)c->B * ld * sizeof(float);
        float *q = malloc(no), *oref = malloc(no), *o = malloc(no);
        uint64_t s = 700 + ci;
        fill(q, c->B * ld, 2.5f, &s);
        pf_half *K, *V, *Kc, *Vc;
        make_kv(c->n_keys, kvs, &K, &V, 800 + ci);
        int64_t hs = cache_layout(c, c->n_keys, K, V, kvs, &Kc, &Vc);
        q8_cache qc;
        int q8_ok = c->hd % 4 == 0 && c->hd <= PF_KV_Q8_MAX_HD;
        if (q8_ok) q8_cache_make(c, c->n_keys, 900 + ci, &qc);
        for (int cache = 0; cache < 1 + q8_ok; cache++) {
            const pf_kv_view v = cache ? q8_view(c, &qc) : f16_view(c, Kc, Vc, hs);
            pf_attn_rows rows = case_rows(c, q, ld, oref, ld);
            pf_attention(ks, NULL, &v, &rows);
            rows.out = o;
            for (int l = 1; l < PF_LEVEL_COUNT; l++) {
                const pf_kernels *k = test_kernels(l);
                if (!k) continue;
                for (int pi = 0; pi < 2; pi++) {
                    memset(o, 0xff, no);
                    pf_attention(k, pi ? pool3 : NULL, &v, &rows);
                    int64_t bad = first_diff(o, oref, (int64_t)c->B * ld);
                    CHECKF(bad < 0, "%s %s cache, case %d (%d threads): not the scalar bits (first at %lld: %.9g vs %.9g)",
                           k->name, cache ? "8-bit" : "f16", ci, pi ? 3 : 1, (long long)bad, bad < 0 ? 0.0 : o[bad],
                           bad < 0 ? 0.0 : oref[bad]);
                    compared++;
                }
            }
        }
        if (q8_ok) q8_cache_free(&qc);
        free(K), free(V), free(Kc), free(Vc), free(q), free(oref), free(o);
    }
    pf_pool_destroy(pool3);
    printf("    %d attention calls of the SIMD levels bitwise the scalar level\n", compared);
}
