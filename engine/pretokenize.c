/* The pre-tokenizers: the rules that cut text into pieces before BPE merges (docs/target.md). */
#include "engine/tokenizer_impl.h"

#include <stdbool.h>

#include "engine/unicode.h"

/* New ones go in PRETOKENIZERS below. */

enum { C_L = 1, C_N = 2, C_S = 4, C_NL = 8 }; /* \p{L}, \p{N}, \s, [\r\n] */

static unsigned char_class(uint32_t cp) {
    if (cp == '\r' || cp == '\n') return C_S | C_NL;
    if (pf_uni_is_letter(cp)) return C_L;
    if (pf_uni_is_number(cp)) return C_N;
    if (pf_uni_is_space(cp)) return C_S;
    return 0;
}

static uint32_t cp_at(const char *s, size_t i, size_t end, size_t *next) {
    uint8_t b = (uint8_t)s[i];
    if (b < 0x80) {
        *next = i + 1;
        return b;
    }
    uint32_t cp;
    *next = i + pf_utf8_decode(s + i, end - i, &cp);
    return cp;
}

/* End of the run of code points starting at i whose class intersects `want` (or, with
 * negate, does not intersect it). */
static size_t run_while(const char *s, size_t i, size_t end, unsigned want, bool negate) {
    while (i < end) {
        size_t nx;
        unsigned k = char_class(cp_at(s, i, end, &nx));
        if (((k & want) != 0) == negate) break;
        i = nx;
    }
    return i;
}

/* Case folding for the contraction alternatives: (?i) in Oniguruma and Python's `regex` uses
 * Unicode simple case folding, under which the only non-ASCII code point folding to one of
 * s t r e v m l d is U+017F LATIN SMALL LETTER LONG S (-> s). */
static uint32_t fold_contraction(uint32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c == 0x17F) return 's';
    return c;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 * \s*[\r\n]+|\s+(?!\S)|\s+
 * Alternatives are tried in order; the first that matches at i wins (leftmost-first, as in
 * Oniguruma / PCRE / Python regex), each with its own greedy-with-backtracking semantics. */
static size_t pretok_qwen2(const char *s, size_t i, size_t end) {
    size_t i1, i2 = 0;
    uint32_t c0 = cp_at(s, i, end, &i1), c1 = 0;
    unsigned k0 = char_class(c0), k1 = 0;
    bool has1 = i1 < end;
    if (has1) {
        c1 = cp_at(s, i1, end, &i2);
        k1 = char_class(c1);
    }

    /* (?i:'s|'t|'re|'ve|'m|'ll|'d) */
    if (c0 == '\'' && has1) {
        uint32_t f1 = fold_contraction(c1);
        if (f1 == 's' || f1 == 't' || f1 == 'm' || f1 == 'd') return i2;
        if ((f1 == 'r' || f1 == 'v' || f1 == 'l') && i2 < end) {
            size_t i3;
            uint32_t f2 = fold_contraction(cp_at(s, i2, end, &i3));
            if ((f1 == 'r' && f2 == 'e') || (f1 == 'v' && f2 == 'e') || (f1 == 'l' && f2 == 'l'))
                return i3;
        }
    }

    /* [^\r\n\p{L}\p{N}]?\p{L}+ : the optional char is tried first, then skipped. */
    if (!(k0 & (C_NL | C_N | C_L)) && has1 && (k1 & C_L)) return run_while(s, i2, end, C_L, false);
    if (k0 & C_L) return run_while(s, i1, end, C_L, false);

    /* \p{N} : one code point per piece. */
    if (k0 & C_N) return i1;

    /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
    const unsigned not_punct = C_S | C_L | C_N;
    if (c0 == ' ' && has1 && !(k1 & not_punct)) {
        size_t j = run_while(s, i2, end, not_punct, true);
        return run_while(s, j, end, C_NL, false);
    }
    if (!(k0 & not_punct)) {
        size_t j = run_while(s, i1, end, not_punct, true);
        return run_while(s, j, end, C_NL, false);
    }

    /* c0 is whitespace. Scan its maximal run [i, k). */
    size_t k = i, last_start = i, nl_end = 0;
    while (k < end) {
        size_t nx;
        unsigned kk = char_class(cp_at(s, k, end, &nx));
        if (!(kk & C_S)) break;
        if (kk & C_NL) nl_end = nx;
        last_start = k;
        k = nx;
    }
    /* \s*[\r\n]+ : \s* backtracks to the last [\r\n] of the run; the piece ends right after it. */
    if (nl_end) return nl_end;
    /* \s+(?!\S) : the whole run at end of text, else the run less its last code point. */
    if (k == end) return k;
    if (last_start > i) return last_start;
    /* \s+ */
    return k;
}

static const struct {
    const char *name;
    pretok_fn fn;
} PRETOKENIZERS[] = {
    {"qwen2", pretok_qwen2},
};

pretok_fn pf_pretokenizer_named(gguf_str name) {
    for (size_t i = 0; i < sizeof PRETOKENIZERS / sizeof PRETOKENIZERS[0]; i++)
        if (gguf_str_eq(name, PRETOKENIZERS[i].name)) return PRETOKENIZERS[i].fn;
    return NULL;
}
