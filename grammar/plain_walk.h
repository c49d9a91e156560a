/* Inside a pattern string (grammar/regex.h), which plain content tokens (grammar/token_vocab.h)
 * its automaton takes whole, private to grammar/. A walk down the vocabulary trie steps the
 * string's cursor (pf_matcher_pattern_feed) and skips a subtree's refused bytes; a subtree whose
 * tokens all end alike is taken at once from its summary (pf_plain_below): every byte below it
 * loops the automaton back to the state it is in, or every byte below it is of one byte class,
 * so a token's length alone tells the state it leaves. The result is the walk's, token for token. */
#ifndef PF_PLAIN_WALK_H
#define PF_PLAIN_WALK_H

#include <stdint.h>

#include "grammar/matcher.h"
#include "grammar/token_vocab.h"

struct pf_close;

/* One mask walk: the bits it sets and, with closing distances (cl), the tokens' limit and the
 * range of distances after the tokens the matcher accepts. */
typedef struct {
    uint32_t *bits;
    const struct pf_close *cl;
    int64_t limit, max_next, min_next;
    int64_t steps; /* trie nodes and tokens the walk looked at (its cost) */
} pf_walk_ctx;

#define PF_PLAIN_ENDS 32

/* The distinct automaton states the tokens leave the string in (n > PF_PLAIN_ENDS: more than
 * are kept). */
typedef struct {
    int n;
    int32_t s[PF_PLAIN_ENDS];
} pf_plain_ends;

/* State s among the ends e (may be NULL); seen (PF_REGEX_MAX_STATES bits, zeroed before the
 * first) marks the states added, so a state met again is told at once. */
void pf_plain_ends_add(pf_plain_ends *e, uint64_t *seen, int32_t s);

/* Sets in w->bits the plain content tokens the pattern string at cursor cur
 * (pf_matcher_pattern_cursor) takes whole, under w->cl those whose closing distance after them is
 * at most w->limit (the distances measured into w->max_next / min_next); ends (may be NULL) gets
 * the states they leave it in. Out of memory only forgoes the subtree shortcuts. */
void pf_plain_walk(const pf_token_masker *tm, const pf_matcher *m, const pf_frame *cur, pf_walk_ctx *w,
                   pf_plain_ends *ends);

#endif
