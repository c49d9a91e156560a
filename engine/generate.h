/* Generation internals: the session and the strategy interface that decoding strategies
 * (plain autoregressive here; speculative ones in verify/) implement. The engine owns prompt
 * prefill, stop conditions, streaming and timing; a strategy only turns "the last committed token"
 * into one or more new committed tokens. */
#ifndef PF_GENERATE_H
#define PF_GENERATE_H

#include "engine/model.h"
#include "engine/sampler.h"
#include "include/pocketflash.h"

struct pf_session {
    const pf_model *model;
    pf_ctx *ctx;
    pf_sampling sampling;
    pf_rng rng;
    pf_dist dist;  /* scratch distribution (vocabulary capacity) */
    float *logits; /* n_vocab floats: logits of the last forward row */
};

struct pf_strategy {
    const char *name;
    void *state;
    /* Target layers whose residual rows the strategy needs from every committed row (prefill
     * included); the engine passes them to begin(). */
    const int *tap_layers;
    int n_taps;
    /* After the prompt prefill: taps holds n_prompt * n_taps * n_embd floats (NULL if n_taps 0). */
    int (*begin)(void *state, pf_session *s, const int32_t *prompt, int n_prompt, const float *taps,
                 char err[PF_ERR_LEN]);
    /* `last` is committed but not yet in the target cache. Write 1..cap new committed tokens to
     * out and return how many (or -1 with err). cap >= 1 respects the length and the context. */
    int (*step)(void *state, pf_session *s, int32_t last, int32_t *out, int cap, char err[PF_ERR_LEN]);
};

/* Draw a token from logits with the session's sampling parameters and RNG. */
int32_t pf_session_sample(pf_session *s, const float *logits);

#endif
