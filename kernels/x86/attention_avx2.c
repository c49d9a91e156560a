/* The AVX2 level's attention: vec_attention.h on 256-bit vectors (vpmaddubsw integer scores). */
#define PF_VEC_BITS 256
#include "kernels/x86/vec_attention.h"
