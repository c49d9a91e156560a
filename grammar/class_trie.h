/* A pattern automaton's plain content tokens (grammar/token_vocab.h) grouped by its byte classes,
 * private to grammar/. Bytes of one class move every state alike (pf_regex_class), so tokens whose
 * bytes are of the same classes, one by one, are taken or refused together from any state and
 * leave it in the same state. The trie of those class strings holds far fewer nodes than the
 * vocabulary's byte trie, so once built it tells each further state's plain tokens quickly: the
 * same tokens and end states as the byte walk (grammar/plain_walk.h) where the state alone tells
 * them (pf_matcher_pattern_unbounded, pf_matcher_pattern_far). */
#ifndef PF_CLASS_TRIE_H
#define PF_CLASS_TRIE_H

#include <stdint.h>

#include "grammar/plain_walk.h"
#include "grammar/regex.h"
#include "grammar/token_vocab.h"

typedef struct pf_class_trie pf_class_trie;

/* The trie of the plain tokens' class strings under re (a token holding a byte no state steps on
 * is left out: no state takes it). NULL when out of memory. */
pf_class_trie *pf_class_trie_new(const pf_token_masker *tm, const pf_regex *re);
void pf_class_trie_free(pf_class_trie *ct);
/* An upper bound on the vocabulary trie's nodes pf_class_trie_new goes through for re (those below
 * the first bytes some state steps on): its cost, in the units of pf_walk_ctx.steps. */
int64_t pf_class_trie_cost(const pf_token_masker *tm, const pf_regex *re);

/* bits |= the plain tokens the automaton takes whole from state, each byte's state kept by
 * pf_regex_ok at `used` characters; ends gets the states they leave it in. */
void pf_class_trie_walk(const pf_class_trie *ct, int32_t state, int64_t used, uint32_t *bits, pf_plain_ends *ends);

#endif
