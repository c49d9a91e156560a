/* pocketflash serve: response text and request checking (see serve_json.h). Unknown request
 * fields are ignored, as OpenAI-compatible servers do (clients send user, logprobs, ...); a known
 * field of the wrong type or range is a 400 naming it. null counts as absent. */
#include "cli/serve_json.h"
#include "formats/grow.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tools.h"
#include "engine/unicode.h"
#include "formats/gguf.h"
#include "formats/json_write.h"
#include "grammar/schema.h"
#include "verify/kind.h"

/* ---- output buffer ---- */
static bool sv_reserve(sv_buf *b, size_t extra) {
    if (b->oom) return false;
    char *s = pf_grow(b->s, &b->cap, b->n + extra + 1, 1, 256);
    if (!s) {
        b->oom = true;
        return false;
    }
    b->s = s;
    return true;
}

void sv_put(sv_buf *b, const char *s, size_t n) {
    if (!sv_reserve(b, n)) return;
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

void sv_puts(sv_buf *b, const char *s) { sv_put(b, s, strlen(s)); }

void sv_printf(sv_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !sv_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void sv_put_jstr(sv_buf *b, const char *s, size_t n) {
    if (!sv_reserve(b, n + 2)) return;
    b->s[b->n++] = '"';
    size_t run = 0; /* bytes copied as they are, flushed before each escape */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            /* ill-formed UTF-8 (a sampled byte token, cut before a special token) would make the
             * whole body invalid JSON: each maximal ill-formed part becomes U+FFFD */
            uint32_t cp;
            size_t k = pf_utf8_decode(s + i, n - i, &cp);
            if (cp == PF_UTF8_INVALID) {
                sv_put(b, s + run, i - run);
                sv_put(b, "\\ufffd", 6);
                run = i + k;
            }
            i += k - 1;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        sv_put(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"': sv_put(b, "\\\"", 2); break;
        case '\\': sv_put(b, "\\\\", 2); break;
        case '\n': sv_put(b, "\\n", 2); break;
        case '\r': sv_put(b, "\\r", 2); break;
        case '\t': sv_put(b, "\\t", 2); break;
        default: sv_printf(b, "\\u%04x", c); break;
        }
    }
    sv_put(b, s + run, n - run);
    sv_put(b, "\"", 1);
}

void sv_put_num(sv_buf *b, double v) { sv_printf(b, "%.6g", isfinite(v) ? v : 0.0); }

void sv_buf_free(sv_buf *b) {
    free(b->s);
    memset(b, 0, sizeof *b);
}

void sv_error_json(sv_buf *b, const char *message, const char *type, const char *param, const char *code) {
    /* one line whatever the message quotes (a role or a schema key of the request may hold a
     * newline): control characters become '?', as in every one-line error */
    char one[PF_ERR_LEN];
    snprintf(one, sizeof one, "%s", message);
    pf_err_one_line(one);
    sv_puts(b, "{\"error\":{\"message\":");
    sv_put_jstr(b, one, strlen(one));
    sv_puts(b, ",\"type\":");
    sv_put_jstr(b, type, strlen(type));
    sv_puts(b, ",\"param\":");
    if (param) sv_put_jstr(b, param, strlen(param));
    else sv_puts(b, "null");
    sv_puts(b, ",\"code\":");
    if (code) sv_put_jstr(b, code, strlen(code));
    else sv_puts(b, "null");
    sv_puts(b, "}}\n");
}

/* ---- requests ---- */
typedef struct {
    char *err;
    const char **param;
    const char *body; /* the request text (numbers in a schema are copied from it) */
    size_t body_len;
} checker;

static bool bad(checker *c, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool bad(checker *c, const char *param, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, PF_ERR_LEN, fmt, ap);
    va_end(ap);
    *c->param = param;
    return false;
}

/* The member key, or NULL when absent or null. */
static const pf_json *field(const pf_json *root, const char *key) {
    const pf_json *v = pf_json_get(root, key);
    return v && v->type != PF_JSON_NULL ? v : NULL;
}

static bool get_number(checker *c, const pf_json *root, const char *key, double lo, double hi, double *out) {
    const pf_json *v = field(root, key);
    if (!v) return true;
    if (v->type != PF_JSON_NUMBER)
        return bad(c, key, "'%s' must be a number, not %s", key, pf_json_type_name(v->type));
    if (!(v->u.num.d >= lo && v->u.num.d <= hi)) return bad(c, key, "'%s' must be within %g..%g", key, lo, hi);
    *out = v->u.num.d;
    return true;
}

static bool get_int(checker *c, const pf_json *root, const char *key, int64_t lo, int64_t hi, int64_t *out,
                    bool *given) {
    const pf_json *v = field(root, key);
    if (!v) return true;
    if (v->type != PF_JSON_NUMBER || !v->u.num.is_int)
        return bad(c, key, "'%s' must be an integer, not %s", key,
                   v->type == PF_JSON_NUMBER ? "a fraction" : pf_json_type_name(v->type));
    if (v->u.num.i < lo || v->u.num.i > hi)
        return bad(c, key, "'%s' must be within %lld..%lld", key, (long long)lo, (long long)hi);
    *out = v->u.num.i;
    if (given) *given = true;
    return true;
}

static bool get_bool(checker *c, const pf_json *root, const char *key, bool *out) {
    const pf_json *v = field(root, key);
    if (!v) return true;
    if (v->type != PF_JSON_BOOL) return bad(c, key, "'%s' must be a boolean, not %s", key, pf_json_type_name(v->type));
    *out = v->u.b;
    return true;
}

/* A string the C API can take: no NUL byte inside (JSON allows \u0000). */
static bool plain_string(const pf_json *v) { return v->type == PF_JSON_STRING && strlen(v->u.str.s) == v->u.str.len; }

static bool get_stop(checker *c, const pf_json *root, sv_request *r) {
    const pf_json *v = field(root, "stop");
    if (!v) return true;
    const pf_json *items = v;
    size_t n = 1;
    if (v->type == PF_JSON_ARRAY) items = v->u.arr.items, n = v->u.arr.n;
    if (n > SV_MAX_STOP) return bad(c, "stop", "'stop' holds at most %d sequences", SV_MAX_STOP);
    for (size_t i = 0; i < n; i++) {
        if (!plain_string(&items[i]) || !items[i].u.str.len)
            return bad(c, "stop", "'stop' must be a non-empty string or an array of them");
        r->stop[r->n_stop] = items[i].u.str.s;
        r->stop_len[r->n_stop++] = items[i].u.str.len;
    }
    return true;
}

static bool get_spec(checker *c, const pf_json *root, sv_request *r) {
    const pf_json *v = field(root, "spec");
    char why[PF_ERR_LEN];
    if (v) {
        /* the strategy names are the one list (verify/kind.h), their values the public ones */
        pf_kind kind;
        if (!plain_string(v)) return bad(c, "spec", "'spec' must be a string");
        if (pf_kind_parse(v->u.str.s, &kind, why) < 0) return bad(c, "spec", "'spec': %s", why);
        r->has_spec = true;
        r->spec = (pf_spec_kind)kind;
    }
    int64_t block = 0;
    bool given = false;
    if (!get_int(c, root, "block", INT64_MIN, INT64_MAX, &block, &given)) return false;
    if (given && pf_block_check("'block'", block, why) < 0) return bad(c, "block", "%s", why);
    r->block = (int)block;
    return true;
}

/* Keep s (malloc'd) with the request; false when out of memory. */
static bool own(sv_request *r, char *s) {
    char **o = realloc(r->owned, (size_t)(r->n_owned + 1) * sizeof *o);
    if (!o) {
        free(s);
        return false;
    }
    r->owned = o;
    r->owned[r->n_owned++] = s;
    return true;
}

/* Content as a string, or an array of {"type": "text", "text": ...} parts (joined). */
static bool get_content(checker *c, sv_request *r, const pf_json *v, const char **out) {
    if (plain_string(v)) {
        *out = v->u.str.s;
        return true;
    }
    if (v->type != PF_JSON_ARRAY) return bad(c, "messages", "a message's 'content' must be a string or an array of text parts");
    size_t total = 0;
    for (size_t i = 0; i < v->u.arr.n; i++) {
        const pf_json *p = &v->u.arr.items[i], *t = pf_json_get(p, "text");
        if (!pf_json_str_eq(pf_json_get(p, "type"), "text") || !t || !plain_string(t))
            return bad(c, "messages", "only text content parts ({\"type\": \"text\", \"text\": ...}) are supported");
        total += t->u.str.len;
    }
    char *s = malloc(total + 1), **owned = realloc(r->owned, (size_t)(r->n_owned + 1) * sizeof *owned);
    if (owned) r->owned = owned;
    if (!s || !owned) {
        free(s);
        return bad(c, NULL, "out of memory");
    }
    r->owned[r->n_owned++] = s;
    total = 0;
    for (size_t i = 0; i < v->u.arr.n; i++) {
        const pf_json *t = pf_json_get(&v->u.arr.items[i], "text");
        memcpy(s + total, t->u.str.s, t->u.str.len);
        total += t->u.str.len;
    }
    s[total] = 0;
    *out = s;
    return true;
}

/* An assistant message's tool_calls ([{"id", "type": "function", "function": {"name", "arguments"}}])
 * after its content, as Qwen3's template writes them: a newline after non-empty content and between
 * calls, each call's arguments text as given (a JSON string's content, or an object written out). */
static bool get_tool_calls(checker *c, sv_request *r, size_t i, const pf_json *content, const pf_json *calls) {
    const char *text = "";
    if (content && !get_content(c, r, content, &text)) return false;
    if (calls->type != PF_JSON_ARRAY) return bad(c, "messages", "messages[%zu].tool_calls must be an array", i);
    pf_sbuf b = {0};
    pf_sbuf_put(&b, text, strlen(text));
    for (size_t k = 0; k < calls->u.arr.n; k++) {
        const pf_json *call = &calls->u.arr.items[k], *fn = field(call, "function");
        const pf_json *name = fn ? field(fn, "name") : NULL, *args = fn ? field(fn, "arguments") : NULL;
        if (!name || !plain_string(name) || !name->u.str.len || (args && !plain_string(args) && args->type != PF_JSON_OBJECT)) {
            free(b.p);
            return bad(c, "messages", "messages[%zu].tool_calls[%zu] needs 'function': {'name': string, 'arguments': string}",
                       i, k);
        }
        pf_sbuf a = {0};
        if (!args) pf_sbuf_put(&a, "{}", 2);
        else if (args->type == PF_JSON_OBJECT) pf_json_spaced(&a, args, c->body, c->body_len);
        else pf_sbuf_put(&a, args->u.str.s, args->u.str.len);
        if (b.n) pf_sbuf_put(&b, "\n", 1);
        pf_tool_call_put(&b, name->u.str.s, a.p ? a.p : "");
        if (a.oom) b.oom = 1;
        free(a.p);
    }
    if (b.oom || !own(r, b.p ? b.p : strdup(""))) {
        free(b.oom ? b.p : NULL);
        return bad(c, NULL, "out of memory");
    }
    r->messages[i].content = r->owned[r->n_owned - 1];
    return true;
}

static bool get_messages(checker *c, const pf_json *root, sv_request *r) {
    const pf_json *v = field(root, "messages");
    if (!v) return bad(c, "messages", "'messages' is required");
    if (v->type != PF_JSON_ARRAY || !v->u.arr.n) return bad(c, "messages", "'messages' must be a non-empty array");
    if (v->u.arr.n > 4096) return bad(c, "messages", "'messages' holds more than 4096 messages");
    if (!(r->messages = calloc(v->u.arr.n, sizeof *r->messages))) return bad(c, NULL, "out of memory");
    for (size_t i = 0; i < v->u.arr.n; i++) {
        const pf_json *m = &v->u.arr.items[i], *role = pf_json_get(m, "role"), *content = pf_json_get(m, "content");
        if (m->type != PF_JSON_OBJECT) return bad(c, "messages", "messages[%zu] must be an object", i);
        if (!role || role->type != PF_JSON_STRING) return bad(c, "messages", "messages[%zu] needs a string 'role'", i);
        const char *rn = pf_json_str_eq(role, "developer") ? "system" : role->u.str.s;
        if (strcmp(rn, "system") && strcmp(rn, "user") && strcmp(rn, "assistant") && strcmp(rn, "tool"))
            return bad(c, "messages",
                       "messages[%zu]: role '%.40s' is not supported (system, developer, user, assistant, tool)", i,
                       role->u.str.s);
        const pf_json *calls = !strcmp(rn, "assistant") ? field(m, "tool_calls") : NULL, *id = field(m, "tool_call_id");
        if (!strcmp(rn, "tool") && id && !plain_string(id))
            return bad(c, "messages", "messages[%zu].tool_call_id must be a string", i);
        r->messages[i].role = rn;
        if (calls) {
            if (!get_tool_calls(c, r, i, content && content->type != PF_JSON_NULL ? content : NULL, calls)) return false;
            continue;
        }
        if (!content || content->type == PF_JSON_NULL) return bad(c, "messages", "messages[%zu] needs 'content'", i);
        if (!get_content(c, r, content, &r->messages[i].content)) return false;
    }
    r->n_messages = (int)v->u.arr.n;
    if (!strcmp(r->messages[r->n_messages - 1].role, "assistant"))
        return bad(c, "messages", "the last message must not be the assistant's");
    return true;
}

static bool get_prompt(checker *c, const pf_json *root, sv_request *r) {
    const pf_json *v = field(root, "prompt");
    if (!v) return bad(c, "prompt", "'prompt' is required");
    if (v->type == PF_JSON_ARRAY && v->u.arr.n == 1) v = &v->u.arr.items[0];
    if (!plain_string(v)) return bad(c, "prompt", "'prompt' must be a string (or an array of one string)");
    r->prompt = v->u.str.s;
    r->prompt_len = v->u.str.len;
    return true;
}

/* A schema object: its compact text, compiled once here so a bad one is a 400 naming it. */
static bool take_schema(checker *c, const pf_json *schema, const char *param, sv_request *r) {
    if (schema->type != PF_JSON_OBJECT && schema->type != PF_JSON_BOOL)
        return bad(c, param, "'%s' needs a JSON Schema object", param);
    pf_sbuf b = {0};
    pf_json_compact(&b, schema, c->body, c->body_len);
    char err[PF_ERR_LEN];
    pf_schema *s = NULL;
    if (b.oom || pf_schema_compile(b.p, b.n, &s, err) != PF_SCHEMA_OK) {
        free(b.p);
        return b.oom ? bad(c, param, "out of memory") : bad(c, param, "%.230s", err);
    }
    pf_schema_free(s);
    if (!own(r, b.p)) return bad(c, param, "out of memory");
    r->json_schema = b.p;
    return true;
}

/* response_format (OpenAI) and json_schema (llama-server). */
static bool get_response_format(checker *c, const pf_json *root, sv_request *r) {
    const pf_json *rf = field(root, "response_format"), *js = field(root, "json_schema");
    if (js && !take_schema(c, js, "json_schema", r)) return false;
    if (!rf) return true;
    const pf_json *type = rf->type == PF_JSON_OBJECT ? field(rf, "type") : NULL;
    if (!type || type->type != PF_JSON_STRING)
        return bad(c, "response_format", "'response_format' must be an object with a string 'type'");
    if (pf_json_str_eq(type, "text")) return true;
    if (pf_json_str_eq(type, "json_object")) return r->json_object = !r->json_schema, true;
    if (!pf_json_str_eq(type, "json_schema"))
        return bad(c, "response_format", "response_format type '%.40s' is not supported (text, json_object, json_schema)",
                   type->u.str.s);
    const pf_json *spec = field(rf, "json_schema"), *schema = spec && spec->type == PF_JSON_OBJECT ? field(spec, "schema") : NULL;
    if (!schema) return bad(c, "response_format", "response_format json_schema needs 'json_schema': {'name', 'schema'}");
    return take_schema(c, schema, "response_format", r);
}

/* tools and tool_choice: the tools array read by the library's reader (a 400 names the tool and
 * field), and under required or a named function its constraint compiled here, so parameters the
 * matcher cannot enforce are a 400 before anything runs. */
static bool get_tools(checker *c, const pf_json *root, sv_request *r) {
    const pf_json *tools = field(root, "tools"), *choice = field(root, "tool_choice");
    r->tool_choice = PF_TOOL_AUTO;
    if (choice && plain_string(choice)) {
        static const char *const names[] = {"auto", "none", "required"};
        int k = 0;
        while (k < 3 && strcmp(choice->u.str.s, names[k])) k++;
        if (k == 3) return bad(c, "tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or "
                                                 "{\"type\": \"function\", \"function\": {\"name\": ...}}");
        r->tool_choice = (pf_tool_choice)k;
    } else if (choice) {
        const pf_json *fn = field(choice, "function"), *name = fn ? field(fn, "name") : NULL;
        if (!pf_json_str_eq(field(choice, "type"), "function") || !name || !plain_string(name))
            return bad(c, "tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or "
                                         "{\"type\": \"function\", \"function\": {\"name\": ...}}");
        r->tool_choice = PF_TOOL_NAMED;
        r->tool_name = name->u.str.s;
    }
    bool must = r->tool_choice == PF_TOOL_REQUIRED || r->tool_choice == PF_TOOL_NAMED;
    if (!tools)
        return !must || bad(c, "tool_choice", "'tool_choice' %s needs 'tools'",
                            r->tool_name ? "naming a function" : "\"required\"");
    if (r->kind != SV_CHAT) return bad(c, "tools", "'tools' are for /v1/chat/completions");
    pf_sbuf b = {0};
    pf_json_compact(&b, tools, c->body, c->body_len);
    if (b.oom) free(b.p);
    if (b.oom || !own(r, b.p)) return bad(c, NULL, "out of memory");
    r->tools = b.p;
    char err[PF_ERR_LEN];
    pf_tools t;
    pf_rc rc = pf_tools_parse(b.p, b.n, &t, err);
    pf_schema *s = NULL;
    if (rc == PF_RC_OK && r->tool_name && pf_tools_find(&t, r->tool_name) < 0) {
        pf_tools_free(&t);
        return bad(c, "tool_choice", "'tool_choice' names '%.64s', which is not one of the tools", r->tool_name);
    }
    if (rc == PF_RC_OK && must && (r->json_schema || r->json_object)) {
        pf_tools_free(&t);
        return bad(c, "tool_choice", "'tool_choice' %s cannot be combined with response_format / json_schema",
                   r->tool_name ? "naming a function" : "\"required\"");
    }
    if (rc == PF_RC_OK && must) rc = pf_tools_schema(&t, r->tool_name, &s, err);
    pf_schema_free(s);
    pf_tools_free(&t);
    if (rc != PF_RC_OK) return rc == PF_RC_OOM ? bad(c, NULL, "out of memory") : bad(c, "tools", "%.230s", err);
    return true;
}

static bool check(checker *c, const pf_json *root, sv_request *r) {
    if (root->type != PF_JSON_OBJECT) return bad(c, NULL, "the request body must be a JSON object");
    const pf_json *model = field(root, "model");
    if (model && model->type != PF_JSON_STRING) return bad(c, "model", "'model' must be a string");
    if (!(r->kind == SV_CHAT ? get_messages(c, root, r) : get_prompt(c, root, r))) return false;
    int64_t max_tokens = 0, n = 1, top_k = 0, seed = 0;
    if (!get_int(c, root, "max_tokens", 1, 1 << 30, &max_tokens, NULL)) return false;
    if (r->kind == SV_CHAT && !get_int(c, root, "max_completion_tokens", 1, 1 << 30, &max_tokens, NULL)) return false;
    r->max_tokens = (int)max_tokens;
    if (!get_int(c, root, "n", 1, 1, &n, NULL)) return false;
    if (!get_int(c, root, "top_k", 0, 1 << 30, &top_k, NULL)) return false;
    r->top_k = (int)top_k;
    if (!get_int(c, root, "seed", INT64_MIN, INT64_MAX, &seed, &r->has_seed)) return false;
    r->seed = (uint64_t)seed;
    r->temp = 1.0;
    r->top_p = 1.0;
    if (!get_number(c, root, "temperature", 0, 2, &r->temp) || !get_number(c, root, "top_p", 0, 1, &r->top_p))
        return false;
    if (r->top_p <= 0) return bad(c, "top_p", "'top_p' must be above 0");
    if (!get_bool(c, root, "stream", &r->stream) || !get_bool(c, root, "ignore_eos", &r->ignore_eos)) return false;
    const pf_json *so = field(root, "stream_options");
    if (so && so->type != PF_JSON_OBJECT) return bad(c, "stream_options", "'stream_options' must be an object");
    return get_stop(c, root, r) && get_spec(c, root, r) && get_response_format(c, root, r) && get_tools(c, root, r);
}

bool sv_request_parse(const char *body, size_t len, sv_kind kind, sv_request *r, char err[PF_ERR_LEN],
                      const char **param) {
    memset(r, 0, sizeof *r);
    r->kind = kind;
    *param = NULL;
    char jerr[PF_ERR_LEN];
    if (!(r->doc = pf_json_parse(body, len, jerr))) {
        snprintf(err, PF_ERR_LEN, "the request body is not valid JSON (%.200s)", jerr);
        return false;
    }
    checker c = {err, param, body, len};
    if (check(&c, pf_json_root(r->doc), r)) return true;
    sv_request_free(r);
    return false;
}

void sv_gen_strategy(const sv_request *r, const pf_draft *d, pf_gen_params *p) {
    p->draft = d;
    p->spec = r->has_spec ? r->spec : PF_SPEC_DEFAULT;
    p->block = r->block;
}

void sv_request_free(sv_request *r) {
    for (int i = 0; i < r->n_owned; i++) free(r->owned[i]);
    free(r->owned);
    free(r->messages);
    pf_json_free(r->doc);
    memset(r, 0, sizeof *r);
}
