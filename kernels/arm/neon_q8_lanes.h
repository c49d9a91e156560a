/* The byte lanes both ARM 8-bit KV attention levels read: a key vector (stored + 128) made int8
 * again by one EOR, and a query's 4 bytes of dims 4 d4 .. 4 d4 + 3 in every 32-bit lane. Included
 * by attention_q8_neon.c and attention_q8_dotprod.c (each built with its own -march). */
#ifndef PF_NEON_Q8_LANES_H
#define PF_NEON_Q8_LANES_H

#include <arm_neon.h>
#include <string.h>

#include "kernels/kernels_impl.h"

PF_FORCE_INLINE int8x16_t key_bytes(const uint8_t *p) {
    return vreinterpretq_s8_u8(veorq_u8(vld1q_u8(p), vdupq_n_u8(0x80)));
}

PF_FORCE_INLINE int8x16_t query_dup(const int8_t *q) {
    int32_t w;
    memcpy(&w, q, 4);
    return vreinterpretq_s8_s32(vdupq_n_s32(w));
}

#endif
