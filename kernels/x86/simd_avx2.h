/* Helpers shared by the *_avx2.c files (compiled with AVX2/FMA/F16C flags only; never include
 * this from a plain C file). */
#ifndef PF_SIMD_AVX2_H
#define PF_SIMD_AVX2_H

#include <immintrin.h>

static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

#endif
