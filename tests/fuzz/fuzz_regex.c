/* libFuzzer target for the pattern engine (grammar/regex.h). The input is a pattern, then
 * optionally a NUL and bytes to walk: the pattern compiles or fails with a one-line error; a
 * compiled one (with no lengths, and again with 1 to 6 characters) is walked over the bytes, and
 * every state the walk reaches that pf_regex_ok keeps may end there or has a byte to a kept state
 * within the lengths: a prefix the engine keeps can always be completed. `make fuzz-regex`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/regex.h"

enum { MAX_CHARS = 6 };

static void one_line(const char *err) {
    if (!err[0] || strchr(err, '\n')) {
        fprintf(stderr, "bad error message: '%s'\n", err);
        abort();
    }
}

/* A state the engine keeps (pf_regex_ok) may end the string there, or some byte leads to another
 * kept state: by induction (each character counts, and at most MAX_CHARS fit) every kept prefix
 * completes. */
static int kept_goes_on(const pf_regex *re, int32_t q, int64_t used, int64_t lo, int64_t hi) {
    if (pf_regex_final(re, q) && used >= lo) return 1;
    for (int c = 0; c < 256; c++) {
        int32_t t = pf_regex_step(re, q, (uint8_t)c);
        int64_t u = used + ((c & 0xC0) != 0x80);
        if (t >= 0 && u <= hi && pf_regex_ok(re, t, u)) return 1;
    }
    return 0;
}

static void run(const char *pat, size_t n, const uint8_t *walk, size_t n_walk, int64_t lo, int64_t hi) {
    char err[PF_ERR_LEN] = "";
    pf_regex *re = pf_regex_compile(&pat, &n, 1, err, NULL);
    if (!re) {
        one_line(err);
        return;
    }
    const uint32_t *masks;
    uint8_t ok[PF_REGEX_MAX_STATES];
    int k = pf_regex_masks(re, &masks);
    for (int i = 0; i < k; i++) ok[i] = masks[i] == 1;
    (void)pf_regex_match_mask(re, walk, n_walk);
    if (pf_regex_accept(re, ok, lo, hi, err) < 0) {
        one_line(err);
        pf_regex_free(re);
        return;
    }
    int32_t q = pf_regex_start(re);
    int64_t used = 0;
    for (size_t i = 0; q >= 0 && i <= n_walk && i < 64; i++) {
        if (pf_regex_ok(re, q, used) && !kept_goes_on(re, q, used, lo, hi)) {
            fprintf(stderr, "a kept state with no completion\n");
            abort();
        }
        if (!pf_regex_ok(re, q, used) || i == n_walk) break;
        used += (walk[i] & 0xC0) != 0x80;
        if (used > hi) break;
        q = pf_regex_step(re, q, walk[i]);
    }
    pf_regex_free(re);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t n_pat = nul ? (size_t)(nul - data) : size;
    if (n_pat > 512) return 0;
    char *pat = malloc(n_pat ? n_pat : 1); /* exact size: ASan sees any read past the end */
    memcpy(pat, data, n_pat);
    const uint8_t *walk = nul ? nul + 1 : data + size;
    size_t n_walk = (size_t)(data + size - walk);
    run(pat, n_pat, walk, n_walk, 0, INT64_MAX);
    run(pat, n_pat, walk, n_walk, 1, MAX_CHARS);
    free(pat);
    return 0;
}
