/* The engine's side of a generation: its stop reasons, decode parameters, statistics and
 * callbacks (a chat's messages are engine/chat_msg.h's). The public header (include/pocketflash.h)
 * is api/'s: api/ turns pf_gen_params into these and passes the codes and stop reasons back one to
 * one (api/status.h asserts that their values agree). */
#ifndef PF_DECODE_H
#define PF_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/tool_choice.h"
#include "formats/errf.h" /* PF_ERR_LEN */
#include "formats/status.h" /* pf_rc: what a call below api/ reports */

/* Why decoding ended; the public pf_stop_reason has the same values. */
typedef enum { PF_END_EOT = 0, PF_END_LENGTH, PF_END_CONTEXT, PF_END_CALLBACK } pf_end;

typedef struct {
    int max_tokens;
    float temp;   /* <= 0 greedy */
    int top_k;    /* <= 0 off */
    float top_p;  /* >= 1 off */
    uint64_t seed;
    bool chat;           /* wrap the prompt in the model's chat template */
    const char *system;  /* with chat: the system message, or NULL */
    bool stop_at_eot;    /* stop at the end-of-turn / end-of-text token */
    const char *prompt_cache; /* prompt cache file, or NULL */
    bool no_special;     /* special-token texts in the prompt are plain text */
    const char *json_schema; /* structured output: a JSON Schema, or */
    bool json_object;        /* any JSON object */
    /* tool calling (engine/tools.h): an OpenAI tools array (JSON text, NULL: none) listed in the
     * chat's system turn, and whether the reply may (auto), may not (none: tools not listed) or
     * must call one (required; named: tool_name), the last two held to it by the constraint */
    const char *tools;
    pf_tools_choice tool_choice;
    const char *tool_name;
    /* Optional: each generated token and whether the strategy drafted it (a kept proposal) or the
     * target gave it (a round's last token, a plain step), before the token's text goes out. */
    void (*on_token_source)(void *user, int32_t token, bool drafted);
    void *token_source_user;
} pf_decode_params;

typedef struct {
    int n_prompt, n_gen, n_reused, n_cached;
    double prefill_s, ttft_s, decode_s;
    pf_end stop;
    const char *strategy; /* the strategy's name (static string) */
} pf_decode_stats;

/* Each generated token id / complete UTF-8 piece: 0 goes on, > 0 stops (PF_END_CALLBACK), < 0
 * cancels (PF_RC_CANCELLED). */
typedef int (*pf_decode_token_fn)(void *user, int32_t token);
typedef int (*pf_decode_text_fn)(void *user, const char *text, size_t len);

#endif
