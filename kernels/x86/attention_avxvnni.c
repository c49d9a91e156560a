/* The AVX-VNNI level's attention (ymm_attention.h with vpdpbusd ymm integer scores, compiled
 * with -mavxvnni). */
#define PF_YMM_VNNI 1
#include "kernels/x86/ymm_attention.h"
