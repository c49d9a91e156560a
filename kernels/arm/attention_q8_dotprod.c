/* 8-bit KV cache attention, dotprod level (compiled with -march=armv8.2-a+dotprod, run where the
 * CPU reports it; the i8mm level uses it too): integer scores with SDOT, which sums the four
 * products of a key's 4-dim group with the broadcast query bytes into that key's int32 lane, so
 * one instruction covers 4 keys x 4 dims and the lanes are the dots themselves. Keys are stored +
 * 128 and made int8 again by one EOR. The walk and the float ops are neon_attention_q8.h's. */
#include "kernels/arm/neon_q8_lanes.h"

static inline int32x4_t keys4(const uint8_t *kt, const int8_t *q, int hd) {
    int32x4_t acc = vdupq_n_s32(0);
    for (int d4 = 0; d4 < hd / 4; d4++)
        acc = vdotq_s32(acc, key_bytes(kt + d4 * (4 * PF_KV_TILE)), query_dup(q + 4 * d4));
    return acc;
}

static inline void keys16(const uint8_t *kt, const int8_t *q, int hd, int32x4_t d[4]) {
    int32x4_t acc[4];
    for (int i = 0; i < 4; i++) acc[i] = vdupq_n_s32(0);
    for (int d4 = 0; d4 < hd / 4; d4++) {
        int8x16_t qd = query_dup(q + 4 * d4);
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) acc[i] = vdotq_s32(acc[i], key_bytes(kt + d4 * (4 * PF_KV_TILE) + 16 * i), qd);
    }
    for (int i = 0; i < 4; i++) d[i] = acc[i];
}

#include "kernels/arm/neon_attention_q8.h"

/* The dotprod and i8mm levels' attention kernel (pf_kernels.attend_group): either cache. */
int pf_attend_group_dotprod(const pf_attn_job *j, int b, int kvh) {
    return j->q8 ? q8_attend_group(j, b, kvh) : pf_attend_group_neon_f16(j, b, kvh);
}
