/* pf_generate: prefill, then strategy steps until a stop condition; time to first token and
 * decode time are measured around everything a strategy does. */
#include "engine/generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/chat.h"
#include "engine/tools.h"
#include "engine/chat_tokens.h"
#include "engine/constraint.h"
#include "engine/prompt_cache.h"
#include "engine/tokenizer.h"
#include "engine/unicode.h"
#include "engine/clock.h"
#include "engine/batch.h"

int32_t pf_engine_sample(pf_engine_session *s, const float *logits) {
    return pf_sample(&s->sampling, logits, s->model->hp.n_vocab, &s->dist, &s->rng);
}

/* The next token from a target row, under the session's constraint when it has one (greedy: the
 * masked row's argmax without masking it when the argmax is allowed). */
static int32_t pick(pf_engine_session *s, float *logits) {
    if (s->cons && s->sampling.temp <= 0) return pf_constraint_greedy(s->cons, logits);
    if (s->cons) pf_constraint_apply(s->cons, logits);
    return pf_engine_sample(s, logits);
}

/* Plain autoregressive decoding: one target row per step. */
static pf_rc plain_step(void *state, pf_engine_session *s, int32_t last, int32_t *out, int cap, int *n_out,
                     char err[PF_ERR_LEN]) {
    (void)state;
    (void)cap;
    pf_batch b = {.tokens = &last, .n = 1, .logits_mode = PF_LOGITS_LAST, .logits = s->logits};
    pf_rc rc = pf_forward(s->ctx, &b, err);
    if (rc != PF_RC_OK) return rc;
    out[0] = pick(s, s->logits);
    *n_out = 1;
    return PF_RC_OK;
}

static pf_strategy k_plain = {.name = "plain", .step = plain_step};

static int is_stop(const pf_tokenizer *t, int32_t id) {
    return id == pf_tokenizer_eot(t) || id == pf_tokenizer_eos(t);
}

static void cache_warning(const char *path, const char *why) {
    fprintf(stderr, "pocketflash: warning: prompt cache %s: %s, ignored\n", path, why);
}

/* Rows of the cache the prompt can keep: its common prefix with what the last generation left,
 * at most n_prompt - 1 (the last prompt token is always run, for its logits). */
static int reusable(const pf_engine_session *s, const int32_t *prompt, int n_prompt) {
    int n = 0;
    int64_t lim = s->n_hist < n_prompt - 1 ? s->n_hist : n_prompt - 1;
    while (n < lim && s->hist[n] == prompt[n]) n++;
    return n;
}

/* Structured output: commit tok to the constraint. 1: generation ends before tok (an end token
 * at a complete document), 0: tok is kept, -1: tok breaks the constraint (a strategy's bug). */
static int constrain_commit(pf_engine_session *s, int32_t tok, char err[PF_ERR_LEN]) {
    if (!s->cons) return 0;
    int r = pf_constraint_advance(s->cons, tok);
    if (r < 0) snprintf(err, PF_ERR_LEN, "internal: token %d breaks the output's JSON schema", (int)tok);
    return r;
}

/* What a call asks for: its parameters, strategy (NULL: plain decoding) and statistics (may be NULL). */
typedef struct {
    const pf_decode_params *p;
    pf_strategy *strategy;
    pf_decode_stats *stats;
} gen_call;

/* One generation in progress: what prefill, the decode loop and finish share. */
typedef struct {
    pf_engine_session *s;
    pf_strategy *strat;
    const int32_t *prompt;
    int n_prompt, save_len; /* save_len: prompt tokens whose rows go to p->prompt_cache when it is absent or was ignored */
    const pf_decode_params *p;
    pf_decode_token_fn on_token;
    void *user;
    pf_decode_stats st;
    float *taps;     /* the prompt's tapped rows (n_prompt * tap_row floats), kept for a prompt-cache save */
    size_t tap_row;  /* floats per tapped row */
    int save;        /* the prompt's rows go to the prompt cache after generation */
    uint64_t key;    /* the prompt cache's key for this model and kernels */
    int32_t *buf;    /* a step's committed tokens */
    int cap_buf;
    int64_t n_committed; /* tokens the strategy returned; all but the last are in the cache */
    double t0, t_first;
} gen_run;

static pf_rc check_request(const gen_run *g, char err[PF_ERR_LEN]) {
    const pf_ctx *c = g->s->ctx;
    if (g->n_prompt < 1) {
        snprintf(err, PF_ERR_LEN, "empty prompt");
        return PF_RC_ARG;
    }
    if (g->n_prompt >= c->kv->n_ctx) {
        snprintf(err, PF_ERR_LEN, "prompt of %d tokens does not fit the context of %lld tokens", g->n_prompt,
                 (long long)c->kv->n_ctx);
        return PF_RC_CONTEXT;
    }
    if (g->p->max_tokens < 0) {
        snprintf(err, PF_ERR_LEN, "max_tokens must be >= 0");
        return PF_RC_ARG;
    }
    return PF_RC_OK;
}

/* Keep the cache rows this prompt shares with the last generation's; a strategy with taps must
 * still hold its context for them. Rows are batch invariant, so prefilling only the rest gives
 * bitwise the cold prefill. Returns the rows kept. */
static int keep_reusable(gen_run *g) {
    pf_engine_session *s = g->s;
    pf_strategy *strat = g->strat;
    int n_keep = reusable(s, g->prompt, g->n_prompt);
    if (n_keep > 0 && strat->n_taps > 0 &&
        !(s->prev == strat && strat->keep && strat->resume && strat->keep(strat->state, s, n_keep) == 0))
        n_keep = 0;
    pf_kv_truncate(s->ctx->kv, n_keep);
    s->n_hist = n_keep; /* what stays valid if this generation fails */
    s->prev = NULL;
    return n_keep;
}

/* A prompt-cache hit restores the prefix's K/V and tapped rows (bitwise the cold prefill's);
 * returns the rows restored. */
static int restore_cached(gen_run *g, int n_keep) {
    const pf_decode_params *p = g->p;
    if (!p->prompt_cache || n_keep > 0) return 0;
    char why[PF_ERR_LEN];
    pf_ctx *c = g->s->ctx;
    g->key = pf_prompt_cache_key(g->s->model, c->k);
    int n = pf_prompt_cache_restore(p->prompt_cache, g->key, c->kv, g->s->model->hp.n_embd, g->prompt, g->n_prompt,
                                    g->strat->tap_layers, g->strat->n_taps, g->taps, why);
    if (n < 0) cache_warning(p->prompt_cache, why);
    g->save = n <= 0 && g->save_len >= 1;
    return n < 0 ? 0 : n;
}

/* The prompt into the cache (what is reused or restored is not run again), then the strategy
 * begun or resumed on it. */
static pf_rc prefill(gen_run *g, char err[PF_ERR_LEN]) {
    pf_engine_session *s = g->s;
    pf_strategy *strat = g->strat;
    s->sampling = (pf_sampling){g->p->temp, g->p->top_k, g->p->top_p};
    pf_rng_seed(&s->rng, g->p->seed);
    int n_keep = keep_reusable(g);
    g->st.n_reused = n_keep;
    g->tap_row = (size_t)strat->n_taps * s->model->hp.n_embd;
    if (strat->n_taps && !(g->taps = malloc((size_t)g->n_prompt * g->tap_row * sizeof(float)))) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    g->t0 = pf_now_s();
    g->st.n_cached = restore_cached(g, n_keep);
    int n0 = n_keep + g->st.n_cached; /* rows already in the cache */
    pf_batch b = {.tokens = g->prompt + n0, .n = g->n_prompt - n0, .logits_mode = PF_LOGITS_LAST,
                  .logits = s->logits, .tap_layers = strat->tap_layers, .n_taps = strat->n_taps,
                  .taps = g->taps ? g->taps + (size_t)n0 * g->tap_row : NULL};
    pf_rc frc = pf_forward(s->ctx, &b, err); /* its kind as it came: a bad token id, the context */
    if (frc != PF_RC_OK) return frc;
    g->st.prefill_s = pf_now_s() - g->t0;
    pf_rc started = n_keep > 0 && strat->n_taps > 0
                        ? strat->resume(strat->state, s, g->prompt, g->n_prompt, n_keep,
                                        g->taps ? g->taps + (size_t)n_keep * g->tap_row : NULL, err)
                        : (strat->begin ? strat->begin(strat->state, s, g->prompt, g->n_prompt, g->taps, err) : PF_RC_OK);
    if (started != PF_RC_OK) return started; /* its kind as the strategy gave it */
    memcpy(s->hist + n_keep, g->prompt + n_keep, (size_t)(g->n_prompt - n_keep) * sizeof *g->prompt);
    if (!g->save) { /* otherwise kept for the save after generation (off the clock) */
        free(g->taps);
        g->taps = NULL;
    }
    g->cap_buf = 256;
    if (!(g->buf = malloc((size_t)g->cap_buf * sizeof *g->buf))) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    return PF_RC_OK;
}

/* The next committed tokens into g->buf, how many into *n: the first from the prefill's logits,
 * then a strategy step; 0 when the context is full (st.stop set). The step's code. */
static pf_rc next_tokens(gen_run *g, int32_t last, int *n, char err[PF_ERR_LEN]) {
    pf_engine_session *s = g->s;
    *n = 0;
    if (last < 0) {
        g->buf[0] = pick(s, s->logits);
        *n = 1;
        return PF_RC_OK;
    }
    /* `last` needs one cache row; a strategy may use up to cap rows */
    int64_t room = s->ctx->kv->n_ctx - s->ctx->kv->len;
    if (room < 1) {
        g->st.stop = PF_END_CONTEXT;
        return PF_RC_OK;
    }
    int cap = g->p->max_tokens - g->st.n_gen;
    if (cap > room) cap = (int)room;
    if (cap > g->cap_buf) cap = g->cap_buf;
    return g->strat->step(g->strat->state, s, last, g->buf, cap, n, err);
}

/* The caller's callback said stop (> 0: a normal end) or cancel (< 0): st.stop set; 1 stop, -1 cancel. */
static int callback_stop(gen_run *g, int r, char err[PF_ERR_LEN]) {
    g->st.stop = PF_END_CALLBACK;
    if (r > 0) return 1;
    snprintf(err, PF_ERR_LEN, "cancelled: the callback returned %d", r);
    return -1;
}

/* Hand g->buf[0..n) to the caller until a stop condition: 1 stop (st.stop set), 0 go on,
 * -1 a token broke the constraint (PF_RC_INTERNAL) or the callback cancelled (PF_RC_CANCELLED),
 * its code in *rc and err set. *last: the last token handed over. */
static int emit(gen_run *g, int n, int32_t *last, pf_rc *rc, char err[PF_ERR_LEN]) {
    pf_engine_session *s = g->s;
    for (int i = 0; i < n && g->n_prompt + g->n_committed <= s->ctx->kv->n_ctx; i++)
        s->hist[g->n_prompt + g->n_committed++] = g->buf[i];
    for (int i = 0; i < n; i++) {
        if (g->st.n_gen == 0) g->t_first = pf_now_s();
        int held = constrain_commit(s, g->buf[i], err);
        if (held < 0) {
            *rc = PF_RC_INTERNAL; /* a strategy proposed what the constraint refused: a bug */
            return -1;
        }
        if (held > 0 || (g->p->stop_at_eot && is_stop(s->model->tok, g->buf[i]))) {
            g->st.stop = PF_END_EOT;
            return 1;
        }
        g->st.n_gen++;
        *last = g->buf[i];
        if (g->p->on_token_source) g->p->on_token_source(g->p->token_source_user, g->buf[i], i < n - 1);
        int r = g->on_token ? g->on_token(g->user, g->buf[i]) : 0;
        if (r != 0) {
            int stop = callback_stop(g, r, err);
            if (stop < 0) *rc = PF_RC_CANCELLED;
            return stop;
        }
        /* the budget reached is a length stop even where the budget closed the document (OpenAI's
         * finish_reason "length"); a document that closed earlier ends by itself */
        if (g->st.n_gen >= g->p->max_tokens) g->st.stop = PF_END_LENGTH;
        else if (s->cons && pf_constraint_done(s->cons)) g->st.stop = PF_END_EOT; /* the document is complete */
        else continue;
        return 1;
    }
    return 0;
}

static pf_rc decode(gen_run *g, char err[PF_ERR_LEN]) {
    int32_t last = -1;
    g->st.stop = PF_END_LENGTH;
    while (g->st.n_gen < g->p->max_tokens) {
        int n = 0;
        pf_rc rc = next_tokens(g, last, &n, err);
        if (rc != PF_RC_OK) return rc; /* the strategy's kind: memory, the context, ... */
        if (n == 0) break; /* the context is full */
        int stop = emit(g, n, &last, &rc, err);
        if (stop < 0) return rc;
        if (stop) break;
    }
    return PF_RC_OK;
}

/* Timings, what the next generation may reuse, the prompt cache's save, and the buffers. */
static void finish(gen_run *g, pf_rc rc) {
    pf_engine_session *s = g->s;
    pf_ctx *c = s->ctx;
    double t_end = pf_now_s();
    g->st.ttft_s = (g->t_first > 0 ? g->t_first : t_end) - g->t0;
    g->st.decode_s = g->t_first > 0 ? t_end - g->t_first : 0;
    /* The cache now holds the prompt and every committed token but the last (each step runs
     * `last` and keeps what it returns but its final token); anything else leaves nothing reusable. */
    if (rc == PF_RC_OK && c->kv->len == g->n_prompt + (g->n_committed ? g->n_committed - 1 : 0)) {
        s->n_hist = c->kv->len;
        s->prev = g->strat;
    }
    /* decoding only appended rows past the prompt, so rows 0..save_len-1 are still the prefill's */
    if (g->save && rc == PF_RC_OK) {
        char why[PF_ERR_LEN];
        int n_save = g->save_len < g->n_prompt ? g->save_len : g->n_prompt;
        if (pf_prompt_cache_save(g->p->prompt_cache, g->key, c->kv, s->model->hp.n_embd, g->prompt, n_save,
                                 g->strat->tap_layers, g->strat->n_taps, g->taps, why) < 0)
            fprintf(stderr, "pocketflash: warning: prompt cache %s: %s, not saved\n", g->p->prompt_cache, why);
    }
    free(g->taps);
    free(g->buf);
}

/* Prefill, the decode loop, finish: one exit. stats are written when the decode loop ran. */
static pf_rc generate_run(pf_engine_session *s, const int32_t *prompt, int n_prompt, int save_len, const gen_call *call,
                          pf_decode_token_fn on_token, void *user, char err[PF_ERR_LEN]) {
    pf_strategy *strat = call->strategy ? call->strategy : &k_plain;
    gen_run g = {.s = s, .strat = strat, .prompt = prompt, .n_prompt = n_prompt, .save_len = save_len, .p = call->p,
                 .on_token = on_token, .user = user, .st = {.n_prompt = n_prompt, .strategy = strat->name}};
    pf_rc rc = check_request(&g, err);
    if (rc == PF_RC_OK) rc = prefill(&g, err);
    int decoded = rc == PF_RC_OK;
    if (decoded) rc = decode(&g, err);
    finish(&g, rc);
    if (call->stats && decoded) *call->stats = g.st;
    return rc;
}

static pf_rc generate(pf_engine_session *s, const int32_t *prompt, int n_prompt, int save_len, const gen_call *call,
                      pf_decode_token_fn on_token, void *user, char err[PF_ERR_LEN]) {
    pf_rc rc = pf_constraint_open(s, call->p, &s->cons, err);
    if (rc != PF_RC_OK) return rc;
    rc = generate_run(s, prompt, n_prompt, save_len, call, on_token, user, err);
    pf_constraint_free(s->cons);
    s->cons = NULL;
    return rc;
}

pf_rc pf_engine_generate_tokens(pf_engine_session *s, const int32_t *prompt, int n_prompt, const pf_decode_params *p,
                                pf_strategy *strategy, pf_decode_token_fn on_token, void *user, pf_decode_stats *stats,
                                char err[PF_ERR_LEN]) {
    gen_call call = {p, strategy, stats};
    return generate(s, prompt, n_prompt, n_prompt - 1, &call, on_token, user, err);
}

/* The model's rendering of [system?, user] (pf_chat_render with its template's form). */
static char *chat_text(const pf_engine_session *s, const char *system, const char *user) {
    pf_chat_msg m[2] = {{"system", system}, {"user", user}};
    char err[PF_ERR_LEN];
    bool qwen3 = pf_chat_template_qwen3(pf_tokenizer_chat_template(s->model->tok));
    return system ? pf_chat_render(m, 2, qwen3, err) : pf_chat_render(m + 1, 1, qwen3, err);
}

/* Tokens of the ChatML system block that `ids` starts with (the prefix every prompt with this
 * system message shares), or -1 when there is none or it does not tokenize as a prefix. */
static int system_block_len(const pf_engine_session *s, const char *system, const int32_t *ids, size_t n_ids) {
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
    pf_decode_text_fn cb;
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
static pf_rc generate_ids(pf_engine_session *s, int32_t *ids, size_t n_ids, const char *system, const gen_call *call,
                          pf_decode_text_fn on_text, void *user, char err[PF_ERR_LEN]) {
    text_sink sink = {.tok = s->model->tok, .cb = on_text, .user = user};
    pf_detok_init(&sink.dt, s->model->tok, false);
    /* what a prompt cache keeps: the shared system block of a chat, else all but the last token */
    int save_len = (int)n_ids - 1;
    if (system && call->p->prompt_cache) {
        int k = system_block_len(s, system, ids, n_ids);
        if (k > 0) save_len = k;
    }
    pf_rc rc = generate(s, ids, (int)n_ids, save_len, call, emit_text, &sink, err);
    size_t n = 0;
    const char *out = pf_detok_flush(&sink.dt, &n);
    if (out && n && on_text && rc != PF_RC_CANCELLED) on_text(user, out, n); /* a cancelled call hands out no more */
    pf_detok_free(&sink.dt);
    free(ids);
    return rc;
}

pf_rc pf_engine_prompt_ids(const pf_engine_session *s, const char *prompt, size_t len, const pf_decode_params *p,
                           int32_t **ids, size_t *n_ids, char err[PF_ERR_LEN]) {
    if (!pf_utf8_valid(prompt, len)) {
        snprintf(err, PF_ERR_LEN, "prompt is not valid UTF-8");
        return PF_RC_UTF8;
    }
    /* with chat the template's markers are special; special-token texts inside the messages too
     * unless no_special (llama.cpp's default for raw prompts) */
    if (p->chat) return pf_chat_tokenize(s->model->tok, p->system, prompt, !p->no_special, ids, n_ids, err);
    return pf_tokenize(s->model->tok, prompt, len, !p->no_special, ids, n_ids, err);
}

pf_rc pf_engine_chat_ids(const pf_engine_session *s, const pf_chat_msg *messages, int n, const pf_decode_params *p,
                         int32_t **ids, size_t *n_ids, char **system, char err[PF_ERR_LEN]) {
    if (system) *system = NULL;
    for (int i = 0; i < n && messages; i++)
        if (messages[i].content && !pf_utf8_valid(messages[i].content, strlen(messages[i].content))) {
            snprintf(err, PF_ERR_LEN, "chat: message %d is not valid UTF-8", i);
            return PF_RC_UTF8;
        }
    if (pf_chat_check(messages, n, err) < 0) return PF_RC_ARG;
    pf_chat_msg *with_tools = NULL;
    char *tools_system = NULL;
    pf_rc rc = PF_RC_OK;
    if (p && p->tools && p->tool_choice != PF_TOOLS_NONE) { /* the system turn lists them */
        rc = pf_tools_chat(p->tools, messages, n, &with_tools, &n, &tools_system, err);
        if (rc != PF_RC_OK) return rc;
        messages = with_tools;
    }
    bool qwen3 = pf_chat_template_qwen3(pf_tokenizer_chat_template(s->model->tok));
    char *text = pf_chat_render(messages, n, qwen3, err); /* the messages passed pf_chat_check: NULL only for memory */
    rc = text ? pf_tokenize(s->model->tok, text, strlen(text), true, ids, n_ids, err) : PF_RC_OOM;
    const char *sys = n > 0 && messages[0].role && !strcmp(messages[0].role, "system") ? messages[0].content : NULL;
    if (rc == PF_RC_OK && system && sys && !(*system = strdup(sys))) {
        free(*ids);
        *ids = NULL;
        rc = PF_RC_OOM;
    }
    if (rc == PF_RC_OOM) snprintf(err, PF_ERR_LEN, "out of memory");
    free(text);
    free(with_tools);
    free(tools_system);
    return rc;
}

pf_rc pf_engine_generate(pf_engine_session *s, const char *prompt, size_t len, const pf_decode_params *p, pf_strategy *strategy,
                         pf_decode_text_fn on_text, void *user, pf_decode_stats *stats, char err[PF_ERR_LEN]) {
    gen_call call = {p, strategy, stats};
    int32_t *ids = NULL;
    size_t n_ids = 0;
    pf_rc rc = pf_engine_prompt_ids(s, prompt, len, p, &ids, &n_ids, err);
    if (rc != PF_RC_OK) return rc;
    return generate_ids(s, ids, n_ids, p->chat ? p->system : NULL, &call, on_text, user, err);
}

pf_rc pf_engine_generate_chat(pf_engine_session *s, const pf_chat_msg *messages, int n, const pf_decode_params *p,
                              pf_strategy *strategy, pf_decode_text_fn on_text, void *user, pf_decode_stats *stats,
                              char err[PF_ERR_LEN]) {
    gen_call call = {p, strategy, stats};
    int32_t *ids = NULL;
    size_t n_ids = 0;
    char *system = NULL;
    pf_rc rc = pf_engine_chat_ids(s, messages, n, p, &ids, &n_ids, &system, err);
    if (rc != PF_RC_OK) return rc;
    rc = generate_ids(s, ids, n_ids, system, &call, on_text, user, err);
    free(system);
    return rc;
}
