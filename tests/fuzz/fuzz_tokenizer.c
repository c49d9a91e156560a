/* libFuzzer target for the tokenizer on arbitrary bytes, with the committed target's vocabulary
 * (or $PF_FUZZ_MODEL's): valid UTF-8 encodes (special-token texts parsed or not, by the input's
 * first byte) and decodes back to exactly the same bytes, through pf_token_bytes and through the
 * streaming decoder; invalid UTF-8 is refused with a one-line message. `make fuzz`. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer.h"
#include "formats/gguf.h"
#include "tests/fuzz/fz_tokenizer.h"
#include "tests/fuzz/utf8.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fz_tokenizer_init("fuzz_tokenizer");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    bool special = data[0] & 1;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    char *copy = malloc(len ? len : 1); /* exact size: ASan sees any read past the end */
    memcpy(copy, text, len);
    int32_t *ids = NULL;
    size_t n = 0;
    char err[PF_ERR_LEN] = "";
    int rc = pf_tokenize(g_tok, copy, len, special, &ids, &n, err);
    if (!fz_utf8_valid((const uint8_t *)copy, len)) {
        if (rc == 0 || !err[0] || strchr(err, '\n') || !strstr(err, "UTF-8")) {
            fprintf(stderr, "invalid UTF-8 not refused cleanly: rc %d, '%s'\n", rc, err);
            abort();
        }
        free(copy);
        free(ids);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "valid UTF-8 refused: %s\n", err);
        abort();
    }
    /* exact round trip, token by token */
    fz_expect_token_bytes(ids, n, copy, len);
    /* and through the streaming decoder, which must emit the same bytes */
    char *out = malloc(len + 64);
    pf_detok d;
    pf_detok_init(&d, g_tok, false);
    size_t o = 0;
    for (size_t i = 0; i <= n; i++) {
        size_t k = 0;
        const char *b = i < n ? pf_detok_push(&d, ids[i], &k) : pf_detok_flush(&d, &k);
        if ((!b && k) || o + k > len) abort();
        if (k) memcpy(out + o, b, k);
        o += k;
    }
    pf_detok_free(&d);
    if (o != len || memcmp(out, copy, len) != 0) abort();
    free(out);
    free(ids);
    free(copy);
    return 0;
}
