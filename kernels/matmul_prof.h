/* The matmul profile tools/forward_prof.c reads (kernels/dispatch.c fills it). */
#ifndef PF_MATMUL_PROF_H
#define PF_MATMUL_PROF_H

#include <stdint.h>

/* Matmul profile (tools/forward_prof.c): while pf_matmul_prof_on points at one, every pf_act_prepare
 * and pf_matmul_n adds its wall time there, by the shape of its first weight (slot: the first
 * PF_PROF_SHAPES distinct (rows, cols, parts); later shapes are not recorded), and each pool
 * thread its time inside gemm calls. NULL (the default) records nothing. One context at a time. */
#define PF_PROF_SHAPES 8
#define PF_PROF_THREADS 4
typedef struct {
    int64_t rows, cols, parts;           /* the first weight's shape, the weights in the call */
    int64_t calls;
    double prepare_s;                    /* activation quantization (the caller, before the run) */
    double matmul_s;                     /* pf_matmul_n, wall */
    double busy_s[PF_PROF_THREADS];      /* per thread: inside gemm calls */
    double blocks;                       /* output blocks: weight rows x activation rows x cols/32 */
} pf_prof_shape;
typedef struct {
    int n;
    pf_prof_shape s[PF_PROF_SHAPES];
    int64_t last_cols;                   /* the width of the last prepare (attributes it to a shape) */
    double last_prepare_s;
} pf_matmul_prof;
extern pf_matmul_prof *pf_matmul_prof_on;

#endif
