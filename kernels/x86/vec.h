/* Width-generic x86 vectors: the operations the float kernels, the attention walk and the
 * quantized gemm need, for 256-bit (AVX2 + FMA + F16C, optionally AVX-VNNI) or 512-bit (AVX-512
 * F/BW/VL/DQ/VNNI) registers. A file defines PF_VEC_BITS (256 or 512) before including it and is
 * compiled with that level's flags; the kernels written on top (vec_float.h, vec_gemm_float.h,
 * vec_attention.h) are then the same source for every x86 level.
 *   vf / vd / vi: float, double, int32 vectors; VL floats (VDL = VL / 2 doubles) a vector
 *   vmask: lanes of a float vector; vmask_n(n) = lanes below n (n may be <= 0 or >= VL)
 *   vf_exp: float_order.h's pf_exp_ref on every lane, the same operations in the same order
 *   VEC_VNNI: 1 where vi_dpbusd (u8 x s8 dot products of 4 bytes into each int32 lane) exists
 *   VEC_NAME(f): f with the level's suffix (_avx2, _avxvnni, _avx512), for exported kernels
 *   VEC_PS(op) / VEC_PD / VEC_EPI32 / VEC_EPI8: the intrinsic _mm256_op_ps or _mm512_op_ps (...),
 *   for the operations whose two widths differ only in that prefix */
#ifndef PF_X86_VEC_H
#define PF_X86_VEC_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/float_order.h"
#include "kernels/kernels_impl.h"

#if PF_VEC_BITS == 512
#define VL 16
typedef __m512 vf;
typedef __m512d vd;
typedef __m512i vi;
typedef __mmask16 vmask;
#define VEC_PS(op) _mm512_##op##_ps
#define VEC_PD(op) _mm512_##op##_pd
#define VEC_EPI32(op) _mm512_##op##_epi32
#define VEC_EPI8(op) _mm512_##op##_epi8

PF_FORCE_INLINE vmask vmask_n(int64_t n) {
    return n >= 16 ? (vmask)0xffff : n <= 0 ? (vmask)0 : (vmask)((1u << n) - 1);
}
PF_FORCE_INLINE vf vf_maskz_load(vmask m, const float *p) { return _mm512_maskz_loadu_ps(m, p); }
PF_FORCE_INLINE vf vf_mask_load_or(vmask m, const float *p, float fill) { return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), m, p); }
PF_FORCE_INLINE void vf_mask_store(float *p, vmask m, vf v) { _mm512_mask_storeu_ps(p, m, v); }
PF_FORCE_INLINE vf vf_keep(vmask m, vf v) { return _mm512_maskz_mov_ps(m, v); }
/* a * b + c in the lanes of m, c in the others */
PF_FORCE_INLINE vf vf_mask_fmadd(vmask m, vf a, vf b, vf c) { return _mm512_mask3_fmadd_ps(a, b, c, m); }
PF_FORCE_INLINE vf vf_neg(vf a) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32((int)0x80000000u))); }
PF_FORCE_INLINE vf vf_rint(vf a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
/* lanes where !(a < b) (NaN lanes included) */
PF_FORCE_INLINE vmask vf_not_below(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_NLT_UQ); }
PF_FORCE_INLINE vf vf_pow2i(vf n) { /* 2^n for integral n in [-126, 127] */
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
}
PF_FORCE_INLINE vf vf_load_h(const pf_half *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
PF_FORCE_INLINE vf vf_maskz_load_h(vmask m, const pf_half *p) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
PF_FORCE_INLINE vf vf_from_bf16(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
PF_FORCE_INLINE vf vf_load_bf16(const uint16_t *p) { return vf_from_bf16(_mm256_loadu_si256((const __m256i *)p)); }
PF_FORCE_INLINE vf vf_maskz_load_bf16(vmask m, const uint16_t *p) { return vf_from_bf16(_mm256_maskz_loadu_epi16(m, p)); }
PF_FORCE_INLINE vf vf_load_i8(const int8_t *p) { /* VL int8 as floats (exact) */
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}
PF_FORCE_INLINE vi vi_zero(void) { return _mm512_setzero_si512(); }
PF_FORCE_INLINE vi vi_load(const void *p) { return _mm512_loadu_si512(p); }
PF_FORCE_INLINE vi vi_and(vi a, vi b) { return _mm512_and_si512(a, b); }
PF_FORCE_INLINE vi vi_xor(vi a, vi b) { return _mm512_xor_si512(a, b); }
PF_FORCE_INLINE vi vi_srli16(vi a, int n) { return _mm512_srli_epi16(a, (unsigned)n); }
#define VEC_VNNI 1
PF_FORCE_INLINE vi vi_dpbusd(vi acc, vi u, vi s) { return _mm512_dpbusd_epi32(acc, u, s); }
#define VEC_NAME(f) f##_avx512
/* lanes [a, e) */
PF_FORCE_INLINE vmask vmask_range(int a, int e) { return (vmask)(vmask_n(e) & ~vmask_n(a)); }
PF_FORCE_INLINE vf vf_abs(vf a) { return _mm512_abs_ps(a); }
PF_FORCE_INLINE vf vf_trunc(vf a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
PF_FORCE_INLINE vmask vf_ge(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
PF_FORCE_INLINE vf vf_one_signed(vf a) { /* +-1 with a's sign */
    return _mm512_or_ps(_mm512_and_ps(a, _mm512_set1_ps(-0.0f)), _mm512_set1_ps(1.0f));
}
PF_FORCE_INLINE int32_t vi_hsum(vi a) { return _mm512_reduce_add_epi32(a); }
/* 32 int32 in [-128, 127] (two vectors) as 32 int8 */
PF_FORCE_INLINE void vi_store_i8x32(int8_t *p, const vi *q) {
    _mm_storeu_si128((__m128i *)p, _mm512_cvtepi32_epi8(q[0]));
    _mm_storeu_si128((__m128i *)(p + 16), _mm512_cvtepi32_epi8(q[1]));
}
/* the lower and upper halves of a float vector */
PF_FORCE_INLINE __m256 vf_lo_half(vf v) { return _mm512_castps512_ps256(v); }
PF_FORCE_INLINE __m256 vf_hi_half(vf v) { return _mm512_extractf32x8_ps(v, 1); }
/* the first step of the in-register halving tree: the upper 256 bits onto the lower */
PF_FORCE_INLINE __m256d vd_fold256(vd v) { return _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1)); }
PF_FORCE_INLINE __m256 vf_fold256(vf v) { return _mm256_add_ps(vf_lo_half(v), vf_hi_half(v)); }
PF_FORCE_INLINE float vf_hmax(vf v) { return _mm512_reduce_max_ps(v); }
PF_FORCE_INLINE unsigned vf_eq_bits(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
PF_FORCE_INLINE unsigned vf_gt_bits(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
/* rounded to f16 as pf_fp32_to_fp16 (nearest even); NaNs its canonical quiet NaN, sign kept */
PF_FORCE_INLINE void vf_store_f16(pf_half *p, vf v) {
    __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    if (nan) {
        __m256i sign = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16));
        sign = _mm256_and_si256(sign, _mm256_set1_epi16((short)0x8000));
        h = _mm256_mask_mov_epi16(h, nan, _mm256_or_si256(sign, _mm256_set1_epi16(0x7e00)));
    }
    _mm256_storeu_si256((__m256i *)p, h);
}

#elif PF_VEC_BITS == 256
#define VL 8
typedef __m256 vf;
typedef __m256d vd;
typedef __m256i vi;
typedef __m256i vmask;
#define VEC_PS(op) _mm256_##op##_ps
#define VEC_PD(op) _mm256_##op##_pd
#define VEC_EPI32(op) _mm256_##op##_epi32
#define VEC_EPI8(op) _mm256_##op##_epi8

PF_FORCE_INLINE vmask vmask_n(int64_t n) {
    int c = n >= 8 ? 8 : n <= 0 ? 0 : (int)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
PF_FORCE_INLINE vf vf_maskz_load(vmask m, const float *p) { return _mm256_maskload_ps(p, m); }
PF_FORCE_INLINE vf vf_mask_load_or(vmask m, const float *p, float fill) {
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}
PF_FORCE_INLINE void vf_mask_store(float *p, vmask m, vf v) { _mm256_maskstore_ps(p, m, v); }
PF_FORCE_INLINE vf vf_keep(vmask m, vf v) { return _mm256_and_ps(_mm256_castsi256_ps(m), v); }
PF_FORCE_INLINE vf vf_mask_fmadd(vmask m, vf a, vf b, vf c) {
    return _mm256_blendv_ps(c, _mm256_fmadd_ps(a, b, c), _mm256_castsi256_ps(m));
}
PF_FORCE_INLINE vf vf_neg(vf a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
PF_FORCE_INLINE vf vf_rint(vf a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
PF_FORCE_INLINE vmask vf_not_below(vf a, vf b) { return _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_NLT_UQ)); }
PF_FORCE_INLINE vf vf_pow2i(vf n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
}
/* the 16-bit lanes of m (lanes below some n) as a zero-padded copy: no 16-bit masked load */
PF_FORCE_INLINE __m128i maskz_load_u16(vmask m, const void *p) {
    int n = __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m)));
    uint16_t h[8] = {0};
    memcpy(h, p, (size_t)n * sizeof *h);
    return _mm_loadu_si128((const __m128i *)h);
}
PF_FORCE_INLINE vf vf_load_h(const pf_half *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
PF_FORCE_INLINE vf vf_maskz_load_h(vmask m, const pf_half *p) { return _mm256_cvtph_ps(maskz_load_u16(m, p)); }
PF_FORCE_INLINE vf vf_from_bf16(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
PF_FORCE_INLINE vf vf_load_bf16(const uint16_t *p) { return vf_from_bf16(_mm_loadu_si128((const __m128i *)p)); }
PF_FORCE_INLINE vf vf_maskz_load_bf16(vmask m, const uint16_t *p) { return vf_from_bf16(maskz_load_u16(m, p)); }
PF_FORCE_INLINE vf vf_load_i8(const int8_t *p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}
PF_FORCE_INLINE vi vi_zero(void) { return _mm256_setzero_si256(); }
PF_FORCE_INLINE vi vi_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
PF_FORCE_INLINE vi vi_and(vi a, vi b) { return _mm256_and_si256(a, b); }
PF_FORCE_INLINE vi vi_xor(vi a, vi b) { return _mm256_xor_si256(a, b); }
PF_FORCE_INLINE vi vi_srli16(vi a, int n) { return _mm256_srli_epi16(a, n); }
#ifdef __AVXVNNI__
#define VEC_VNNI 1
PF_FORCE_INLINE vi vi_dpbusd(vi acc, vi u, vi s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
#define VEC_NAME(f) f##_avxvnni
#else
#define VEC_VNNI 0
#define VEC_NAME(f) f##_avx2
#endif
PF_FORCE_INLINE vmask vmask_range(int a, int e) { return _mm256_andnot_si256(vmask_n(a), vmask_n(e)); }
PF_FORCE_INLINE vf vf_abs(vf a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
PF_FORCE_INLINE vf vf_trunc(vf a) { return _mm256_round_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
PF_FORCE_INLINE vmask vf_ge(vf a, vf b) { return _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_GE_OQ)); }
PF_FORCE_INLINE vf vf_one_signed(vf a) {
    return _mm256_or_ps(_mm256_and_ps(a, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(1.0f));
}
PF_FORCE_INLINE int32_t vi_hsum(vi a) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 1)));
}
/* 32 int32 in [-128, 127] (four vectors) as 32 int8 */
PF_FORCE_INLINE void vi_store_i8x32(int8_t *p, const vi *q) {
    __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256((__m256i *)p, _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}
PF_FORCE_INLINE __m128 vf_lo_half(vf v) { return _mm256_castps256_ps128(v); }
PF_FORCE_INLINE __m128 vf_hi_half(vf v) { return _mm256_extractf128_ps(v, 1); }
/* already 256 bits wide: the halving tree starts at the 128-bit step */
PF_FORCE_INLINE __m256d vd_fold256(vd v) { return v; }
PF_FORCE_INLINE __m256 vf_fold256(vf v) { return v; }
PF_FORCE_INLINE float vf_hmax(vf v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}
PF_FORCE_INLINE unsigned vf_eq_bits(vf a, vf b) { return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_EQ_OQ)); }
PF_FORCE_INLINE unsigned vf_gt_bits(vf a, vf b) { return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ)); }
/* F16C rounds to nearest even like pf_fp32_to_fp16 (overflow to inf, subnormals exact); NaNs
 * become its canonical quiet NaN (sign kept) instead of the hardware's truncated payload */
PF_FORCE_INLINE void vf_store_f16(pf_half *p, vf v) {
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    if (!_mm256_testz_ps(nan, nan)) {
        __m256i hi16 = _mm256_srai_epi32(_mm256_castps_si256(v), 16);
        __m128i sign = _mm_and_si128(_mm_packs_epi32(_mm256_castsi256_si128(hi16), _mm256_extracti128_si256(hi16, 1)),
                                     _mm_set1_epi16((short)0x8000));
        __m128i m = _mm_packs_epi32(_mm256_castsi256_si128(_mm256_castps_si256(nan)),
                                    _mm256_extracti128_si256(_mm256_castps_si256(nan), 1));
        h = _mm_blendv_epi8(h, _mm_or_si128(sign, _mm_set1_epi16(0x7e00)), m);
    }
    _mm_storeu_si128((__m128i *)p, h);
}
#else
#error "define PF_VEC_BITS as 256 or 512 before including kernels/x86/vec.h"
#endif

/* The operations whose 256- and 512-bit intrinsics differ only in the width prefix. */
PF_FORCE_INLINE vf vf_zero(void) { return VEC_PS(setzero)(); }
PF_FORCE_INLINE vf vf_set1(float a) { return VEC_PS(set1)(a); }
PF_FORCE_INLINE vf vf_load(const float *p) { return VEC_PS(loadu)(p); }
PF_FORCE_INLINE void vf_store(float *p, vf v) { VEC_PS(storeu)(p, v); }
PF_FORCE_INLINE vf vf_load_a(const float *p) { return VEC_PS(load)(p); }
PF_FORCE_INLINE void vf_store_a(float *p, vf v) { VEC_PS(store)(p, v); }
PF_FORCE_INLINE vf vf_add(vf a, vf b) { return VEC_PS(add)(a, b); }
PF_FORCE_INLINE vf vf_sub(vf a, vf b) { return VEC_PS(sub)(a, b); }
PF_FORCE_INLINE vf vf_mul(vf a, vf b) { return VEC_PS(mul)(a, b); }
PF_FORCE_INLINE vf vf_div(vf a, vf b) { return VEC_PS(div)(a, b); }
PF_FORCE_INLINE vf vf_fmadd(vf a, vf b, vf c) { return VEC_PS(fmadd)(a, b, c); }
PF_FORCE_INLINE vf vf_fnmadd(vf a, vf b, vf c) { return VEC_PS(fnmadd)(a, b, c); }
PF_FORCE_INLINE vf vf_max(vf a, vf b) { return VEC_PS(max)(a, b); }
PF_FORCE_INLINE vf vf_min(vf a, vf b) { return VEC_PS(min)(a, b); }
PF_FORCE_INLINE vf vf_from_vi(vi a) { return VEC_PS(cvtepi32)(a); }
PF_FORCE_INLINE vi vi_cvtt(vf a) { return VEC_EPI32(cvttps)(a); }
PF_FORCE_INLINE vi vi_set1(int32_t a) { return VEC_EPI32(set1)(a); }
PF_FORCE_INLINE vi vi_set1_i8(int8_t a) { return VEC_EPI8(set1)(a); }
PF_FORCE_INLINE vi vi_add(vi a, vi b) { return VEC_EPI32(add)(a, b); }
/* halves of a float vector widened to doubles (exact) */
PF_FORCE_INLINE vd vd_lo(vf v) { return VEC_PD(cvtps)(vf_lo_half(v)); }
PF_FORCE_INLINE vd vd_hi(vf v) { return VEC_PD(cvtps)(vf_hi_half(v)); }
PF_FORCE_INLINE vd vd_zero(void) { return VEC_PD(setzero)(); }
PF_FORCE_INLINE vd vd_add(vd a, vd b) { return VEC_PD(add)(a, b); }
PF_FORCE_INLINE vd vd_fmadd(vd a, vd b, vd c) { return VEC_PD(fmadd)(a, b, c); }
/* the halving tree within one register: lane k += lane k + VDL/2, ..., + 1 */
PF_FORCE_INLINE double vd_tree_reg(vd v) {
    __m256d a = vd_fold256(v);
    __m128d b = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_add_sd(b, _mm_unpackhi_pd(b, b)));
}
PF_FORCE_INLINE float vf_tree_reg(vf v) {
    __m256 a = vf_fold256(v);
    __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    b = _mm_add_ps(b, _mm_movehl_ps(b, b));
    return _mm_cvtss_f32(_mm_add_ss(b, _mm_shuffle_ps(b, b, 1)));
}

#define VDL (VL / 2)
#define VNP (PF_NPART / VL) /* float vectors of the 16 partials */

/* lanes below n as floats, the rest 0 (a plain load for n >= VL) */
PF_FORCE_INLINE vf vf_load_n(const float *p, int64_t n) { return n >= VL ? vf_load(p) : vf_maskz_load(vmask_n(n), p); }
PF_FORCE_INLINE vf vf_load_n_or(const float *p, int64_t n, float fill) {
    return n >= VL ? vf_load(p) : vf_mask_load_or(vmask_n(n), p, fill);
}
PF_FORCE_INLINE void vf_store_n(float *p, vf v, int64_t n) {
    if (n >= VL) vf_store(p, v);
    else vf_mask_store(p, vmask_n(n), v);
}

/* pf_exp_ref on every lane */
PF_FORCE_INLINE vf vf_exp(vf x) {
    vf c = vf_min(vf_max(x, vf_set1(PF_EXP_LO)), vf_set1(PF_EXP_HI));
    vf n = vf_rint(vf_mul(c, vf_set1(PF_EXP_LOG2E)));
    vf r = vf_fnmadd(n, vf_set1(PF_EXP_C1), c);
    r = vf_fnmadd(n, vf_set1(PF_EXP_C2), r);
    vf p = vf_set1(PF_EXP_P0);
    p = vf_fmadd(p, r, vf_set1(PF_EXP_P1));
    p = vf_fmadd(p, r, vf_set1(PF_EXP_P2));
    p = vf_fmadd(p, r, vf_set1(PF_EXP_P3));
    p = vf_fmadd(p, r, vf_set1(PF_EXP_P4));
    p = vf_fmadd(p, r, vf_set1(PF_EXP_P5));
    p = vf_fmadd(p, vf_mul(r, r), vf_add(r, vf_set1(1.0f)));
    return vf_keep(vf_not_below(x, vf_set1(PF_EXP_LO)), vf_mul(p, vf_pow2i(n)));
}

/* The 16 partials as 2 * VNP double vectors (vector a: partials a*VDL ..), through the tree. */
PF_FORCE_INLINE double vd_tree16(vd *acc) {
    for (int h = VNP; h >= 1; h /= 2)
        for (int a = 0; a < h; a++) acc[a] = vd_add(acc[a], acc[a + h]);
    return vd_tree_reg(acc[0]);
}

/* The 16 partials as VNP float vectors, through the tree. */
PF_FORCE_INLINE float vf_tree16(vf *acc) {
    for (int h = VNP / 2; h >= 1; h /= 2)
        for (int a = 0; a < h; a++) acc[a] = vf_add(acc[a], acc[a + h]);
    return vf_tree_reg(acc[0]);
}

#endif
