/* The tokenizer the tokenizer and chat fuzz targets share: the committed target's (or
 * $PF_FUZZ_MODEL's), loaded once in LLVMFuzzerInitialize; aborts when it cannot be loaded. */
#ifndef PF_FUZZ_TOKENIZER_INIT_H
#define PF_FUZZ_TOKENIZER_INIT_H

#include <stdio.h>
#include <stdlib.h>

#include "engine/tokenizer.h"
#include "formats/gguf.h"

static gguf_file *g_file; /* kept for the tokenizer, which may point into it */
static pf_tokenizer *g_tok;

static void fz_tokenizer_init(const char *target) {
    const char *path = getenv("PF_FUZZ_MODEL") ? getenv("PF_FUZZ_MODEL") : "models/pf-target-f16.gguf";
    char err[PF_ERR_LEN];
    if (!(g_file = gguf_open(path, err)) || !(g_tok = pf_tokenizer_load(g_file, err))) {
        fprintf(stderr, "%s: %s (run from the repository root)\n", target, err);
        abort();
    }
}

#endif
