/* pf_generate: prefill, then strategy steps until a stop condition; time to first token and
 * decode time are measured around everything a strategy does. */
#include "engine/generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/chat.h"
#include "engine/chat_tokens.h"
#include "engine/constraint.h"
#include "engine/prompt_cache.h"
#include "engine/tokenizer.h"
#include "engine/unicode.h"
#include "engine/clock.h"

int32_t pf_session_sample(pf_session *s, const float *logits) {
    return pf_sample(&s->sampling, logits, s->model->hp.n_vocab, &s->dist, &s->rng);
}

/* Plain autoregressive decoding: one target row per step. */
static int ar_step(void *state, pf_session *s, int32_t last, int32_t *out, int cap, char err[PF_ERR_LEN]) {
    (void)state;
    (void)cap;
    pf_batch b = {.tokens = &last, .n = 1, .logits_mode = PF_LOGITS_LAST, .logits = s->logits};
    if (pf_forward(s->ctx, &b, err) < 0) return -1;
    if (s->cons) pf_constraint_apply(s->cons, s->logits);
    out[0] = pf_session_sample(s, s->logits);
    return 1;
}

static pf_strategy k_ar = {.name = "ar", .step = ar_step};

static int is_stop(const pf_tokenizer *t, int32_t id) {
    return id == pf_tokenizer_eot(t) || id == pf_tokenizer_eos(t);
}

static void cache_warning(const char *path, const char *why) {
    fprintf(stderr, "pocketflash: warning: prompt cache %s: %s, ignored\n", path, why);
}

/* Rows of the cache the prompt can keep: its common prefix with what the last generation left,
 * at most n_prompt - 1 (the last prompt token is always run, for its logits). */
static int reusable(const pf_session *s, const int32_t *prompt, int n_prompt) {
    int n = 0;
    int64_t lim = s->n_hist < n_prompt - 1 ? s->n_hist : n_prompt - 1;
    while (n < lim && s->hist[n] == prompt[n]) n++;
    return n;
}

/* Structured output: commit tok to the constraint. 1: generation ends before tok (an end token
 * at a complete document), 0: tok is kept, -1: tok breaks the constraint (a strategy's bug). */
static int constrain_commit(pf_session *s, int32_t tok, char err[PF_ERR_LEN]) {
    if (!s->cons) return 0;
    int r = pf_constraint_advance(s->cons, tok);
    if (r < 0) snprintf(err, PF_ERR_LEN, "internal: token %d breaks the output's JSON schema", (int)tok);
    return r;
}

/* save_len: prompt tokens whose rows go to p->prompt_cache when it is absent or was ignored. */
static pf_status generate_run(pf_session *s, const int32_t *prompt, int n_prompt, int save_len, const pf_gen_params *p,
                          pf_token_cb on_token, void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]) {
    pf_gen_stats st = {0};
    st.n_prompt = n_prompt;
    pf_strategy *strat = p->strategy ? p->strategy : &k_ar;
    st.strategy = strat->name;
    pf_ctx *c = s->ctx;
    const pf_hparams *hp = &s->model->hp;
    if (n_prompt < 1) {
        snprintf(err, PF_ERR_LEN, "empty prompt");
        return PF_ERR_ARG;
    }
    if (n_prompt >= c->kv->n_ctx) {
        snprintf(err, PF_ERR_LEN, "prompt of %d tokens does not fit the context of %lld tokens", n_prompt,
                 (long long)c->kv->n_ctx);
        return PF_ERR_CONTEXT;
    }
    if (p->max_tokens < 0) {
        snprintf(err, PF_ERR_LEN, "max_tokens must be >= 0");
        return PF_ERR_ARG;
    }
    s->sampling = (pf_sampling){p->temp, p->top_k, p->top_p};
    pf_rng_seed(&s->rng, p->seed);
    /* Keep the cache rows this prompt shares with the last generation's; a strategy with taps
     * must still hold its context for them. Rows are batch invariant, so prefilling only the rest
     * gives bitwise the cold prefill. */
    int n_keep = reusable(s, prompt, n_prompt);
    if (n_keep > 0 && strat->n_taps > 0 &&
        !(s->prev == strat && strat->keep && strat->resume && strat->keep(strat->state, s, n_keep) == 0))
        n_keep = 0;
    pf_kv_truncate(c->kv, n_keep);
    s->n_hist = n_keep; /* what stays valid if this generation fails */
    s->prev = NULL;
    st.n_reused = n_keep;

    size_t tap_row = (size_t)strat->n_taps * hp->n_embd;
    float *taps = NULL;
    if (strat->n_taps) {
        taps = malloc((size_t)n_prompt * tap_row * sizeof(float));
        if (!taps) {
            snprintf(err, PF_ERR_LEN, "out of memory");
            return PF_ERR_OOM;
        }
    }
    double t0 = pf_now_s();
    /* A prompt-cache hit restores the prefix's K/V and tapped rows; the prefill covers the rest.
     * Rows are batch invariant, so this is bitwise the cold prefill. */
    int n_cached = 0, save = 0;
    uint64_t key = 0;
    if (p->prompt_cache && n_keep == 0) {
        char why[PF_ERR_LEN];
        key = pf_prompt_cache_key(s->model, c->k);
        n_cached = pf_prompt_cache_restore(p->prompt_cache, key, c->kv, hp->n_embd, prompt, n_prompt,
                                           strat->tap_layers, strat->n_taps, taps, why);
        if (n_cached < 0) cache_warning(p->prompt_cache, why);
        save = n_cached <= 0 && save_len >= 1;
        if (n_cached < 0) n_cached = 0;
    }
    st.n_cached = n_cached;
    int n0 = n_keep + n_cached; /* rows already in the cache */
    pf_batch b = {.tokens = prompt + n0, .n = n_prompt - n0, .logits_mode = PF_LOGITS_LAST,
                  .logits = s->logits, .tap_layers = strat->tap_layers, .n_taps = strat->n_taps,
                  .taps = taps ? taps + (size_t)n0 * tap_row : NULL};
    if (pf_forward(c, &b, err) < 0) {
        free(taps);
        return PF_ERR_ARG;
    }
    st.prefill_s = pf_now_s() - t0;
    int started = n_keep > 0 && strat->n_taps > 0
                      ? strat->resume(strat->state, s, prompt, n_prompt, n_keep, taps ? taps + (size_t)n_keep * tap_row : NULL, err)
                      : (strat->begin ? strat->begin(strat->state, s, prompt, n_prompt, taps, err) : 0);
    if (started < 0) {
        free(taps);
        return PF_ERR_INTERNAL;
    }
    memcpy(s->hist + n_keep, prompt + n_keep, (size_t)(n_prompt - n_keep) * sizeof *prompt);
    int64_t n_committed = 0; /* tokens the strategy returned; all but the last are in the cache */
    if (!save) { /* otherwise kept for the save after generation (off the clock) */
        free(taps);
        taps = NULL;
    }

    pf_status rc = PF_OK;
    int32_t last = -1;
    double t_first = 0;
    int cap_buf = 256;
    int32_t *buf = malloc((size_t)cap_buf * sizeof *buf);
    if (!buf) {
        free(taps);
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_ERR_OOM;
    }
    st.stop = PF_STOP_LENGTH;
    while (st.n_gen < p->max_tokens) {
        int n;
        if (last < 0) { /* the first token comes from the prefill logits */
            if (s->cons) pf_constraint_apply(s->cons, s->logits);
            buf[0] = pf_session_sample(s, s->logits);
            n = 1;
        } else {
            /* `last` needs one cache row; a strategy may use up to cap rows */
            int64_t room = c->kv->n_ctx - c->kv->len;
            if (room < 1) {
                st.stop = PF_STOP_CONTEXT;
                break;
            }
            int cap = p->max_tokens - st.n_gen;
            if (cap > room) cap = (int)room;
            if (cap > cap_buf) cap = cap_buf;
            n = strat->step(strat->state, s, last, buf, cap, err);
            if (n < 0) {
                rc = PF_ERR_INTERNAL;
                break;
            }
        }
        for (int i = 0; i < n && n_prompt + n_committed <= c->kv->n_ctx; i++) s->hist[n_prompt + n_committed++] = buf[i];
        int stop = 0;
        for (int i = 0; i < n && !stop; i++) {
            if (st.n_gen == 0) t_first = pf_now_s();
            int held = constrain_commit(s, buf[i], err);
            if (held < 0) {
                rc = PF_ERR_INTERNAL;
                stop = 1;
                break;
            }
            if (held > 0 || (p->stop_at_eot && is_stop(s->model->tok, buf[i]))) {
                st.stop = PF_STOP_EOT;
                stop = 1;
                break;
            }
            st.n_gen++;
            last = buf[i];
            if (p->on_token_source) p->on_token_source(p->token_source_user, buf[i], i < n - 1);
            if (on_token && on_token(user, buf[i])) {
                st.stop = PF_STOP_CALLBACK;
                stop = 1;
            } else if (s->cons && pf_constraint_done(s->cons)) {
                st.stop = PF_STOP_EOT; /* the document is complete: nothing may follow */
                stop = 1;
            } else if (st.n_gen >= p->max_tokens) {
                st.stop = PF_STOP_LENGTH;
                stop = 1;
            }
        }
        if (stop) break;
    }
    double t_end = pf_now_s();
    st.ttft_s = (t_first > 0 ? t_first : t_end) - t0;
    st.decode_s = t_first > 0 ? t_end - t_first : 0;
    free(buf);
    /* The cache now holds the prompt and every committed token but the last (each step runs
     * `last` and keeps what it returns but its final token); anything else leaves nothing reusable. */
    if (rc == PF_OK && c->kv->len == n_prompt + (n_committed ? n_committed - 1 : 0)) {
        s->n_hist = c->kv->len;
        s->prev = strat;
    }
    /* decoding only appended rows past the prompt, so rows 0..save_len-1 are still the prefill's */
    if (save && rc == PF_OK) {
        char why[PF_ERR_LEN];
        int n_save = save_len < n_prompt ? save_len : n_prompt;
        if (pf_prompt_cache_save(p->prompt_cache, key, c->kv, hp->n_embd, prompt, n_save, strat->tap_layers,
                                 strat->n_taps, taps, why) < 0)
            fprintf(stderr, "pocketflash: warning: prompt cache %s: %s, not saved\n", p->prompt_cache, why);
    }
    free(taps);
    if (stats) *stats = st;
    return rc;
}

static pf_status generate(pf_session *s, const int32_t *prompt, int n_prompt, int save_len, const pf_gen_params *p,
                          pf_token_cb on_token, void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]) {
    s->cons = pf_constraint_open(s, p, err);
    if (!s->cons && err[0]) return strstr(err, "out of memory") ? PF_ERR_OOM : PF_ERR_ARG;
    pf_status rc = generate_run(s, prompt, n_prompt, save_len, p, on_token, user, stats, err);
    pf_constraint_free(s->cons);
    s->cons = NULL;
    return rc;
}

pf_status pf_engine_generate_tokens(pf_session *s, const int32_t *prompt, int n_prompt, const pf_gen_params *p,
                                    pf_token_cb on_token, void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]) {
    return generate(s, prompt, n_prompt, n_prompt - 1, p, on_token, user, stats, err);
}

/* The model's rendering of [system?, user] (pf_chat_render with its template's form). */
static char *chat_text(const pf_session *s, const char *system, const char *user) {
    pf_message m[2] = {{"system", system}, {"user", user}};
    char err[PF_ERR_LEN];
    bool qwen3 = pf_chat_template_qwen3(pf_tokenizer_chat_template(s->model->tok));
    return system ? pf_chat_render(m, 2, qwen3, err) : pf_chat_render(m + 1, 1, qwen3, err);
}

/* Tokens of the ChatML system block that `ids` starts with (the prefix every prompt with this
 * system message shares), or -1 when there is none or it does not tokenize as a prefix. */
static int system_block_len(const pf_session *s, const char *system, const int32_t *ids, size_t n_ids) {
    const pf_tokenizer *tok = s->model->tok;
    char *with = chat_text(s, system, ""), *without = chat_text(s, NULL, "");
    int r = -1;
    int32_t *sys = NULL;
    size_t n_sys = 0;
    char err[PF_ERR_LEN];
    if (with && without) {
        size_t len = strlen(with) - strlen(without); /* the system block comes first */
        if (pf_tokenize(tok, with, len, true, &sys, &n_sys, err) == 0 && n_sys >= 1 && n_sys < n_ids &&
            memcmp(sys, ids, n_sys * sizeof *sys) == 0)
            r = (int)n_sys;
    }
    free(sys);
    free(with);
    free(without);
    return r;
}

typedef struct {
    const pf_tokenizer *tok;
    pf_detok dt;
    pf_text_cb cb;
    void *user;
} text_sink;

static int emit_text(void *user, int32_t id) {
    text_sink *t = user;
    size_t n = 0;
    const char *out = pf_detok_push(&t->dt, id, &n);
    return out && n && t->cb ? t->cb(t->user, out, n) : 0;
}

/* Generate from prompt token ids, streaming text. system: the system message the prompt opens
 * with (its block is what a prompt cache keeps), or NULL. Takes ownership of ids. */
static pf_status generate_ids(pf_session *s, int32_t *ids, size_t n_ids, const char *system, const pf_gen_params *p,
                              pf_text_cb on_text, void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]) {
    text_sink sink = {.tok = s->model->tok, .cb = on_text, .user = user};
    pf_detok_init(&sink.dt, s->model->tok, false);
    /* what a prompt cache keeps: the shared system block of a chat, else all but the last token */
    int save_len = (int)n_ids - 1;
    if (system && p->prompt_cache) {
        int k = system_block_len(s, system, ids, n_ids);
        if (k > 0) save_len = k;
    }
    pf_status rc = generate(s, ids, (int)n_ids, save_len, p, emit_text, &sink, stats, err);
    size_t n = 0;
    const char *out = pf_detok_flush(&sink.dt, &n);
    if (out && n && on_text) on_text(user, out, n);
    pf_detok_free(&sink.dt);
    free(ids);
    return rc;
}

/* Tokenize (special tokens recognised when `special`) and generate. */
static pf_status generate_text(pf_session *s, const char *prompt, size_t len, bool special, const char *system,
                               const pf_gen_params *p, pf_text_cb on_text, void *user, pf_gen_stats *stats,
                               char err[PF_ERR_LEN]) {
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (pf_tokenize(s->model->tok, prompt, len, special, &ids, &n_ids, err) < 0) return PF_ERR_ARG;
    return generate_ids(s, ids, n_ids, system, p, on_text, user, stats, err);
}

pf_status pf_engine_generate(pf_session *s, const char *prompt, size_t len, const pf_gen_params *p, pf_text_cb on_text,
                             void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]) {
    if (!pf_utf8_valid(prompt, len)) {
        snprintf(err, PF_ERR_LEN, "prompt is not valid UTF-8");
        return PF_ERR_UTF8;
    }
    if (p->chat) {
        /* the template's markers are special; special-token texts inside the messages too unless
         * no_special (llama.cpp's default for raw prompts) */
        int32_t *ids = NULL;
        size_t n_ids = 0;
        if (pf_chat_tokenize(s->model->tok, p->system, prompt, !p->no_special, &ids, &n_ids, err) < 0)
            return PF_ERR_ARG;
        return generate_ids(s, ids, n_ids, p->system, p, on_text, user, stats, err);
    }
    return generate_text(s, prompt, len, !p->no_special, NULL, p, on_text, user, stats, err);
}

pf_status pf_engine_generate_chat(pf_session *s, const pf_message *messages, int n, const pf_gen_params *p,
                                  pf_text_cb on_text, void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]) {
    for (int i = 0; i < n && messages; i++)
        if (messages[i].content && !pf_utf8_valid(messages[i].content, strlen(messages[i].content))) {
            snprintf(err, PF_ERR_LEN, "chat: message %d is not valid UTF-8", i);
            return PF_ERR_UTF8;
        }
    bool qwen3 = pf_chat_template_qwen3(pf_tokenizer_chat_template(s->model->tok));
    char *text = pf_chat_render(messages, n, qwen3, err);
    if (!text) return strstr(err, "out of memory") ? PF_ERR_OOM : PF_ERR_ARG;
    const char *system = n > 0 && messages[0].role && !strcmp(messages[0].role, "system") ? messages[0].content : NULL;
    pf_status rc = generate_text(s, text, strlen(text), true, system, p, on_text, user, stats, err);
    free(text);
    return rc;
}
