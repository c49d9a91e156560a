/* The AVX2 level's attention (ymm_attention.h with vpmaddubsw integer scores). */
#include "kernels/x86/ymm_attention.h"
