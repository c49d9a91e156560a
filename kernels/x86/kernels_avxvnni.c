/* The AVX-VNNI level (AVX2 + FMA + F16C + AVX-VNNI, the VEX-encoded 256-bit vpdpbusd of Alder
 * Lake and later Intel cores and of Zen 5, many of them without AVX-512): vec_kernels.h on
 * 256-bit vectors with vpdpbusd integer dot products (compiled with -mavxvnni). */
#define PF_VEC_BITS 256
#include "kernels/x86/vec_kernels.h"

PF_DEFINE_KERNELS(pf_kernels_avxvnni_table, PF_LEVEL_AVXVNNI, "avxvnni", quantize_act, pf_attend_rows_avxvnni,
                  pf_attend_group_avxvnni, 1);
