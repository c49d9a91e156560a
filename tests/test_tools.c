/* Tool calling in the chat template (engine/tools.h): a conversation with tools, calls and tool
 * results rendered against Jinja2's render (python3-jinja2 3.1, tojson as json.dumps) of the real
 * Qwen3 tokenizer_config chat_template with enable_thinking=false; the tools reader's refusals; the
 * <tool_call> reader; and the constraint of tool_choice required / named, whose documents are
 * exactly a call of a listed tool with arguments its parameters accept. */
#include <stdlib.h>
#include <string.h>

#include "engine/chat.h"
#include "engine/tools.h"
#include "grammar/matcher.h"
#include "test.h"

static const char k_tools[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather \\\"now\\\"\\nin a city\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\","
    "\"minimum\":1}},\"required\":[\"city\"]}}},{\"type\":\"function\",\"function\":{\"name\":\"noop\"}}]";

static const char k_tools_system_head[] =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function "
    "signatures within <tools></tools> XML tags:\n<tools>\n";

/* Jinja2's render of the conversation below. */
static const char k_want[] =
    "<|im_start|>system\nS\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are "
    "provided with function signatures within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": "
    "{\"name\": \"get_weather\", \"description\": \"Weather \\\"now\\\"\\nin a city\", \"parameters\": {\"type\": "
    "\"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\", \"minimum\": 1}}, "
    "\"required\": [\"city\"]}}}\n{\"type\": \"function\", \"function\": {\"name\": \"noop\"}}\n</tools>\n\nFor each "
    "function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n"
    "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
    "<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"noop\", \"arguments\": {}}\n</tool_call><|im_end|>\n"
    "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\nok\n</tool_response><|im_end|>\n"
    "<|im_start|>assistant\nIt is sunny.\n<|im_end|>\n<|im_start|>user\nU2<|im_end|>\n<|im_start|>assistant\n<think>\n\n"
    "</think>\n\n";

TEST(tools_render_matches_qwen3_template) {
    char err[PF_ERR_LEN];
    pf_sbuf calls = {0};
    pf_tool_call_put(&calls, "get_weather", "{\"city\": \"Paris\"}");
    pf_sbuf_put(&calls, "\n", 1);
    pf_tool_call_put(&calls, "noop", "{}");
    pf_chat_msg m[7] = {{"system", "S"}, {"user", "U1"}, {"assistant", calls.p}, {"tool", "sunny"}, {"tool", "ok"},
                        {"assistant", "<think>\nr\n</think>\n\nIt is sunny.\n"}, {"user", "U2"}};
    pf_chat_msg *with = NULL;
    char *system = NULL;
    int n = 0;
    CHECK(pf_tools_chat(k_tools, m, 7, &with, &n, &system, err) == PF_RC_OK && n == 7);
    char *r = pf_chat_render(with, n, true, err);
    CHECKF(r && !strcmp(r, k_want), "got %s", r ? r : err);
    free(r);
    free(with);
    free(system);
    /* without a system message one is put first */
    CHECK(pf_tools_chat(k_tools, m + 1, 1, &with, &n, &system, err) == PF_RC_OK && n == 2);
    CHECK(!strcmp(with[0].role, "system") && !strncmp(system, k_tools_system_head, sizeof k_tools_system_head - 1));
    free(with);
    free(system);
    free(calls.p);
}

TEST(tools_reader_refusals) {
    static const struct { const char *json, *needle; } cases[] = {
        {"{}", "'tools' must be an array"},
        {"[]", "'tools' must be an array"},
        {"[{\"type\":\"function\",\"function\":{\"description\":\"x\"}}]", "tools[0].function.name is required"},
        {"[{\"type\":\"function\",\"function\":{\"name\":\"a b\"}}]", "tools[0].function.name must be"},
        {"[{\"type\":\"function\",\"function\":{\"name\":\"a\",\"parameters\":{\"type\":\"string\"}}}]",
         "tools[0].function.parameters must be"},
        {"[{\"type\":\"function\",\"function\":{\"name\":\"a\",\"parameters\":[1]}}]", "tools[0].function.parameters must be"},
        {"[{\"type\":\"function\",\"function\":{\"name\":\"a\"}},{\"type\":\"function\",\"function\":{\"name\":\"a\"}}]",
         "tools[1]: a second function named 'a'"},
        {"[{\"type\":\"code\",\"function\":{\"name\":\"a\"}}]", "tools[0].type"},
        {"[{\"type\":\"function\",\"function\":{\"name\":\"a\"}}", "tools:"},
    };
    char err[PF_ERR_LEN];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pf_tools t;
        pf_rc rc = pf_tools_parse(cases[i].json, strlen(cases[i].json), &t, err);
        CHECKF(rc == PF_RC_ARG && strstr(err, cases[i].needle), "%s: rc %d, '%s'", cases[i].json, rc, err);
        pf_tools_free(&t);
    }
}

/* text's calls as "name(arguments);..." and the content length. */
static void calls_of(const char *text, char *out, size_t n, size_t *content_len) {
    pf_parsed_call *c = NULL;
    int k = 0;
    out[0] = 0;
    if (pf_tool_calls_parse(text, strlen(text), &c, &k, content_len) != PF_RC_OK) {
        snprintf(out, n, "oom");
        return;
    }
    for (int i = 0; i < k; i++) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s(%s);", c[i].name, c[i].arguments);
    }
    pf_tool_calls_free(c, k);
}

#define WHOLE ((size_t)-1) /* no calls: the whole text is content */

TEST(tools_reading_calls) {
    static const struct { const char *text, *calls; size_t content; } cases[] = {
        {"no call", "", WHOLE},
        {"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\":1,\"b\":[true,null]}}\n</tool_call>",
         "f({\"a\": 1, \"b\": [true, null]});", 0},
        {"Let me look.\n\n<tool_call>\n{\"arguments\": {}, \"name\": \"g\"}\n</tool_call>\n<tool_call>{\"name\":\"h\","
         "\"arguments\":{\"x\":\"\\u00e9\"}}</tool_call>\n",
         "g({});h({\"x\": \"\xc3\xa9\"});", 12},
        {"<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call> and more", "", WHOLE},
        {"<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n", "", WHOLE},             /* unterminated */
        {"<tool_call>\n{\"name\": \"f\", \"arguments\": \"{}\"}\n</tool_call>", "", WHOLE}, /* arguments a string */
        {"<tool_call>\n{\"name\": \"\", \"arguments\": {}}\n</tool_call>", "", WHOLE},
        {"<tool_call>\n{\"name\": \"f\" \"arguments\": {}}\n</tool_call>", "", WHOLE},
        {"<tool_call></tool_call>", "", WHOLE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[512];
        size_t content = 0;
        calls_of(cases[i].text, got, sizeof got, &content);
        size_t want = cases[i].content == WHOLE ? strlen(cases[i].text) : cases[i].content;
        CHECKF(!strcmp(got, cases[i].calls) && content == want, "'%s': calls '%s', content %zu",
               cases[i].text, got, content);
    }
}

/* Whether the constraint takes text as a whole document. */
static int takes(const pf_schema *s, const char *text) {
    pf_matcher *m = pf_matcher_new(s);
    int r = m && pf_matcher_push_bytes(m, (const uint8_t *)text, strlen(text)) == 1 && pf_matcher_can_end(m) &&
            pf_matcher_closed(m);
    pf_matcher_free(m);
    return r;
}

TEST(tools_constraint_required_and_named) {
    char err[PF_ERR_LEN];
    pf_tools t;
    static const char tools[] =
        "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\","
        "\"properties\":{\"city\":{\"type\":\"string\"},\"unit\":{\"$ref\":\"#/$defs/unit\"}},\"required\":[\"city\"],"
        "\"additionalProperties\":false,\"$defs\":{\"unit\":{\"enum\":[\"c\",\"f\"]}}}}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"noop\"}}]";
    CHECK(pf_tools_parse(tools, strlen(tools), &t, err) == PF_RC_OK && t.n == 2);
    pf_schema *any = NULL, *named = NULL;
    CHECKF(pf_tools_schema(&t, NULL, &any, err) == PF_RC_OK, "%s", err);
    CHECKF(pf_tools_schema(&t, "noop", &named, err) == PF_RC_OK, "%s", err);
    static const struct { const char *text; int any, named; } cases[] = {
        {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>", 1, 0},
        {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call>", 1, 0},
        {"<tool_call>\n{\"name\": \"noop\", \"arguments\": {}}\n</tool_call>", 1, 1},
        {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"c\"}}\n</tool_call>", 0, 0}, /* required */
        {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P\", \"unit\": \"k\"}}\n</tool_call>", 0, 0},
        {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P\", \"x\": 1}}\n</tool_call>", 0, 0},
        {"<tool_call>\n{\"name\": \"noop\", \"arguments\": {\"a\": 1}}\n</tool_call>", 0, 0},
        {"<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>", 0, 0},
        {"<tool_call>\n{\"arguments\": {}, \"name\": \"noop\"}\n</tool_call>", 0, 0}, /* the template's order */
        {"<tool_call>\n{\"name\": \"noop\", \"arguments\": {}}\n</tool_call>\n", 0, 0},
        {"{\"name\": \"noop\", \"arguments\": {}}", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECKF(takes(any, cases[i].text) == cases[i].any, "required, '%s'", cases[i].text);
        CHECKF(takes(named, cases[i].text) == cases[i].named, "named noop, '%s'", cases[i].text);
    }
    pf_schema_free(any);
    pf_schema_free(named);
    CHECK(pf_tools_schema(&t, "nope", &any, err) == PF_RC_ARG && strstr(err, "'nope'"));
    pf_tools_free(&t);
    /* parameters the matcher cannot enforce: a 400 naming the tool and the keyword's path */
    static const char bad[] = "[{\"type\":\"function\",\"function\":{\"name\":\"a\"}},{\"type\":\"function\",\"function\":"
                              "{\"name\":\"b\",\"parameters\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
                              "\"array\",\"prefixItems\":[{\"const\":3}]}}}}}]";
    CHECK(pf_tools_parse(bad, strlen(bad), &t, err) == PF_RC_OK);
    CHECK(pf_tools_schema(&t, NULL, &any, err) == PF_RC_ARG && strstr(err, "tools[1].function.parameters") &&
          strstr(err, "prefixItems") && strstr(err, "/properties/n"));
    CHECK(pf_tools_schema(&t, "a", &any, err) == PF_RC_OK); /* only the named tool's parameters count */
    pf_schema_free(any);
    pf_tools_free(&t);
}
