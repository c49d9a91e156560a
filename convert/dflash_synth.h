/* Random-weight DFlash / DFlash2 draft GGUF files for a given target: for tests and benchmarks
 * without a trained draft. */
#ifndef PF_DFLASH_SYNTH_H
#define PF_DFLASH_SYNTH_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/gguf.h"

/* Write a draft for the target file at target_path: hidden size, FFN, heads and head size of the
 * target; matrices in the type of the target's blk.0.attn_q (fc in f32), norms and conv bases in
 * f32. target_layers: n_taps 0-based "after layer L" indices (stored as L+1), or NULL for z-lab's
 * default rule (draft/dflash_taps.h; never the last layer, which llama.cpp cannot tap) with n_taps
 * taps (n_taps <= 0 with NULL: one per draft layer, as z-lab's drafts have). The target's tokenizer.* keys are copied and
 * tokenizer.ggml.mask_token_id set (the target's own if it has one, else <|fim_pad|>, else its last
 * control token). version 2 adds the conv (kernel 2, group 16) and the selector (rank
 * min(256, hidden/2), top-16); identity_v2 makes it start as plain DFlash (conv base = identity tap,
 * dyn proj = 0, selector successor = 0).
 * The same seed gives the same shared weights for version 1 and 2 (the DFlash2 tensors come from a
 * second stream), so a v1 file and an identity v2 file with one seed describe the same draft.
 * PF_RC_OK, or with err PF_RC_ARG (a value out of range, a tap the target lacks), the reader's kinds
 * for the target (PF_RC_FORMAT too when it has no mask token candidate), the writer's for out. */
pf_rc pf_dflash_synth(const char *target_path, int version, int n_layers, int block_size, const int *target_layers,
                      int n_taps, uint64_t seed, bool identity_v2, const char *out, char err[PF_ERR_LEN]);

#endif
