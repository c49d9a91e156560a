/* Binding GGUF tensors and keys to the engine's weight views, with shape/type checks whose
 * errors name the file and the field. Shared by every model loader (target, drafts). */
#ifndef PF_WEIGHTS_H
#define PF_WEIGHTS_H

#include <stdint.h>

#include "engine/hparams.h"
#include "formats/gguf.h"
#include "kernels/kernels.h"

/* general.architecture must equal `expected`; else "FILE: general.architecture: 'X' WHAT (expected E)". */
int pf_check_architecture(const gguf_file *f, const char *expected, const char *what, char *err);
/* 0 found; 1 absent and optional; -1 error (err filled). */
int pf_get_u32(const gguf_file *f, const char *key, uint32_t *out, int required, char *err);
/* The shape keys of a Qwen3-style architecture under `prefix` ("qwen3", "dflash"): .block_count,
 * .embedding_length, .feed_forward_length, .attention.head_count (required), .attention.head_count_kv
 * (default: the head count), .attention.key_length (default: hidden / heads; a present
 * .attention.value_length must equal it), .rope.freq_base and .attention.layer_norm_rms_epsilon
 * (left as hp has them when absent). The caller range-checks the result. */
int pf_read_shape(const gguf_file *f, const char *prefix, pf_hparams *hp, char *err);
const gguf_tensor *pf_find_tensor(const gguf_file *f, const char *name, char *err);
/* Tensor `name` of GGUF dims {cols, rows} exactly, or NULL with err. */
const gguf_tensor *pf_find_matrix(const gguf_file *f, const char *name, int64_t rows, int64_t cols, char *err);
/* w = the tensor's data viewed as [rows, cols]. */
void pf_weight_set(pf_weight *w, const gguf_tensor *t, int64_t rows, int64_t cols);
/* A weight matrix [rows, cols] (GGUF dims {cols, rows}) the kernels can multiply. */
int pf_bind_matrix(const gguf_file *f, const char *name, int64_t rows, int64_t cols, pf_weight *w, char *err);
/* A float tensor of exactly the dims ne[0..3] (unused 1); converted into `store` unless it is
 * aligned f32 already. */
int pf_bind_floats(const gguf_file *f, const char *name, const int64_t ne[4], const float **out, float *store,
                   char *err);
int pf_bind_vector(const gguf_file *f, const char *name, int64_t n, const float **out, float *store, char *err);

#endif
