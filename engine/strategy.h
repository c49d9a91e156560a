/* The interface decoding strategies implement (plain autoregressive in engine/generate.c,
 * speculative ones in verify/): a strategy only turns "the last committed token" into one or more
 * new committed tokens; the engine's generation (engine/generate.h) does the rest. */
#ifndef PF_STRATEGY_H
#define PF_STRATEGY_H

#include <stdint.h>

#include "formats/errf.h" /* PF_ERR_LEN */
#include "formats/status.h"

typedef struct pf_engine_session pf_engine_session;
typedef struct pf_strategy pf_strategy;

struct pf_strategy {
    const char *name;
    void *state;
    /* Target layers whose residual rows the strategy needs from every committed row (prefill
     * included); the engine passes them to begin(). */
    const int *tap_layers;
    int n_taps;
    /* begin, step and resume return PF_RC_OK or the kind of their failure with err (out of memory,
     * a forward's context or argument, ...), which the generation returns as it is. */
    /* After the prompt prefill: taps holds n_prompt * n_taps * n_embd floats (NULL if n_taps 0). */
    pf_rc (*begin)(void *state, pf_engine_session *s, const int32_t *prompt, int n_prompt, const float *taps,
                   char err[PF_ERR_LEN]);
    /* `last` is committed but not yet in the target cache. Write 1..cap new committed tokens to
     * out and how many to *n_out. cap >= 1 respects the length and the context. All but the last
     * are proposals the target kept; the last is the target's own token. */
    pf_rc (*step)(void *state, pf_engine_session *s, int32_t last, int32_t *out, int cap, int *n_out,
                  char err[PF_ERR_LEN]);
    /* Optional, multi-turn reuse for a strategy with taps (one without taps is simply begun again
     * on the whole prompt). keep() is called before the prefill when this strategy ran the
     * session's previous generation and the prompt's first n_keep tokens are in the cache: it cuts
     * its context to those rows and returns 0, or returns -1 when it cannot (the whole prompt is
     * then prefilled and begin() called). After a keep(), resume() replaces begin(): prompt is the
     * whole prompt, taps hold only rows n_keep..n_prompt-1. */
    int (*keep)(void *state, pf_engine_session *s, int n_keep);
    pf_rc (*resume)(void *state, pf_engine_session *s, const int32_t *prompt, int n_prompt, int n_keep,
                    const float *taps, char err[PF_ERR_LEN]);
};

#endif
