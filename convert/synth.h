/* Random-weight Qwen3 GGUF files of exact shapes (Pocket, Qwen3-0.6B, tiny), each with a valid
 * byte-level BPE tokenizer and ChatML specials: for tests and benchmarks without real weights. */
#ifndef PF_SYNTH_H
#define PF_SYNTH_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/gguf.h"

typedef struct {
    const char *name;
    int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab;
    int64_t n_ctx;
} pf_synth_shape;

/* Shape by name ("pocket", "qwen3-0.6b", "tiny"), or NULL. */
const pf_synth_shape *pf_synth_shape_find(const char *name);
/* Names of all shapes, NULL-terminated. */
const char *const *pf_synth_shape_names(void);
/* Write a model: matrices in `type`, norms in F32; same seed, same file. PF_RC_OK, or with err
 * PF_RC_OOM, PF_RC_IO (the file cannot be written; nothing is left behind) or PF_RC_ARG. */
pf_rc pf_synth_save(const pf_synth_shape *shape, uint32_t type, bool untied, uint64_t seed, const char *path,
                    char err[PF_ERR_LEN]);
/* pf_synth_save for callers that need no kind: 0 or -1 (err filled). */
int pf_synth_write(const pf_synth_shape *shape, uint32_t type, bool untied, uint64_t seed, const char *path,
                   char err[PF_ERR_LEN]);
/* Add the synthetic tokenizer of n_vocab tokens (256 bytes, merges, 26 Qwen3 specials at the end)
 * to a writer. Returns 0, or -1 if n_vocab is too small. Strings live until the writer is written. */
int pf_synth_tokenizer(gguf_writer *w, int n_vocab);

#endif
