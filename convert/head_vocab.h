/* A draft's head vocabulary: the token ids its head scores (draft/dflash.h, pf_dflash_set_head),
 * ranked by frequency in the draft's training data. */
#ifndef PF_HEAD_VOCAB_H
#define PF_HEAD_VOCAB_H

#include <stdint.h>

#include "formats/gguf.h"

/* Copy the draft GGUF at draft_path to out with dflash.head_tokens = ranked[0..n) (distinct ids
 * in 0..n_vocab-1, most frequent first) and dflash.head_vocab = head_vocab (1..n), replacing any
 * earlier ones. Written to a temporary file and renamed. PF_RC_OK, or with err PF_RC_ARG (bad
 * ranks), the reader's kinds for draft_path, the writer's for out. */
pf_rc pf_draft_head_attach(const char *draft_path, const int32_t *ranked, int n, int head_vocab, int n_vocab,
                         const char *out, char err[PF_ERR_LEN]);

#endif
