/* libFuzzer target for the JSON Schema compiler and the matcher (grammar/). The input is a schema
 * text, then optionally a NUL and bytes to feed: the schema compiles or fails with a one-line
 * error; a compiled one is walked byte by byte (a byte the matcher refuses is skipped), and at
 * every position the token mask over a small vocabulary is taken: it is never empty (every
 * accepted prefix can be completed) and holds the end token exactly when the document can end.
 * Deep nesting, huge enums and anyOf chains must stay within libFuzzer's time and memory limits.
 * `make fuzz-schema` (FUZZ_TIME seconds). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/matcher.h"
#include "grammar/schema.h"
#include "grammar/token_mask.h"

static pf_token_masker *g_tm;
static const char *const k_pieces[] = {"{\"", "\"}", "\":", "\",", ",\"", "\"]", "[\"", "true", "false",
                                       "null", "12", "-0.5e+3", "\xc3\xa9", "\xe4\xb8", "\\u00", "\"\""};
enum { N_PIECES = sizeof k_pieces / sizeof *k_pieces, N_VOCAB = 256 + N_PIECES + 1, END = N_VOCAB - 1 };

static void one_line(const char *err) {
    if (!err[0] || strchr(err, '\n')) {
        fprintf(stderr, "bad error message: '%s'\n", err);
        abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    static uint8_t single[256];
    static const uint8_t *bytes[N_VOCAB];
    static uint32_t lens[N_VOCAB];
    for (int i = 0; i < 256; i++) {
        single[i] = (uint8_t)i;
        bytes[i] = &single[i];
        lens[i] = 1;
    }
    for (int i = 0; i < N_PIECES; i++) {
        bytes[256 + i] = (const uint8_t *)k_pieces[i];
        lens[256 + i] = (uint32_t)strlen(k_pieces[i]);
    }
    char err[PF_ERR_LEN];
    int32_t end = END;
    g_tm = pf_token_masker_new(N_VOCAB, bytes, lens, &end, 1, err);
    if (!g_tm) abort();
    return 0;
}

static void check_mask(pf_mask_cache *cache, pf_matcher *m) {
    uint32_t bits[(N_VOCAB + 31) / 32];
    if (pf_token_mask(g_tm, cache, m, bits) < 1) {
        fprintf(stderr, "no token allowed\n");
        abort();
    }
    if (pf_mask_has(bits, END) != pf_matcher_can_end(m)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t n_schema = nul ? (size_t)(nul - data) : size;
    char *text = malloc(n_schema ? n_schema : 1); /* exact size: ASan sees any read past the end */
    memcpy(text, data, n_schema);
    char err[PF_ERR_LEN] = "";
    pf_schema *s;
    pf_schema_compile(text, n_schema, &s, err);
    if (!s) one_line(err);
    pf_matcher *m = s ? pf_matcher_new(s) : NULL;
    pf_mask_cache *cache = m ? pf_mask_cache_new(g_tm) : NULL;
    if (s && (!m || !cache)) abort();
    for (size_t i = n_schema + 1; m && i < size && i < n_schema + 1 + 512; i++) {
        check_mask(cache, m);
        if (pf_matcher_push(m, data[i]) < 0) abort();
    }
    if (m) check_mask(cache, m);
    pf_mask_cache_free(cache);
    pf_matcher_free(m);
    pf_schema_free(s);
    free(text);
    return 0;
}
