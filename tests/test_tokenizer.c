/* Tokenizer, Unicode tables, UTF-8, JSON parser, vocab import, chat format and the tokenize /
 * vocab-import commands. The Qwen3 tests need .cache/qwen3-vocab.gguf (make .cache/qwen3-vocab.gguf)
 * and FAIL without it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "engine/chat.h"
#include "engine/tokenizer.h"
#include "engine/unicode.h"
#include "formats/gguf.h"
#include "formats/json.h"
#include "convert/vocab_import.h"
#include "test.h"
#include "util.h"

#define QWEN3_VOCAB ".cache/qwen3-vocab.gguf"

/* Loaded once and kept for the whole run (reachable, so not a leak). */
static pf_tokenizer *qwen3(void) {
    static pf_tokenizer *t;
    static int tried;
    if (!tried) {
        tried = 1;
        char err[PF_ERR_LEN];
        if (pf_tokenizer_load_file(QWEN3_VOCAB, &t, err) != PF_RC_OK) printf("    %s\n", err);
    }
    return t;
}

#define NEED_QWEN3(t)                                                                              \
    pf_tokenizer *t = qwen3();                                                                     \
    CHECKF(t, "%s missing or unreadable: run `make .cache/qwen3-vocab.gguf`", QWEN3_VOCAB)

/* Concatenated pf_token_bytes of ids, malloc'd. */
static char *detok_all(const pf_tokenizer *t, const int32_t *ids, size_t n, size_t *len) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l;
        pf_token_bytes(t, ids[i], &l);
        total += l;
    }
    char *out = malloc(total + 1), *p = out;
    for (size_t i = 0; i < n; i++) {
        size_t l;
        const char *b = pf_token_bytes(t, ids[i], &l);
        memcpy(p, b, l);
        p += l;
    }
    *len = total;
    return out;
}

/* ------------------------------------------------------------------------------------------- */

TEST(unicode_tables_spot_check) {
    static const uint32_t letters[] = {'a', 'Z', 0xE9, 0xDF, 0x1C5 /* Lt */, 0x2B0 /* Lm */, 0x3A9,
                                       0x436, 0x5D0, 0x627, 0x4E2D, 0x3400, 0x4DBF, 0x9FFF, 0xAC00,
                                       0xD7A3, 0x20000, 0x17F, 0x3042, 0x30AB, 0x1D400};
    static const uint32_t not_letters[] = {'0', ' ', '!', '_', 0x301 /* Mn */, 0x1F600, 0x4DC0,
                                           0xD800, 0xE000, 0x3007 /* Nl */, 0xBD, 0xFF0C, 0x110000};
    static const uint32_t numbers[] = {'0', '9', 0xB2, 0xBD, 0x663, 0x967, 0x216B, 0x2460, 0x3007,
                                       0xFF10, 0x1D7CE};
    static const uint32_t not_numbers[] = {'a', 'x', ' ', 0x4E00, 0x2028, '.'};
    static const uint32_t spaces[] = {0x9, 0xA, 0xB, 0xC, 0xD, 0x20, 0x85, 0xA0, 0x1680, 0x2000,
                                      0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000};
    static const uint32_t not_spaces[] = {0x200B, 0xFEFF, 0x1C, 0x1F, 0x180E, 'a', 0x8, 0x0};
    for (size_t i = 0; i < sizeof letters / sizeof *letters; i++)
        CHECKF(pf_uni_is_letter(letters[i]), "U+%04X should be \\p{L}", letters[i]);
    for (size_t i = 0; i < sizeof not_letters / sizeof *not_letters; i++)
        CHECKF(!pf_uni_is_letter(not_letters[i]), "U+%04X should not be \\p{L}", not_letters[i]);
    for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++)
        CHECKF(pf_uni_is_number(numbers[i]), "U+%04X should be \\p{N}", numbers[i]);
    for (size_t i = 0; i < sizeof not_numbers / sizeof *not_numbers; i++)
        CHECKF(!pf_uni_is_number(not_numbers[i]), "U+%04X should not be \\p{N}", not_numbers[i]);
    for (size_t i = 0; i < sizeof spaces / sizeof *spaces; i++)
        CHECKF(pf_uni_is_space(spaces[i]), "U+%04X should be \\s", spaces[i]);
    for (size_t i = 0; i < sizeof not_spaces / sizeof *not_spaces; i++)
        CHECKF(!pf_uni_is_space(not_spaces[i]), "U+%04X should not be \\s", not_spaces[i]);
}

TEST(utf8_codec) {
    /* Every scalar value round-trips. */
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        char b[4];
        size_t n = pf_utf8_encode(cp, b);
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            CHECK(n == 0);
            continue;
        }
        uint32_t back;
        CHECKF(n > 0 && pf_utf8_decode(b, n, &back) == n && back == cp, "U+%04X", cp);
        CHECK(pf_utf8_valid(b, n));
        CHECK(pf_utf8_incomplete_tail(b, n) == 0);
        for (size_t k = 1; k < n; k++) CHECKF(pf_utf8_incomplete_tail(b, k) == k, "U+%04X", cp);
    }
    static const struct {
        const char *s;
        size_t len, first_bad, subpart;
    } bad[] = {
        {"\x80", 1, 0, 1},         {"\xC0\x80", 2, 0, 1},     {"\xC1\xBF", 2, 0, 1},
        {"\xE0\x80\x80", 3, 0, 1}, {"\xED\xA0\x80", 3, 0, 1}, {"\xF4\x90\x80\x80", 4, 0, 1},
        {"\xF5\x80", 2, 0, 1},     {"\xFF", 1, 0, 1},         {"ab\xE4\xB8", 4, 2, 2},
        {"a\xE4\xB8" "A", 4, 1, 2}, {"\xF0\x9F\x98", 3, 0, 3}, {"ok\xC3", 3, 2, 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECKF(!pf_utf8_valid(bad[i].s, bad[i].len), "case %zu", i);
        CHECKF(pf_utf8_first_invalid(bad[i].s, bad[i].len) == bad[i].first_bad, "case %zu", i);
        uint32_t cp;
        size_t n = pf_utf8_decode(bad[i].s + bad[i].first_bad, bad[i].len - bad[i].first_bad, &cp);
        CHECKF(cp == PF_UTF8_INVALID && n == bad[i].subpart, "case %zu: subpart %zu", i, n);
    }
    CHECK(pf_utf8_incomplete_tail("a\xE4\xB8", 3) == 2);
    CHECK(pf_utf8_incomplete_tail("a\xED\xA0", 3) == 0); /* a surrogate can never complete */
    CHECK(pf_utf8_incomplete_tail("a\x80\x80", 3) == 0);
    CHECK(pf_utf8_valid("", 0));
}

/* ---- golden vectors: fixtures/qwen-tokenizer of the shared fixtures ---- */

/* .inp is each test string followed by "\n__ggml_vocab_test__\n"; .out has one line per string:
 * the ids, each preceded by a space. */
TEST(tokenizer_golden_qwen2_vectors) {
    NEED_SHARED("fixtures/qwen-tokenizer/ggml-vocab-qwen2.gguf.inp");
    NEED_SHARED("fixtures/qwen-tokenizer/ggml-vocab-qwen2.gguf.out");
    NEED_QWEN3(t);
    char path[512];
    size_t in_len, out_len;
    snprintf(path, sizeof path, "%s/fixtures/qwen-tokenizer/ggml-vocab-qwen2.gguf.inp", pf_test_shared());
    char *in = test_slurp(path, &in_len);
    CHECKF(in, "cannot read %s", path);
    snprintf(path, sizeof path, "%s/fixtures/qwen-tokenizer/ggml-vocab-qwen2.gguf.out", pf_test_shared());
    char *out = test_slurp(path, &out_len);
    if (!out) free(in);
    CHECKF(out, "cannot read %s", path);

    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t sep_len = sizeof sep - 1;
    size_t n_cases = 0, n_fail = 0;
    const char *p = in, *end = in + in_len, *line = out, *out_end = out + out_len;
    char msg[512] = "";
    while (p < end) {
        const char *s = memmem(p, (size_t)(end - p), sep, sep_len);
        if (!s) break;
        const char *nl = memchr(line, '\n', (size_t)(out_end - line));
        if (!nl) {
            snprintf(msg, sizeof msg, "case %zu: .out has too few lines", n_cases);
            n_fail++;
            break;
        }
        int32_t *ids = NULL;
        size_t n = 0;
        char err[PF_ERR_LEN];
        int rc = pf_tokenize(t, p, (size_t)(s - p), true, &ids, &n, err);
        /* expected ids */
        size_t k = 0;
        bool ok = rc == 0;
        const char *q = line;
        while (ok && q < nl) {
            while (q < nl && *q == ' ') q++;
            if (q >= nl) break;
            long v = strtol(q, (char **)&q, 10);
            ok = k < n && ids[k] == v;
            k++;
        }
        if (ok && k != n) ok = false;
        if (!ok) {
            if (!n_fail)
                snprintf(msg, sizeof msg, "case %zu (\"%.40s\"): ids differ at %zu (rc %d)", n_cases,
                         p, k ? k - 1 : 0, rc);
            n_fail++;
        } else {
            /* decode(encode(s)) == s */
            size_t dl;
            char *d = detok_all(t, ids, n, &dl);
            if (dl != (size_t)(s - p) || memcmp(d, p, dl) != 0) {
                if (!n_fail) snprintf(msg, sizeof msg, "case %zu: decode differs", n_cases);
                n_fail++;
            }
            free(d);
        }
        free(ids);
        n_cases++;
        p = s + sep_len;
        line = nl + 1;
    }
    size_t extra_lines = 0;
    for (const char *q = line; q < out_end; q++) extra_lines += *q == '\n';
    free(in);
    free(out);
    CHECKF(n_fail == 0, "%zu of %zu cases failed; first: %s", n_fail, n_cases, msg);
    CHECKF(p == end, "trailing data in .inp after case %zu", n_cases);
    CHECKF(extra_lines == 0, ".out has %zu more lines than .inp has cases", extra_lines);
    CHECKF(n_cases >= 40, "only %zu cases read", n_cases);
}

/* Cases whose ids were cross-checked against an independent implementation (transformers.js on
 * Qwen3's tokenizer.json): whitespace/newline backtracking, contractions, numbers, specials. */
static const struct {
    const char *s;
    int32_t ids[16];
    size_t n;
} k_tricky[] = {
    {"a\012\012\012 b", {64, 1406, 293}, 3},
    {"x  \012  y", {87, 2303, 220, 379}, 4},
    {"  \011\012", {98251}, 1},
    {"foo   bar", {7975, 256, 3619}, 3},
    {"foo \343\200\200bar", {7975, 220, 22441, 2257}, 4},
    {"ab!!!\012\012\012cd", {370, 12069, 1406, 4385}, 4},
    {" !?\015\012\015\012z", {753, 30, 871, 89}, 4},
    {"I'M HE'LL we'Re they'VE 'd 't", {40, 27603, 11685, 6, 4086, 582, 49427, 807, 6, 4491, 364, 67, 364, 83}, 14},
    {"x'\305\277t", {87, 6, 144815, 83}, 4},
    {"12345 \302\275 \342\205\253 \331\243", {16, 17, 18, 19, 20, 220, 26062, 220, 70467, 104, 220, 149, 96}, 13},
    {"\302\240\302\240x", {4102, 4102, 87}, 3},
    {"<|im_start|>user\012hi<|im_end|>\012", {151644, 872, 198, 6023, 151645, 198}, 6},
    {"<think>\012\012</think>\012\012", {151667, 271, 151668, 271}, 4},
    {"a<|endoftext|>b<|im_end|>", {64, 151643, 65, 151645}, 4},
    {"\342\200\250\342\200\251x", {378, 101, 378, 102, 87}, 5},
    {"tab\011here\011x", {6192, 197, 6739, 10225}, 4},
    {"\015\015\012\012", {201, 80823}, 2},
    {"\360\237\230\200\360\237\230\200 \360\237\207\272\360\237\207\270!", {141334, 141334, 11162, 229, 118, 145383, 0}, 7},
    {"\344\270\255\346\226\207\346\265\213\350\257\225\357\274\214\345\217\245\345\217\267\343\200\202", {104811, 81705, 3837, 99700, 17992, 1773}, 6},
    {"\360\237\246\231.cpp...:)", {149955, 13, 10821, 1112, 28489}, 5},
};

TEST(tokenizer_cross_checked_cases) {
    NEED_QWEN3(t);
    for (size_t i = 0; i < sizeof k_tricky / sizeof *k_tricky; i++) {
        int32_t *ids;
        size_t n;
        char err[PF_ERR_LEN];
        CHECKF(pf_tokenize(t, k_tricky[i].s, strlen(k_tricky[i].s), true, &ids, &n, err) == 0, "%s", err);
        bool same = n == k_tricky[i].n && memcmp(ids, k_tricky[i].ids, n * sizeof *ids) == 0;
        char got[256] = "";
        for (size_t k = 0, o = 0; k < n && o < sizeof got - 12; k++)
            o += (size_t)snprintf(got + o, sizeof got - o, " %d", ids[k]);
        free(ids);
        CHECKF(same, "case %zu (\"%s\"): got%s", i, k_tricky[i].s, got);
    }
}

TEST(tokenizer_qwen3_metadata) {
    NEED_QWEN3(t);
    CHECK(pf_tokenizer_n_vocab(t) == 151669);
    CHECK(pf_tokenizer_endoftext(t) == 151643);
    CHECK(pf_tokenizer_im_start(t) == 151644);
    CHECK(pf_tokenizer_eot(t) == 151645);
    CHECK(pf_tokenizer_eos(t) == 151645); /* tokenizer_config.json: eos_token <|im_end|> */
    CHECK(pf_tokenizer_pad(t) == 151643);
    CHECK(pf_tokenizer_mask(t) == -1);
    CHECK(pf_tokenizer_is_special(t, 151645));
    CHECK(!pf_tokenizer_is_special(t, 151667)); /* <think>: user-defined, not special */
    CHECK(pf_tokenizer_token_type(t, 151667) == PF_TOKEN_USER_DEFINED);
    CHECK(pf_tokenizer_token_type(t, 9707) == PF_TOKEN_NORMAL);
    CHECK(pf_tokenizer_token_type(t, -1) == 0 && pf_tokenizer_token_type(t, 151669) == 0);
    CHECK(pf_tokenizer_find(t, "<|im_end|>", 10) == 151645);
    CHECK(pf_tokenizer_find(t, "\xC4\xA0world", 7) == 1879); /* "Ġworld" */
    CHECK(pf_tokenizer_find(t, "no such piece!", 14) == -1);
    CHECK(pf_tokenizer_n_merges_skipped(t) == 0);
    const char *tmpl = pf_tokenizer_chat_template(t);
    CHECK(tmpl && strstr(tmpl, "enable_thinking"));
    size_t len;
    const char *b = pf_token_bytes(t, 1879, &len);
    CHECK(b && len == 6 && memcmp(b, " world", 6) == 0);
    b = pf_token_bytes(t, 151645, &len);
    CHECK(b && len == 10 && memcmp(b, "<|im_end|>", 10) == 0);
    CHECK(pf_token_bytes(t, 151669, &len) == NULL && len == 0);
    const char *piece = pf_tokenizer_piece(t, 1879, &len);
    CHECK(piece && len == 7 && strcmp(piece, "\xC4\xA0world") == 0);
}

TEST(tokenizer_special_tokens) {
    NEED_QWEN3(t);
    const char *s = "<|im_start|>user\nhi<|im_end|><think>";
    int32_t *ids;
    size_t n;
    char err[PF_ERR_LEN];
    CHECKF(pf_tokenize(t, s, strlen(s), true, &ids, &n, err) == 0, "%s", err);
    bool ok = n == 6 && ids[0] == 151644 && ids[4] == 151645 && ids[5] == 151667;
    free(ids);
    CHECK(ok);
    /* parse_special = false: control tokens are text; user-defined <think> is still matched. */
    CHECKF(pf_tokenize(t, s, strlen(s), false, &ids, &n, err) == 0, "%s", err);
    size_t dl;
    char *d = detok_all(t, ids, n, &dl);
    ok = dl == strlen(s) && memcmp(d, s, dl) == 0 && ids[n - 1] == 151667;
    for (size_t i = 0; i < n; i++) ok = ok && ids[i] != 151644 && ids[i] != 151645;
    free(d);
    free(ids);
    CHECK(ok);
    /* A special token's text split across spans is not matched. */
    CHECKF(pf_tokenize(t, "<|im_end|", 9, true, &ids, &n, err) == 0, "%s", err);
    ok = n > 1;
    free(ids);
    CHECK(ok);
}

TEST(tokenizer_rejects_invalid_utf8) {
    NEED_QWEN3(t);
    static const struct {
        const char *s;
        size_t len;
        const char *msg;
    } bad[] = {
        {"ab\xff", 3, "invalid UTF-8 at byte 2"},
        {"\xe4\xb8", 2, "invalid UTF-8 at byte 0"},
        {"ok \xed\xa0\x80", 6, "invalid UTF-8 at byte 3"},
        {"<|im_end|>\xc0\x80", 12, "invalid UTF-8 at byte 10"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int32_t *ids = (int32_t *)1;
        size_t n = 99;
        char err[PF_ERR_LEN] = "";
        CHECKF(pf_tokenize(t, bad[i].s, bad[i].len, true, &ids, &n, err) == PF_RC_UTF8, "case %zu", i);
        CHECKF(ids == NULL && n == 0, "case %zu", i);
        CHECKF(strstr(err, bad[i].msg), "case %zu: '%s'", i, err);
    }
    int32_t *ids;
    size_t n;
    char err[PF_ERR_LEN];
    CHECK(pf_tokenize(t, "", 0, true, &ids, &n, err) == 0 && n == 0);
    free(ids);
}

/* ---- random round trips ---- */

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static uint32_t rng_below(uint64_t *s, uint32_t n) { return (uint32_t)(rng_next(s) % n); }

static uint32_t random_cp(uint64_t *rs, int pool) {
    static const uint32_t ws[] = {' ', ' ', ' ', '\t', '\n', '\n', '\r', 0xA0, 0x3000, 0x2028, 0x85, 0x2003};
    static const char punct[] = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
    switch (pool) {
    case 0: return (rng_below(rs, 2) ? 'a' : 'A') + rng_below(rs, 26);
    case 1: return '0' + rng_below(rs, 10);
    case 2: return (uint8_t)punct[rng_below(rs, sizeof punct - 1)];
    case 3: return ws[rng_below(rs, sizeof ws / sizeof *ws)];
    case 4: return 0x4E00 + rng_below(rs, 0x5200);
    case 5: {
        static const uint32_t e[] = {0x200D, 0xFE0F, 0x1F3FD, 0x2764};
        return rng_below(rs, 4) ? 0x1F300 + rng_below(rs, 0x800) : e[rng_below(rs, 4)];
    }
    case 6: return 0x300 + rng_below(rs, 0x70);
    case 7: return rng_below(rs, 2) ? 0x410 + rng_below(rs, 0x40) : 0x391 + rng_below(rs, 0x30);
    default: {
        uint32_t cp;
        do cp = 1 + rng_below(rs, 0x10FFFF);
        while (cp >= 0xD800 && cp <= 0xDFFF);
        return cp;
    }
    }
}

/* A random valid UTF-8 string into buf (cap >= 1024); returns its length. */
static size_t random_text(uint64_t *rs, char *buf, size_t cap) {
    size_t len = 0, n = rng_below(rs, 80);
    int pool = (int)rng_below(rs, 9);
    for (size_t i = 0; i < n && len + 16 < cap; i++) {
        if (rng_below(rs, 4) == 0) pool = (int)rng_below(rs, 9);
        if (rng_below(rs, 30) == 0) {
            static const char *const bits[] = {"'s", "'T", "'re", "'LL", "'ve", "'M", "'d", "   ", "\n\n",
                                               " \n ", "\r\n", "<|im_end|>", "<think>"};
            const char *b = bits[rng_below(rs, sizeof bits / sizeof *bits)];
            memcpy(buf + len, b, strlen(b));
            len += strlen(b);
            continue;
        }
        len += pf_utf8_encode(random_cp(rs, pool), buf + len);
    }
    return len;
}

TEST(tokenizer_random_round_trip) {
    NEED_QWEN3(t);
    uint64_t rs = 0x9E3779B97F4A7C15ull;
    char buf[2048];
    for (int iter = 0; iter < 4000; iter++) {
        size_t len = random_text(&rs, buf, sizeof buf);
        CHECK(pf_utf8_valid(buf, len));
        int32_t *ids;
        size_t n;
        char err[PF_ERR_LEN];
        CHECKF(pf_tokenize(t, buf, len, true, &ids, &n, err) == 0, "iter %d: %s", iter, err);
        size_t dl;
        char *d = detok_all(t, ids, n, &dl);
        bool same = dl == len && memcmp(d, buf, len) == 0;
        free(d);
        /* Stream decoding: every chunk is complete UTF-8 and the chunks add up to the text. */
        pf_detok dt;
        pf_detok_init(&dt, t, false);
        size_t off = 0;
        bool chunks_ok = true;
        for (size_t i = 0; i < n && chunks_ok; i++) {
            CHECK(ids[i] >= 0 && ids[i] < pf_tokenizer_n_vocab(t));
            size_t cl;
            const char *c = pf_detok_push(&dt, ids[i], &cl);
            chunks_ok = c && pf_utf8_valid(c, cl) && off + cl <= len && memcmp(buf + off, c, cl) == 0;
            off += cl;
        }
        size_t fl;
        pf_detok_flush(&dt, &fl);
        pf_detok_free(&dt);
        free(ids);
        CHECKF(same, "iter %d: decode(encode(s)) != s (len %zu)", iter, len);
        CHECKF(chunks_ok && off == len && fl == 0, "iter %d: stream decode differs", iter);
    }
}

TEST(tokenizer_long_pieces) {
    NEED_QWEN3(t);
    /* Pieces of 100k+ bytes with no spaces: must stay fast (heap BPE, not quadratic). */
    size_t cap = 300000, len = 0;
    char *buf = malloc(cap);
    CHECK(buf);
    for (; len < 120000; len++) buf[len] = (char)('a' + (len % 3 == 0));
    buf[len++] = ' ';
    while (len < 240000) len += pf_utf8_encode(0x4E00 + (uint32_t)(len % 977), buf + len);
    buf[len++] = ' ';
    while (len < 290000) buf[len++] = '!';
    int32_t *ids;
    size_t n;
    char err[PF_ERR_LEN];
    int rc = pf_tokenize(t, buf, len, true, &ids, &n, err);
    if (rc) free(buf);
    CHECKF(rc == 0, "%s", err);
    size_t dl;
    char *d = detok_all(t, ids, n, &dl);
    bool same = dl == len && memcmp(d, buf, len) == 0;
    free(d);
    free(ids);
    free(buf);
    CHECK(same);
    CHECK(n < len / 2);
}

TEST(tokenizer_stream_decoder_holds_back_split_chars) {
    NEED_QWEN3(t);
    /* Byte-level tokens for the three bytes of U+4E2D (E4 B8 AD): U+00E4, U+00B8, U+0143. */
    int32_t b0 = pf_tokenizer_find(t, "\xC3\xA4", 2), b1 = pf_tokenizer_find(t, "\xC2\xB8", 2),
            b2 = pf_tokenizer_find(t, "\xC5\x83", 2), a = pf_tokenizer_find(t, "A", 1);
    CHECK(b0 >= 0 && b1 >= 0 && b2 >= 0 && a >= 0);
    pf_detok d;
    pf_detok_init(&d, t, false);
    size_t n;
    CHECK(pf_detok_push(&d, b0, &n) && n == 0);
    CHECK(pf_detok_push(&d, b1, &n) && n == 0);
    const char *o = pf_detok_push(&d, b2, &n);
    CHECK(o && n == 3 && memcmp(o, "\xE4\xB8\xAD", 3) == 0);
    /* An incomplete sequence interrupted by ASCII is emitted as-is (replace_invalid = false). */
    CHECK(pf_detok_push(&d, b0, &n) && n == 0);
    o = pf_detok_push(&d, a, &n);
    CHECK(o && n == 2 && memcmp(o, "\xE4" "A", 2) == 0);
    /* Held back at the end of the stream: flush hands it over. */
    CHECK(pf_detok_push(&d, b0, &n) && n == 0);
    o = pf_detok_flush(&d, &n);
    CHECK(o && n == 1 && (uint8_t)o[0] == 0xE4);
    CHECK(pf_detok_push(&d, 151669, &n) == NULL && n == 0); /* bad id */
    pf_detok_free(&d);

    pf_detok_init(&d, t, true);
    CHECK(pf_detok_push(&d, b0, &n) && n == 0);
    CHECK(pf_detok_push(&d, b1, &n) && n == 0);
    o = pf_detok_push(&d, a, &n);
    CHECK(o && n == 4 && memcmp(o, "\xEF\xBF\xBD" "A", 4) == 0); /* one U+FFFD for E4 B8 */
    CHECK(pf_detok_push(&d, b1, &n) && n == 3 && memcmp(d.buf, "\xEF\xBF\xBD", 3) == 0);
    CHECK(pf_detok_push(&d, b0, &n) && n == 0);
    o = pf_detok_flush(&d, &n);
    CHECK(o && n == 3 && memcmp(o, "\xEF\xBF\xBD", 3) == 0);
    o = pf_detok_flush(&d, &n);
    CHECK(o && n == 0);
    pf_detok_free(&d);
}

/* ---- chat format ---- */

TEST(chat_format_chatml) {
    char *s = pf_chat_format("You are helpful.", "Hi");
    CHECK(s && strcmp(s, "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                         "<|im_start|>assistant\n") == 0);
    free(s);
    s = pf_chat_format(NULL, "Hi");
    CHECK(s && strcmp(s, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n") == 0);
    free(s);
    s = pf_chat_format_ex(NULL, "Hi", true);
    CHECK(s && strcmp(s, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n") == 0);
    free(s);
}

/* ---- JSON ---- */

static const char k_json_sample[] =
    "{\"a\": [1, -2.5e3, 0, 123456789012, true, false, null],\n"
    " \"s\": \"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u4e2d\\ud83d\\ude00\\u0000z\",\n"
    " \"utf8\": \"\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\", \"nested\": {\"k\": [[], {}, [{\"q\": \"\"}]]},\n"
    " \"dup\": 1, \"dup\": 2, \"neg0\": -0, \"frac\": 0.5}";

TEST(json_parses_sample) {
    char err[PF_ERR_LEN];
    pf_json_doc *d = pf_json_parse(k_json_sample, sizeof k_json_sample - 1, err);
    CHECKF(d, "%s", err);
    const pf_json *r = pf_json_root(d), *a = pf_json_get(r, "a"), *s = pf_json_get(r, "s");
    bool ok = r->type == PF_JSON_OBJECT && a && a->type == PF_JSON_ARRAY && a->u.arr.n == 7 &&
              a->u.arr.items[0].u.num.is_int && a->u.arr.items[0].u.num.i == 1 &&
              !a->u.arr.items[1].u.num.is_int && a->u.arr.items[1].u.num.d == -2500.0 &&
              a->u.arr.items[3].u.num.i == 123456789012ll && a->u.arr.items[4].type == PF_JSON_BOOL &&
              a->u.arr.items[4].u.b && !a->u.arr.items[5].u.b && a->u.arr.items[6].type == PF_JSON_NULL;
    static const char want[] = "x\"\\/\b\f\n\r\t\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\0z";
    ok = ok && s && s->type == PF_JSON_STRING && s->u.str.len == sizeof want - 1 &&
         memcmp(s->u.str.s, want, sizeof want - 1) == 0;
    ok = ok && pf_json_str_eq(pf_json_get(r, "utf8"), "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80");
    const pf_json *k = pf_json_get(pf_json_get(r, "nested"), "k");
    ok = ok && k && k->u.arr.n == 3 && k->u.arr.items[2].u.arr.items[0].type == PF_JSON_OBJECT;
    ok = ok && pf_json_get(r, "dup")->u.num.i == 1 && pf_json_get(r, "frac")->u.num.d == 0.5;
    ok = ok && pf_json_get(r, "missing") == NULL && pf_json_get(a, "x") == NULL;
    pf_json_free(d);
    CHECK(ok);
}

TEST(json_rejects_malformed) {
    char err[PF_ERR_LEN];
    /* Every proper prefix of the sample is incomplete. */
    for (size_t n = 0; n < sizeof k_json_sample - 1; n++) {
        char *copy = malloc(n ? n : 1); /* exact-size buffer: ASan catches any overread */
        memcpy(copy, k_json_sample, n);
        pf_json_doc *d = pf_json_parse(copy, n, err);
        free(copy);
        bool rejected = d == NULL;
        pf_json_free(d);
        CHECKF(rejected, "prefix of %zu bytes accepted", n);
        CHECKF(strncmp(err, "byte ", 5) == 0, "prefix %zu: message '%s'", n, err);
    }
    static const char *const bad[] = {
        "", " ", "[1,]", "{\"a\":1,}", "[01]", "[1.]", "[.5]", "[1e]", "[-]", "[+1]", "{a:1}",
        "{'a':1}", "[\"\\x\"]", "[\"\\u12\"]", "[\"\\ud800\"]", "[\"\\udc00\"]", "[\"\\ud800\\u0041\"]",
        "[\"a\nb\"]", "[\"\xff\"]", "[\"\xc0\x80\"]", "[\"\xed\xa0\x80\"]", "[tru]", "[nul]", "[1] x",
        "[1]]", "{\"a\" 1}", "{\"a\":}", "[1 2]", "\xef\xbb\xbf[]", "// c\n[]", "[NaN]", "[Infinity]",
        "{\"a\":1", "\"abc", "[\"abc\\\"]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pf_json_doc *d = pf_json_parse(bad[i], strlen(bad[i]), err);
        bool rejected = d == NULL;
        pf_json_free(d);
        CHECKF(rejected, "accepted: %s", bad[i]);
        CHECKF(strncmp(err, "byte ", 5) == 0, "case %zu: message '%s'", i, err);
    }
    /* Random byte mutations never crash. */
    uint64_t rs = 12345;
    char buf[sizeof k_json_sample];
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(buf, k_json_sample, sizeof buf);
        for (uint32_t m = rng_below(&rs, 4) + 1; m; m--)
            buf[rng_below(&rs, sizeof buf - 1)] = (char)rng_below(&rs, 256);
        pf_json_free(pf_json_parse(buf, sizeof buf - 1 - rng_below(&rs, 3), err));
    }
    /* Nesting limit. */
    char deep[2 * (PF_JSON_MAX_DEPTH + 1)];
    for (int depth = PF_JSON_MAX_DEPTH; depth <= PF_JSON_MAX_DEPTH + 1; depth++) {
        memset(deep, '[', (size_t)depth);
        memset(deep + depth, ']', (size_t)depth);
        pf_json_doc *d = pf_json_parse(deep, 2 * (size_t)depth, err);
        bool ok = (d != NULL) == (depth <= PF_JSON_MAX_DEPTH);
        pf_json_free(d);
        CHECKF(ok, "depth %d", depth);
    }
    CHECK(strstr(err, "nesting"));
}

/* ---- vocab import ---- */

/* GPT-2 bytes_to_unicode, written out independently of the tokenizer's version. */
static void gpt2_byte_map(uint32_t cs[256]) {
    int n = 0;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        cs[b] = printable ? (uint32_t)b : 0;
    }
    for (int b = 0; b < 256; b++)
        if (!cs[b] && !((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) cs[b] = 256 + (uint32_t)n++;
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((uint8_t)*s < 0x20) fprintf(f, "\\u%04x", (uint8_t)*s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

static const char *k_qwen2_pretok =
    "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": "
    "\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+"
    "[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"}, \"behavior\": \"Isolated\", \"invert\": false}, "
    "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false}]}";

/* A tiny byte-level BPE tokenizer.json: the 256 byte symbols (id = byte), five merges (one bogus),
 * gaps 261..299, and added tokens 300..304. `model_type`/`pretok` let tests break it. */
static int write_tiny_tokenizer(const char *path, const char *model_type, const char *pretok,
                                const char *extra_added) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    uint32_t cs[256];
    gpt2_byte_map(cs);
    fprintf(f, "{\"version\": \"1.0\", \"normalizer\": {\"type\": \"NFC\"}, \"pre_tokenizer\": %s,\n", pretok);
    fprintf(f, "\"added_tokens\": [{\"id\": 300, \"content\": \"<|endoftext|>\", \"special\": true},"
               "{\"id\": 301, \"content\": \"<|im_end|>\", \"special\": true},"
               "{\"id\": 302, \"content\": \"<think>\", \"special\": false},"
               "{\"id\": 303, \"content\": \"<a>\", \"special\": true},"
               "{\"id\": 304, \"content\": \"<a>b\", \"special\": true}%s],\n", extra_added);
    fprintf(f, "\"model\": {\"type\": \"%s\", \"dropout\": null, \"unk_token\": null, "
               "\"continuing_subword_prefix\": \"\", \"end_of_word_suffix\": \"\", \"fuse_unk\": false, "
               "\"byte_fallback\": false, \"ignore_merges\": false, \"vocab\": {", model_type);
    for (int b = 0; b < 256; b++) {
        char u[5] = {0};
        pf_utf8_encode(cs[b], u);
        json_str(f, u);
        fprintf(f, ": %d, ", b);
    }
    fprintf(f, "\"he\": 256, \"hel\": 257, \"lo\": 258, \"hello\": 259, \"\xc4\xa0w\": 260},\n");
    fprintf(f, "\"merges\": [[\"h\", \"e\"], [\"he\", \"l\"], \"l o\", [\"hel\", \"lo\"], \"\xc4\xa0 w\", "
               "\"x yz\", [\"h\", \"e\"]]}}\n");
    return fclose(f);
}

static pf_tokenizer *load_path(const char *path, char err[PF_ERR_LEN], char *arch, size_t arch_len) {
    gguf_file *f;
    gguf_open_file(path, &f, err);
    if (!f) return NULL;
    gguf_str s = {"", 0};
    if (arch) {
        if (gguf_get_str(f, "general.architecture", &s) != 0) s.len = 0;
        snprintf(arch, arch_len, "%.*s", (int)s.len, s.ptr);
    }
    pf_tokenizer *t = NULL;
    pf_tokenizer_load(f, &t, err);
    gguf_close(f);
    return t;
}

TEST(vocab_import_round_trip) {
    char tj[512], cj[512], out[512], err[PF_ERR_LEN], arch[64] = "";
    snprintf(tj, sizeof tj, "%s/tiny_tokenizer.json", pf_test_tmpdir());
    snprintf(cj, sizeof cj, "%s/tiny_config.json", pf_test_tmpdir());
    snprintf(out, sizeof out, "%s/tiny_vocab.gguf", pf_test_tmpdir());
    CHECK(write_tiny_tokenizer(tj, "BPE", k_qwen2_pretok, "") == 0);
    static const char cfg[] = "{\"eos_token\": {\"__type\": \"AddedToken\", \"content\": \"<|im_end|>\"}, "
                              "\"pad_token\": null, \"chat_template\": \"{{ hi }}\"}";
    CHECK(test_write_file(cj, cfg, sizeof cfg - 1) == 0);
    CHECKF(pf_vocab_import(tj, cj, out, err) == PF_RC_OK, "%s", err);
    pf_tokenizer *t = load_path(out, err, arch, sizeof arch);
    CHECKF(t, "%s", err);
    bool ok = strcmp(arch, "tokenizer") == 0 && pf_tokenizer_n_vocab(t) == 305 &&
              pf_tokenizer_token_type(t, 65) == PF_TOKEN_NORMAL &&
              pf_tokenizer_token_type(t, 270) == PF_TOKEN_UNUSED &&
              pf_tokenizer_token_type(t, 300) == PF_TOKEN_CONTROL &&
              pf_tokenizer_token_type(t, 302) == PF_TOKEN_USER_DEFINED && pf_tokenizer_eos(t) == 301 &&
              pf_tokenizer_eot(t) == 301 && pf_tokenizer_pad(t) == 300 && pf_tokenizer_endoftext(t) == 300 &&
              pf_tokenizer_im_start(t) == -1 && pf_tokenizer_n_merges_skipped(t) == 2 &&
              pf_tokenizer_chat_template(t) && strcmp(pf_tokenizer_chat_template(t), "{{ hi }}") == 0;
    size_t len;
    const char *p = pf_tokenizer_piece(t, 270, &len);
    ok = ok && p && strcmp(p, "[PAD270]") == 0;
    static const struct {
        const char *s;
        bool special;
        int32_t ids[8];
        size_t n;
    } cases[] = {
        {"hello", true, {259}, 1},
        {"hello world", true, {259, 260, 'o', 'r', 'l', 'd'}, 6},
        {"<a>bhello<think>", true, {304, 259, 302}, 3},
        {"<a>hello", true, {303, 259}, 2},
        {"<a>b<think>", false, {'<', 'a', '>', 'b', 302}, 5},
        {"hhe", true, {'h', 256}, 2},
    };
    for (size_t i = 0; ok && i < sizeof cases / sizeof *cases; i++) {
        int32_t *ids;
        size_t n;
        ok = pf_tokenize(t, cases[i].s, strlen(cases[i].s), cases[i].special, &ids, &n, err) == 0 &&
             n == cases[i].n && memcmp(ids, cases[i].ids, n * sizeof *ids) == 0;
        if (!ok) printf("    case %zu (%s) failed\n", i, cases[i].s);
        free(ids);
    }
    pf_tokenizer_free(t);
    CHECK(ok);

    /* Without a config: eos falls back to <|im_end|>, no chat template. */
    CHECKF(pf_vocab_import(tj, NULL, out, err) == PF_RC_OK, "%s", err);
    t = load_path(out, err, NULL, 0);
    CHECKF(t, "%s", err);
    ok = pf_tokenizer_eos(t) == 301 && pf_tokenizer_chat_template(t) == NULL;
    pf_tokenizer_free(t);
    CHECK(ok);
}

TEST(vocab_import_rejects_unsupported) {
    char tj[512], out[512], err[PF_ERR_LEN];
    snprintf(tj, sizeof tj, "%s/bad_tokenizer.json", pf_test_tmpdir());
    snprintf(out, sizeof out, "%s/bad_vocab.gguf", pf_test_tmpdir());
    static const struct {
        const char *model, *pretok, *added, *msg;
    } cases[] = {
        {"WordPiece", NULL, "", "model.type"},
        {"BPE", "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}", "", "pre_tokenizer"},
        {"BPE", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\s+\"}, "
                "\"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\"}]}", "", "Split pattern"},
        {"BPE", NULL, ", {\"id\": 65, \"content\": \"<x>\", \"special\": true}", "already"},
        {"BPE", NULL, ", {\"id\": -3, \"content\": \"<x>\", \"special\": true}", "added_tokens[5].id"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        CHECK(write_tiny_tokenizer(tj, cases[i].model, cases[i].pretok ? cases[i].pretok : k_qwen2_pretok,
                                   cases[i].added) == 0);
        err[0] = '\0';
        CHECKF(pf_vocab_import(tj, NULL, out, err) == PF_RC_FORMAT, "case %zu accepted, or not as a format error", i);
        CHECKF(strstr(err, cases[i].msg) && strstr(err, tj), "case %zu: '%s'", i, err);
        struct stat st;
        CHECKF(stat(out, &st) != 0, "case %zu: output written", i);
    }
    /* Malformed JSON: the message names the file and the byte offset. */
    CHECK(test_write_file(tj, "{\"model\": [1,]}", 15) == 0);
    CHECK(pf_vocab_import(tj, NULL, out, err) == PF_RC_FORMAT && strstr(err, "byte 13"));
    CHECK(pf_vocab_import("/nonexistent/tokenizer.json", NULL, out, err) == PF_RC_IO &&
          strstr(err, "/nonexistent/tokenizer.json"));
}

/* ---- loader validation ---- */

static int write_tok_gguf(const char *path, const char *model, const char *pre, int64_t eos,
                          bool bad_types) {
    static const char *const toks[] = {"a", "b", "ab", "<|im_end|>"};
    static const int32_t types[] = {1, 1, 1, 3};
    gguf_writer *w = gguf_writer_new();
    if (model) gguf_w_str(w, "tokenizer.ggml.model", model);
    if (pre) gguf_w_str(w, "tokenizer.ggml.pre", pre);
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 4);
    gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_I32, types, bad_types ? 3 : 4);
    static const char *const merges[] = {"a b", "a zz"};
    gguf_w_arr_str(w, "tokenizer.ggml.merges", merges, NULL, 2);
    if (eos >= 0) gguf_w_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eos);
    char err[PF_ERR_LEN];
    int rc = gguf_w_write(w, path, err);
    gguf_writer_free(w);
    return rc;
}

TEST(tokenizer_load_validation) {
    char path[512], err[PF_ERR_LEN];
    snprintf(path, sizeof path, "%s/tok.gguf", pf_test_tmpdir());
    static const struct {
        const char *model, *pre;
        int64_t eos;
        bool bad_types;
        const char *msg;
    } cases[] = {
        {NULL, "qwen2", 3, false, "tokenizer.ggml.model: missing"},
        {"llama", "qwen2", 3, false, "\"llama\""},
        {"gpt2", NULL, 3, false, "tokenizer.ggml.pre: missing"},
        {"gpt2", "llama3", 3, false, "unsupported pre-tokenizer \"llama3\""},
        {"gpt2", "qwen2", 4, false, "tokenizer.ggml.eos_token_id: token id 4 out of range"},
        {"gpt2", "qwen2", 3, true, "tokenizer.ggml.token_type"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        CHECK(write_tok_gguf(path, cases[i].model, cases[i].pre, cases[i].eos, cases[i].bad_types) == 0);
        pf_tokenizer *t = load_path(path, err, NULL, 0);
        pf_tokenizer_free(t);
        CHECKF(!t, "case %zu accepted", i);
        CHECKF(strstr(err, cases[i].msg) && strstr(err, path), "case %zu: '%s'", i, err);
    }
    CHECK(write_tok_gguf(path, "gpt2", "qwen2", 3, false) == 0);
    pf_tokenizer *t = load_path(path, err, NULL, 0);
    CHECKF(t, "%s", err);
    bool ok = pf_tokenizer_eos(t) == 3 && pf_tokenizer_eot(t) == 3 && pf_tokenizer_n_merges_skipped(t) == 1;
    int32_t *ids = NULL;
    size_t n = 0;
    /* "c" has no byte token in this vocabulary. */
    ok = ok && pf_tokenize(t, "abc", 3, true, &ids, &n, err) == PF_RC_ARG && strstr(err, "0x63");
    free(ids);
    ok = ok && pf_tokenize(t, "ab<|im_end|>", 12, true, &ids, &n, err) == 0 && n == 2 && ids[0] == 2 && ids[1] == 3;
    free(ids);
    pf_tokenizer_free(t);
    CHECK(ok);
}

/* ---- CLI ---- */

/* Runs `pocketflash ARGS` with stdout/stderr captured (malloc'd); returns the exit status. */
static int run_cli(const char *args, char **out, size_t *out_len, char **err) {
    char cmd[2048], o[512], e[512];
    snprintf(o, sizeof o, "%s/cli.out", pf_test_tmpdir());
    snprintf(e, sizeof e, "%s/cli.err", pf_test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s", test_cli(), args, o, e);
    int st = system(cmd);
    size_t el;
    *out = test_slurp(o, out_len);
    *err = test_slurp(e, &el);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(cli_tokenize_and_decode) {
    NEED_QWEN3(t);
    (void)t;
    char *out, *err, args[1024], in[512];
    size_t n;
    int st = run_cli("tokenize -m " QWEN3_VOCAB " -p 'Hello world<|im_end|>'", &out, &n, &err);
    bool ok = st == 0 && out && strcmp(out, "9707 1879 151645\n") == 0;
    if (!ok) printf("    status %d out '%s' err '%s'\n", st, out ? out : "", err ? err : "");
    free(out);
    free(err);
    CHECK(ok);
    st = run_cli("tokenize -m " QWEN3_VOCAB " --no-special -p '<|im_end|>'", &out, &n, &err);
    ok = st == 0 && out && !strstr(out, "151645");
    free(out);
    free(err);
    CHECK(ok);
    /* -f: exact bytes, including a trailing newline and a NUL-free multi-line text. */
    snprintf(in, sizeof in, "%s/in.txt", pf_test_tmpdir());
    CHECK(test_write_file(in, "Hello world\n", 12) == 0);
    snprintf(args, sizeof args, "tokenize -m %s -f %s", QWEN3_VOCAB, in);
    st = run_cli(args, &out, &n, &err);
    ok = st == 0 && out && strcmp(out, "9707 1879 198\n") == 0;
    free(out);
    free(err);
    CHECK(ok);
    st = run_cli("tokenize -m " QWEN3_VOCAB " --decode -p '9707, 1879 198 151645'", &out, &n, &err);
    ok = st == 0 && out && n == 22 && memcmp(out, "Hello world\n<|im_end|>", 22) == 0;
    free(out);
    free(err);
    CHECK(ok);
    /* Errors: one line, "pocketflash: ...", the exit status: 1 bad usage, else the failure's kind (2: I/O). */
    static const struct {
        const char *args, *msg;
        int status;
    } bad[] = {
        {"tokenize -m " QWEN3_VOCAB " -p hi --bogus", "--bogus", 1},
        {"tokenize -p hi", "-m", 1},
        {"tokenize -m " QWEN3_VOCAB, "-p", 1},
        {"tokenize -m /nonexistent.gguf -p hi", "/nonexistent.gguf", 2},
        {"tokenize -m " QWEN3_VOCAB " -p $(printf 'a\\377b')", "invalid UTF-8 at byte 1", 1},
        {"tokenize -m " QWEN3_VOCAB " --decode -p '1 x'", "not a token id", 1},
        {"tokenize -m " QWEN3_VOCAB " --decode -p 999999", "out of range", 1},
        {"vocab-import /nonexistent.json", "-o", 1},
        {"vocab-import /nonexistent.json -o /tmp/x.gguf", "/nonexistent.json", 2},
        {"vocab-import a b c -o x", "too many", 1},
        {"vocab-import --what", "--what", 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        st = run_cli(bad[i].args, &out, &n, &err);
        ok = st == bad[i].status && err && strncmp(err, "pocketflash: ", 13) == 0 &&
             strstr(err, bad[i].msg) &&
             strchr(err, '\n') == err + strlen(err) - 1 && n == 0;
        if (!ok) printf("    %s: status %d err '%s'\n", bad[i].args, st, err ? err : "");
        free(out);
        free(err);
        CHECKF(ok, "case %zu", i);
    }
    st = run_cli("tokenize --help", &out, &n, &err);
    ok = st == 0 && out && strstr(out, "--no-special");
    free(out);
    free(err);
    CHECK(ok);
    st = run_cli("vocab-import -h", &out, &n, &err);
    ok = st == 0 && out && strstr(out, "tokenizer_config.json");
    free(out);
    free(err);
    CHECK(ok);
}

TEST(cli_vocab_import_matches_cache) {
    /* The CLI converts the real tokenizer.json; the result tokenizes like the cached file. */
    NEED_QWEN3(t);
    (void)t;
    char args[1024], out_path[512];
    snprintf(out_path, sizeof out_path, "%s/qwen3.gguf", pf_test_tmpdir());
    snprintf(args, sizeof args, "vocab-import .cache/qwen3/package/models/tokenizer.json -o %s", out_path);
    char *out, *err;
    size_t n;
    int st = run_cli(args, &out, &n, &err);
    free(out);
    free(err);
    CHECK(st == 0);
    char e[PF_ERR_LEN], arch[64];
    pf_tokenizer *u = load_path(out_path, e, arch, sizeof arch);
    CHECKF(u, "%s", e);
    int32_t *ids;
    size_t k;
    bool ok = strcmp(arch, "tokenizer") == 0 && pf_tokenizer_n_vocab(u) == 151669 &&
              pf_tokenizer_eos(u) == 151645 && /* no config: <|im_end|> */
              pf_tokenize(u, "Hello world", 11, true, &ids, &k, e) == 0 && k == 2 && ids[0] == 9707;
    if (ok) free(ids);
    if (!ok) printf("    arch '%s' n_vocab %d eos %d\n", arch, pf_tokenizer_n_vocab(u), pf_tokenizer_eos(u));
    pf_tokenizer_free(u);
    CHECK(ok);
}
