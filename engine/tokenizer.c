/* Byte-level BPE tokenizer, loading: the GGUF vocabulary, merges and special tokens validated and
 * copied into lookup tables. See tokenizer.h for the contract; encoding is bpe.c, decoding detok.c. */
#include "engine/tokenizer_impl.h"

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



void tok_err(char err[PF_ERR_LEN], const gguf_file *f, const char *fmt, ...) {
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


int32_t pf_tokenizer_find(const pf_tokenizer *t, const char *text, size_t len) {
    size_t h = (size_t)hash_bytes(text, len) & t->piece_mask;
    for (;; h = (h + 1) & t->piece_mask) {
        int32_t id = t->piece_slots[h];
        if (id < 0) return -1;
        if (tok_piece_len(t, id) == len && memcmp(t->text + t->text_off[id], text, len) == 0) return id;
    }
}

/* Inserts id unless its piece is already present (first id wins). */
static void piece_insert(pf_tokenizer *t, int32_t id) {
    const char *p = t->text + t->text_off[id];
    size_t len = tok_piece_len(t, id);
    size_t h = (size_t)hash_bytes(p, len) & t->piece_mask;
    for (;; h = (h + 1) & t->piece_mask) {
        int32_t o = t->piece_slots[h];
        if (o < 0) {
            t->piece_slots[h] = id;
            return;
        }
        if (tok_piece_len(t, o) == len && memcmp(t->text + t->text_off[o], p, len) == 0) return;
    }
}

const merge_slot *tok_merge_find(const pf_tokenizer *t, int32_t a, int32_t b) {
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
    free(t->tables);
    free(t->merge_slots);
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
        tok_err(err, f, "%s: expected an integer", key);
        return -1;
    }
    if (v < 0 || v >= n_vocab) {
        tok_err(err, f, "%s: token id %lld out of range (vocabulary has %d tokens)", key,
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

static int cp_byte_at(uint32_t cp, char *at) {
    int b = cp == PF_UTF8_INVALID ? -1 : cp_to_byte(cp);
    if (b < 0) return -1; /* not a byte-level code point: its UTF-8 is kept as is */
    *at = (char)b;
    return 1;
}

/* Decoded bytes of one token appended at out (capacity >= text length, since every mapped code
 * point is >= 1 byte of UTF-8 and yields exactly 1 byte). Returns the length. */
static size_t decode_piece(const char *p, size_t len, uint8_t type, char *out) {
    if (type == PF_TOKEN_CONTROL || type == PF_TOKEN_USER_DEFINED) {
        memcpy(out, p, len);
        return len;
    }
    return pf_utf8_rewrite(p, len, cp_byte_at, out);
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

static pf_rc tok_oom(const gguf_file *f, char err[PF_ERR_LEN]) {
    tok_err(err, f, "tokenizer: out of memory");
    return PF_RC_OOM;
}

static pf_rc load_merges(pf_tokenizer *t, const gguf_file *f, char err[PF_ERR_LEN]) {
    const gguf_kv *kv = gguf_find(f, "tokenizer.ggml.merges");
    uint64_t n = 0;
    if (kv) {
        if (kv->type != GGUF_ARR || kv->v.arr.type != GGUF_STR) {
            tok_err(err, f, "tokenizer.ggml.merges: expected an array of strings");
            return PF_RC_FORMAT;
        }
        n = kv->v.arr.n;
        if (n > (uint64_t)INT32_MAX) {
            tok_err(err, f, "tokenizer.ggml.merges: too many merges (%llu)", (unsigned long long)n);
            return PF_RC_FORMAT;
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
            tok_err(err, f, "tokenizer.ggml.merges[%llu]: expected \"left right\"",
                    (unsigned long long)r);
            return PF_RC_FORMAT;
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
    return PF_RC_OK;
oom:
    return tok_oom(f, err);
}

/* The pre-tokenizer of a byte-level BPE ("gpt2") tokenizer; NULL (err set) for another model or
 * an unsupported pre-tokenizer. */
static pretok_fn read_model(const gguf_file *f, char err[PF_ERR_LEN]) {
    gguf_str s;
    int rc = gguf_get_str(f, "tokenizer.ggml.model", &s);
    if (rc != 0) {
        tok_err(err, f, "tokenizer.ggml.model: %s", rc == -1 ? "missing (no tokenizer in this file)"
                                                             : "expected a string");
        return NULL;
    }
    if (!gguf_str_eq(s, "gpt2")) {
        tok_err(err, f, "tokenizer.ggml.model: unsupported tokenizer \"%.*s\" (only \"gpt2\", "
                        "byte-level BPE, is supported)",
                (int)(s.len > 64 ? 64 : s.len), s.ptr);
        return NULL;
    }
    rc = gguf_get_str(f, "tokenizer.ggml.pre", &s);
    if (rc != 0) {
        tok_err(err, f, "tokenizer.ggml.pre: %s", rc == -1 ? "missing" : "expected a string");
        return NULL;
    }
    pretok_fn pretok = pf_pretokenizer_named(s);
    if (!pretok)
        tok_err(err, f, "tokenizer.ggml.pre: unsupported pre-tokenizer \"%.*s\" (supported: qwen2)",
                (int)(s.len > 64 ? 64 : s.len), s.ptr);
    return pretok;
}

/* The token strings (*tok) and their optional types (*tt, NULL when absent); -1 (err set) when
 * either is malformed. */
static pf_rc find_vocab(const gguf_file *f, const gguf_kv **tok, const gguf_kv **tt, char err[PF_ERR_LEN]) {
    *tok = gguf_find(f, "tokenizer.ggml.tokens");
    if (!*tok || (*tok)->type != GGUF_ARR || (*tok)->v.arr.type != GGUF_STR) {
        tok_err(err, f, "tokenizer.ggml.tokens: %s", *tok ? "expected an array of strings" : "missing");
        return PF_RC_FORMAT;
    }
    uint64_t n = (*tok)->v.arr.n;
    if (n == 0 || n > (uint64_t)INT32_MAX - 1) {
        tok_err(err, f, "tokenizer.ggml.tokens: bad token count %llu", (unsigned long long)n);
        return PF_RC_FORMAT;
    }
    *tt = gguf_find(f, "tokenizer.ggml.token_type");
    if (*tt && ((*tt)->type != GGUF_ARR || !is_int_type((*tt)->v.arr.type) || (*tt)->v.arr.n != n)) {
        tok_err(err, f, "tokenizer.ggml.token_type: expected an integer array of %llu elements",
                (unsigned long long)n);
        return PF_RC_FORMAT;
    }
    return PF_RC_OK;
}

/* Every piece's text, its bytes and type, and the piece index (unused tokens are gap fillers and
 * never produced by encoding, so not indexed); then the id of each single-byte piece. */
static pf_rc load_pieces(pf_tokenizer *t, const gguf_file *f, const gguf_kv *tok, const gguf_kv *tt,
                       char err[PF_ERR_LEN]) {
    const uint64_t n = (uint64_t)t->n_vocab;
    size_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (tok->v.arr.strs[i].len > ((size_t)1 << 20)) {
            tok_err(err, f, "tokenizer.ggml.tokens[%llu]: token is %llu bytes long",
                    (unsigned long long)i, (unsigned long long)tok->v.arr.strs[i].len);
            return PF_RC_FORMAT;
        }
        total += tok->v.arr.strs[i].len + 1;
    }
    t->piece_mask = pow2_at_least(n * 2) - 1;
    /* the seven tables share one block, the widest elements first so each part is aligned */
    size_t offs = (n + 1) * sizeof(size_t), slots = (t->piece_mask + 1) * sizeof *t->piece_slots;
    size_t specials = n * sizeof *t->specials;
    char *mem = total < SIZE_MAX / 4 ? malloc(2 * offs + slots + specials + 2 * total + n) : NULL;
    if (!(t->tables = mem)) return tok_oom(f, err);
    t->text_off = (size_t *)mem;
    t->bytes_off = (size_t *)(mem + offs);
    t->piece_slots = (int32_t *)(mem + 2 * offs);
    t->specials = (int32_t *)(mem + 2 * offs + slots);
    t->text = mem + 2 * offs + slots + specials;
    t->bytes = t->text + total;
    t->type = (uint8_t *)t->bytes + total;
    memset(t->piece_slots, 0xFF, (t->piece_mask + 1) * sizeof *t->piece_slots);
    size_t off = 0, boff = 0;
    for (uint64_t i = 0; i < n; i++) {
        int64_t ty = tt ? gguf_arr_int(tt, i) : PF_TOKEN_NORMAL;
        if (ty < PF_TOKEN_NORMAL || ty > PF_TOKEN_BYTE) {
            tok_err(err, f, "tokenizer.ggml.token_type[%llu]: unknown type %lld",
                    (unsigned long long)i, (long long)ty);
            return PF_RC_FORMAT;
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
    for (uint64_t i = 0; i < n; i++)
        if (t->type[i] != PF_TOKEN_UNUSED) piece_insert(t, (int32_t)i);
    for (int b = 0; b < 256; b++) {
        char u[4];
        size_t ul = pf_utf8_encode(byte_to_cp((uint8_t)b), u);
        t->byte_id[b] = pf_tokenizer_find(t, u, ul);
    }
    return PF_RC_OK;
}

/* The ids the file names (end of sequence, padding, mask), those of the chat markers, and the chat
 * template. */
static pf_rc load_specials_meta(pf_tokenizer *t, const gguf_file *f, char err[PF_ERR_LEN]) {
    if (get_id(f, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos, err) ||
        get_id(f, "tokenizer.ggml.padding_token_id", t->n_vocab, &t->pad, err) ||
        get_id(f, "tokenizer.ggml.mask_token_id", t->n_vocab, &t->mask, err))
        return PF_RC_FORMAT;
    t->im_start = pf_tokenizer_find(t, "<|im_start|>", 12);
    t->eot = pf_tokenizer_find(t, "<|im_end|>", 10);
    t->endoftext = pf_tokenizer_find(t, "<|endoftext|>", 13);
    gguf_str s;
    int rc = gguf_get_str(f, "tokenizer.chat_template", &s);
    if (rc == -2) {
        tok_err(err, f, "tokenizer.chat_template: expected a string");
        return PF_RC_FORMAT;
    }
    if (rc == 0 && !(t->chat_template = gguf_str_dup(s))) {
        return tok_oom(f, err);
    }
    return PF_RC_OK;
}

/* Special-token index. A text that is not valid UTF-8 could match inside a character and split
 * it, so such tokens are left out (they can still be decoded). */
static pf_rc index_specials(pf_tokenizer *t, const gguf_file *f, char err[PF_ERR_LEN]) {
    const uint64_t n = (uint64_t)t->n_vocab;
    special_key *keys = malloc(n * sizeof *keys);
    if (!keys) return tok_oom(f, err);
    for (uint64_t i = 0; i < n; i++) {
        if (t->type[i] != PF_TOKEN_CONTROL && t->type[i] != PF_TOKEN_USER_DEFINED) continue;
        size_t l = tok_piece_len(t, (int32_t)i);
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
    return PF_RC_OK;
}

pf_rc pf_tokenizer_load(const gguf_file *f, pf_tokenizer **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    pretok_fn pretok = read_model(f, err);
    const gguf_kv *tok, *tt;
    if (!pretok) return PF_RC_FORMAT;
    pf_rc rc = find_vocab(f, &tok, &tt, err);
    if (rc != PF_RC_OK) return rc;
    pf_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return tok_oom(f, err);
    t->n_vocab = (int32_t)tok->v.arr.n;
    t->pretok = pretok;
    if ((rc = load_pieces(t, f, tok, tt, err)) != PF_RC_OK || (rc = load_merges(t, f, err)) != PF_RC_OK ||
        (rc = load_specials_meta(t, f, err)) != PF_RC_OK || (rc = index_specials(t, f, err)) != PF_RC_OK) {
        pf_tokenizer_free(t);
        return rc;
    }
    *out = t;
    return PF_RC_OK;
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
    if (len) *len = tok_piece_len(t, id);
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

pf_rc pf_tokenizer_load_file(const char *path, pf_tokenizer **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    gguf_file *f;
    pf_rc rc = gguf_open_file(path, &f, err);
    if (rc == PF_RC_OK) rc = pf_tokenizer_load(f, out, err);
    gguf_close(f);
    return rc;
}
