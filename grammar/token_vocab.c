#include "grammar/token_vocab.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_PLAIN, T_SPECIAL, T_DEAD };

/* What a string between characters makes of a token's bytes: T_PLAIN, whole UTF-8 characters
 * without '"', '\\' or control bytes (the string stays a string); T_DEAD, a control byte or a
 * byte no UTF-8 text has there before any '"' or '\\' (no string takes it, whatever the string);
 * T_SPECIAL otherwise (a quote or backslash reached, or a character left open at the end). */
static int string_class(const uint8_t *p, uint32_t n) {
    for (uint32_t i = 0; i < n;) {
        uint8_t c = p[i];
        if (c == '"' || c == '\\') return T_SPECIAL;
        if (c < 0x20) return T_DEAD;
        if (c < 0x80) {
            i++;
            continue;
        }
        uint32_t k = c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : 0;
        if (!k) return T_DEAD;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
        for (uint32_t j = 1; j <= k; j++) {
            if (i + j >= n) return T_SPECIAL; /* a partial character */
            if (p[i + j] < (j == 1 ? lo : 0x80) || p[i + j] > (j == 1 ? hi : 0xBF)) return T_DEAD;
        }
        i += k + 1;
    }
    return T_PLAIN;
}

/* The spelled tokens (special_only: only those a string between characters may take that are
 * not plain content) into a trie. */
static int build_trie(pf_token_masker *tm, pf_vocab_trie *t, int special_only) {
    int32_t *ids = malloc((size_t)tm->n_vocab * sizeof *ids);
    int n = 0;
    if (!ids) return -1;
    for (int32_t id = 0; id < tm->n_vocab; id++)
        if (tm->lens[id] && (!special_only || string_class(tm->bytes[id], tm->lens[id]) == T_SPECIAL)) ids[n++] = id;
    int rc = pf_vocab_trie_build(t, ids, n, tm->bytes, tm->lens);
    free(ids);
    return rc;
}

/* The characters of token id (its bytes that do not continue a UTF-8 character). */
static int64_t token_chars(const pf_token_masker *tm, int id) {
    int64_t chars = 0;
    for (uint32_t k = 0; k < tm->lens[id]; k++) chars += (tm->bytes[id][k] & 0xC0) != 0x80;
    return chars;
}

static void copy_vocab(pf_token_masker *tm, const uint8_t *const *bytes, const uint32_t *lens) {
    size_t off = 0;
    for (int i = 0; i < tm->n_vocab; i++) {
        if (!bytes[i] || !lens[i]) continue;
        memcpy(tm->spelling + off, bytes[i], lens[i]);
        tm->bytes[i] = tm->spelling + off;
        tm->lens[i] = lens[i];
        off += lens[i];
        if (string_class(tm->bytes[i], lens[i]) != T_PLAIN) continue;
        pf_token_vocab_set(tm->plain_bits, i);
        tm->n_plain++;
        if (token_chars(tm, i) > tm->plain_chars) tm->plain_chars = token_chars(tm, i);
    }
}

/* The plain content tokens ordered by their characters (a counting sort). */
static void order_plain(pf_token_masker *tm) {
    for (int i = 0; i < tm->n_vocab; i++)
        if (pf_token_vocab_has(tm->plain_bits, i)) tm->plain_upto[token_chars(tm, i) + 1]++;
    for (int64_t k = 1; k <= tm->plain_chars + 1; k++) tm->plain_upto[k] += tm->plain_upto[k - 1];
    /* plain_upto[k] is now the first place of the tokens with k characters */
    for (int i = 0; i < tm->n_vocab; i++)
        if (pf_token_vocab_has(tm->plain_bits, i)) tm->plain_order[tm->plain_upto[token_chars(tm, i)]++] = i;
    /* and each plain_upto[k] one past the tokens with k characters */
}

/* The per-token arrays in one zeroed block, the widest elements first so each part is aligned:
 * bytes; lens, the end and plain bits, plain_order (room for every token), plain_upto (a token
 * holds at most as many characters as bytes), parent; then the spelling. Filled but for parent.
 * -1: out of memory (or a size past what size_t counts, where it is 32 bits). */
static int take_tokens(pf_token_masker *tm, const uint8_t *const *bytes, const uint32_t *lens) {
    size_t n = (size_t)tm->n_vocab, total = 0, longest = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = bytes[i] ? lens[i] : 0;
        if (len > SIZE_MAX / 16 - total) return -1;
        total += len;
        if (len > longest) longest = len;
    }
    if (n > SIZE_MAX / 64) return -1;
    size_t ptrs = n * sizeof *tm->bytes, words = (size_t)tm->n_words * sizeof(uint32_t), ids = n * sizeof(int32_t);
    size_t upto = (longest + 2) * sizeof *tm->plain_upto, order = ids + sizeof *tm->plain_order;
    char *mem = calloc(1, ptrs + ids + 2 * words + order + upto + ids + total);
    if (!(tm->tokens = mem)) return -1;
    tm->bytes = (const uint8_t **)mem;
    tm->lens = (uint32_t *)(mem += ptrs);
    tm->end_bits = (uint32_t *)(mem += ids);
    tm->plain_bits = (uint32_t *)(mem += words);
    tm->plain_order = (int32_t *)(mem += words);
    tm->plain_upto = (int32_t *)(mem += order);
    tm->parent = (int32_t *)(mem += upto);
    tm->spelling = (uint8_t *)(mem += ids);
    copy_vocab(tm, bytes, lens);
    order_plain(tm);
    return 0;
}

/* The plain content tokens of at most `room` characters into bits (the others cleared), setting
 * or clearing whichever part is smaller. */
void pf_token_vocab_plain_within(const pf_token_masker *tm, int64_t room, uint32_t *bits) {
    size_t words = (size_t)tm->n_words * sizeof *bits;
    if (room >= tm->plain_chars) {
        memcpy(bits, tm->plain_bits, words);
        return;
    }
    int32_t n = room < 0 ? 0 : tm->plain_upto[room];
    if (n <= tm->n_plain - n) {
        memset(bits, 0, words);
        for (int32_t k = 0; k < n; k++) pf_token_vocab_set(bits, tm->plain_order[k]);
    } else {
        memcpy(bits, tm->plain_bits, words);
        for (int32_t k = n; k < tm->n_plain; k++) bits[tm->plain_order[k] >> 5] &= ~(1u << (tm->plain_order[k] & 31));
    }
}

/* parent[id] over the trie of every spelled token, in its depth-first order: a stack of the open
 * nodes' subtree ends, each with the nearest token on the path down to it (of tokens spelled alike,
 * the lowest id, which the trie lists first). */
static int build_parents(pf_token_masker *tm) {
    const pf_vocab_trie *t = &tm->all;
    int32_t *end = malloc((size_t)t->n_nodes * sizeof *end), *near = malloc((size_t)t->n_nodes * sizeof *near);
    if (!end || !near) {
        free(end);
        free(near);
        return -1;
    }
    for (int id = 0; id < tm->n_vocab; id++) tm->parent[id] = -1;
    int top = 0;
    for (int32_t i = 1; i < t->n_nodes; i++) {
        while (top && end[top - 1] <= i) top--;
        int32_t above = top ? near[top - 1] : -1;
        const pf_trie_node *nd = &t->nodes[i];
        for (int32_t k = 0; k < nd->tok_n; k++) tm->parent[t->ids[nd->tok_lo + k]] = above;
        end[top] = nd->end;
        near[top++] = nd->tok_n ? t->ids[nd->tok_lo] : above;
    }
    free(end);
    free(near);
    return 0;
}

/* pf_plain_below's bit for byte b. */
static void below_set(pf_plain_below *s, uint8_t b) {
    unsigned bit = b < 0x80 ? b : b < 0xC0 ? 0 : (unsigned)(b - 0xC0) / 2;
    if (bit < 64) s->lo |= 1ull << bit;
    else s->hi |= 1ull << (bit - 64);
}

/* below[], below_len[] and first_tok[] of the `all` trie (one zeroed block, the widest elements
 * first), children before parents (each node's children lie after it: i + 1, then each child's
 * end). */
static int build_below(pf_token_masker *tm) {
    const pf_vocab_trie *t = &tm->all;
    int32_t n = t->n_nodes;
    size_t below = (size_t)n * sizeof *tm->below, first = ((size_t)n + 1) * sizeof *tm->first_tok;
    char *mem = calloc(1, below + first + (size_t)n);
    if (!(tm->nodes = mem)) return -1;
    tm->below = (pf_plain_below *)mem;
    tm->first_tok = (int32_t *)(mem + below);
    tm->below_len = (uint8_t *)(mem + below + first);
    int32_t n_ids = 0;
    for (int32_t i = 0; i < n; i++) n_ids += t->nodes[i].tok_n;
    tm->first_tok[n] = n_ids;
    for (int32_t i = n - 1; i >= 0; i--) {
        const pf_trie_node *nd = &t->nodes[i];
        tm->first_tok[i] = nd->tok_n ? nd->tok_lo : tm->first_tok[i + 1];
        for (int32_t c = i + 1; c < nd->end; c = t->nodes[c].end) {
            int plain = tm->below[c].lo || tm->below[c].hi;
            for (int32_t k = 0; k < t->nodes[c].tok_n && !plain; k++) plain = pf_token_vocab_has(tm->plain_bits, t->ids[t->nodes[c].tok_lo + k]);
            if (!plain) continue;
            tm->below[i].lo |= tm->below[c].lo;
            tm->below[i].hi |= tm->below[c].hi;
            below_set(&tm->below[i], t->nodes[c].byte);
            if (tm->below_len[c] + 1 > tm->below_len[i]) tm->below_len[i] = tm->below_len[c] < 255 ? tm->below_len[c] + 1 : 255;
        }
    }
    return 0;
}

/* ord_off and ord_spelling: the `all` trie's tokens' bytes in its order, in one block (the offsets,
 * then the bytes). */
static int build_order(pf_token_masker *tm) {
    const pf_vocab_trie *t = &tm->all;
    int32_t n = tm->first_tok[t->n_nodes];
    size_t total = 0, offs = ((size_t)n + 1) * sizeof *tm->ord_off;
    for (int32_t j = 0; j < n; j++) total += tm->lens[t->ids[j]];
    if (total > UINT32_MAX || !(tm->ord_off = malloc(offs + total))) return -1;
    tm->ord_spelling = (uint8_t *)tm->ord_off + offs;
    uint32_t off = 0;
    for (int32_t j = 0; j < n; j++) {
        int32_t id = t->ids[j];
        tm->ord_off[j] = off;
        memcpy(tm->ord_spelling + off, tm->bytes[id], tm->lens[id]);
        off += tm->lens[id];
    }
    tm->ord_off[n] = off;
    return 0;
}

pf_token_masker *pf_token_masker_new(int n_vocab, const uint8_t *const *bytes, const uint32_t *lens,
                                     const int32_t *end_ids, int n_end, char err[PF_ERR_LEN]) {
    pf_token_masker *tm = calloc(1, sizeof *tm);
    if (!tm || n_vocab < 1) {
        snprintf(err, PF_ERR_LEN, tm ? "token masks: empty vocabulary" : "out of memory");
        free(tm);
        return NULL;
    }
    tm->n_vocab = n_vocab;
    tm->n_words = (n_vocab + 31) / 32;
    if (take_tokens(tm, bytes, lens) < 0 || build_trie(tm, &tm->all, 0) < 0 || build_trie(tm, &tm->special, 1) < 0 ||
        build_parents(tm) < 0 || build_below(tm) < 0 || build_order(tm) < 0) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        pf_token_masker_free(tm);
        return NULL;
    }
    for (int i = 0; i < n_end; i++)
        if (end_ids[i] >= 0 && end_ids[i] < n_vocab) pf_token_vocab_set(tm->end_bits, end_ids[i]);
    return tm;
}

void pf_token_masker_free(pf_token_masker *tm) {
    if (!tm) return;
    pf_vocab_trie_free(&tm->all);
    pf_vocab_trie_free(&tm->special);
    free(tm->tokens);
    free(tm->nodes);
    free(tm->ord_off); /* ord_spelling lies in the same block */
    free(tm);
}

int pf_token_masker_words(const pf_token_masker *tm) { return tm->n_words; }

const uint8_t *pf_token_masker_bytes(const pf_token_masker *tm, int32_t id, uint32_t *len) {
    *len = id >= 0 && id < tm->n_vocab ? tm->lens[id] : 0;
    return *len ? tm->bytes[id] : NULL;
}

int pf_token_masker_is_end(const pf_token_masker *tm, int32_t id) {
    return id >= 0 && id < tm->n_vocab && pf_token_vocab_has(tm->end_bits, id);
}
