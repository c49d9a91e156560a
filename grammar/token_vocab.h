/* The vocabulary side of token masks (grammar/token_mask.h), private to grammar/: the tokens'
 * bytes, which of them are plain string content (whole UTF-8 characters without '"', '\\' or a
 * control byte: a string stays a string, whatever its characters), ordered by their characters,
 * and the tries the mask walks go down. Built once per vocabulary. */
#ifndef PF_TOKEN_VOCAB_H
#define PF_TOKEN_VOCAB_H

#include <stdint.h>

#include "grammar/token_mask.h"
#include "grammar/vocab_trie.h"

/* What the plain content tokens strictly below a node of the `all` trie hold, for walks that take a
 * whole subtree at once: bit b (0x20..0x7F) of the 128 for each ASCII byte; bit 0 for a UTF-8
 * continuation byte and bit (L - 0xC0) / 2 for a lead byte L (a control byte, never in plain
 * content, frees bits 0..31). All zero: no plain token below. */
typedef struct {
    uint64_t lo, hi;
} pf_plain_below;

struct pf_token_masker {
    int n_vocab, n_words;
    void *tokens;      /* one block: the per-token arrays, bytes .. spelling */
    uint8_t *spelling; /* every token's bytes */
    const uint8_t **bytes;
    uint32_t *lens;
    uint32_t *end_bits, *plain_bits; /* end tokens; plain string content */
    int64_t plain_chars;             /* the most characters a plain content token holds */
    int32_t *plain_order, n_plain;   /* the plain content tokens by their characters, fewest first */
    int32_t *plain_upto;             /* [k]: how many of them hold at most k characters */
    int32_t *parent;                 /* the token spelling the longest proper prefix, else -1 */
    pf_vocab_trie all, special;      /* every spelled token; those a string may take that are not plain */
    void *nodes;                     /* one block: below, below_len and first_tok */
    pf_plain_below *below;           /* per node of `all` */
    uint8_t *below_len;              /* per node of `all`: the most bytes of a plain token below it (at most 255) */
    int32_t *first_tok;              /* per node of `all` and one past: its first token at or after it in
                                        all.ids (a subtree [i, end) holds ids[first_tok[i]..first_tok[end])) */
    uint8_t *ord_spelling;           /* the tokens' bytes again, in all.ids' order: a subtree's tokens lie
                                        together, so a walk over them reads memory in sequence */
    uint32_t *ord_off;               /* per place in all.ids and one past: where its bytes start there
                                        (ord_spelling follows it in its block) */
};

static inline int pf_token_vocab_has(const uint32_t *bits, int32_t id) { return bits[id >> 5] >> (id & 31) & 1; }
static inline void pf_token_vocab_set(uint32_t *bits, int32_t id) { bits[id >> 5] |= 1u << (id & 31); }

/* The plain content tokens of at most `room` characters into bits (the others cleared); room < 0:
 * none. */
void pf_token_vocab_plain_within(const pf_token_masker *tm, int64_t room, uint32_t *bits);

#endif
