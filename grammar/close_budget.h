/* The closing distance of a matcher state: the fewest bytes that complete the document from it
 * (0 where it may end), so generation can be held to a token budget (docs/structured-output.md,
 * "A whole document within max_tokens"). Byte-level BPE spells every byte as a token, so the
 * distance in bytes bounds the tokens needed; a token is allowed where the distance after it is
 * at most the tokens left after it, and then some token always is (the first byte of a shortest
 * completion), so every document closes within the budget.
 *
 * Every node's shortest document, its objects' key costs and its patterns' distances per
 * automaton state are computed once per schema (pf_close_new); a state's distance is then a walk
 * down its parse stacks. The distance is exact for the subset except: a pattern string that also
 * has minLength / maxLength, and keys of patternProperties, where it is an estimate (the masks
 * then fall back to the tokens that close soonest when none fits). */
#ifndef PF_CLOSE_BUDGET_H
#define PF_CLOSE_BUDGET_H

#include <stdint.h>

#include "grammar/matcher.h"
#include "grammar/schema.h"

#define PF_CLOSE_INF (INT64_MAX / 4) /* no finite completion */

typedef struct pf_close pf_close;

/* The tables of schema s (which must outlive them); NULL when out of memory. */
pf_close *pf_close_new(const pf_schema *s);
void pf_close_free(pf_close *c);
/* The schema's shortest document in bytes. */
int64_t pf_close_doc(const pf_close *c);
/* A bound, per schema, on the distance of every state the matcher can reach (PF_CLOSE_INF where
 * none is known): with more tokens left than it, the budget refuses no token (pf_token_mask_budget
 * then takes the unbudgeted mask). */
int64_t pf_close_reach(const pf_close *c);
/* The fewest bytes that complete the document from m's state. */
int64_t pf_close_dist(const pf_close *c, const pf_matcher *m);
/* When every parse stack is in a string or a key pf_matcher_string_room counts: the most the
 * distance can be after any plain string content that fits the room (inside strings it stays or
 * shortens; in a key it may grow, the key's text deciding which way the object goes). */
int64_t pf_close_dist_after_plain(const pf_close *c, const pf_matcher *m);
/* The same with the top frame of m's one parse stack replaced by cur (a pattern string walked
 * without the matcher, pf_matcher_pattern_cursor). */
int64_t pf_close_dist_cursor(const pf_close *c, const pf_matcher *m, const pf_frame *cur);
/* Plain string content shortens the distance by one at least: a parse stack whose distance one
 * character less is below the state's is inside a string without a pattern, between characters,
 * that still needs a character for its minLength. */
int pf_close_string_needs(const pf_close *c, const pf_matcher *m);

#endif
