/* Pieces the x86 quantized gemms share (every x86 level's file is compiled with AVX2 at least;
 * never include this from a plain C file): unaligned scalar loads from activation blocks, the
 * GGUF block sizes and the exact integer sums of activation blocks. */
#ifndef PF_X86_QUANT_H
#define PF_X86_QUANT_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels_impl.h"

#define XB ((int)sizeof(pf_block_q8_act)) /* 40: float d, float s, int8 qs[32] */
#define QRG 16                            /* weight rows per group of the packed layout */

static inline uint32_t load_u32(const void *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline float load_f32(const void *p) {
    float v;
    memcpy(&v, p, 4);
    return v;
}

PF_FORCE_INLINE size_t qtype_size(uint32_t wt) {
    return wt == PF_TYPE_Q8_0 ? sizeof(pf_block_q8_0)
           : wt == PF_TYPE_Q4_0 ? sizeof(pf_block_q4_0) : sizeof(pf_block_q4_1);
}

/* out[b*nk + k] = mul * (sum of the 32 int8 of activation row b's block k0+k), exact: the integer
 * offset of weights stored unsigned (Q8_0 as w + 128), removed in integers. */
PF_NOIPA static void act_sums(const uint8_t *act, size_t stride, int nb, int64_t k0, int64_t nk, int mul,
                              int32_t *out) {
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    for (int b = 0; b < nb; b++) {
        const pf_block_q8_act *x = (const pf_block_q8_act *)(act + (size_t)b * stride) + k0;
        for (int64_t k = 0; k < nk; k++) {
            __m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)x[k].qs), bias);
            __m256i s = _mm256_sad_epu8(v, _mm256_setzero_si256()); /* sums of (q + 128) */
            __m128i t = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            t = _mm_add_epi64(t, _mm_unpackhi_epi64(t, t));
            out[(size_t)b * nk + k] = mul * (_mm_cvtsi128_si32(t) - 32 * 128);
        }
    }
}

#endif
