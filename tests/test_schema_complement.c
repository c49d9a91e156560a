/* `not` and overlapping `oneOf` through the complement of each keyword (grammar/schema_not.c): each
 * schema compiles, takes and refuses the documents listed as the independent validator does, and
 * every document a random walk of its masks writes validates. */
#include <string.h>

#include "schema_check.h"
#include "test.h"

typedef struct {
    const char *doc;
    int ok;
} doc;

/* A walk of random allowed tokens to a complete document, which must validate; 0 when the walk
 * stopped before a document ended. */
static int walk_validates(schema_fx *f, const char *schema, uint64_t *seed) {
    char text[4096];
    size_t len = 0;
    pf_matcher_reset(f->m);
    for (int step = 0; step < 400; step++) {
        pf_token_mask(f->tm, f->cache, f->m, f->bits);
        int32_t pick[256], n = 0;
        for (int32_t id = 0; id < f->v.n && n < 256; id++)
            if (pf_mask_has(f->bits, id) && (id != f->v.end || step > 4)) pick[n++] = id;
        if (!n) return pf_matcher_can_end(f->m) ? 1 : -1;
        int32_t id = pick[schema_rand(seed) % (uint64_t)n];
        if (id == f->v.end || len + f->v.lens[id] >= sizeof text) break;
        if (pf_matcher_push_bytes(f->m, f->v.bytes[id], f->v.lens[id]) != 1) return -1;
        memcpy(text + len, f->v.bytes[id], f->v.lens[id]);
        len += f->v.lens[id];
        if (pf_matcher_closed(f->m)) break;
    }
    if (!pf_matcher_can_end(f->m)) return 0;
    if (pf_schema_valid_text(schema, text, len)) return 1;
    pf_test_failf(__FILE__, __LINE__, "schema %s: walked to '%.*s', which does not validate", schema, (int)len, text);
    return -1;
}

/* validator: the validator (which reads no `pattern`) must agree too. */
static void check_docs(const char *schema, const doc *docs, int n, int validator) {
    schema_fx f;
    if (schema_fx_open(&f, false, schema) < 0) {
        pf_test_failf(__FILE__, __LINE__, "schema %s does not compile", schema);
        schema_fx_close(&f);
        return;
    }
    for (int i = 0; i < n; i++) {
        pf_matcher_reset(f.m);
        int got = pf_matcher_push_bytes(f.m, (const uint8_t *)docs[i].doc, strlen(docs[i].doc)) == 1 && pf_matcher_can_end(f.m);
        int valid = validator ? pf_schema_valid_text(schema, docs[i].doc, strlen(docs[i].doc)) : docs[i].ok;
        if (got != docs[i].ok || valid != docs[i].ok)
            pf_test_failf(__FILE__, __LINE__, "schema %s: '%s' %s, the validator %s it", schema, docs[i].doc,
                          got ? "accepted" : "refused", valid ? "takes" : "refuses");
    }
    uint64_t seed = 7;
    for (int w = 0; w < 12 && validator; w++)
        if (walk_validates(&f, schema, &seed) < 0) {
            pf_test_failf(__FILE__, __LINE__, "schema %s: a random walk failed", schema);
            break;
        }
    schema_fx_close(&f);
}

#define CHECK_DOCS(schema, docs) check_docs((schema), (docs), (int)(sizeof(docs) / sizeof(docs)[0]), 1)
#define CHECK_DOCS_NO_PATTERN_CHECK(schema, docs) check_docs((schema), (docs), (int)(sizeof(docs) / sizeof(docs)[0]), 0)

/* not of a schema of several keywords: not A or not B, each keyword's complement within its type. */
TEST(schema_not_keywords) {
    static const doc str[] = {{"1", 1}, {"\"a\"", 1}, {"\"ab\"", 0}, {"null", 1}};
    CHECK_DOCS("{\"not\":{\"type\":\"string\",\"minLength\":2}}", str);
    static const doc lits[] = {{"false", 1}, {"true", 0}, {"null", 0}, {"1", 1}};
    CHECK_DOCS("{\"not\":{\"enum\":[true,null]}}", lits);
    /* a non-object meets properties and required, so never their not */
    static const doc obj[] = {{"{}", 1}, {"{\"a\":1}", 1}, {"{\"a\":\"x\"}", 0}, {"\"s\"", 0}, {"{\"b\":\"x\"}", 1}};
    CHECK_DOCS("{\"not\":{\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"]}}", obj);
    static const doc num[] = {{"\"x\"", 0}, {"2", 1}, {"2.5", 1}, {"3", 0}, {"7", 0}};
    CHECK_DOCS("{\"not\":{\"minimum\":3}}", num);
    static const doc arr[] = {{"[]", 1}, {"[1]", 1}, {"[1,2]", 0}};
    CHECK_DOCS("{\"type\":\"array\",\"not\":{\"minItems\":2}}", arr);
    static const doc twice[] = {{"\"s\"", 1}, {"1", 0}, {"{}", 0}};
    CHECK_DOCS("{\"not\":{\"not\":{\"type\":\"string\"}}}", twice);
    static const doc excl[] = {{"5", 1}, {"4", 0}, {"6", 0}, {"5.5", 0}};
    CHECK_DOCS("{\"type\":\"integer\",\"minimum\":4,\"maximum\":6,\"not\":{\"anyOf\":[{\"maximum\":4},"
               "{\"minimum\":6,\"exclusiveMinimum\":false}]}}", excl);
    schema_expect_error("{\"not\":{\"format\":\"email\"}}", "keyword 'not' is not supported over 'format'");
    schema_expect_error("{\"not\":{\"enum\":[\"a\",1]}}", "keyword 'not' is not supported over 'enum' of strings");
    schema_expect_error("{\"not\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}", "keyword 'not' is not supported over 'items'");
}

/* oneOf whose branches overlap: each branch with the others' complements merged in. */
TEST(schema_one_of_overlapping_keywords) {
    static const char keys[] = "{\"type\":\"object\",\"oneOf\":[{\"properties\":{\"error\":{\"type\":\"string\"}},"
                               "\"required\":[\"error\"]},{\"properties\":{\"ok\":{\"type\":\"boolean\"}},\"required\":[\"ok\"]}]}";
    static const doc keys_docs[] = {{"{\"error\":\"x\"}", 1}, {"{\"ok\":true}", 1}, {"{\"error\":\"x\",\"ok\":true}", 0},
                                    {"{\"error\":\"x\",\"ok\":1}", 1}, {"{\"error\":1,\"ok\":false}", 1}, {"{}", 0}};
    CHECK_DOCS(keys, keys_docs);
    static const doc len[] = {{"\"abcd\"", 1}, {"\"abc\"", 0}, {"\"\"", 0}};
    CHECK_DOCS("{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"string\",\"maxLength\":3}]}", len);
    static const doc num[] = {{"3", 1}, {"5", 0}, {"10", 0}, {"11", 1}, {"-1", 0}};
    CHECK_DOCS("{\"type\":\"integer\",\"oneOf\":[{\"minimum\":0,\"maximum\":10},{\"minimum\":5}]}", num);
    /* a string enum whose values no string of the pattern spells: the pattern branch as it is */
    static const doc color[] = {{"\"red\"", 1}, {"\"#00ff00\"", 1}, {"\"green\"", 0}, {"\"#00ff0\"", 0}};
    CHECK_DOCS_NO_PATTERN_CHECK("{\"type\":\"string\",\"oneOf\":[{\"enum\":[\"red\",\"blue\"]},{\"pattern\":\"^#[0-9a-f]{6}$\"}]}", color);
    static const doc longer[] = {{"\"red\"", 1}, {"\"green\"", 1}, {"\"re\"", 0}, {"\"redd\"", 1}};
    CHECK_DOCS("{\"type\":\"string\",\"oneOf\":[{\"enum\":[\"red\",\"tan\"]},{\"minLength\":4}]}", longer);
    static const doc props[] = {{"{\"a\":1}", 1}, {"{\"a\":1,\"b\":2}", 0}, {"{\"b\":1,\"c\":2}", 1}, {"{\"b\":1}", 0}};
    CHECK_DOCS("{\"oneOf\":[{\"required\":[\"a\"]},{\"minProperties\":2}]}", props);
    /* closed objects over different keys share only {}; arrays of disjoint items only [] */
    static const doc closed[] = {{"{}", 0}, {"{\"foo\":\"a\"}", 1}, {"{\"bar\":\"b\"}", 1}, {"{\"foo\":1}", 0}};
    CHECK_DOCS("{\"oneOf\":[{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"foo\":{\"type\":"
               "\"string\"}}},{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"bar\":{}}}]}", closed);
    static const doc items[] = {{"[]", 0}, {"[1]", 1}, {"[\"a\"]", 1}, {"[1,\"a\"]", 0}};
    CHECK_DOCS("{\"oneOf\":[{\"type\":\"array\",\"items\":{\"type\":\"number\"}},{\"type\":\"array\",\"items\":"
               "{\"type\":\"string\"}}]}", items);
    /* an enum of strings against a pattern branch: the values it does not match, and the pattern's
     * strings of printable ASCII that are not values */
    static const doc en[] = {{"\"b\"", 1}, {"\"a\"", 0}, {"\"ab\"", 1}, {"\"c\"", 0}};
    CHECK_DOCS_NO_PATTERN_CHECK("{\"oneOf\":[{\"enum\":[\"a\",\"b\"]},{\"type\":\"string\",\"pattern\":\"^a\"}]}", en);
    schema_expect_error("{\"oneOf\":[{\"enum\":[\"a\",1]},{\"type\":[\"string\",\"integer\"],\"maxLength\":3}]}",
                        "excluded: keyword 'not' is not supported over 'enum' of strings");
}

/* dependencies' schema form (and dependentSchemas): the key absent, or present and the schema met. */
TEST(schema_dependencies_schema_form) {
    static const doc dep[] = {{"{}", 1}, {"{\"a\":1}", 0}, {"{\"a\":1,\"b\":2}", 0}, {"{\"a\":1,\"b\":3}", 1}, {"{\"b\":1}", 1},
                              {"{\"c\":1,\"a\":1,\"b\":5}", 1}, {"{\"c\":1}", 0}};
    CHECK_DOCS("{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{\"type\":\"integer\"},\"c\":{}},\"dependencies\":"
               "{\"a\":{\"properties\":{\"b\":{\"minimum\":3}},\"required\":[\"b\"]},\"c\":[\"a\"]}}", dep);
    static const doc typed[] = {{"\"s\"", 1}, {"{\"a\":1,\"b\":2}", 1}, {"{\"a\":1,\"b\":2,\"c\":3}", 0}, {"{\"a\":1}", 0}};
    CHECK_DOCS("{\"type\":[\"object\",\"string\"],\"dependentSchemas\":{\"a\":{\"required\":[\"b\"],\"maxProperties\":2}}}", typed);
    schema_expect_error("{\"dependentSchemas\":[]}", "keyword 'dependentSchemas' is not supported in this form");
}
