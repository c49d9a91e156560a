/* libFuzzer target for tool calling's readers (engine/tools.h). The input's first byte picks one:
 * even, the rest is a reply whose <tool_call> blocks pf_tool_calls_parse reads: the content length
 * is within the text, every call has a non-empty name and arguments that parse as a JSON object, and
 * reading the calls' own text (pf_tool_call_put) gives the same calls back; odd, the rest is a tools
 * array for pf_tools_parse (refused with one line, or each tool's text parses as JSON), and when it
 * reads, the constraint of tool_choice required compiles or is refused with one line. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tools.h"
#include "formats/json.h"

static void fail(const char *what) {
    fprintf(stderr, "fuzz_tools: %s\n", what);
    abort();
}

static void one_line(const char *err) {
    if (!err[0] || strchr(err, '\n')) fail("bad error message");
}

static bool json_object(const char *s) {
    char err[PF_ERR_LEN];
    pf_json_doc *d = pf_json_parse(s, strlen(s), err);
    bool ok = d && pf_json_root(d)->type == PF_JSON_OBJECT;
    pf_json_free(d);
    return ok;
}

/* A call whose written text reads back as itself: a name of the tools' rule, arguments without a
 * block's markers (a JSON escape such as <\/tool_call> reads back as the marker itself). */
static bool eligible(const pf_parsed_call *c) {
    if (strspn(c->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != strlen(c->name)) return false;
    return !strstr(c->arguments, "<tool_call>") && !strstr(c->arguments, "</tool_call>");
}

static void reply(const char *text, size_t n) {
    pf_parsed_call *c = NULL;
    int k = 0;
    size_t content = 0;
    if (pf_tool_calls_parse(text, n, &c, &k, &content) != PF_RC_OK) return; /* out of memory only */
    if (content > n) fail("content past the text");
    pf_sbuf b = {0};
    for (int i = 0; i < k; i++) {
        if (!c[i].name || !c[i].name[0] || !json_object(c[i].arguments)) fail("a call without name or object arguments");
        if (!eligible(&c[i])) continue;
        if (b.n) pf_sbuf_put(&b, "\n", 1);
        pf_tool_call_put(&b, c[i].name, c[i].arguments);
    }
    if (b.p && !b.oom) { /* the calls written out read back as they were */
        pf_parsed_call *d = NULL;
        int m = 0;
        size_t content2;
        if (pf_tool_calls_parse(b.p, b.n, &d, &m, &content2) == PF_RC_OK) {
            int want = 0;
            for (int i = 0; i < k; i++) want += eligible(&c[i]);
            if (content2 != 0 || m != want) fail("written calls do not read back");
            for (int i = 0, j = 0; i < k && j < m; i++) {
                if (!eligible(&c[i])) continue;
                if (strcmp(c[i].name, d[j].name) || strcmp(c[i].arguments, d[j].arguments)) fail("round trip differs");
                j++;
            }
            pf_tool_calls_free(d, m);
        }
    }
    free(b.p);
    pf_tool_calls_free(c, k);
}

static void tools(const char *json, size_t n) {
    char err[PF_ERR_LEN] = "";
    pf_tools t;
    pf_rc rc = pf_tools_parse(json, n, &t, err);
    if (rc == PF_RC_ARG) one_line(err);
    if (rc == PF_RC_OK) {
        for (int i = 0; i < t.n; i++)
            if (!json_object(t.text[i]) || !json_object(t.params[i])) fail("a tool's text is no JSON object");
        pf_schema *s = NULL;
        err[0] = 0;
        rc = pf_tools_schema(&t, NULL, &s, err);
        if (rc == PF_RC_ARG) one_line(err);
        if (rc == PF_RC_OK && !s) fail("no schema");
        pf_schema_free(s);
    }
    pf_tools_free(&t);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n) {
    if (n < 1 || n > 65536) return 0;
    char *s = malloc(n);
    if (!s) return 0;
    memcpy(s, data + 1, n - 1);
    s[n - 1] = 0;
    if (data[0] & 1) tools(s, n - 1);
    else reply(s, n - 1);
    free(s);
    return 0;
}
