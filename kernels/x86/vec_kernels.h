/* Every x86 level's kernels but attention (vec_attention.h), written once on vec.h: a level's file
 * defines PF_VEC_BITS, includes this and defines its table (PF_DEFINE_KERNELS).
 *   elementwise (RMSNorm, SwiGLU, softmax, the value axpy, argmax, first_above, f32_to_f16): vec_float.h
 *   float-weight gemm: vec_gemm_float.h
 *   quantized gemm and activation quantization: vec_gemm_quant.h */
#ifndef PF_X86_VEC_KERNELS_H
#define PF_X86_VEC_KERNELS_H

#include "kernels/x86/vec_float.h"
#include "kernels/x86/vec_gemm_float.h"
#include "kernels/x86/vec_gemm_quant.h"

#endif
