/* Structured output in the engine (docs/structured-output.md): a generation's JSON Schema (or JSON
 * mode) compiled, a matcher following the committed tokens, and the mask of the position applied
 * to the logits before argmax or sampling. Plain decoding masks each step; a speculative round
 * (verify/) advances along its drafted tokens, masks each verified row with the state reached
 * there, and rolls back to the committed position, so both decode the same distribution. */
#ifndef PF_CONSTRAINT_H
#define PF_CONSTRAINT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/generate.h"
#include "engine/tokenizer.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"

typedef struct pf_constraint pf_constraint;

/* The token masker of a vocabulary of n ids (the model's, which may be padded past the
 * tokenizer's): every token as its byte string; control, unknown and unused tokens (a padded
 * vocabulary's [PAD] entries) and ids past the tokenizer's have none. */
pf_token_masker *pf_vocab_masker(const pf_tokenizer *t, int n, char err[PF_ERR_LEN]);

/* The constraint p asks for (p->json_schema, else p->json_object) into *out, NULL when it asks for
 * none. PF_RC_OK, or PF_RC_ARG (a schema outside the subset) / PF_RC_OOM with a one-line error. The
 * session's token masker (its vocabulary's trie) is built on first use and kept. */
pf_rc pf_constraint_open(pf_engine_session *s, const pf_decode_params *p, pf_constraint **out, char err[PF_ERR_LEN]);
void pf_constraint_free(pf_constraint *c);

/* The allowed tokens at the current position (*n_allowed of them). */
const uint32_t *pf_constraint_mask(pf_constraint *c, int *n_allowed);
/* logits[id] = -inf for every token the current position does not allow. */
void pf_constraint_apply(pf_constraint *c, float *logits);
/* The same with a mask taken earlier (pf_constraint_mask's words, copied). */
void pf_constraint_apply_bits(const pf_constraint *c, const uint32_t *bits, float *logits);
int pf_constraint_words(const pf_constraint *c);
/* Greedy choice under the mask bits: the argmax of logits once masked (pf_constraint_apply_bits),
 * found without masking when the row's own argmax is allowed (then logits are left as they are);
 * otherwise the row is masked and its argmax returned. */
int32_t pf_constraint_greedy_bits(const pf_constraint *c, const uint32_t *bits, float *logits);
/* The same at the current position. */
int32_t pf_constraint_greedy(pf_constraint *c, float *logits);
/* tok's longest allowed prefix token at the current position, -1 when none (pf_mask_apply_aligned). */
int32_t pf_constraint_align(pf_constraint *c, int32_t tok);
/* The one token the position allows when it is forced (not an end token), else -1. */
int32_t pf_constraint_forced(pf_constraint *c);
/* Commit tok: 1 an end token at a complete document, 0 advanced, -1 not allowed (unchanged). */
int pf_constraint_advance(pf_constraint *c, int32_t tok);
/* Positions (one per advanced token's byte) and rollback to one. */
size_t pf_constraint_pos(const pf_constraint *c);
void pf_constraint_rollback(pf_constraint *c, size_t pos);
/* The document is complete and nothing may follow. */
int pf_constraint_done(const pf_constraint *c);

/* Frees a session's token masker (pf_session_free). */
void pf_engine_masker_free(pf_engine_session *s);

#endif
