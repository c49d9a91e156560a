/* pocketflash public C API: load a Qwen3 GGUF target, open a session, generate text.
 * Plain autoregressive decoding and speculative decoding are strategies behind the same
 * pf_generate call, so every front end measures both the same way. */
#ifndef POCKETFLASH_H
#define POCKETFLASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PF_ERR_LEN 256

typedef enum {
    PF_OK = 0,
    PF_ERR_IO,      /* a file could not be read or written */
    PF_ERR_FORMAT,  /* a file is malformed or of the wrong architecture */
    PF_ERR_ARG,     /* a bad parameter */
    PF_ERR_CONTEXT, /* the prompt does not fit the context */
    PF_ERR_UTF8,    /* the prompt is not valid UTF-8 */
    PF_ERR_OOM,
    PF_ERR_INTERNAL
} pf_status;

typedef struct pf_model pf_model;
typedef struct pf_session pf_session;
typedef struct pf_strategy pf_strategy; /* a decoding strategy (NULL = plain autoregressive) */

pf_model *pf_load_model(const char *path, char err[PF_ERR_LEN]);
void pf_free_model(pf_model *m);

typedef struct {
    int n_threads;  /* default 1 */
    int64_t n_ctx;  /* default min(4096, the model's training context) */
    int kv_q8;      /* 1: 8-bit keys and values with per-row scales (half the cache's memory and
                       bytes read per step; attention slightly less exact; needs the AVX-512
                       kernels, else pf_session_new fails); 0: f16 (default) */
} pf_session_params;

pf_session *pf_session_new(const pf_model *m, const pf_session_params *p, char err[PF_ERR_LEN]);
void pf_session_free(pf_session *s);

typedef enum { PF_STOP_EOT = 0, PF_STOP_LENGTH, PF_STOP_CONTEXT, PF_STOP_CALLBACK } pf_stop_reason;

typedef struct {
    int max_tokens;   /* default 128 */
    float temp;       /* <= 0 greedy (default 0) */
    int top_k;        /* <= 0 off */
    float top_p;      /* >= 1 off (default 1) */
    uint64_t seed;    /* RNG seed (default 0) */
    bool chat;        /* wrap the prompt in the ChatML template */
    const char *system; /* optional system message with chat */
    bool stop_at_eot; /* stop at the end-of-turn / end-of-text token (default true) */
    pf_strategy *strategy;
    /* Prompt cache file (NULL = none): when it holds the K/V rows of a prefix of this prompt for
     * this model, that prefix is restored instead of prefilled (output unchanged); when it is
     * absent or unusable (warning on stderr) it is written after generation with the prefix:
     * the ChatML system block with chat + system, else the prompt minus its last token. */
    const char *prompt_cache;
    /* Special-token texts in the prompt (e.g. "<|im_start|>") are special tokens by default, as in
     * llama.cpp; no_special makes them plain text (with chat the template's own markers stay special). */
    bool no_special;
} pf_gen_params;

void pf_gen_params_default(pf_gen_params *p);

typedef struct {
    int n_prompt, n_gen;
    int n_cached;     /* prompt tokens restored from the prompt cache (n_prompt - n_cached prefilled) */
    double prefill_s; /* prompt forward */
    double ttft_s;    /* prompt forward + first token */
    double decode_s;  /* first generated token to last (speculation work included) */
    pf_stop_reason stop;
} pf_gen_stats;

/* Called with each complete UTF-8 piece of generated text; return nonzero to stop. */
typedef int (*pf_text_cb)(void *user, const char *text, size_t len);
/* Called with each generated token id; return nonzero to stop. */
typedef int (*pf_token_cb)(void *user, int32_t token);

/* Text in, text out (streamed). The prompt must be valid UTF-8. */
pf_status pf_generate(pf_session *s, const char *prompt, size_t len, const pf_gen_params *p, pf_text_cb on_text,
                      void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]);
/* Token ids in, token ids out. */
pf_status pf_generate_tokens(pf_session *s, const int32_t *prompt, int n_prompt, const pf_gen_params *p,
                             pf_token_cb on_token, void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]);

#ifdef __cplusplus
}
#endif
#endif
