/* Byte-level BPE tokenizer: GGUF loading, special-token split, Qwen2 pre-tokenizer, merges,
 * decoding. See tokenizer.h for the contract. */
#include "engine/tokenizer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/unicode.h"

/* ---------------------------------------------------------------------------------------------
 * GPT-2 bytes_to_unicode: printable Latin-1 bytes (! .. ~, ¡ .. ¬, ® .. ÿ) map to themselves; the
 * other 68 bytes map, in increasing order, to U+0100 + n. */
static uint32_t byte_to_cp(uint8_t b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) return b;
    if (b <= 0x20) return 0x100u + b;             /* n = 0..32 */
    if (b >= 0x7F && b <= 0xA0) return b + 162u;  /* n = 33..66 */
    return 0x100u + 67;                           /* 0xAD */
}

/* Inverse of byte_to_cp; -1 for a code point outside the map. */
static int cp_to_byte(uint32_t cp) {
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF))
        return (int)cp;
    if (cp >= 0x100 && cp <= 0x120) return (int)(cp - 0x100);
    if (cp >= 0x121 && cp <= 0x142) return (int)(cp - 162);
    if (cp == 0x143) return 0xAD;
    return -1;
}

/* ---------------------------------------------------------------------------------------------
 * Pre-tokenizers: each returns the end of the piece that starts at s[i] (i < end, s valid UTF-8).
 * New ones go in PRETOKENIZERS below. */
typedef size_t (*pretok_fn)(const char *s, size_t i, size_t end);

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

/* ---------------------------------------------------------------------------------------------
 * Tokenizer state. */
typedef struct {
    uint64_t key; /* left << 32 | right; empty slot: rank < 0 */
    int32_t rank, result;
} merge_slot;

struct pf_tokenizer {
    int32_t n_vocab;
    char *text;           /* all pieces, each NUL-terminated */
    size_t *text_off;     /* n_vocab + 1 */
    char *bytes;          /* all decoded token bytes */
    size_t *bytes_off;    /* n_vocab + 1 */
    uint8_t *type;

    int32_t *piece_slots; /* open addressing: token id or -1 */
    size_t piece_mask;
    merge_slot *merge_slots;
    size_t merge_mask;
    size_t n_merges, n_merges_skipped;
    int32_t byte_id[256];

    int32_t *specials;    /* control + user-defined ids with valid UTF-8 text, sorted */
    size_t n_specials;
    uint32_t special_first[257]; /* specials[special_first[b] .. special_first[b+1]) start with b */

    pretok_fn pretok;
    int32_t eos, eot, im_start, endoftext, pad, mask;
    char *chat_template;
};

static void set_err(char err[PF_ERR_LEN], const gguf_file *f, const char *fmt, ...) {
    if (!err) return;
    int n = 0;
    if (f && f->path) n = snprintf(err, PF_ERR_LEN, "%s: ", f->path);
    if (n < 0 || n >= PF_ERR_LEN) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, PF_ERR_LEN - (size_t)n, fmt, ap);
    va_end(ap);
}

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static size_t pow2_at_least(size_t n) {
    size_t p = 16;
    while (p < n) p <<= 1;
    return p;
}

static size_t piece_len(const pf_tokenizer *t, int32_t id) {
    return t->text_off[id + 1] - t->text_off[id] - 1;
}

int32_t pf_tokenizer_find(const pf_tokenizer *t, const char *text, size_t len) {
    size_t h = (size_t)hash_bytes(text, len) & t->piece_mask;
    for (;; h = (h + 1) & t->piece_mask) {
        int32_t id = t->piece_slots[h];
        if (id < 0) return -1;
        if (piece_len(t, id) == len && memcmp(t->text + t->text_off[id], text, len) == 0) return id;
    }
}

/* Inserts id unless its piece is already present (first id wins). */
static void piece_insert(pf_tokenizer *t, int32_t id) {
    const char *p = t->text + t->text_off[id];
    size_t len = piece_len(t, id);
    size_t h = (size_t)hash_bytes(p, len) & t->piece_mask;
    for (;; h = (h + 1) & t->piece_mask) {
        int32_t o = t->piece_slots[h];
        if (o < 0) {
            t->piece_slots[h] = id;
            return;
        }
        if (piece_len(t, o) == len && memcmp(t->text + t->text_off[o], p, len) == 0) return;
    }
}

static const merge_slot *merge_find(const pf_tokenizer *t, int32_t a, int32_t b) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t h = (size_t)hash_u64(key) & t->merge_mask;
    for (;; h = (h + 1) & t->merge_mask) {
        const merge_slot *s = &t->merge_slots[h];
        if (s->rank < 0) return NULL;
        if (s->key == key) return s;
    }
}

/* false if (a, b) already has a (lower) rank. */
static bool merge_insert(pf_tokenizer *t, int32_t a, int32_t b, int32_t rank, int32_t result) {
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t h = (size_t)hash_u64(key) & t->merge_mask;
    for (;; h = (h + 1) & t->merge_mask) {
        merge_slot *s = &t->merge_slots[h];
        if (s->rank < 0) {
            s->key = key;
            s->rank = rank;
            s->result = result;
            return true;
        }
        if (s->key == key) return false;
    }
}

void pf_tokenizer_free(pf_tokenizer *t) {
    if (!t) return;
    free(t->text);
    free(t->text_off);
    free(t->bytes);
    free(t->bytes_off);
    free(t->type);
    free(t->piece_slots);
    free(t->merge_slots);
    free(t->specials);
    free(t->chat_template);
    free(t);
}

/* Optional token-id key: -1 if absent, else must be a valid id. 0 or -1 (err filled). */
static int get_id(const gguf_file *f, const char *key, int32_t n_vocab, int32_t *out,
                  char err[PF_ERR_LEN]) {
    int64_t v;
    int rc = gguf_get_i64(f, key, &v);
    if (rc == -1) {
        *out = -1;
        return 0;
    }
    if (rc != 0) {
        set_err(err, f, "%s: expected an integer", key);
        return -1;
    }
    if (v < 0 || v >= n_vocab) {
        set_err(err, f, "%s: token id %lld out of range (vocabulary has %d tokens)", key,
                (long long)v, (int)n_vocab);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

static bool is_int_type(uint32_t t) {
    return t == GGUF_U8 || t == GGUF_I8 || t == GGUF_U16 || t == GGUF_I16 || t == GGUF_U32 ||
           t == GGUF_I32 || t == GGUF_U64 || t == GGUF_I64;
}

/* Decoded bytes of one token appended at out (capacity >= text length, since every mapped code
 * point is >= 1 byte of UTF-8 and yields exactly 1 byte). Returns the length. */
static size_t decode_piece(const char *p, size_t len, uint8_t type, char *out) {
    if (type == PF_TOKEN_CONTROL || type == PF_TOKEN_USER_DEFINED) {
        memcpy(out, p, len);
        return len;
    }
    size_t i = 0, o = 0;
    while (i < len) {
        uint32_t cp;
        size_t n = pf_utf8_decode(p + i, len - i, &cp);
        int b = cp == PF_UTF8_INVALID ? -1 : cp_to_byte(cp);
        if (b >= 0) out[o++] = (char)b;
        else {
            /* Not a byte-level code point: keep its UTF-8 as is. */
            memcpy(out + o, p + i, n);
            o += n;
        }
        i += n;
    }
    return o;
}

typedef struct {
    uint8_t first;
    size_t len;
    int32_t id;
} special_key;

/* By first byte, then longest first (leftmost-longest matching), then id. */
static int cmp_special(const void *a, const void *b) {
    const special_key *x = a, *y = b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int load_merges(pf_tokenizer *t, const gguf_file *f, char err[PF_ERR_LEN]) {
    const gguf_kv *kv = gguf_find(f, "tokenizer.ggml.merges");
    uint64_t n = 0;
    if (kv) {
        if (kv->type != GGUF_ARR || kv->v.arr.type != GGUF_STR) {
            set_err(err, f, "tokenizer.ggml.merges: expected an array of strings");
            return -1;
        }
        n = kv->v.arr.n;
        if (n > (uint64_t)INT32_MAX) {
            set_err(err, f, "tokenizer.ggml.merges: too many merges (%llu)", (unsigned long long)n);
            return -1;
        }
    }
    t->merge_mask = pow2_at_least((size_t)n * 2 + 1) - 1;
    t->merge_slots = malloc((t->merge_mask + 1) * sizeof *t->merge_slots);
    if (!t->merge_slots) goto oom;
    for (size_t i = 0; i <= t->merge_mask; i++) t->merge_slots[i].rank = -1;
    char *cat = NULL;
    size_t cat_cap = 0;
    for (uint64_t r = 0; r < n; r++) {
        gguf_str m = kv->v.arr.strs[r];
        /* "left right": split at the first space after the first byte (as llama.cpp does). */
        const char *sp = m.len > 1 ? memchr(m.ptr + 1, ' ', m.len - 1) : NULL;
        if (!sp) {
            free(cat);
            set_err(err, f, "tokenizer.ggml.merges[%llu]: expected \"left right\"",
                    (unsigned long long)r);
            return -1;
        }
        size_t la = (size_t)(sp - m.ptr), lb = m.len - la - 1;
        int32_t a = pf_tokenizer_find(t, m.ptr, la), b = pf_tokenizer_find(t, sp + 1, lb);
        int32_t ab = -1;
        if (a >= 0 && b >= 0) {
            if (la + lb > cat_cap) {
                cat_cap = (la + lb) * 2;
                char *nc = realloc(cat, cat_cap);
                if (!nc) {
                    free(cat);
                    goto oom;
                }
                cat = nc;
            }
            memcpy(cat, m.ptr, la);
            memcpy(cat + la, sp + 1, lb);
            ab = pf_tokenizer_find(t, cat, la + lb);
        }
        if (ab < 0 || !merge_insert(t, a, b, (int32_t)r, ab)) t->n_merges_skipped++;
        else t->n_merges++;
    }
    free(cat);
    return 0;
oom:
    set_err(err, f, "tokenizer: out of memory");
    return -1;
}

pf_tokenizer *pf_tokenizer_load(const gguf_file *f, char err[PF_ERR_LEN]) {
    gguf_str s;
    int rc = gguf_get_str(f, "tokenizer.ggml.model", &s);
    if (rc != 0) {
        set_err(err, f, "tokenizer.ggml.model: %s", rc == -1 ? "missing (no tokenizer in this file)"
                                                             : "expected a string");
        return NULL;
    }
    if (!gguf_str_eq(s, "gpt2")) {
        set_err(err, f, "tokenizer.ggml.model: unsupported tokenizer \"%.*s\" (only \"gpt2\", "
                        "byte-level BPE, is supported)",
                (int)(s.len > 64 ? 64 : s.len), s.ptr);
        return NULL;
    }
    rc = gguf_get_str(f, "tokenizer.ggml.pre", &s);
    if (rc != 0) {
        set_err(err, f, "tokenizer.ggml.pre: %s", rc == -1 ? "missing" : "expected a string");
        return NULL;
    }
    pretok_fn pretok = NULL;
    for (size_t i = 0; i < sizeof PRETOKENIZERS / sizeof PRETOKENIZERS[0]; i++)
        if (gguf_str_eq(s, PRETOKENIZERS[i].name)) pretok = PRETOKENIZERS[i].fn;
    if (!pretok) {
        set_err(err, f, "tokenizer.ggml.pre: unsupported pre-tokenizer \"%.*s\" (supported: qwen2)",
                (int)(s.len > 64 ? 64 : s.len), s.ptr);
        return NULL;
    }

    const gguf_kv *tok = gguf_find(f, "tokenizer.ggml.tokens");
    if (!tok || tok->type != GGUF_ARR || tok->v.arr.type != GGUF_STR) {
        set_err(err, f, "tokenizer.ggml.tokens: %s", tok ? "expected an array of strings" : "missing");
        return NULL;
    }
    uint64_t n = tok->v.arr.n;
    if (n == 0 || n > (uint64_t)INT32_MAX - 1) {
        set_err(err, f, "tokenizer.ggml.tokens: bad token count %llu", (unsigned long long)n);
        return NULL;
    }
    const gguf_kv *tt = gguf_find(f, "tokenizer.ggml.token_type");
    if (tt && (tt->type != GGUF_ARR || !is_int_type(tt->v.arr.type) || tt->v.arr.n != n)) {
        set_err(err, f, "tokenizer.ggml.token_type: expected an integer array of %llu elements",
                (unsigned long long)n);
        return NULL;
    }

    pf_tokenizer *t = calloc(1, sizeof *t);
    if (!t) goto oom;
    t->n_vocab = (int32_t)n;
    t->pretok = pretok;
    size_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (tok->v.arr.strs[i].len > ((size_t)1 << 20)) {
            set_err(err, f, "tokenizer.ggml.tokens[%llu]: token is %llu bytes long",
                    (unsigned long long)i, (unsigned long long)tok->v.arr.strs[i].len);
            pf_tokenizer_free(t);
            return NULL;
        }
        total += tok->v.arr.strs[i].len + 1;
    }
    t->text = malloc(total);
    t->text_off = malloc((n + 1) * sizeof *t->text_off);
    t->bytes = malloc(total);
    t->bytes_off = malloc((n + 1) * sizeof *t->bytes_off);
    t->type = malloc(n);
    t->piece_mask = pow2_at_least(n * 2) - 1;
    t->piece_slots = malloc((t->piece_mask + 1) * sizeof *t->piece_slots);
    if (!t->text || !t->text_off || !t->bytes || !t->bytes_off || !t->type || !t->piece_slots)
        goto oom;
    memset(t->piece_slots, 0xFF, (t->piece_mask + 1) * sizeof *t->piece_slots);

    size_t off = 0, boff = 0;
    for (uint64_t i = 0; i < n; i++) {
        int64_t ty = tt ? gguf_arr_int(tt, i) : PF_TOKEN_NORMAL;
        if (ty < PF_TOKEN_NORMAL || ty > PF_TOKEN_BYTE) {
            set_err(err, f, "tokenizer.ggml.token_type[%llu]: unknown type %lld",
                    (unsigned long long)i, (long long)ty);
            pf_tokenizer_free(t);
            return NULL;
        }
        t->type[i] = (uint8_t)ty;
        gguf_str p = tok->v.arr.strs[i];
        t->text_off[i] = off;
        if (p.len) memcpy(t->text + off, p.ptr, p.len);
        t->text[off + p.len] = '\0';
        off += p.len + 1;
        t->bytes_off[i] = boff;
        boff += decode_piece(p.ptr, p.len, t->type[i], t->bytes + boff);
    }
    t->text_off[n] = off;
    t->bytes_off[n] = boff;
    /* Unused tokens are gap fillers and never produced by encoding. */
    for (uint64_t i = 0; i < n; i++)
        if (t->type[i] != PF_TOKEN_UNUSED) piece_insert(t, (int32_t)i);

    for (int b = 0; b < 256; b++) {
        char u[4];
        size_t ul = pf_utf8_encode(byte_to_cp((uint8_t)b), u);
        t->byte_id[b] = pf_tokenizer_find(t, u, ul);
    }

    if (load_merges(t, f, err) != 0) {
        pf_tokenizer_free(t);
        return NULL;
    }

    if (get_id(f, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos, err) ||
        get_id(f, "tokenizer.ggml.padding_token_id", t->n_vocab, &t->pad, err) ||
        get_id(f, "tokenizer.ggml.mask_token_id", t->n_vocab, &t->mask, err)) {
        pf_tokenizer_free(t);
        return NULL;
    }
    t->im_start = pf_tokenizer_find(t, "<|im_start|>", 12);
    t->eot = pf_tokenizer_find(t, "<|im_end|>", 10);
    t->endoftext = pf_tokenizer_find(t, "<|endoftext|>", 13);

    rc = gguf_get_str(f, "tokenizer.chat_template", &s);
    if (rc == -2) {
        set_err(err, f, "tokenizer.chat_template: expected a string");
        pf_tokenizer_free(t);
        return NULL;
    }
    if (rc == 0 && !(t->chat_template = gguf_str_dup(s))) goto oom;

    /* Special-token index. A text that is not valid UTF-8 could match inside a character and split
     * it, so such tokens are left out (they can still be decoded). */
    special_key *keys = malloc(n * sizeof *keys);
    t->specials = malloc(n * sizeof *t->specials);
    if (!keys || !t->specials) {
        free(keys);
        goto oom;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (t->type[i] != PF_TOKEN_CONTROL && t->type[i] != PF_TOKEN_USER_DEFINED) continue;
        size_t l = piece_len(t, (int32_t)i);
        const char *p = t->text + t->text_off[i];
        if (l == 0 || !pf_utf8_valid(p, l)) continue;
        keys[t->n_specials++] = (special_key){(uint8_t)p[0], l, (int32_t)i};
    }
    qsort(keys, t->n_specials, sizeof *keys, cmp_special);
    for (size_t k = 0; k < t->n_specials; k++) t->specials[k] = keys[k].id;
    size_t j = 0;
    for (int b = 0; b < 256; b++) {
        t->special_first[b] = (uint32_t)j;
        while (j < t->n_specials && keys[j].first == b) j++;
    }
    free(keys);
    t->special_first[256] = (uint32_t)j;
    return t;

oom:
    set_err(err, f, "tokenizer: out of memory");
    pf_tokenizer_free(t);
    return NULL;
}

int pf_tokenizer_n_vocab(const pf_tokenizer *t) { return t->n_vocab; }
int32_t pf_tokenizer_eos(const pf_tokenizer *t) { return t->eos; }
int32_t pf_tokenizer_eot(const pf_tokenizer *t) { return t->eot; }
int32_t pf_tokenizer_im_start(const pf_tokenizer *t) { return t->im_start; }
int32_t pf_tokenizer_endoftext(const pf_tokenizer *t) { return t->endoftext; }
int32_t pf_tokenizer_pad(const pf_tokenizer *t) { return t->pad; }
int32_t pf_tokenizer_mask(const pf_tokenizer *t) { return t->mask; }
const char *pf_tokenizer_chat_template(const pf_tokenizer *t) { return t->chat_template; }
size_t pf_tokenizer_n_merges_skipped(const pf_tokenizer *t) { return t->n_merges_skipped; }

int pf_tokenizer_token_type(const pf_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab ? t->type[id] : 0;
}

bool pf_tokenizer_is_special(const pf_tokenizer *t, int32_t id) {
    return pf_tokenizer_token_type(t, id) == PF_TOKEN_CONTROL;
}

const char *pf_tokenizer_piece(const pf_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->n_vocab) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = piece_len(t, id);
    return t->text + t->text_off[id];
}

const char *pf_token_bytes(const pf_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->n_vocab) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = t->bytes_off[id + 1] - t->bytes_off[id];
    return t->bytes + t->bytes_off[id];
}

/* ---------------------------------------------------------------------------------------------
 * Encoding. */
typedef struct {
    int32_t id, prev, next;
    uint32_t len; /* bytes covered; 0 once merged into its left neighbour */
} bpe_sym;

typedef struct {
    int32_t rank, left, right, result;
    uint32_t llen, rlen; /* symbol lengths when queued: a mismatch means the pair is stale */
} bpe_cand;

typedef struct {
    int32_t *ids;
    size_t n, cap;
    bpe_sym *sym;
    bpe_cand *heap;
    size_t sym_cap, heap_cap, n_heap;
} encode_ctx;

static bool push_id(encode_ctx *c, int32_t id) {
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 64;
        int32_t *p = realloc(c->ids, nc * sizeof *p);
        if (!p) return false;
        c->ids = p;
        c->cap = nc;
    }
    c->ids[c->n++] = id;
    return true;
}

static bool cand_less(const bpe_cand *a, const bpe_cand *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->left < b->left;
}

static void heap_push(encode_ctx *c, bpe_cand e) {
    size_t i = c->n_heap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_less(&e, &c->heap[p])) break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = e;
}

static bpe_cand heap_pop(encode_ctx *c) {
    bpe_cand top = c->heap[0], last = c->heap[--c->n_heap];
    size_t i = 0, n = c->n_heap;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const bpe_cand *best = &last;
        if (l < n && cand_less(&c->heap[l], best)) {
            m = l;
            best = &c->heap[l];
        }
        if (l + 1 < n && cand_less(&c->heap[l + 1], best)) m = l + 1;
        if (m == i) break;
        c->heap[i] = c->heap[m];
        i = m;
    }
    if (n) c->heap[i] = last;
    return top;
}

static void try_pair(const pf_tokenizer *t, encode_ctx *c, int32_t l, int32_t r) {
    const merge_slot *m = merge_find(t, c->sym[l].id, c->sym[r].id);
    if (!m) return;
    bpe_cand e = {m->rank, l, r, m->result, c->sym[l].len, c->sym[r].len};
    heap_push(c, e);
}

static int bpe_piece(const pf_tokenizer *t, encode_ctx *c, const char *p, size_t n,
                     size_t base, char err[PF_ERR_LEN]) {
    if (n > (size_t)INT32_MAX / 4) {
        set_err(err, NULL, "piece at byte %zu too long (%zu bytes)", base, n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (t->byte_id[(uint8_t)p[i]] < 0) {
            set_err(err, NULL, "byte 0x%02X at byte %zu has no token in this vocabulary",
                    (uint8_t)p[i], base + i);
            return -1;
        }
    }
    if (n == 1) return push_id(c, t->byte_id[(uint8_t)p[0]]) ? 0 : -2;
    if (n > c->sym_cap) {
        bpe_sym *s = realloc(c->sym, n * 2 * sizeof *s);
        if (!s) return -2;
        c->sym = s;
        c->sym_cap = n * 2;
    }
    /* Heap bound: n - 1 initial pairs plus at most 2 per merge (<= n - 1 merges): 3n. */
    if (3 * n > c->heap_cap) {
        bpe_cand *h = realloc(c->heap, 6 * n * sizeof *h);
        if (!h) return -2;
        c->heap = h;
        c->heap_cap = 6 * n;
    }
    for (size_t i = 0; i < n; i++) {
        c->sym[i].id = t->byte_id[(uint8_t)p[i]];
        c->sym[i].prev = (int32_t)i - 1;
        c->sym[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
        c->sym[i].len = 1;
    }
    c->n_heap = 0;
    for (size_t i = 0; i + 1 < n; i++) try_pair(t, c, (int32_t)i, (int32_t)i + 1);
    while (c->n_heap) {
        bpe_cand e = heap_pop(c);
        bpe_sym *L = &c->sym[e.left], *R = &c->sym[e.right];
        if (L->len != e.llen || R->len != e.rlen || L->next != e.right) continue;
        L->id = e.result;
        L->len += R->len;
        L->next = R->next;
        if (R->next >= 0) c->sym[R->next].prev = e.left;
        R->len = 0;
        if (L->prev >= 0) try_pair(t, c, L->prev, e.left);
        if (L->next >= 0) try_pair(t, c, e.left, L->next);
    }
    for (int32_t i = 0; i >= 0; i = c->sym[i].next)
        if (!push_id(c, c->sym[i].id)) return -2;
    return 0;
}

static int encode_span(const pf_tokenizer *t, encode_ctx *c, const char *s, size_t start,
                       size_t end, char err[PF_ERR_LEN]) {
    size_t i = start;
    while (i < end) {
        size_t j = t->pretok(s, i, end);
        int rc = bpe_piece(t, c, s + i, j - i, i, err);
        if (rc) return rc;
        i = j;
    }
    return 0;
}

int pf_tokenize(const pf_tokenizer *t, const char *text, size_t len, bool parse_special,
                int32_t **ids, size_t *n_ids, char err[PF_ERR_LEN]) {
    *ids = NULL;
    *n_ids = 0;
    size_t bad = pf_utf8_first_invalid(text, len);
    if (bad != len) {
        set_err(err, NULL, "invalid UTF-8 at byte %zu", bad);
        return -1;
    }
    encode_ctx c = {0};
    int rc = 0;
    size_t span = 0, i = 0;
    while (i < len && rc == 0) {
        uint8_t b = (uint8_t)text[i];
        int32_t hit = -1;
        size_t hit_len = 0;
        for (uint32_t k = t->special_first[b]; k < t->special_first[b + 1]; k++) {
            int32_t id = t->specials[k];
            if (!parse_special && t->type[id] == PF_TOKEN_CONTROL) continue;
            size_t l = piece_len(t, id);
            if (l <= len - i && memcmp(text + i, t->text + t->text_off[id], l) == 0) {
                hit = id;
                hit_len = l;
                break; /* candidates are sorted longest first */
            }
        }
        if (hit < 0) {
            i++;
            continue;
        }
        rc = encode_span(t, &c, text, span, i, err);
        if (rc == 0 && !push_id(&c, hit)) rc = -2;
        i += hit_len;
        span = i;
    }
    if (rc == 0) rc = encode_span(t, &c, text, span, len, err);
    free(c.sym);
    free(c.heap);
    if (rc != 0) {
        if (rc == -2) set_err(err, NULL, "tokenize: out of memory");
        free(c.ids);
        return -1;
    }
    *ids = c.ids;
    *n_ids = c.n;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Stream decoding. */
void pf_detok_init(pf_detok *d, const pf_tokenizer *t, bool replace_invalid) {
    memset(d, 0, sizeof *d);
    d->t = t;
    d->replace_invalid = replace_invalid;
}

void pf_detok_free(pf_detok *d) {
    free(d->buf);
    d->buf = NULL;
    d->cap = 0;
}

static bool detok_reserve(pf_detok *d, size_t need) {
    if (need <= d->cap) return true;
    size_t nc = need * 2 > 256 ? need * 2 : 256;
    char *p = realloc(d->buf, nc);
    if (!p) return false;
    d->buf = p;
    d->cap = nc;
    return true;
}

/* Copies in[0..n) to out, replacing ill-formed subparts by U+FFFD if asked; returns bytes written
 * (out has room for 3n). */
static size_t emit(const pf_detok *d, const char *in, size_t n, char *out) {
    if (!d->replace_invalid) {
        memcpy(out, in, n);
        return n;
    }
    size_t i = 0, o = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = pf_utf8_decode(in + i, n - i, &cp);
        if (cp == PF_UTF8_INVALID) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
        } else {
            memcpy(out + o, in + i, k);
            o += k;
        }
        i += k;
    }
    return o;
}

const char *pf_detok_push(pf_detok *d, int32_t id, size_t *len) {
    *len = 0;
    size_t n;
    const char *b = pf_token_bytes(d->t, id, &n);
    if (!b) return NULL;
    size_t m = d->n_pend + n;
    /* Layout: [output: up to 3m bytes][input copy: m bytes]. */
    if (!detok_reserve(d, 4 * m + 4)) return NULL;
    char *in = d->buf + 3 * m;
    memcpy(in, d->pend, d->n_pend);
    memcpy(in + d->n_pend, b, n);
    size_t tail = pf_utf8_incomplete_tail(in, m);
    *len = emit(d, in, m - tail, d->buf);
    memcpy(d->pend, in + m - tail, tail);
    d->n_pend = tail;
    return d->buf;
}

const char *pf_detok_flush(pf_detok *d, size_t *len) {
    *len = 0;
    if (!detok_reserve(d, 16)) return NULL;
    if (d->n_pend) {
        if (d->replace_invalid) {
            memcpy(d->buf, "\xEF\xBF\xBD", 3); /* an incomplete sequence is one maximal subpart */
            *len = 3;
        } else {
            memcpy(d->buf, d->pend, d->n_pend);
            *len = d->n_pend;
        }
    }
    d->n_pend = 0;
    return d->buf;
}
