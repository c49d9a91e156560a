/* Weight formats of GGUF tensors: block layouts, per-type traits, fp16/bf16 conversion.
 * Block formats hold 32 consecutive weights along the input dimension (docs/target.md). */
#ifndef PF_GGML_TYPES_H
#define PF_GGML_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum pf_type {
    PF_TYPE_F32 = 0,
    PF_TYPE_F16 = 1,
    PF_TYPE_Q4_0 = 2,
    PF_TYPE_Q4_1 = 3,
    PF_TYPE_Q8_0 = 8,
    PF_TYPE_BF16 = 30,
    PF_TYPE_MAX = 31 /* one past the largest ggml id we index tables with */
};

#define PF_QK 32 /* weights per quant block */

typedef uint16_t pf_half; /* IEEE binary16 bits */

typedef struct { pf_half d; int8_t qs[PF_QK]; } pf_block_q8_0;
typedef struct { pf_half d; uint8_t qs[PF_QK / 2]; } pf_block_q4_0;
typedef struct { pf_half d; pf_half m; uint8_t qs[PF_QK / 2]; } pf_block_q4_1;
/* Activation format for integer dot products: like q8_0 plus s = d * sum(qs), which folds the
 * Q4_1 minimum (m * sum(x)) and the Q4_0 offset (-8 * sum) into one multiply. */
typedef struct { float d; float s; int8_t qs[PF_QK]; } pf_block_q8_act;

_Static_assert(sizeof(pf_block_q8_0) == 34, "q8_0 block is 34 bytes");
_Static_assert(sizeof(pf_block_q4_0) == 18, "q4_0 block is 18 bytes");
_Static_assert(sizeof(pf_block_q4_1) == 20, "q4_1 block is 20 bytes");
_Static_assert(sizeof(pf_block_q8_act) == 40, "q8 activation block is 40 bytes");

typedef struct {
    const char *name;
    int block;        /* weights per block (1 for float types) */
    size_t type_size; /* bytes per block */
    int quantized;    /* 1 if activations are quantized to q8_act for the dot product */
} pf_type_traits;

/* ggml's I64: a data tensor type (a draft's d2t id map), never a weight type: pf_type_info knows it not. */
#define PF_TYPE_I64 27

/* Traits of a ggml type id, or NULL if the engine does not support it. */
const pf_type_traits *pf_type_info(uint32_t type);
/* Bytes of a row of n weights (n must be a multiple of the block), 0 if unsupported/unaligned. */
size_t pf_row_bytes(uint32_t type, int64_t n);
/* Traits of any tensor type the GGUF reader accepts: the weight types and I64. NULL otherwise. */
const pf_type_traits *pf_tensor_type_info(uint32_t type);
/* Type id from a name such as "q4_1", or -1. */
int pf_type_from_name(const char *name);

/* A float's IEEE-754 bits and back (memcpy: no aliasing through pointer casts). */
static inline uint32_t pf_f32_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    return x;
}
static inline float pf_f32_from_bits(uint32_t x) {
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static inline float pf_fp16_to_fp32(pf_half h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: renormalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) { man <<= 1; exp--; }
            man &= 0x3ff;
            bits = sign | (exp << 23) | (man << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    return pf_f32_from_bits(bits);
}

/* Round to nearest even, like the hardware F16C conversion. */
static inline pf_half pf_fp32_to_fp16(float f) {
    uint32_t x = pf_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return (pf_half)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
    if (absx >= 0x477ff000u) return (pf_half)(sign | 0x7c00); /* overflow to inf */
    if (absx < 0x38800000u) {                                 /* subnormal or zero in f16 */
        if (absx < 0x33000000u) return (pf_half)sign;
        uint32_t e = absx >> 23, m = (absx & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14 + (113 - e) */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (pf_half)(sign | r);
    }
    uint32_t r = ((absx >> 13) - (112u << 10));
    uint32_t rem = absx & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (pf_half)(sign | r);
}

static inline float pf_bf16_to_fp32(uint16_t h) { return pf_f32_from_bits((uint32_t)h << 16); }

static inline uint16_t pf_fp32_to_bf16(float f) {
    uint32_t x = pf_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

#endif
