/* The AVX-512 level (F, BW, VL, DQ, VNNI): vec_kernels.h on 512-bit vectors (vpdpbusd integer
 * dot products; GGUF-layout quantized weights read in place). */
#define PF_VEC_BITS 512
#include "kernels/x86/vec_kernels.h"

PF_DEFINE_KERNELS(pf_kernels_avx512_table, PF_LEVEL_AVX512, "avx512", quantize_act, pf_attend_rows_avx512,
                  pf_attend_group_avx512, 1);
