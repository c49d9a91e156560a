/* The AVX-VNNI level's attention: vec_attention.h on 256-bit vectors (vpdpbusd ymm integer scores,
 * compiled with -mavxvnni). */
#define PF_VEC_BITS 256
#include "kernels/x86/vec_attention.h"
