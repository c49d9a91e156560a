/* The attention and FFN shape of a model file, as its metadata keys under the architecture's
 * prefix (qwen3 for targets, dflash for drafts): what the synthetic writers and the expansion
 * write alike. */
#ifndef PF_CONVERT_SHAPE_KEYS_H
#define PF_CONVERT_SHAPE_KEYS_H

#include <stdint.h>

#include "formats/gguf.h"

typedef struct {
    uint32_t n_ctx, n_embd, n_ff, n_head, n_head_kv, head_dim;
} pf_shape_keys;

/* <arch>.context_length, .embedding_length, .feed_forward_length, .attention.head_count,
 * .attention.head_count_kv, .attention.key_length and .attention.value_length (both head_dim),
 * in that order. */
void pf_write_shape_keys(gguf_writer *w, const char *arch, const pf_shape_keys *s);

#endif
