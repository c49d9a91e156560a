/* Hugging Face checkpoint (config.json + safetensors) -> GGUF, for Qwen3ForCausalLM targets (tied and
 * untied heads) and z-lab DFlashDraftModel / DFlash2DraftModel drafts, written as llama.cpp's
 * converter and loader expect them (tensor names, ggml orientation, dflash.* keys; see hf_convert.c
 * for the sources followed).
 *
 * Weights: safetensors F32, F16 or BF16. 2-D matrices become `type` (a quantized type needs rows
 * that are a multiple of 32, else F16); vectors and the DFlash2 conv bases become F32; a reduced
 * draft vocabulary's d2t becomes I64 absolute target ids. A source already of the output type is
 * copied byte for byte. Tokenizer: a target's tokenizer.json (+ tokenizer_config.json) through the
 * vocab import; a draft gets the tokenizer.* keys of its target's GGUF (`target`), so the file is
 * self-contained. Anything that does not fit (unknown architecture, tensor, dtype, shape, missing
 * config key) is refused with the file and field named; nothing is written then. */
#ifndef PF_HF_CONVERT_H
#define PF_HF_CONVERT_H

#include <stdint.h>

#include "formats/gguf.h"

typedef struct {
    uint32_t type;      /* ggml type of the matrices (F32, F16, BF16, Q8_0, Q4_0, Q4_1) */
    const char *target; /* drafts: the target's GGUF; must be NULL for a target checkpoint */
    /* one line per warning (a draft llama.cpp would refuse, ...); NULL: silent */
    void (*warn)(void *ctx, const char *msg);
    void *warn_ctx;
} pf_convert_opts;

/* PF_RC_OK, or with err filled (out untouched) the kind of what failed: PF_RC_IO (a file of the
 * checkpoint, the target or the output cannot be opened, read or written), PF_RC_FORMAT (a file is
 * malformed or does not fit a supported architecture), PF_RC_ARG (--type, --target given wrong),
 * PF_RC_OOM. *arch (may be NULL) receives 0 for a target, 1 for DFlash, 2 for DFlash2. */
pf_rc pf_hf_convert(const char *hf_dir, const char *out, const pf_convert_opts *o, int *arch, char err[PF_ERR_LEN]);

#endif
