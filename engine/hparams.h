/* The shape of a Qwen3-style decoder (the target's, or a DFlash draft's layers): what the model,
 * its KV cache and the layer scratch are sized by. */
#ifndef PF_HPARAMS_H
#define PF_HPARAMS_H

#include <stdint.h>

typedef struct {
    int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab;
    int64_t n_ctx_train;
    float rope_theta, rms_eps;
} pf_hparams;

#endif
