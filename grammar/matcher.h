/* The byte-level matcher of a compiled schema (grammar/schema.h): a pushdown automaton over the
 * bytes of the document, nondeterministic where the schema is (anyOf, lists of types), so its
 * state is a set of parse stacks ("threads"). Each accepted byte pushes a new state on a history,
 * so rolling back to any earlier position is a length change, like the KV cache's truncation: a
 * speculative round advances along its drafted tokens and rolls back to the accepted prefix.
 * Multi-byte UTF-8 characters may arrive split across tokens: the automaton works on bytes. */
#ifndef PF_MATCHER_H
#define PF_MATCHER_H

#include <stddef.h>
#include <stdint.h>

#include "grammar/schema.h"

#define PF_MATCHER_MAX_FRAMES 72  /* one parse stack's depth (schema nesting plus free JSON inside) */
#define PF_MATCHER_MAX_DIGITS 16  /* digits of a number's integer part, fraction or exponent, so a
                                     number cannot run on without end */
#define PF_MATCHER_MAX_THREADS 16 /* parse stacks kept per position (more: the latest are dropped,
                                     which narrows what may follow but never admits an invalid byte) */

/* One frame of a parse stack; every field is written, so frames compare with memcmp. An object's
 * frame keeps the listed keys given (pf_frame_keys): keys 0-63 in used, 64-127 in fields no
 * object frame has another use for (lo, and the bytes of a string's UTF-8 state), so a frame stays
 * 32 bytes. */
typedef struct {
    uint8_t kind, phase, u8_need, u8_lo, u8_hi, pad[3];
    int32_t node, lo, hi, off;
    uint64_t used;
} pf_frame;

static inline pf_keys pf_frame_keys(const pf_frame *f) {
    uint64_t hi = (uint32_t)f->lo | (uint64_t)f->u8_need << 32 | (uint64_t)f->u8_lo << 40 | (uint64_t)f->u8_hi << 48 |
                  (uint64_t)f->pad[0] << 56;
    return (pf_keys)hi << 64 | f->used;
}
static inline void pf_frame_set_keys(pf_frame *f, pf_keys k) {
    uint64_t hi = (uint64_t)(k >> 64);
    f->used = (uint64_t)k;
    f->lo = (int32_t)(uint32_t)hi;
    f->u8_need = (uint8_t)(hi >> 32), f->u8_lo = (uint8_t)(hi >> 40), f->u8_hi = (uint8_t)(hi >> 48);
    f->pad[0] = (uint8_t)(hi >> 56);
}

typedef struct pf_matcher pf_matcher;

/* The schema must outlive the matcher. NULL when out of memory. */
pf_matcher *pf_matcher_new(const pf_schema *s);
void pf_matcher_free(pf_matcher *m);
/* Back to the empty document. */
void pf_matcher_reset(pf_matcher *m);

/* Accept byte c: 1 (a new position), 0 (c cannot follow; nothing changed), -1 (out of memory). */
int pf_matcher_push(pf_matcher *m, uint8_t c);
/* All n bytes or none: 1, 0 (nothing changed) or -1. */
int pf_matcher_push_bytes(pf_matcher *m, const uint8_t *p, size_t n);
/* Positions: pf_matcher_pos after each accepted byte grows by one; rollback returns to one. */
size_t pf_matcher_pos(const pf_matcher *m);
void pf_matcher_rollback(pf_matcher *m, size_t pos);

/* The bytes so far are a complete document (it may end here). */
int pf_matcher_can_end(const pf_matcher *m);
/* Complete, and no byte may follow. */
int pf_matcher_closed(const pf_matcher *m);
/* When every parse stack is inside a string between characters, the fewest characters any of
 * them may still take (INT64_MAX: no maxLength): a byte string without '"', '\\' or control bytes
 * that is whole UTF-8 characters, and no more characters than that, keeps them there. A stack
 * writing an object's key where keys of any spelling are allowed counts as such a string (its
 * closing distance may change with the key's text: pf_matcher_in_key). -1 when a stack is
 * elsewhere. */
int64_t pf_matcher_string_room(const pf_matcher *m);
/* The most characters any of them may still take (when pf_matcher_string_room is not -1). */
int64_t pf_matcher_string_room_most(const pf_matcher *m);
/* Some parse stack is writing one of an object's listed keys. */
int pf_matcher_in_key(const pf_matcher *m);
/* A pattern-constrained string's content walked without the matcher (token masks: most tokens
 * inside such a string are its characters alone). pf_matcher_pattern_cursor: 1 with *cur set when
 * the state is one parse stack inside a pattern or format string between characters, else 0.
 * pf_matcher_pattern_feed: byte c (not '"', '\\' or a control byte) moves *cur as pf_matcher_push
 * would move the string: 1, or 0 when the matcher would refuse it. */
int pf_matcher_pattern_cursor(const pf_matcher *m, pf_frame *cur);
int pf_matcher_pattern_feed(const pf_matcher *m, pf_frame *cur, uint8_t c);
/* The current state's parse stacks, and what plain content tokens (grammar/token_vocab.h) stack i
 * takes, each stack apart (a plain token keeps a string a string, so the state takes one exactly
 * when some stack does): PF_PLAIN_ROOM, inside a string between characters (or a key where any
 * key may be written), those of at most *room characters; PF_PLAIN_PATTERN, inside a pattern
 * string between characters, those pf_matcher_pattern_feed takes from *cur; PF_PLAIN_PATTERN_KEY,
 * inside a listed key's text in an object whose other keys are those its patternProperties match
 * (another key may be written now), those that go on with a listed key still open and those
 * pf_matcher_pattern_feed takes from *cur, the other key's string frame after the text so far;
 * 0 elsewhere. */
enum { PF_PLAIN_ROOM = 1, PF_PLAIN_PATTERN, PF_PLAIN_PATTERN_KEY };
int pf_matcher_n_stacks(const pf_matcher *m);
int pf_matcher_stack_plain(const pf_matcher *m, int i, pf_frame *cur, int64_t *room);
/* The pattern string of cursor cur has no maxLength and its minLength is met: what its content
 * may be from here depends on its automaton's state alone (cur->hi, for the string's cur->node). */
int pf_matcher_pattern_unbounded(const pf_matcher *m, const pf_frame *cur);
/* The pattern string of cursor cur has a maxLength, and its next `chars` characters stay clear of
 * both lengths: whether their bytes are taken, and the automaton state they leave, depend on the
 * state alone, as where unbounded (pf_regex_flat). */
int pf_matcher_pattern_far(const pf_matcher *m, const pf_frame *cur, int64_t chars);
/* Where one of those two holds, the characters at which the automaton's pf_regex_ok answers for
 * every byte of such plain content (the count the string's steps reach, the same for all). */
int64_t pf_matcher_pattern_used(const pf_matcher *m, const pf_frame *cur);
/* For the closing distance (grammar/close_budget.h): the least of fn over the current state's
 * parse stacks (frames f[0..n), bottom first; INT64_MAX when fn says so for all), the schema, and
 * the fewest bytes that end a number frame within its bounds (0 when it may end). */
int64_t pf_matcher_min_stacks(const pf_matcher *m, int64_t (*fn)(const void *ctx, const pf_frame *f, int n),
                              const void *ctx);
const pf_schema *pf_matcher_schema(const pf_matcher *m);
int64_t pf_matcher_num_rest(const pf_schema_node *nd, const pf_frame *t);
/* The current state as bytes (equal states give equal bytes): a cache key. */
const void *pf_matcher_state(const pf_matcher *m, size_t *len);

#endif
