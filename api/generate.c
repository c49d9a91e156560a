/* The public generation calls: the strategy from the parameters (api/strategy.c), then the
 * engine's generation, then the round statistics into the caller's stats. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "api/gen_convert.h"
#include "api/status.h"
#include "api/strategy.h"
#include "engine/constraint.h"
#include "engine/generate.h"
#include "engine/tools.h"

const char *pf_version(void) { return PF_VERSION_STRING; }

typedef enum { GEN_TOKENS, GEN_TEXT, GEN_CHAT } gen_kind;

typedef struct {
    gen_kind kind;
    const int32_t *ids;
    int n_ids;
    const char *text;
    size_t len;
    const pf_message *messages;
    int n_messages;
    pf_token_cb on_token;
    pf_text_cb on_text;
} gen_input;

pf_decode_params pf_api_decode_params(const pf_gen_params *p) {
    return (pf_decode_params){.max_tokens = p->max_tokens, .temp = p->temp, .top_k = p->top_k, .top_p = p->top_p,
                              .seed = p->seed, .chat = p->chat, .system = p->system, .stop_at_eot = p->stop_at_eot,
                              .prompt_cache = p->prompt_cache, .no_special = p->no_special,
                              .json_schema = p->json_schema, .json_object = p->json_object,
                              .tools = p->tools, .tool_choice = (pf_tools_choice)p->tool_choice, .tool_name = p->tool_name,
                              .on_token_source = p->on_token_source, .token_source_user = p->token_source_user};
}

void pf_api_copy_stats(const pf_decode_stats *d, pf_gen_stats *st) {
    st->n_prompt = d->n_prompt;
    st->n_gen = d->n_gen;
    st->n_reused = d->n_reused;
    st->n_cached = d->n_cached;
    st->prefill_s = d->prefill_s;
    st->ttft_s = d->ttft_s;
    st->decode_s = d->decode_s;
    st->stop = (pf_stop_reason)d->stop;
    st->drafter = d->strategy;
}

/* The engine's chat messages of the public ones (the same two strings each). */
static pf_chat_msg *chat_messages(const pf_message *m, int n, char err[PF_ERR_LEN]) {
    pf_chat_msg *c = malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
    if (!c) snprintf(err, PF_ERR_LEN, "out of memory");
    for (int i = 0; c && m && i < n; i++) c[i] = (pf_chat_msg){m[i].role, m[i].content};
    return c;
}

static pf_rc engine_call(pf_engine_session *s, const gen_input *in, const pf_decode_params *q, pf_strategy *strategy,
                         void *user, pf_decode_stats *ds, char err[PF_ERR_LEN]) {
    if (in->kind == GEN_TOKENS)
        return pf_engine_generate_tokens(s, in->ids, in->n_ids, q, strategy, in->on_token, user, ds, err);
    if (in->kind == GEN_TEXT) return pf_engine_generate(s, in->text, in->len, q, strategy, in->on_text, user, ds, err);
    pf_chat_msg *msgs = chat_messages(in->messages, in->n_messages, err);
    if (!msgs) return PF_RC_OOM;
    pf_rc rc = pf_engine_generate_chat(s, in->messages ? msgs : NULL, in->n_messages, q, strategy, in->on_text, user, ds,
                                       err);
    free(msgs);
    return rc;
}

static pf_status run(pf_session *s, const gen_input *in, const pf_gen_params *p, void *user, pf_gen_stats *stats,
                     char err[PF_ERR_LEN]) {
    if (!s) {
        snprintf(err, PF_ERR_LEN, "no session");
        return PF_ERR_ARG;
    }
    pf_gen_params defaults;
    if (!p) {
        pf_gen_params_default(&defaults);
        p = &defaults;
    }
    api_choice c;
    pf_status rc = pf_api_strategy(s, p, &c, err);
    if (rc != PF_OK) return rc;
    pf_decode_params q = pf_api_decode_params(p);
    pf_decode_stats ds = {0};
    rc = pf_api_status(engine_call(&s->engine, in, &q, c.strategy, user, &ds, err));
    pf_gen_stats st;
    memset(&st, 0, sizeof st);
    pf_api_copy_stats(&ds, &st);
    pf_api_round_stats(&c, &st);
    if (stats) *stats = st;
    return rc;
}

pf_status pf_gen_check_max_tokens(pf_session *s, const pf_gen_params *p, char err[PF_ERR_LEN]) {
    if (!s || !p) {
        snprintf(err, PF_ERR_LEN, "no session or parameters");
        return PF_ERR_ARG;
    }
    pf_decode_params q = pf_api_decode_params(p);
    pf_constraint *c = NULL;
    pf_rc rc = pf_constraint_open(&s->engine, &q, &c, err);
    pf_constraint_free(c);
    return pf_api_status(rc);
}

pf_status pf_generate_tokens(pf_session *s, const int32_t *prompt, int n_prompt, const pf_gen_params *p,
                             pf_token_cb on_token, void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]) {
    gen_input in = {.kind = GEN_TOKENS, .ids = prompt, .n_ids = n_prompt, .on_token = on_token};
    return run(s, &in, p, user, stats, err);
}

pf_status pf_generate(pf_session *s, const char *prompt, size_t len, const pf_gen_params *p, pf_text_cb on_text,
                      void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]) {
    if (!prompt) {
        snprintf(err, PF_ERR_LEN, "no prompt");
        return PF_ERR_ARG;
    }
    gen_input in = {.kind = GEN_TEXT, .text = prompt, .len = len, .on_text = on_text};
    return run(s, &in, p, user, stats, err);
}

pf_status pf_generate_chat(pf_session *s, const pf_message *messages, int n, const pf_gen_params *p,
                           pf_text_cb on_text, void *user, pf_gen_stats *stats, char err[PF_ERR_LEN]) {
    gen_input in = {.kind = GEN_CHAT, .messages = messages, .n_messages = n, .on_text = on_text};
    return run(s, &in, p, user, stats, err);
}

pf_status pf_parse_tool_calls(const char *text, size_t len, pf_tool_call **calls, int *n_calls, size_t *content_len,
                              char err[PF_ERR_LEN]) {
    pf_parsed_call *c = NULL;
    int n = 0;
    *calls = NULL;
    *n_calls = 0;
    *content_len = len;
    if (pf_tool_calls_parse(text ? text : "", text ? len : 0, &c, &n, content_len) != PF_RC_OK) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_ERR_OOM;
    }
    /* the same two strings each: the engine's calls become the public ones in place */
    _Static_assert(sizeof(pf_tool_call) == sizeof(pf_parsed_call) &&
                       offsetof(pf_tool_call, name) == offsetof(pf_parsed_call, name) &&
                       offsetof(pf_tool_call, arguments) == offsetof(pf_parsed_call, arguments),
                   "engine tool calls are the public ones");
    *calls = (pf_tool_call *)c;
    *n_calls = n;
    return PF_OK;
}

void pf_free_tool_calls(pf_tool_call *calls, int n) { pf_tool_calls_free((pf_parsed_call *)calls, n); }
