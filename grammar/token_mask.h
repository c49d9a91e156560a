/* Token masks of a matcher state (grammar/matcher.h) over a vocabulary of byte strings: a token is
 * allowed when its bytes keep the document a valid prefix, an end token when the document is
 * complete. A trie walk with the matcher advancing and rolling back byte by byte prunes a rejected
 * prefix's whole subtree. Inside a string (most of a document's free text) every token that is
 * plain string content is allowed whatever encloses the string, so only the tokens holding a
 * quote, a backslash, a control byte or part of a UTF-8 character are walked; and masks are cached
 * per state (a state recurs at every token of a string, number or repeated structure). */
#ifndef PF_TOKEN_MASK_H
#define PF_TOKEN_MASK_H

#include <stdint.h>

#include "formats/errf.h" /* PF_ERR_LEN */
#include "grammar/matcher.h"

typedef struct pf_token_masker pf_token_masker;

/* bytes[id], lens[id] for id < n_vocab (len 0: the token is never allowed, e.g. a control token);
 * end_ids: tokens allowed exactly when the document can end. The arrays are copied. */
pf_token_masker *pf_token_masker_new(int n_vocab, const uint8_t *const *bytes, const uint32_t *lens,
                                     const int32_t *end_ids, int n_end, char err[PF_ERR_LEN]);
void pf_token_masker_free(pf_token_masker *tm);
int pf_token_masker_words(const pf_token_masker *tm); /* uint32 words of a mask */
/* A token's bytes (NULL, *len 0 for none). */
const uint8_t *pf_token_masker_bytes(const pf_token_masker *tm, int32_t id, uint32_t *len);
int pf_token_masker_is_end(const pf_token_masker *tm, int32_t id);

/* Masks of one schema's states, remembered by state (for one matcher's schema). */
typedef struct pf_mask_cache pf_mask_cache;
pf_mask_cache *pf_mask_cache_new(const pf_token_masker *tm);
void pf_mask_cache_free(pf_mask_cache *c);

/* bits (pf_token_masker_words words): the allowed tokens at m's state (m is returned to it).
 * Returns how many. cache may be NULL. (Out of memory mid-walk narrows the mask, never widens it.) */
int pf_token_mask(const pf_token_masker *tm, pf_mask_cache *cache, pf_matcher *m, uint32_t *bits);

struct pf_close;
/* The same within a token budget: left tokens may still be generated, this one included. A token
 * is allowed when, besides its bytes keeping the document a valid prefix, the closing distance
 * after it (grammar/close_budget.h) is at most left - 1, so the document can always be completed
 * within the budget. Where left - 1 is at least the schema's bound on every state's distance
 * (pf_close_reach) that refuses nothing, and the mask is pf_token_mask's. Else a state's mask is walked once with the distances after its tokens measured;
 * only where one of them exceeds left - 1 is the mask walked again for this budget. cl NULL: no
 * budget (pf_token_mask). *fits 0 when no token fits the budget: then bits holds the tokens after
 * which the distance is least (the budget is too small, or the distance only an estimate). */
int pf_token_mask_budget(const pf_token_masker *tm, pf_mask_cache *cache, pf_matcher *m, const struct pf_close *cl,
                         int64_t left, uint32_t *bits, int *fits);

/* logits[id] = -inf for every id < n the mask does not allow. Whole words at a time: a padded
 * vocabulary's unused tail and a structural position's mask are mostly zero words. */
void pf_mask_apply(const uint32_t *bits, int n, float *logits);

/* The mask applied with the model's first choice kept as far as bits allows: when the token the
 * logits score highest (the lowest such id) is refused, its score goes to its longest allowed
 * prefix token (the longest proper prefix of its bytes spelled by a token bits allows), if any;
 * then pf_mask_apply. A model that prefers `"}` where the schema wants another key therefore
 * closes the string with `"` rather than writing on inside it. Comparisons only: the same bits
 * on every CPU. */
void pf_mask_apply_aligned(const pf_token_masker *tm, const uint32_t *bits, int n, float *logits);
/* id's longest allowed prefix token (see above), -1 when none. */
int32_t pf_token_masker_allowed_prefix(const pf_token_masker *tm, const uint32_t *bits, int32_t id);

static inline int pf_mask_has(const uint32_t *bits, int32_t id) { return bits[id >> 5] >> (id & 31) & 1; }

#endif
