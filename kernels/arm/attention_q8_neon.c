/* 8-bit KV cache attention, baseline NEON level (armv8-a; also the fallback shape logic for the
 * others): integer scores with widening multiplies. Per pair of 4-dim steps SMULL + SMLAL of the
 * keys (stored + 128, back to int8 by one EOR) with the broadcast query bytes into int16 (two
 * products a lane, at most 2 * 128 * 127 = 32512: no saturation), SADALP into int32, one ADDP at
 * the end: the exact dots. The walk and the float ops are neon_attention_q8.h's. */
#include "kernels/arm/neon_q8_lanes.h"

/* acc[0]: keys 0-1 of the vector at kt, acc[1]: keys 2-3, each as two int32 partial sums */
PF_FORCE_INLINE void step2(const uint8_t *kt, const int8_t *q, int32x4_t acc[2]) {
    int8x16_t k0 = key_bytes(kt), k1 = key_bytes(kt + 4 * PF_KV_TILE), q0 = query_dup(q), q1 = query_dup(q + 4);
    int16x8_t lo = vmlal_s8(vmull_s8(vget_low_s8(k0), vget_low_s8(q0)), vget_low_s8(k1), vget_low_s8(q1));
    int16x8_t hi = vmlal_high_s8(vmull_high_s8(k0, q0), k1, q1);
    acc[0] = vpadalq_s16(acc[0], lo);
    acc[1] = vpadalq_s16(acc[1], hi);
}

PF_FORCE_INLINE void step1(const uint8_t *kt, const int8_t *q, int32x4_t acc[2]) {
    int8x16_t k0 = key_bytes(kt), q0 = query_dup(q);
    acc[0] = vpadalq_s16(acc[0], vmull_s8(vget_low_s8(k0), vget_low_s8(q0)));
    acc[1] = vpadalq_s16(acc[1], vmull_high_s8(k0, q0));
}

static inline int32x4_t keys4(const uint8_t *kt, const int8_t *q, int hd) {
    int32x4_t acc[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
    int d4 = 0;
    for (; d4 + 2 <= hd / 4; d4 += 2) step2(kt + d4 * (4 * PF_KV_TILE), q + 4 * d4, acc);
    if (d4 < hd / 4) step1(kt + d4 * (4 * PF_KV_TILE), q + 4 * d4, acc);
    return vpaddq_s32(acc[0], acc[1]);
}

static inline void keys16(const uint8_t *kt, const int8_t *q, int hd, int32x4_t d[4]) {
    int32x4_t acc[4][2];
    for (int i = 0; i < 4; i++) acc[i][0] = acc[i][1] = vdupq_n_s32(0);
    int d4 = 0;
    for (; d4 + 2 <= hd / 4; d4 += 2)
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) step2(kt + d4 * (4 * PF_KV_TILE) + 16 * i, q + 4 * d4, acc[i]);
    if (d4 < hd / 4)
        for (int i = 0; i < 4; i++) step1(kt + d4 * (4 * PF_KV_TILE) + 16 * i, q + 4 * d4, acc[i]);
    for (int i = 0; i < 4; i++) d[i] = vpaddq_s32(acc[i][0], acc[i][1]);
}

#include "kernels/arm/neon_attention_q8.h"

/* The NEON level's attention kernel (pf_kernels.attend_group): either cache, every shape. */
int pf_attend_group_neon(const pf_attn_job *j, int b, int kvh) {
    return j->q8 ? q8_attend_group(j, b, kvh) : pf_attend_group_neon_f16(j, b, kvh);
}
