#include "engine/tools.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/errf.h"
#include "formats/json.h"
#include "formats/json_write.h"


static pf_rc oom(char err[PF_ERR_LEN]) {
    snprintf(err, PF_ERR_LEN, "out of memory");
    return PF_RC_OOM;
}

static bool name_ok(const pf_json *v) {
    if (!v || v->type != PF_JSON_STRING || v->u.str.len < 1 || v->u.str.len > 64) return false;
    for (size_t i = 0; i < v->u.str.len; i++) {
        unsigned char c = (unsigned char)v->u.str.s[i];
        if (!isalnum(c) && c != '_' && c != '-') return false;
    }
    return true;
}

/* malloc'd text of a buffer, NULL when it ran out of memory. */
static char *take(pf_sbuf *b) {
    if (b->oom || !b->p) {
        free(b->p);
        return b->oom ? NULL : strdup("");
    }
    return b->p;
}

static const char k_no_params[] = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}";

static pf_rc one_tool(const pf_json *v, int i, const char *src, size_t len, pf_tools *t, char err[PF_ERR_LEN]) {
    const pf_json *type = pf_json_get(v, "type"), *fn = pf_json_get(v, "function");
    if (v->type != PF_JSON_OBJECT) return pf_err_rc(err, PF_RC_ARG, "tools[%d] must be an object", i);
    if (!pf_json_str_eq(type, "function")) return pf_err_rc(err, PF_RC_ARG, "tools[%d].type must be \"function\"", i);
    if (!fn || fn->type != PF_JSON_OBJECT) return pf_err_rc(err, PF_RC_ARG, "tools[%d].function must be an object", i);
    const pf_json *name = pf_json_get(fn, "name"), *desc = pf_json_get(fn, "description"),
                  *params = pf_json_get(fn, "parameters");
    if (!name) return pf_err_rc(err, PF_RC_ARG, "tools[%d].function.name is required", i);
    if (!name_ok(name))
        return pf_err_rc(err, PF_RC_ARG, "tools[%d].function.name must be 1 to 64 letters, digits, '_' or '-'", i);
    if (desc && desc->type != PF_JSON_STRING && desc->type != PF_JSON_NULL)
        return pf_err_rc(err, PF_RC_ARG, "tools[%d].function.description must be a string", i);
    if (params && params->type == PF_JSON_NULL) params = NULL;
    if (params) {
        const pf_json *pt = pf_json_get(params, "type");
        if (params->type != PF_JSON_OBJECT || (pt && !pf_json_str_eq(pt, "object")))
            return pf_err_rc(err, PF_RC_ARG,
                             "tools[%d].function.parameters must be a JSON Schema of an object ({\"type\": \"object\", ...})", i);
    }
    for (int k = 0; k < t->n; k++)
        if (!strcmp(t->name[k], name->u.str.s))
            return pf_err_rc(err, PF_RC_ARG, "tools[%d]: a second function named '%s'", i, t->name[k]);
    pf_sbuf text = {0}, ps = {0};
    pf_json_spaced(&text, v, src, len);
    if (params) pf_json_compact(&ps, params, src, len);
    else pf_sbuf_put(&ps, k_no_params, sizeof k_no_params - 1);
    t->name[t->n] = strdup(name->u.str.s);
    t->text[t->n] = take(&text);
    t->params[t->n] = take(&ps);
    t->n++;
    return t->name[t->n - 1] && t->text[t->n - 1] && t->params[t->n - 1] ? PF_RC_OK : oom(err);
}

pf_rc pf_tools_parse(const char *json, size_t len, pf_tools *t, char err[PF_ERR_LEN]) {
    memset(t, 0, sizeof *t);
    char why[PF_ERR_LEN];
    pf_json_doc *d = pf_json_parse(json, len, why);
    if (!d) return pf_err_rc(err, PF_RC_ARG, "tools: %.200s", why);
    const pf_json *root = pf_json_root(d);
    pf_rc rc = PF_RC_OK;
    if (root->type != PF_JSON_ARRAY || !root->u.arr.n || root->u.arr.n > 128) {
        rc = pf_err_rc(err, PF_RC_ARG, "'tools' must be an array of 1 to 128 tools");
    } else {
        size_t n = root->u.arr.n;
        t->name = calloc(n, sizeof *t->name);
        t->text = calloc(n, sizeof *t->text);
        t->params = calloc(n, sizeof *t->params);
        if (!t->name || !t->text || !t->params) rc = oom(err);
        for (size_t i = 0; i < n && rc == PF_RC_OK; i++) rc = one_tool(&root->u.arr.items[i], (int)i, json, len, t, err);
    }
    pf_json_free(d);
    return rc;
}

void pf_tools_free(pf_tools *t) {
    for (int i = 0; t->name && i < t->n; i++) {
        free(t->name[i]);
        free(t->text[i]);
        free(t->params[i]);
    }
    free(t->name);
    free(t->text);
    free(t->params);
    memset(t, 0, sizeof *t);
}

int pf_tools_find(const pf_tools *t, const char *name) {
    for (int i = 0; name && i < t->n; i++)
        if (!strcmp(t->name[i], name)) return i;
    return -1;
}

char *pf_tools_system(const pf_tools *t, const char *system) {
    pf_sbuf b = {0};
    if (system) {
        pf_sbuf_put(&b, system, strlen(system));
        pf_sbuf_put(&b, "\n\n", 2);
    }
    static const char head[] = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                               "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
    static const char tail[] = "\n</tools>\n\nFor each function call, return a json object with function name and "
                               "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
                               "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
    pf_sbuf_put(&b, head, sizeof head - 1);
    for (int i = 0; i < t->n; i++) {
        pf_sbuf_put(&b, "\n", 1);
        pf_sbuf_put(&b, t->text[i], strlen(t->text[i]));
    }
    pf_sbuf_put(&b, tail, sizeof tail - 1);
    return take(&b);
}

pf_rc pf_tools_chat(const char *tools_json, const pf_chat_msg *messages, int n, pf_chat_msg **out, int *n_out,
                    char **system, char err[PF_ERR_LEN]) {
    *out = NULL;
    *system = NULL;
    pf_tools t;
    pf_rc rc = pf_tools_parse(tools_json, strlen(tools_json), &t, err);
    bool has_system = n > 0 && !strcmp(messages[0].role, "system");
    if (rc == PF_RC_OK && !(*system = pf_tools_system(&t, has_system ? messages[0].content : NULL))) rc = oom(err);
    if (rc == PF_RC_OK && !(*out = malloc((size_t)(n + 1) * sizeof **out))) rc = oom(err);
    pf_tools_free(&t);
    if (rc != PF_RC_OK) {
        free(*system);
        *system = NULL;
        return rc;
    }
    (*out)[0] = (pf_chat_msg){"system", *system};
    memcpy(*out + 1, messages + has_system, (size_t)(n - has_system) * sizeof **out);
    *n_out = n + !has_system;
    return PF_RC_OK;
}

void pf_tool_call_put(pf_sbuf *b, const char *name, const char *arguments) {
    static const char open[] = "<tool_call>\n{\"name\": \"", mid[] = "\", \"arguments\": ", close[] = "}\n</tool_call>";
    pf_sbuf_put(b, open, sizeof open - 1);
    pf_sbuf_put(b, name, strlen(name));
    pf_sbuf_put(b, mid, sizeof mid - 1);
    pf_sbuf_put(b, arguments, strlen(arguments));
    pf_sbuf_put(b, close, sizeof close - 1);
}

/* ---- the constraint ---- */

/* v compact, each "$ref": "#..." pointing below `base` (the place v takes in the combined schema). */
static void put_rebased(pf_sbuf *b, const pf_json *v, const char *src, size_t len, const char *base) {
    if (v->type == PF_JSON_ARRAY) {
        pf_sbuf_put(b, "[", 1);
        for (size_t i = 0; i < v->u.arr.n; i++) {
            if (i) pf_sbuf_put(b, ",", 1);
            put_rebased(b, &v->u.arr.items[i], src, len, base);
        }
        pf_sbuf_put(b, "]", 1);
        return;
    }
    if (v->type != PF_JSON_OBJECT) {
        pf_json_compact(b, v, src, len);
        return;
    }
    pf_sbuf_put(b, "{", 1);
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const pf_json_member *m = &v->u.obj.members[i];
        if (i) pf_sbuf_put(b, ",", 1);
        pf_json_quote(b, m->key, m->key_len);
        pf_sbuf_put(b, ":", 1);
        if (!strcmp(m->key, "$ref") && m->val.type == PF_JSON_STRING && m->val.u.str.s[0] == '#') {
            pf_sbuf r = {0};
            pf_sbuf_put(&r, base, strlen(base));
            pf_sbuf_put(&r, m->val.u.str.s + 1, m->val.u.str.len - 1);
            pf_json_quote(b, r.p ? r.p : "", r.n);
            if (r.oom) b->oom = true;
            free(r.p);
        } else {
            put_rebased(b, &m->val, src, len, base);
        }
    }
    pf_sbuf_put(b, "}", 1);
}

/* Each tool's parameters (the one named pick, or all when pick < 0) compiled alone, so an error
 * names the tool. */
static pf_rc check_each(const pf_tools *t, int pick, char err[PF_ERR_LEN]) {
    char why[PF_ERR_LEN];
    for (int i = 0; i < t->n; i++) {
        if (pick >= 0 && i != pick) continue;
        pf_schema *s = NULL;
        pf_schema_status st = pf_schema_compile(t->params[i], strlen(t->params[i]), &s, why);
        pf_schema_free(s);
        if (st == PF_SCHEMA_NO_MEMORY) return oom(err);
        if (st != PF_SCHEMA_OK) return pf_err_rc(err, PF_RC_ARG, "tools[%d].function.parameters: %.200s", i, why);
    }
    return PF_RC_OK;
}

/* One document holding the tools' parameters as properties f0, f1, ... (their $refs moved below
 * them) into *b. */
static pf_rc combined_doc(const pf_tools *t, int pick, pf_sbuf *b, char err[PF_ERR_LEN]) {
    char why[PF_ERR_LEN];
    pf_sbuf_put(b, "{\"type\":\"object\",\"properties\":{", 31);
    for (int i = 0, first = 1; i < t->n; i++) {
        if (pick >= 0 && i != pick) continue;
        char key[32], base[48];
        snprintf(key, sizeof key, "%s\"f%d\":", first ? "" : ",", i);
        snprintf(base, sizeof base, "#/properties/f%d", i);
        first = 0;
        pf_sbuf_put(b, key, strlen(key));
        pf_json_doc *d = pf_json_parse(t->params[i], strlen(t->params[i]), why);
        if (!d) return oom(err); /* it compiled in check_each, so it parses */
        put_rebased(b, pf_json_root(d), t->params[i], strlen(t->params[i]), base);
        pf_json_free(d);
    }
    pf_sbuf_put(b, "}}", 2);
    return b->oom ? oom(err) : PF_RC_OK;
}

/* Each tool's property of s wrapped in the call's literal text: `<tool_call>\n{"name": "NAME",
 * "arguments": ` before it, `}\n</tool_call>` after. */
static pf_schema_status add_wraps(pf_schema *s, const pf_tools *t, int pick, char why[PF_ERR_LEN]) {
    pf_schema_status st = PF_SCHEMA_OK;
    for (int i = 0; i < t->n && st == PF_SCHEMA_OK; i++) {
        if (pick >= 0 && i != pick) continue;
        char key[16];
        snprintf(key, sizeof key, "f%d", i);
        pf_sbuf pre = {0};
        pf_sbuf_put(&pre, "<tool_call>\n{\"name\": \"", 22);
        pf_sbuf_put(&pre, t->name[i], strlen(t->name[i]));
        pf_sbuf_put(&pre, "\", \"arguments\": ", 16);
        st = pre.oom ? PF_SCHEMA_NO_MEMORY
                     : pf_schema_add_wrap(s, pre.p, pf_schema_property(s, s->root, key), "}\n</tool_call>", why);
        free(pre.p);
    }
    return st;
}

pf_rc pf_tools_schema(const pf_tools *t, const char *only, pf_schema **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    int pick = only ? pf_tools_find(t, only) : -1;
    if (only && pick < 0) return pf_err_rc(err, PF_RC_ARG, "tool_choice names '%.64s', which is not in tools", only);
    if (!only && t->n > PF_SCHEMA_MAX_WRAPS)
        return pf_err_rc(err, PF_RC_ARG, "tool_choice \"required\" takes at most %d tools (name one instead)", PF_SCHEMA_MAX_WRAPS);
    pf_rc rc = check_each(t, pick, err);
    if (rc != PF_RC_OK) return rc;
    pf_sbuf b = {0};
    if ((rc = combined_doc(t, pick, &b, err)) != PF_RC_OK) {
        free(b.p);
        return rc;
    }
    char why[PF_ERR_LEN];
    pf_schema *s = NULL;
    pf_schema_status st = pf_schema_compile(b.p, b.n, &s, why);
    free(b.p);
    if (st == PF_SCHEMA_OK) st = add_wraps(s, t, pick, why);
    if (st != PF_SCHEMA_OK) {
        pf_schema_free(s);
        return st == PF_SCHEMA_NO_MEMORY ? oom(err) : pf_err_rc(err, PF_RC_ARG, "tools: %.200s", why);
    }
    *out = s;
    return PF_RC_OK;
}

/* ---- reading calls back ---- */

static const char k_open[] = "<tool_call>", k_close[] = "</tool_call>";

static bool space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

static const char *find(const char *s, const char *end, const char *needle) {
    size_t k = strlen(needle);
    for (const char *p = s; p + k <= end; p++)
        if (!memcmp(p, needle, k)) return p;
    return NULL;
}

/* One block's inside [s, e) into c; false when it is no call. */
static bool read_call(const char *s, const char *e, pf_parsed_call *c, bool *no_mem) {
    char why[PF_ERR_LEN];
    pf_json_doc *d = pf_json_parse(s, (size_t)(e - s), why);
    if (!d) return false;
    const pf_json *root = pf_json_root(d), *name = pf_json_get(root, "name"), *args = pf_json_get(root, "arguments");
    bool ok = root->type == PF_JSON_OBJECT && name && name->type == PF_JSON_STRING && name->u.str.len &&
              strlen(name->u.str.s) == name->u.str.len && args && args->type == PF_JSON_OBJECT;
    if (ok) {
        pf_sbuf b = {0};
        pf_json_spaced(&b, args, s, (size_t)(e - s));
        c->name = strdup(name->u.str.s);
        c->arguments = take(&b);
        if (!c->name || !c->arguments) *no_mem = true;
    }
    pf_json_free(d);
    return ok;
}

pf_rc pf_tool_calls_parse(const char *text, size_t len, pf_parsed_call **calls, int *n_calls, size_t *content_len) {
    *calls = NULL;
    *n_calls = 0;
    *content_len = len;
    const char *end = text + len, *first = find(text, end, k_open);
    if (!first) return PF_RC_OK;
    pf_parsed_call *c = NULL;
    int n = 0;
    bool no_mem = false, ok = true;
    for (const char *p = first; ok && p < end;) {
        if (space(*p)) {
            p++;
            continue;
        }
        const char *close = len - (size_t)(p - text) >= sizeof k_open - 1 && !memcmp(p, k_open, sizeof k_open - 1)
                                ? find(p + sizeof k_open - 1, end, k_close)
                                : NULL;
        pf_parsed_call *g = close ? realloc(c, (size_t)(n + 1) * sizeof *c) : NULL;
        if (close && !g) no_mem = true;
        if (!g) {
            ok = false;
            break;
        }
        c = g;
        c[n] = (pf_parsed_call){0};
        ok = read_call(p + sizeof k_open - 1, close, &c[n], &no_mem);
        if (ok || c[n].name || c[n].arguments) n++;
        if (no_mem) ok = false;
        p = close + sizeof k_close - 1;
    }
    if (!ok) {
        pf_tool_calls_free(c, n);
        return no_mem ? PF_RC_OOM : PF_RC_OK;
    }
    while (first > text && space(first[-1])) first--;
    *calls = c;
    *n_calls = n;
    *content_len = (size_t)(first - text);
    return PF_RC_OK;
}

void pf_tool_calls_free(pf_parsed_call *calls, int n) {
    for (int i = 0; calls && i < n; i++) {
        free(calls[i].name);
        free(calls[i].arguments);
    }
    free(calls);
}
