/* CPU feature detection (CPUID/XGETBV, filled once) and the kernel level it allows. */
#ifndef PF_CPU_H
#define PF_CPU_H

#include <stdbool.h>

typedef enum { PF_LEVEL_SCALAR = 0, PF_LEVEL_AVX2 = 1, PF_LEVEL_AVX512 = 2, PF_LEVEL_COUNT } pf_level;

typedef struct {
    bool avx2, fma, f16c;                                 /* AVX2 level needs all three */
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16; /* AVX512 level: f,bw,vl,dq,vnni */
    bool amx_tile, amx_int8, amx_bf16;
} pf_cpu_features;

/* Filled on first call (thread-safe), includes the OS check that the register state is enabled. */
const pf_cpu_features *pf_cpu(void);
/* Whether this CPU can run kernels of `level`. */
bool pf_level_supported(pf_level level);
/* Best supported level, capped by the environment variable PF_KERNELS=scalar|avx2|avx512. */
pf_level pf_best_level(void);
const char *pf_level_name(pf_level level);

#endif
