/* Internal to kernels/: the per-level dispatch tables. Each lives in the file compiled for its
 * level and is handed out by dispatch.c only after pf_level_supported() says the CPU can run it. */
#ifndef PF_KERNELS_IMPL_H
#define PF_KERNELS_IMPL_H

#include <math.h>

#include "kernels/float_order.h"
#include "kernels/kernels.h"

extern const pf_kernels pf_kernels_scalar_table;
extern const pf_kernels pf_kernels_avx2_table;   /* x86-64 builds only (kernels/x86/) */
extern const pf_kernels pf_kernels_avxvnni_table;
extern const pf_kernels pf_kernels_avx512_table;
extern const pf_kernels pf_kernels_neon_table;    /* ARM64 builds only (kernels/arm/) */
extern const pf_kernels pf_kernels_dotprod_table;
extern const pf_kernels pf_kernels_i8mm_table;

#define PF_FORCE_INLINE static inline __attribute__((always_inline))

/* A level's dispatch table, from the static kernels its file defines under the same names as
 * every other level's (quantize_act differs: the scalar level uses the formats/ reference), its
 * attention kernels (in their own files) and whether its quantized gemms read packed weights. */
#define PF_DEFINE_KERNELS(table, lvl, lvl_name, quantize_act_fn, attend_rows_fn, attend_group_fn, packed) \
    const pf_kernels table = {                                                                      \
        .level = lvl,                                                                               \
        .name = lvl_name,                                                                           \
        .gemm = {[PF_TYPE_F32] = gemm_f32, [PF_TYPE_F16] = gemm_f16, [PF_TYPE_BF16] = gemm_bf16,   \
                 [PF_TYPE_Q8_0] = gemm_q8_0, [PF_TYPE_Q4_0] = gemm_q4_0, [PF_TYPE_Q4_1] = gemm_q4_1}, \
        .quantize_act = quantize_act_fn,                                                            \
        .rmsnorm = rmsnorm,                                                                         \
        .swiglu = swiglu,                                                                           \
        .softmax = softmax,                                                                         \
        .axpy_f16 = axpy_f16,                                                                       \
        .f32_to_f16 = f32_to_f16,                                                                   \
        .argmax = argmax,                                                                           \
        .first_above = first_above,                                                                 \
        .attend_rows = attend_rows_fn,                                                              \
        .attend_group = attend_group_fn,                                                            \
        .reads_packed = packed,                                                                     \
    }

/* A level's gemm entries (pf_gemm_fn) over one function fn(type, W, act, stride, B, y, ldy, r0, r1)
 * that it inlines with the weight type as a constant: gemm_f32 / gemm_f16 / gemm_bf16 or
 * gemm_q8_0 / gemm_q4_0 / gemm_q4_1. */
#define PF_GEMM_ENTRY(name, fn, type)                                                                  \
    static void name(const pf_weight *W, const void *act, size_t stride, int B, float *y, int64_t ldy, \
                     int64_t r0, int64_t r1) {                                                         \
        fn(type, W, act, stride, B, y, ldy, r0, r1);                                                   \
    }
#define PF_GEMM_ENTRIES_FLOAT(fn) \
    PF_GEMM_ENTRY(gemm_f32, fn, PF_TYPE_F32) PF_GEMM_ENTRY(gemm_f16, fn, PF_TYPE_F16) PF_GEMM_ENTRY(gemm_bf16, fn, PF_TYPE_BF16)
#define PF_GEMM_ENTRIES_QUANT(fn) \
    PF_GEMM_ENTRY(gemm_q8_0, fn, PF_TYPE_Q8_0) PF_GEMM_ENTRY(gemm_q4_0, fn, PF_TYPE_Q4_0) PF_GEMM_ENTRY(gemm_q4_1, fn, PF_TYPE_Q4_1)

/* softmax's first step as the reference takes it: *mx = the maximum of x[0..n) (NaNs skipped).
 * Returns 0 when nothing is left to do: n <= 0, or a row of only -inf, made uniform (not NaN). */
static inline int pf_softmax_max(float *x, int64_t n, float *mx) {
    if (n <= 0) return 0;
    *mx = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (x[i] > *mx) *mx = x[i];
    if (*mx == -INFINITY) {
        for (int64_t i = 0; i < n; i++) x[i] = 1.0f / (float)n;
        return 0;
    }
    return 1;
}

/* For helpers that fill a caller's stack scratch which the caller then reads. GCC 12.2 (-O1 and
 * -O2) was seen deleting such a call as dead: DSE used the helper's modref summary and judged all
 * its stores unread (the AVX2 gemm returned zeros; tests/test_kernels.c catches it). noipa keeps
 * interprocedural summaries out of it; the call costs nothing next to the work on the rows. */
#if defined(__clang__)
#define PF_NOIPA __attribute__((noinline)) /* clang has no noipa (nor GCC's modref summaries) */
#else
#define PF_NOIPA __attribute__((noipa))
#endif

/* One pf_attention call, shared by attention.c and every level's attention kernels. */
typedef struct pf_attn_job {
    const pf_kernels *k;
    const float *q;
    int64_t ldq;
    int B, n_head, n_kv_head, hd;
    const pf_half *K, *V;
    const uint8_t *K8;       /* the 8-bit cache instead of K, V (q8 = 1) */
    const int8_t *V8;
    const float *ks, *vs;    /* its scales, head h at + h * scale_stride */
    int64_t scale_stride;
    int q8;
    int64_t head_stride, pos0, n_keys;
    int causal;
    int64_t window;
    float *out;
    int64_t ldo;
    float scale;
    int next; /* next unclaimed task, used atomically */
    int rows_per_task; /* consecutive rows of one task (they share the K/V conversion) */
} pf_attn_job;

#define PF_ATTN_KCHUNK 64 /* keys per online-softmax step */

/* One online-softmax step: raise the running max *mx to the chunk's max cmax, scaling the running
 * sum's PF_NPART partials l (partial k: the chunk's keys t with t % 16 == k) by exp(old - new).
 * Returns that factor (1 when nothing changed): the caller scales its accumulated output by it. */
static inline float pf_attn_raise_max(float cmax, float *mx, float *l) {
    float f = 1.0f;
    if (cmax > *mx) {
        if (*mx != -INFINITY) {
            f = pf_exp_ref(*mx - cmax);
            for (int k = 0; k < PF_NPART; k++) l[k] *= f;
        }
        *mx = cmax;
    }
    return f;
}

/* The same for a chunk of n scores s. */
static inline float pf_attn_chunk_max(const float *s, int n, float *mx, float *l) {
    float cmax = -INFINITY;
    for (int t = 0; t < n; t++)
        if (s[t] > cmax) cmax = s[t];
    return pf_attn_raise_max(cmax, mx, l);
}

/* Keys [*lo, *hi) visible to row b: they depend only on the row's position, the mask and the
 * window, never on B or on how long the cache is beyond what the row may see. */
static inline void pf_attn_range(const pf_attn_job *j, int b, int64_t *lo, int64_t *hi) {
    int64_t pos = j->pos0 + b;
    *lo = 0;
    *hi = j->n_keys;
    if (j->causal && pos + 1 < *hi) *hi = pos + 1;
    if (j->window > 0 && pos - j->window + 1 > *lo) *lo = pos - j->window + 1;
}

/* The levels' attention kernels (pf_kernels.attend_rows / attend_group, whose contract they
 * follow), each in its level's file. The scalar reference (kernels_scalar.c) walks head by head:
 * each score one fmaf chain over the head dim in order, softmax weights by pf_exp_ref, their sum
 * in PF_NPART partials (float_order.h), each output element one fmaf chain in key order (the
 * level's axpy_f16); it takes every shape, so it is also the fallback of the others. */
int pf_attend_group_scalar(const pf_attn_job *j, int b, int kvh);
/* x86 (kernels/x86/attention_*.c): both caches, hd a multiple of 8 (AVX2, AVX-VNNI) or 16
 * (AVX-512), up to 256, groups up to 16 query heads, up to 8 rows without a window. */
int pf_attend_rows_avx2(const pf_attn_job *j, int b0, int nr, int kvh);
int pf_attend_group_avx2(const pf_attn_job *j, int b, int kvh);
int pf_attend_rows_avxvnni(const pf_attn_job *j, int b0, int nr, int kvh);
int pf_attend_group_avxvnni(const pf_attn_job *j, int b, int kvh);
int pf_attend_rows_avx512(const pf_attn_job *j, int b0, int nr, int kvh);
int pf_attend_group_avx512(const pf_attn_job *j, int b, int kvh);
/* ARM64 (kernels/arm/): the f16 cache with the NEON score loop (attention_neon.c), the 8-bit
 * cache with widening multiplies (NEON level) or SDOT (dotprod and i8mm levels); all bitwise the
 * scalar reference. */
int pf_attend_group_neon(const pf_attn_job *j, int b, int kvh);
int pf_attend_group_dotprod(const pf_attn_job *j, int b, int kvh);

#endif
