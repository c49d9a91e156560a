/* The AVX2 level (AVX2 + FMA + F16C): vec_kernels.h on 256-bit vectors (vpmaddubsw integer dot
 * products). */
#define PF_VEC_BITS 256
#include "kernels/x86/vec_kernels.h"

PF_DEFINE_KERNELS(pf_kernels_avx2_table, PF_LEVEL_AVX2, "avx2", quantize_act, pf_attend_rows_avx2, pf_attend_group_avx2,
                  1);
