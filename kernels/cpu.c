/* CPU feature detection. x86: a feature counts only if CPUID reports it AND the OS saves the
 * register state it needs (XCR0 via XGETBV), otherwise the first AVX instruction would fault.
 * ARM64: the kernel's view (getauxval hwcaps on Linux/Android, sysctlbyname on Apple), which is
 * what user space may execute; an i8mm instruction on a dotprod-only phone core is SIGILL. */
#include "kernels/cpu.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define PF_X86 1
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#define PF_ARM_APPLE 1
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define PF_ARM_LINUX 1 /* Linux and Android */
#endif

/* The only global mutable state of the library: filled once by pf_cpu(). */
static pf_cpu_features g_cpu;
static pthread_once_t g_cpu_once = PTHREAD_ONCE_INIT;

#ifdef PF_X86
static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

#ifdef PF_ARM_APPLE
static bool sysctl_flag(const char *name) {
    int v = 0;
    size_t n = sizeof v;
    return sysctlbyname(name, &v, &n, NULL, 0) == 0 && v != 0;
}
#endif

static void detect(void) {
    pf_cpu_features f;
    memset(&f, 0, sizeof f);
#if defined(PF_ARM_LINUX)
    /* bit numbers from the kernel's uapi asm/hwcap.h, stable ABI (older libc headers lack some) */
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    f.neon = (hw >> 1) & 1;                  /* HWCAP_ASIMD */
    f.dotprod = f.neon && ((hw >> 20) & 1);  /* HWCAP_ASIMDDP */
    f.i8mm = f.neon && ((hw2 >> 13) & 1);    /* HWCAP2_I8MM */
#elif defined(PF_ARM_APPLE)
    f.neon = true; /* every Apple arm64 core */
    f.dotprod = sysctl_flag("hw.optional.arm.FEAT_DotProd");
    f.i8mm = sysctl_flag("hw.optional.arm.FEAT_I8MM");
#elif defined(__aarch64__)
    f.neon = true; /* mandatory in armv8-a; no portable way to ask for the optional features */
#endif
#ifdef PF_X86
    unsigned a, b, c, d;
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf < 1 || !__get_cpuid(1, &a, &b, &c, &d)) goto done;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    bool fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    /* XCR0 bit 1 SSE, bit 2 AVX (YMM upper); bits 5..7 opmask, ZMM_Hi256, Hi16_ZMM;
     * bits 17, 18 AMX TILECFG/TILEDATA. */
    bool os_ymm = avx && (xcr0 & 0x6) == 0x6;
    bool os_zmm = os_ymm && (xcr0 & 0xe0) == 0xe0;
    bool os_amx = (xcr0 & 0x60000) == 0x60000;
    if (max_leaf < 7) {
        f.fma = os_ymm && fma;
        f.f16c = os_ymm && f16c;
        goto done;
    }
    unsigned a7, b7, c7, d7, a71 = 0, b71, c71, d71;
    __cpuid_count(7, 0, a7, b7, c7, d7);
    if (a7 >= 1) __cpuid_count(7, 1, a71, b71, c71, d71);
    (void)b71; (void)c71; (void)d71;
    f.fma = os_ymm && fma;
    f.f16c = os_ymm && f16c;
    f.avx2 = os_ymm && ((b7 >> 5) & 1);
    f.avx512f = os_zmm && ((b7 >> 16) & 1);
    f.avx512dq = f.avx512f && ((b7 >> 17) & 1);
    f.avx512bw = f.avx512f && ((b7 >> 30) & 1);
    f.avx512vl = f.avx512f && ((b7 >> 31) & 1);
    f.avx512vnni = f.avx512f && ((c7 >> 11) & 1);
    f.avx512bf16 = f.avx512f && ((a71 >> 5) & 1);
    f.avxvnni = os_ymm && ((a71 >> 4) & 1); /* leaf 7 subleaf 1 EAX bit 4; YMM state is enough */
    f.amx_bf16 = os_amx && ((d7 >> 22) & 1);
    f.amx_tile = os_amx && ((d7 >> 24) & 1);
    f.amx_int8 = os_amx && ((d7 >> 25) & 1);
done:
#endif
    g_cpu = f;
}

const pf_cpu_features *pf_cpu(void) {
    pthread_once(&g_cpu_once, detect);
    return &g_cpu;
}

bool pf_level_built(pf_level level) {
    switch (level) {
    case PF_LEVEL_SCALAR: return true;
    case PF_LEVEL_AVX2:
    case PF_LEVEL_AVXVNNI:
    case PF_LEVEL_AVX512:
#ifdef __x86_64__
        return true;
#else
        return false;
#endif
    case PF_LEVEL_NEON:
    case PF_LEVEL_DOTPROD:
    case PF_LEVEL_I8MM:
#ifdef __aarch64__
        return true;
#else
        return false;
#endif
    default: return false;
    }
}

bool pf_level_supported(pf_level level) {
    const pf_cpu_features *f = pf_cpu();
    bool avx2 = f->avx2 && f->fma && f->f16c;
    if (!pf_level_built(level)) return false;
    switch (level) {
    case PF_LEVEL_SCALAR: return true;
    case PF_LEVEL_AVX2: return avx2;
    case PF_LEVEL_AVXVNNI: return avx2 && f->avxvnni;
    case PF_LEVEL_AVX512:
        /* the AVX-512 file is compiled with AVX2/FMA/F16C too, so it needs them as well */
        return avx2 && f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->avx512vnni;
    case PF_LEVEL_NEON: return f->neon;
    case PF_LEVEL_DOTPROD: return f->neon && f->dotprod;
    /* the i8mm file also uses SDOT (one-row products), so it needs both */
    case PF_LEVEL_I8MM: return f->neon && f->dotprod && f->i8mm;
    default: return false;
    }
}

const char *pf_level_name(pf_level level) {
    switch (level) {
    case PF_LEVEL_SCALAR: return "scalar";
    case PF_LEVEL_AVX2: return "avx2";
    case PF_LEVEL_AVXVNNI: return "avxvnni";
    case PF_LEVEL_AVX512: return "avx512";
    case PF_LEVEL_NEON: return "neon";
    case PF_LEVEL_DOTPROD: return "dotprod";
    case PF_LEVEL_I8MM: return "i8mm";
    default: return "unknown";
    }
}

int pf_level_parse(const char *name) {
    for (int l = 0; l < PF_LEVEL_COUNT; l++)
        if (pf_level_built((pf_level)l) && strcmp(name, pf_level_name((pf_level)l)) == 0) return l;
    return -1;
}

void pf_level_names(char *names, size_t size) {
    *names = '\0';
    for (int l = 0; l < PF_LEVEL_COUNT; l++)
        if (pf_level_built((pf_level)l))
            snprintf(names + strlen(names), size - strlen(names), "%s%s", *names ? ", " : "", pf_level_name((pf_level)l));
}

pf_level pf_level_at_most(pf_level cap) {
    for (int l = cap; l > PF_LEVEL_SCALAR; l--)
        if (pf_level_supported((pf_level)l)) return (pf_level)l;
    return PF_LEVEL_SCALAR;
}

pf_level pf_best_level(void) {
    int cap = PF_LEVEL_COUNT - 1;
    /* Read at every call (it is called rarely) so no cached state is needed. */
    const char *env = getenv("PF_KERNELS");
    if (env && *env) {
        int found = pf_level_parse(env);
        if (found < 0) {
            char names[64];
            pf_level_names(names, sizeof names);
            fprintf(stderr, "pocketflash: PF_KERNELS=%s is not one of this build's levels (%s); ignored\n", env,
                    names);
        } else {
            cap = found;
        }
    }
    return pf_level_at_most((pf_level)cap);
}
