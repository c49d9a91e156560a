/* CPU feature detection (CPUID/XGETBV on x86, getauxval / sysctlbyname on ARM64, filled once)
 * and the kernel level it allows. */
#ifndef PF_CPU_H
#define PF_CPU_H

#include <stdbool.h>
#include <stddef.h>

/* x86 levels, then ARM64 levels; a build holds the scalar level and its own architecture's. */
typedef enum {
    PF_LEVEL_SCALAR = 0,
    PF_LEVEL_AVX2 = 1,    /* AVX2 + FMA + F16C */
    PF_LEVEL_AVXVNNI = 2, /* + AVX-VNNI (VEX vpdpbusd ymm; Alder Lake and later, Zen 5) */
    PF_LEVEL_AVX512 = 3,  /* AVX-512 F, BW, VL, DQ, VNNI */
    PF_LEVEL_NEON = 4,    /* armv8-a Advanced SIMD (every ARM64 core) */
    PF_LEVEL_DOTPROD = 5, /* + SDOT (armv8.2-a dotprod) */
    PF_LEVEL_I8MM = 6,    /* + SMMLA (armv8.6-a i8mm, optional from 8.2) */
    PF_LEVEL_COUNT
} pf_level;

typedef struct {
    bool avx2, fma, f16c;                                 /* AVX2 level needs all three */
    bool avxvnni;                                         /* AVX-VNNI level: + this (VEX encoding) */
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16; /* AVX512 level: f,bw,vl,dq,vnni */
    bool amx_tile, amx_int8, amx_bf16;
    bool neon, dotprod, i8mm;                             /* ARM64 */
} pf_cpu_features;

/* Filled on first call (thread-safe), includes the OS check that the register state is enabled. */
const pf_cpu_features *pf_cpu(void);
/* Whether this CPU can run kernels of `level`. */
bool pf_level_supported(pf_level level);
/* Whether this build holds the level's kernels (scalar and the target architecture's levels). */
bool pf_level_built(pf_level level);
/* Best supported level, capped by the environment variable PF_KERNELS (a level name of this
 * build: scalar|avx2|avxvnni|avx512 on x86-64, scalar|neon|dotprod|i8mm on ARM64). */
pf_level pf_best_level(void);
/* The best level this CPU supports that is not above cap (a model's --kernels). */
pf_level pf_level_at_most(pf_level cap);
/* The level this build names `name` (pf_level_name's names), or -1. */
int pf_level_parse(const char *name);
/* This build's level names, ", " between them, into names[size]. */
void pf_level_names(char *names, size_t size);
const char *pf_level_name(pf_level level);

#endif
