/* The vocabulary as a trie of its tokens' byte strings, laid out in depth-first order: node i's
 * subtree is [i, end), its first child i + 1, a child's next sibling at the child's end. A walk
 * that rejects a byte skips every token below it at once. */
#ifndef PF_VOCAB_TRIE_H
#define PF_VOCAB_TRIE_H

#include <stdint.h>

typedef struct {
    uint8_t byte;
    int32_t end;           /* past the subtree */
    int32_t tok_lo, tok_n; /* the tokens spelled exactly by the path to here: ids[tok_lo..+tok_n) */
} pf_trie_node;

typedef struct {
    pf_trie_node *nodes;
    int32_t n_nodes;
    int32_t *ids;
} pf_vocab_trie;

/* The trie of tokens ids[0..n) (bytes[id], lens[id] > 0). 0, or -1 when out of memory. */
int pf_vocab_trie_build(pf_vocab_trie *t, const int32_t *ids, int n, const uint8_t *const *bytes, const uint32_t *lens);
void pf_vocab_trie_free(pf_vocab_trie *t);

#endif
