/* The AVX2 level (AVX2 + FMA + F16C): the 256-bit kernels of ymm_kernels.h with vpmaddubsw
 * integer dot products. */
#include "kernels/x86/ymm_kernels.h"

PF_DEFINE_KERNELS(pf_kernels_avx2_table, PF_LEVEL_AVX2, "avx2", quantize_act, pf_attend_rows_avx2, pf_attend_group_avx2,
                  1);
