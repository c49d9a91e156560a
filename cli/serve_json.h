/* pocketflash serve: the JSON side of the OpenAI-compatible API, without HTTP. A growable text
 * buffer with JSON string escaping (responses), and the request bodies of /v1/chat/completions and
 * /v1/completions read with the project's strict JSON reader (formats/json.h) into checked fields. */
#ifndef PF_CLI_SERVE_JSON_H
#define PF_CLI_SERVE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/json.h"
#include "include/pocketflash.h"

/* ---- output buffer ---- */
typedef struct {
    char *s; /* NUL-terminated while !oom */
    size_t n, cap;
    bool oom; /* an allocation failed: the contents are incomplete */
} sv_buf;

void sv_put(sv_buf *b, const char *s, size_t n);
void sv_puts(sv_buf *b, const char *s);
void sv_printf(sv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s[0..n) as a quoted JSON string (UTF-8 passes through; controls, '"' and '\\' escaped). */
void sv_put_jstr(sv_buf *b, const char *s, size_t n);
/* A finite double as a JSON number (non-finite as 0). */
void sv_put_num(sv_buf *b, double v);
void sv_buf_free(sv_buf *b);

/* ---- requests ---- */
typedef enum { SV_CHAT, SV_COMPLETION } sv_kind;

#define SV_MAX_STOP 4

typedef struct {
    sv_kind kind;
    /* chat: the conversation (roles "system", "user", "assistant", "tool"; "developer" is read as
     * "system"; an assistant message's tool_calls are written into its content as the template
     * writes them) */
    pf_message *messages;
    int n_messages;
    /* completion: the raw prompt */
    const char *prompt;
    size_t prompt_len;
    int max_tokens;  /* 0: not given */
    double temp;     /* OpenAI's default 1 */
    double top_p;    /* default 1 */
    int top_k;       /* extension (llama.cpp's field): default 0 = off */
    bool has_seed;
    uint64_t seed;
    const char *stop[SV_MAX_STOP];
    size_t stop_len[SV_MAX_STOP];
    int n_stop;
    bool stream;
    bool ignore_eos; /* extension (llama.cpp's field): do not stop at the end-of-turn token */
    /* extension: per-request strategy ("spec": plain (or ar)|dflash|ngram|hybrid|dec|adaptive|default,
     * "block": 2..64), resolved by the library as every front end's (sv_gen_strategy) */
    bool has_spec;
    pf_spec_kind spec;
    int block;
    /* structured output: response_format {"type": "json_object"} or {"type": "json_schema",
     * "json_schema": {"schema": ...}}, or llama-server's "json_schema" field (checked here:
     * a schema outside the subset is a 400 naming the keyword) */
    const char *json_schema; /* compact text, in owned */
    bool json_object;
    /* tool calling: the tools array (compact text, in owned; checked by the library's reader, and
     * under required / a named function its constraint compiled), tool_choice */
    const char *tools;
    pf_tool_choice tool_choice;
    const char *tool_name;
    pf_json_doc *doc; /* owns the strings above */
    char **owned;     /* joined content parts */
    int n_owned;
} sv_request;

/* Parse and check a request body. On failure returns false with a message in err and, where one
 * field is at fault, its name in *param (a static string or NULL); the request needs no free then. */
bool sv_request_parse(const char *body, size_t len, sv_kind kind, sv_request *r, char err[PF_ERR_LEN],
                      const char **param);
void sv_request_free(sv_request *r);
/* The request's strategy fields into p, over the server's draft d (NULL: none): what the library's
 * resolver then makes of them is the plan of `run` with the same flags. */
void sv_gen_strategy(const sv_request *r, const pf_draft *d, pf_gen_params *p);

/* An OpenAI-style error body: {"error": {"message", "type", "param", "code"}}. */
void sv_error_json(sv_buf *b, const char *message, const char *type, const char *param, const char *code);

#endif
