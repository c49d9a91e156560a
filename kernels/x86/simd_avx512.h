/* Helpers shared by the *_avx512.c files (compiled with AVX-512 flags only; never include this
 * from a plain C file). */
#ifndef PF_SIMD_AVX512_H
#define PF_SIMD_AVX512_H

#include <immintrin.h>
#include <stdint.h>

static inline __mmask16 tail_mask(int64_t left) {
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

#endif
