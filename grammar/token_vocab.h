/* The vocabulary side of token masks (grammar/token_mask.h), private to grammar/: the tokens'
 * bytes, which of them are plain string content (whole UTF-8 characters without '"', '\\' or a
 * control byte: a string stays a string, whatever its characters), ordered by their characters,
 * and the tries the mask walks go down. Built once per vocabulary. */
#ifndef PF_TOKEN_VOCAB_H
#define PF_TOKEN_VOCAB_H

#include <stdint.h>

#include "grammar/token_mask.h"
#include "grammar/vocab_trie.h"

struct pf_token_masker {
    int n_vocab, n_words;
    uint8_t *spelling; /* every token's bytes */
    const uint8_t **bytes;
    uint32_t *lens;
    uint32_t *end_bits, *plain_bits; /* end tokens; plain string content */
    int64_t plain_chars;             /* the most characters a plain content token holds */
    int32_t *plain_order, n_plain;   /* the plain content tokens by their characters, fewest first */
    int32_t *plain_upto;             /* [k]: how many of them hold at most k characters */
    int32_t *parent;                 /* the token spelling the longest proper prefix, else -1 */
    pf_vocab_trie all, special;      /* every spelled token; those a string may take that are not plain */
};

static inline int pf_token_vocab_has(const uint32_t *bits, int32_t id) { return bits[id >> 5] >> (id & 31) & 1; }
static inline void pf_token_vocab_set(uint32_t *bits, int32_t id) { bits[id >> 5] |= 1u << (id & 31); }

/* The plain content tokens of at most `room` characters into bits (the others cleared); room < 0:
 * none. */
void pf_token_vocab_plain_within(const pf_token_masker *tm, int64_t room, uint32_t *bits);

#endif
