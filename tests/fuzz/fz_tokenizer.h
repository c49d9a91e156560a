/* What the tokenizer and chat fuzz targets share: the committed target's tokenizer (or
 * $PF_FUZZ_MODEL's), loaded once in LLVMFuzzerInitialize, and the token-by-token round trip. */
#ifndef PF_FUZZ_FZ_TOKENIZER_H
#define PF_FUZZ_FZ_TOKENIZER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer.h"
#include "formats/gguf.h"

static gguf_file *g_file; /* kept for the tokenizer, which may point into it */
static pf_tokenizer *g_tok;

/* Loads g_file and g_tok; aborts, naming the target, when it cannot. */
static void fz_tokenizer_init(const char *target) {
    const char *path = getenv("PF_FUZZ_MODEL") ? getenv("PF_FUZZ_MODEL") : "models/pf-target-f16.gguf";
    char err[PF_ERR_LEN];
    if (gguf_open_file(path, &g_file, err) != PF_RC_OK || pf_tokenizer_load(g_file, &g_tok, err) != PF_RC_OK) {
        fprintf(stderr, "%s: %s (run from the repository root)\n", target, err);
        abort();
    }
}

/* Aborts unless the bytes of ids[0..n) (pf_token_bytes, one token at a time) are exactly want[0..len). */
static void fz_expect_token_bytes(const int32_t *ids, size_t n, const char *want, size_t len) {
    char *got = malloc(len + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        const char *b = pf_token_bytes(g_tok, ids[i], &k);
        if (!b || o + k > len) abort();
        memcpy(got + o, b, k);
        o += k;
    }
    if (o != len || memcmp(got, want, len) != 0) abort();
    free(got);
}

#endif
