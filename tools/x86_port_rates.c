/* Measurement behind docs/performance.md "Where a multi-row forward goes on the AMD EPYC VM" (not
 * part of the build): the issue rate of the instructions the AVX2 quantized gemm is made of, on one
 * core, and of the mixes it issues. It tells a 256-bit datapath (a ymm instruction as fast as its
 * xmm form) from a 128-bit one (each ymm instruction two halves, half the xmm rate), and whether
 * the integer multiply has one pipe or two: what bounds the multi-row gemm on a given x86 CPU.
 * The clock is read from a chain of dependent adds (one per cycle on every x86 core).
 *   cc -O2 -std=c11 -Wall -Wextra -mavx2 -mfma tools/x86_port_rates.c -o /tmp/x86_port_rates
 *   /tmp/x86_port_rates        (run on a quiet machine) */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const int mem[16] __attribute__((aligned(64)));

/* 8 independent instructions reading ymm15/ymm14 (or xmm), writing registers 0..7 */
#define IND(op, r) \
    op " %%" r "15,%%" r "14,%%" r "0\n" op " %%" r "15,%%" r "14,%%" r "1\n" op " %%" r "15,%%" r "14,%%" r "2\n" \
    op " %%" r "15,%%" r "14,%%" r "3\n" op " %%" r "15,%%" r "14,%%" r "4\n" op " %%" r "15,%%" r "14,%%" r "5\n" \
    op " %%" r "15,%%" r "14,%%" r "6\n" op " %%" r "15,%%" r "14,%%" r "7\n"
/* 8 more writing registers 8..13 */
#define IND2(op)                                                                                             \
    op " %%ymm15,%%ymm14,%%ymm8\n" op " %%ymm15,%%ymm14,%%ymm9\n" op " %%ymm15,%%ymm14,%%ymm10\n" op           \
       " %%ymm15,%%ymm14,%%ymm11\n" op " %%ymm15,%%ymm14,%%ymm12\n" op " %%ymm15,%%ymm14,%%ymm13\n" op         \
       " %%ymm15,%%ymm14,%%ymm8\n" op " %%ymm15,%%ymm14,%%ymm9\n"
#define BCAST8                                                                                               \
    "vpbroadcastd (%0),%%ymm8\n vpbroadcastd 4(%0),%%ymm9\n vpbroadcastd 8(%0),%%ymm10\n"                    \
    "vpbroadcastd 12(%0),%%ymm11\n vpbroadcastd 16(%0),%%ymm12\n vpbroadcastd 20(%0),%%ymm13\n"              \
    "vpbroadcastd 24(%0),%%ymm8\n vpbroadcastd 28(%0),%%ymm9\n"
#define CVT8                                                                                                 \
    "vcvtdq2ps %%ymm15,%%ymm8\n vcvtdq2ps %%ymm15,%%ymm9\n vcvtdq2ps %%ymm15,%%ymm10\n"                       \
    "vcvtdq2ps %%ymm15,%%ymm11\n vcvtdq2ps %%ymm15,%%ymm12\n vcvtdq2ps %%ymm15,%%ymm13\n"                     \
    "vcvtdq2ps %%ymm15,%%ymm8\n vcvtdq2ps %%ymm15,%%ymm9\n"

#define CLOBBERS                                                                                             \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
        "xmm13", "memory"

/* cycles per pass of body (n instructions), printed as instructions per cycle */
#define RATE(name, body, n)                                                               \
    do {                                                                                  \
        const long m = 20000000;                                                          \
        double t0 = now();                                                                \
        for (long i = 0; i < m; i++) __asm__ volatile(body ::"r"(mem) : CLOBBERS);        \
        double cyc = (now() - t0) * 1e9 * ghz / (double)m;                                \
        printf("| %s | %.2f | %.2f |\n", name, cyc, (double)(n) / cyc);                   \
    } while (0)

int main(void) {
    const long n = 100000000;
    double t0 = now();
    for (long i = 0; i < n; i++)
        __asm__ volatile("add $1,%%rax\n add $1,%%rax\n add $1,%%rax\n add $1,%%rax\n"
                         "add $1,%%rax\n add $1,%%rax\n add $1,%%rax\n add $1,%%rax\n" ::: "rax");
    const double ghz = 8.0 * (double)n / (now() - t0) / 1e9;
    printf("clock (dependent adds): %.2f GHz\n\n| instructions | cycles per pass | per cycle |\n|---|---|---|\n", ghz);
    __asm__ volatile("vpxor %%ymm15,%%ymm15,%%ymm15\n vpxor %%ymm14,%%ymm14,%%ymm14" ::: "xmm14", "xmm15");
    RATE("8 vpmaddubsw ymm", IND("vpmaddubsw", "ymm"), 8);
    RATE("8 vpmaddubsw xmm", IND("vpmaddubsw", "xmm"), 8);
    RATE("8 vpmaddwd ymm", IND("vpmaddwd", "ymm"), 8);
    RATE("8 vpaddw ymm", IND("vpaddw", "ymm"), 8);
    RATE("8 vpand ymm", IND("vpand", "ymm"), 8);
    RATE("8 vmulps ymm", IND("vmulps", "ymm"), 8);
    RATE("8 vaddps ymm", IND("vaddps", "ymm"), 8);
    RATE("8 vcvtdq2ps ymm", CVT8, 8);
    RATE("8 vpbroadcastd ymm from memory", BCAST8, 8);
    RATE("8 vpmaddubsw + 8 vpbroadcastd", IND("vpmaddubsw", "ymm") BCAST8, 16);
    RATE("8 vpmaddubsw + 16 vpaddw", IND("vpmaddubsw", "ymm") IND2("vpaddw") IND2("vpaddw"), 24);
    RATE("8 vpmaddubsw + 8 vpaddw + 8 vmulps", IND("vpmaddubsw", "ymm") IND2("vpaddw") IND2("vmulps"), 24);
    return 0;
}
