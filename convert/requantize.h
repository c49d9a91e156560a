/* Convert the weight matrices of a GGUF file to another type (the `quantize` command). */
#ifndef PF_REQUANTIZE_H
#define PF_REQUANTIZE_H

#include <stdint.h>

#include "formats/gguf.h"

/* Matrices (2-D tensors whose row length is a multiple of 32) are converted to `type`; vectors and
 * everything else are copied unchanged, as is all metadata (general.file_type updated). PF_RC_OK, or
 * with err PF_RC_ARG (an unknown type), the reader's kinds for in, the writer's for out. */
pf_rc pf_requantize_file(const char *in, const char *out, uint32_t type, char err[PF_ERR_LEN]);
/* ggml's LLAMA_FTYPE number for general.file_type of a file whose matrices are `type`. */
uint32_t pf_file_type_of(uint32_t type);
/* Convert rows*cols floats to `type`; returns a malloc'd buffer and its size, or NULL. */
void *pf_convert_matrix(uint32_t type, const float *src, int64_t rows, int64_t cols, size_t *nbytes);

#endif
