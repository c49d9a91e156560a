/* The public generation calls: the strategy from the parameters (api/strategy.c), then the
 * engine's generation, then the round statistics into the caller's stats. */
#include <stdio.h>
#include <string.h>

#include "api/strategy.h"
#include "engine/generate.h"

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
    pf_gen_params q = *p;
    pf_spec *spec;
    int block;
    pf_status rc = pf_api_strategy(s, p, &q.strategy, &spec, &block, err);
    if (rc != PF_OK) return rc;
    pf_gen_stats st;
    memset(&st, 0, sizeof st);
    switch (in->kind) {
    case GEN_TOKENS: rc = pf_engine_generate_tokens(s, in->ids, in->n_ids, &q, in->on_token, user, &st, err); break;
    case GEN_TEXT: rc = pf_engine_generate(s, in->text, in->len, &q, in->on_text, user, &st, err); break;
    default: rc = pf_engine_generate_chat(s, in->messages, in->n_messages, &q, in->on_text, user, &st, err); break;
    }
    pf_api_round_stats(spec, block, &st);
    if (stats) *stats = st;
    return rc;
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
