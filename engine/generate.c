/* pf_generate: prefill, then strategy steps until a stop condition; time to first token and
 * decode time are measured around everything a strategy does. */
#include "engine/generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/chat.h"
#include "engine/chat_tokens.h"
#include "engine/prompt_cache.h"
#include "engine/tokenizer.h"
#include "engine/unicode.h"
#include "engine/clock.h"

void pf_gen_params_default(pf_gen_params *p) {
    memset(p, 0, sizeof *p);
    p->max_tokens = 128;
    p->top_p = 1.0f;
    p->stop_at_eot = true;
}

pf_model *pf_load_model(const char *path, char err[PF_ERR_LEN]) { return pf_model_load(path, err); }
void pf_free_model(pf_model *m) { pf_model_free(m); }

pf_session *pf_session_new(const pf_model *m, const pf_session_params *p, char err[PF_ERR_LEN]) {
    int64_t n_ctx = p && p->n_ctx > 0 ? p->n_ctx : (m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096);
    int threads = p && p->n_threads > 0 ? p->n_threads : 1;
    pf_session *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return NULL;
    }
    s->model = m;
    s->ctx = pf_ctx_new(m, n_ctx, threads, NULL, err);
    s->logits = malloc((size_t)m->hp.n_vocab * sizeof(float));
    if (!s->ctx || !s->logits || pf_dist_init(&s->dist, m->hp.n_vocab) < 0) {
        if (s->ctx) snprintf(err, PF_ERR_LEN, "out of memory");
        pf_session_free(s);
        return NULL;
    }
    if (p && p->kv_q8) {
        /* refused rather than silently slow where its scalar path would run */
        if (!pf_kv_q8_usable(s->ctx->k, err) || pf_ctx_set_kv_type(s->ctx, PF_KV_Q8, err) < 0) {
            pf_session_free(s);
            return NULL;
        }
    }
    return s;
}

void pf_session_free(pf_session *s) {
    if (!s) return;
    pf_ctx_free(s->ctx);
    pf_dist_free(&s->dist);
    free(s->logits);
    free(s);
}

int32_t pf_session_sample(pf_session *s, const float *logits) {
    return pf_sample(&s->sampling, logits, s->model->hp.n_vocab, &s->dist, &s->rng);
}

/* Plain autoregressive decoding: one target row per step. */
static int ar_step(void *state, pf_session *s, int32_t last, int32_t *out, int cap, char err[PF_ERR_LEN]) {
    (void)state;
    (void)cap;
    pf_batch b = {.tokens = &last, .n = 1, .logits_mode = PF_LOGITS_LAST, .logits = s->logits};
    if (pf_forward(s->ctx, &b, err) < 0) return -1;
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

/* save_len: prompt tokens whose rows go to p->prompt_cache when it is absent or was ignored. */
static pf_status generate(pf_session *s, const int32_t *prompt, int n_prompt, int save_len, const pf_gen_params *p,
                          pf_token_cb on_token, void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]) {
    pf_gen_stats st = {0};
    st.n_prompt = n_prompt;
    pf_strategy *strat = p->strategy ? p->strategy : &k_ar;
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
    pf_kv_truncate(c->kv, 0);

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
    if (p->prompt_cache) {
        char why[PF_ERR_LEN];
        key = pf_prompt_cache_key(s->model, c->k);
        n_cached = pf_prompt_cache_restore(p->prompt_cache, key, c->kv, hp->n_embd, prompt, n_prompt,
                                           strat->tap_layers, strat->n_taps, taps, why);
        if (n_cached < 0) cache_warning(p->prompt_cache, why);
        save = n_cached <= 0 && save_len >= 1;
        if (n_cached < 0) n_cached = 0;
    }
    st.n_cached = n_cached;
    pf_batch b = {.tokens = prompt + n_cached, .n = n_prompt - n_cached, .logits_mode = PF_LOGITS_LAST,
                  .logits = s->logits, .tap_layers = strat->tap_layers, .n_taps = strat->n_taps,
                  .taps = taps ? taps + (size_t)n_cached * tap_row : NULL};
    if (pf_forward(c, &b, err) < 0) {
        free(taps);
        return PF_ERR_ARG;
    }
    st.prefill_s = pf_now_s() - t0;
    if (strat->begin && strat->begin(strat->state, s, prompt, n_prompt, taps, err) < 0) {
        free(taps);
        return PF_ERR_INTERNAL;
    }
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
        int stop = 0;
        for (int i = 0; i < n && !stop; i++) {
            if (st.n_gen == 0) t_first = pf_now_s();
            if (p->stop_at_eot && is_stop(s->model->tok, buf[i])) {
                st.stop = PF_STOP_EOT;
                stop = 1;
                break;
            }
            st.n_gen++;
            last = buf[i];
            if (on_token && on_token(user, buf[i])) {
                st.stop = PF_STOP_CALLBACK;
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

pf_status pf_generate_tokens(pf_session *s, const int32_t *prompt, int n_prompt, const pf_gen_params *p,
                             pf_token_cb on_token, void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]) {
    return generate(s, prompt, n_prompt, n_prompt - 1, p, on_token, user, stats, err);
}

/* Tokens of the ChatML system block that `ids` starts with (the prefix every prompt with this
 * system message shares), or -1 when there is none or it does not tokenize as a prefix. */
static int system_block_len(const pf_tokenizer *tok, const char *system, const int32_t *ids, size_t n_ids) {
    char *with = pf_chat_format(system, ""), *without = pf_chat_format(NULL, "");
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

pf_status pf_generate(pf_session *s, const char *prompt, size_t len, const pf_gen_params *p, pf_text_cb on_text,
                      void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]) {
    if (!pf_utf8_valid(prompt, len)) {
        snprintf(err, PF_ERR_LEN, "prompt is not valid UTF-8");
        return PF_ERR_UTF8;
    }
    int32_t *ids = NULL;
    size_t n_ids = 0;
    /* special-token texts are special unless no_special (llama.cpp's default for raw prompts) */
    int r = p->chat ? pf_chat_tokenize(s->model->tok, p->system, prompt, !p->no_special, &ids, &n_ids, err)
                    : pf_tokenize(s->model->tok, prompt, len, !p->no_special, &ids, &n_ids, err);
    if (r < 0) return PF_ERR_ARG;
    text_sink sink = {.tok = s->model->tok, .cb = on_text, .user = user};
    pf_detok_init(&sink.dt, s->model->tok, false);
    /* what a prompt cache keeps: the shared system block of a chat, else all but the last token */
    int save_len = (int)n_ids - 1;
    if (p->chat && p->system && p->prompt_cache) {
        int k = system_block_len(s->model->tok, p->system, ids, n_ids);
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
