/* Generation internals: the engine's session (api/ wraps it in the public pf_session) and the
 * generation over it with a decoding strategy (engine/strategy.h). The engine owns prompt prefill,
 * stop conditions, streaming and timing. */
#ifndef PF_GENERATE_H
#define PF_GENERATE_H

#include "engine/chat_msg.h"
#include "engine/decode.h"
#include "engine/forward.h"
#include "engine/sampler.h"
#include "engine/strategy.h"
#include "grammar/token_mask.h"

struct pf_constraint;

struct pf_engine_session {
    const pf_model *model;
    pf_ctx *ctx;
    pf_sampling sampling;
    pf_rng rng;
    pf_dist dist;  /* scratch distribution (vocabulary capacity) */
    float *logits; /* n_vocab floats: logits of the last forward row */
    /* Multi-turn reuse: hist[0..n_hist) are the tokens of cache rows 0..n_hist-1 that the last
     * generation left (n_ctx + 1 capacity); prev is its strategy, whose context matches those
     * rows (NULL after a reset or a failed generation). */
    int32_t *hist;
    int64_t n_hist;
    const pf_strategy *prev;
    /* Structured output: the vocabulary's trie (built on the first constrained generation, kept),
     * and the running generation's constraint (NULL when it has none), which strategies mask with. */
    pf_token_masker *masker;
    struct pf_constraint *cons;
};

/* Generation with strategy (NULL: plain decoding). The public pf_generate* call these (api/ makes
 * the strategy from pf_gen_params). stats (may be NULL) is written when decoding began. */
pf_rc pf_engine_generate_tokens(pf_engine_session *s, const int32_t *prompt, int n_prompt, const pf_decode_params *p,
                                pf_strategy *strategy, pf_decode_token_fn on_token, void *user, pf_decode_stats *stats,
                                char err[PF_ERR_LEN]);
pf_rc pf_engine_generate(pf_engine_session *s, const char *prompt, size_t len, const pf_decode_params *p, pf_strategy *strategy,
                         pf_decode_text_fn on_text, void *user, pf_decode_stats *stats, char err[PF_ERR_LEN]);
pf_rc pf_engine_generate_chat(pf_engine_session *s, const pf_chat_msg *messages, int n, const pf_decode_params *p,
                              pf_strategy *strategy, pf_decode_text_fn on_text, void *user, pf_decode_stats *stats,
                              char err[PF_ERR_LEN]);

/* A prompt's token ids as pf_engine_generate (p->chat, p->system, p->no_special) and
 * pf_engine_generate_chat tokenize it; *ids is the caller's to free. */
pf_rc pf_engine_prompt_ids(const pf_engine_session *s, const char *prompt, size_t len, const pf_decode_params *p,
                           int32_t **ids, size_t *n_ids, char err[PF_ERR_LEN]);
/* A chat's: the tools of p (may be NULL) in its system turn unless tool_choice is none; *system (when
 * system is not NULL) a copy of the system turn's text, or NULL without one, the caller's to free. */
pf_rc pf_engine_chat_ids(const pf_engine_session *s, const pf_chat_msg *messages, int n, const pf_decode_params *p,
                         int32_t **ids, size_t *n_ids, char **system, char err[PF_ERR_LEN]);

/* Draw a token from logits with the session's sampling parameters and RNG. */
int32_t pf_engine_sample(pf_engine_session *s, const float *logits);

#endif
