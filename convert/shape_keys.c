/* The shape keys of a model file (convert/shape_keys.h). */
#include "convert/shape_keys.h"

#include <stdio.h>

void pf_write_shape_keys(gguf_writer *w, const char *arch, const pf_shape_keys *s) {
    static const char *const names[] = {"context_length",         "embedding_length",        "feed_forward_length",
                                        "attention.head_count",   "attention.head_count_kv", "attention.key_length",
                                        "attention.value_length"};
    const uint32_t values[] = {s->n_ctx, s->n_embd, s->n_ff, s->n_head, s->n_head_kv, s->head_dim, s->head_dim};
    char key[96];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(key, sizeof key, "%s.%s", arch, names[i]);
        gguf_w_u32(w, key, values[i]);
    }
}
