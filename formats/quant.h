/* Scalar quantizers and dequantizers for every supported weight type: the reference that every
 * kernel and the `quantize` command build on. */
#ifndef PF_QUANT_H
#define PF_QUANT_H

#include "ggml_types.h"

/* Convert n floats (n a multiple of the type's block) into `type` at dst. Returns 0, or -1 if the
 * type is unsupported or n is not a multiple of the block. */
int pf_quantize_row(uint32_t type, const float *src, void *dst, int64_t n);
/* Convert n weights of `type` back to floats. Returns 0 or -1 as above. */
int pf_dequantize_row(uint32_t type, const void *src, float *dst, int64_t n);
/* Quantize n floats (multiple of 32) into q8 activation blocks (d, s = d*sum(q), q[32]). */
void pf_quantize_row_q8_act(const float *src, pf_block_q8_act *dst, int64_t n);

#endif
