/* The AVX-512 level's attention: vec_attention.h on 512-bit vectors (vpdpbusd integer scores). */
#define PF_VEC_BITS 512
#include "kernels/x86/vec_attention.h"
