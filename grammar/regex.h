/* Regular expressions of JSON Schema's `pattern` (ECMA-262 syntax, the subset real schemas use)
 * compiled to a DFA over the UTF-8 bytes of the decoded string, for the matcher (grammar/matcher.c)
 * to step byte by byte. docs/structured-output.md lists the subset.
 *
 * A pattern is unanchored, as JSON Schema reads it: it matches when it matches somewhere in the
 * string; `^` and `$` anchor it at the string's start and end. Where ECMA-262 and Python's `re`
 * (a common validator's engine) disagree on a class (`\s`, `\d` and `\w` beyond ASCII, `.`), the
 * compiled set is the characters both accept (`[^...]`: both refuse), so an accepted string
 * matches under either reading. A construct outside the subset (backreferences, lookaround, `\b`,
 * `\p{..}`) or an automaton past PF_REGEX_MAX_STATES is an error naming it.
 *
 * Several patterns compile into one automaton (each a "component"); every state carries the mask of
 * the components whose pattern the bytes so far match, and the caller decides which masks accept
 * (all of them: an intersection, `pattern` with `format`; any: `patternProperties`). */
#ifndef PF_REGEX_H
#define PF_REGEX_H

#include <stddef.h>
#include <stdint.h>

#include "formats/errf.h" /* PF_ERR_LEN */

#define PF_REGEX_MAX_STATES 4096 /* DFA states of one automaton */
#define PF_REGEX_MAX_PATTERNS 32 /* components of one automaton (one mask bit each) */

typedef struct pf_regex pf_regex;

/* pats[i][0..lens[i]) (UTF-8) as one automaton of n components; NULL with a one-line error. *oom
 * (may be NULL) set when the failure was memory. */
pf_regex *pf_regex_compile(const char *const *pats, const size_t *lens, int n, char err[PF_ERR_LEN], int *oom);
void pf_regex_free(pf_regex *re);

/* The masks of matched components that states carry (distinct, ascending; 0 included when some
 * state matches none). */
int pf_regex_masks(const pf_regex *re, const uint32_t **masks);
/* Mask of the components bytes p[0..n) match as a whole string (before pf_regex_accept). */
uint32_t pf_regex_match_mask(const pf_regex *re, const uint8_t *p, size_t n);

/* Which states accept: those whose mask has ok[i] set for its index i in pf_regex_masks. States
 * that cannot reach an accepting one become dead. Then the strings may have min..max characters
 * (max INT64_MAX: unbounded): pf_regex_ok says whether a state can still end a string there.
 * 0, or -1 with the error (too large a table of lengths, or memory). Call once. */
int pf_regex_accept(pf_regex *re, const uint8_t *ok, int64_t min_chars, int64_t max_chars, char err[PF_ERR_LEN]);

/* The start state (0), or -1 when no string is accepted. */
int32_t pf_regex_start(const pf_regex *re);
/* The state after byte c, -1 when none can lead to an accepting state. */
int32_t pf_regex_step(const pf_regex *re, int32_t state, uint8_t c);
/* State (with `used` characters so far, counted up to the most that matters: max_chars, or
 * min_chars when unbounded) can still reach an accepting state within the lengths. */
int pf_regex_ok(const pf_regex *re, int32_t state, int64_t used);
/* Bounded lengths (max_chars finite): every state's pf_regex_ok is the same for each used in
 * [*from, returned], so there the state alone tells what may follow; returns less than *from when
 * no such run (and when unbounded). */
int64_t pf_regex_flat(const pf_regex *re, int64_t *from);
/* The byte class of c: bytes of one class move every state alike. */
int pf_regex_class(const pf_regex *re, uint8_t c);
/* The string may end at this state. */
int pf_regex_final(const pf_regex *re, int32_t state);
/* The mask of state (pf_regex_masks). */
uint32_t pf_regex_state_mask(const pf_regex *re, int32_t state);
int pf_regex_states(const pf_regex *re);
/* A hash of what decides how re steps, accepts and marks its states (equal automata hash alike), and
 * whether a and b do all of it alike (the same tables, lengths and state masks): two schema
 * strings with the same pattern and lengths compile to such a pair. */
uint64_t pf_regex_hash(const pf_regex *re);
int pf_regex_same(const pf_regex *a, const pf_regex *b);

#endif
