/* `pattern`, `format` and `patternProperties` through the schema compiler and the matcher:
 * documents accepted and refused (hand-written from the keywords' meaning), token masks inside a
 * pattern-constrained string, the errors, and random walks through the masks whose documents an
 * independent validator checks (Python's jsonschema with its format checker, where installed),
 * oneOf with overlapping branches and dependencies among them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/matcher.h"
#include "grammar/schema.h"
#include "grammar/token_mask.h"
#include "schema_check.h"
#include "test.h"
#include "util.h"

/* doc is a complete document of schema: 1, 0, or -1 when the schema does not compile. */
static int doc_ok(const char *schema, const char *doc) {
    char err[PF_ERR_LEN];
    pf_schema *s;
    if (pf_schema_compile(schema, strlen(schema), &s, err) != PF_SCHEMA_OK) return fprintf(stderr, "%s\n", err), -1;
    pf_matcher *m = pf_matcher_new(s);
    int ok = m && pf_matcher_push_bytes(m, (const uint8_t *)doc, strlen(doc)) == 1 && pf_matcher_can_end(m);
    pf_matcher_free(m);
    pf_schema_free(s);
    return ok;
}

typedef struct {
    const char *schema, *doc;
    int want;
} pat_case;

#define S_ZIP "{\"type\":\"string\",\"pattern\":\"^[0-9]{5}(-[0-9]{4})?$\"}"
#define S_LINES "{\"type\":\"string\",\"pattern\":\"^[a-z\\\\n\\\"]+$\",\"maxLength\":4}"
#define S_PP                                                                                                  \
    "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"},\"x-id\":{\"maximum\":5}},"        \
    "\"patternProperties\":{\"^x-\":{\"type\":\"integer\"},\"^s_\":{\"type\":\"string\"}},\"required\":[\"id\"]," \
    "\"additionalProperties\":false}"
#define S_MAP "{\"type\":\"object\",\"patternProperties\":{\"^[0-9]+$\":{\"type\":\"boolean\"}},\"additionalProperties\":false}"

TEST(grammar_pattern_docs) {
    static const pat_case cases[] = {
        {S_ZIP, "\"12345\"", 1}, {S_ZIP, "\"12345-6789\"", 1}, {S_ZIP, "\"1234\"", 0}, {S_ZIP, "\"12345-678\"", 0},
        {S_ZIP, "\"a12345\"", 0}, {S_ZIP, "12345", 0},
        /* unanchored: anywhere in the string */
        {"{\"type\":\"string\",\"pattern\":\"ab\"}", "\"xxaby\"", 1}, {"{\"type\":\"string\",\"pattern\":\"ab\"}", "\"a b\"", 0},
        /* the escapes JSON requires are decoded for the pattern; others are not written */
        {S_LINES, "\"a\\nb\"", 1}, {S_LINES, "\"a\\\"\"", 1}, {S_LINES, "\"a\\u000ab\"", 1}, {S_LINES, "\"a\\tb\"", 0},
        {S_LINES, "\"\\u0061\"", 0}, {S_LINES, "\"abcde\"", 0}, {S_LINES, "\"A\"", 0},
        /* format */
        {"{\"format\":\"date\"}", "\"2024-02-29\"", 1}, {"{\"format\":\"date\"}", "\"2023-02-29\"", 0},
        {"{\"type\":[\"string\",\"null\"],\"format\":\"uuid\"}", "null", 1},
        {"{\"type\":\"string\",\"format\":\"ipv4\",\"pattern\":\"^10\\\\.\"}", "\"10.0.0.1\"", 1},
        {"{\"type\":\"string\",\"format\":\"ipv4\",\"pattern\":\"^10\\\\.\"}", "\"11.0.0.1\"", 0},
        {"{\"type\":\"string\",\"format\":\"int32\"}", "\"anything\"", 1}, /* no such format: an annotation */
        {"{\"type\":\"integer\",\"format\":\"date\"}", "7", 1},            /* a string format on an integer */
        /* patternProperties: a listed key takes its schema and every pattern's it matches */
        {S_PP, "{\"id\":1,\"x-a\":2,\"s_b\":\"s\"}", 1}, {S_PP, "{\"id\":1,\"x-a\":\"s\"}", 0},
        {S_PP, "{\"id\":1,\"s_b\":2}", 0}, {S_PP, "{\"id\":1,\"x-id\":5}", 1}, {S_PP, "{\"id\":1,\"x-id\":6}", 0},
        {S_PP, "{\"id\":1,\"x-id\":2.5}", 0}, {S_PP, "{\"id\":1,\"AB\":1}", 0}, {S_PP, "{\"s_b\":\"s\"}", 0},
        {S_MAP, "{\"1\":true,\"22\":false}", 1}, {S_MAP, "{\"a\":true}", 0}, {S_MAP, "{}", 1}, {S_MAP, "{\"1\":1}", 0},
        /* two patterns one key matches: both schemas apply */
        {"{\"patternProperties\":{\"a\":{\"minimum\":2},\"b\":{\"maximum\":4}},\"additionalProperties\":false}",
         "{\"ab\":3,\"a\":9,\"b\":0}", 1},
        {"{\"patternProperties\":{\"a\":{\"minimum\":2},\"b\":{\"maximum\":4}},\"additionalProperties\":false}",
         "{\"ab\":5}", 0},
        /* keys matching no pattern take additionalProperties */
        {"{\"patternProperties\":{\"^x\":{\"type\":\"null\"}},\"additionalProperties\":{\"type\":\"integer\"}}",
         "{\"x1\":null,\"y\":3}", 1},
        {"{\"patternProperties\":{\"^x\":{\"type\":\"null\"}},\"additionalProperties\":{\"type\":\"integer\"}}",
         "{\"x1\":3}", 0},
        /* a required key outside properties that a pattern matches */
        {"{\"required\":[\"x1\"],\"patternProperties\":{\"^x\":{\"type\":\"null\"}},\"additionalProperties\":false}",
         "{\"x1\":null}", 1},
        {"{\"required\":[\"x1\"],\"patternProperties\":{\"^x\":{\"type\":\"null\"}},\"additionalProperties\":false}",
         "{}", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int got = doc_ok(cases[i].schema, cases[i].doc);
        CHECKF(got == cases[i].want, "schema %s: '%s' got %d", cases[i].schema, cases[i].doc, got);
    }
}

TEST(grammar_pattern_errors) {
    schema_expect_error("{\"properties\":{\"zip\":{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}}}",
                        "json schema: /properties/zip: pattern: a backreference is not supported");
    schema_expect_error("{\"type\":\"string\",\"pattern\":\"a(?=b)\"}", "pattern: lookaround");
    schema_expect_error("{\"type\":\"string\",\"pattern\":3}", "pattern: not a string");
    schema_expect_error("{\"type\":\"string\",\"format\":\"iri\"}", "format: 'iri' is not supported");
    schema_expect_error("{\"type\":\"string\",\"pattern\":\"^a+$\",\"maxLength\":0}", "admits no value");
    schema_expect_error("{\"type\":\"string\",\"pattern\":\"a^b\"}", "admits no value");
    schema_expect_error("{\"patternProperties\":{\"(\":{}}}", "/: patternProperties: pattern:");
    /* two patterns whose schemas cannot merge exactly */
    schema_expect_error("{\"patternProperties\":{\"a\":{\"minimum\":2},\"b\":{\"minimum\":4}}}", "'minimum' in two merged");
    schema_expect_error("{\"type\":\"string\",\"pattern\":\"(a|b)*a(a|b){12}\"}", "more than 4096 automaton states");
}

/* Inside a pattern string only the bytes that keep it matchable are allowed, and the closing
 * quote only where it matches. */
TEST(grammar_pattern_masks) {
    schema_vocab v;
    schema_vocab_make(&v);
    char err[PF_ERR_LEN];
    pf_token_masker *tm = pf_token_masker_new(v.n, v.bytes, v.lens, &v.end, 1, err);
    pf_schema *s;
    CHECK(tm && pf_schema_compile(S_ZIP, strlen(S_ZIP), &s, err) == PF_SCHEMA_OK);
    pf_matcher *m = pf_matcher_new(s);
    uint32_t bits[64];
    static const struct {
        const char *prefix, *allowed;
    } steps[] = {{"\"", "0123456789"}, {"\"1234", "0123456789"}, {"\"12345", "-\""}, {"\"12345-", "0123456789"}};
    for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
        pf_matcher_reset(m);
        CHECK(pf_matcher_push_bytes(m, (const uint8_t *)steps[k].prefix, strlen(steps[k].prefix)) == 1);
        pf_token_mask(tm, NULL, m, bits);
        for (int c = 0; c < 256; c++) {
            int want = c && strchr(steps[k].allowed, c) != NULL;
            CHECKF(pf_mask_has(bits, c) == want, "after %s: byte %d %s", steps[k].prefix, c, want ? "refused" : "allowed");
        }
        /* "12" fits after the quote, not after four digits (it would make six) */
        CHECK(pf_mask_has(bits, schema_vocab_find(&v, "12")) == (k == 0 || k == 3));
    }
    pf_matcher_free(m);
    pf_schema_free(s);
    pf_token_masker_free(tm);
    schema_vocab_free(&v);
}

TEST(grammar_pattern_walks_validate) {
    static const char *const schemas[] = {
        S_ZIP, S_LINES, S_PP, S_MAP,
        "{\"type\":\"object\",\"properties\":{\"d\":{\"format\":\"date\"},\"e\":{\"format\":\"email\"},"
        "\"u\":{\"format\":\"uuid\"},\"i\":{\"format\":\"ipv4\"},\"j\":{\"format\":\"ipv6\"}},\"required\":[\"d\",\"u\",\"i\",\"j\",\"e\"]}",
        "{\"type\":\"array\",\"items\":{\"type\":\"string\",\"pattern\":\"^(red|gr[e]+n)\\\\d?$\",\"minLength\":4},\"maxItems\":3}",
        "{\"type\":\"string\",\"pattern\":\"[^a-z]\",\"maxLength\":3}",
        "{\"patternProperties\":{\"^n\":{\"type\":\"integer\",\"maximum\":9},\"a\":{\"minimum\":0}},"
        "\"additionalProperties\":{\"type\":\"string\",\"pattern\":\"^\\\\S*$\"},\"maxProperties\":3}",
        /* oneOf with overlapping branches (each excludes the others) */
        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{}},\"maxProperties\":2,"
        "\"oneOf\":[{\"required\":[\"a\"]},{\"required\":[\"b\"]}]}",
        "{\"oneOf\":[{\"required\":[\"x\"]},{\"required\":[\"y\"]},{\"type\":\"string\"}]}",
        "{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"a\"],\"additionalProperties\":false},"
        "{\"type\":\"object\",\"properties\":{\"b\":{},\"c\":{}},\"required\":[\"b\"],\"maxProperties\":2}]}",
        /* dependencies */
        "{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{\"type\":\"integer\"}},\"maxProperties\":4,"
        "\"dependencies\":{\"a\":[\"b\",\"c\"],\"c\":{\"required\":[\"d\"]}}}",
    };
    schema_walks_validate(schemas, (int)(sizeof schemas / sizeof *schemas), "pattern", 100);
}

/* Bounds with a fraction on numbers: walks end in range, checked with exact decimals. */
TEST(grammar_number_bounds_walks_validate) {
    static const char *const schemas[] = {
        "{\"type\":\"array\",\"items\":{\"type\":\"number\",\"minimum\":0.01,\"maximum\":0.5},\"minItems\":2}",
        "{\"type\":\"number\",\"exclusiveMinimum\":2.5,\"exclusiveMaximum\":2.5000001}",
        "{\"type\":\"array\",\"items\":{\"type\":\"number\",\"minimum\":-0.5,\"maximum\":0.25}}",
        "{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"type\":\"array\",\"items\":{\"type\":\"number\","
        "\"minimum\":-1.25,\"exclusiveMinimum\":true,\"maximum\":-0.75,\"exclusiveMaximum\":true}}",
        "{\"type\":\"object\",\"properties\":{\"p\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":1.05},"
        "\"q\":{\"type\":[\"number\",\"null\"],\"minimum\":100.001}},\"required\":[\"p\",\"q\"]}",
        /* exponent forms (5e-05) where the bounds allow them, and multipleOf with and without bounds */
        "{\"type\":\"array\",\"items\":{\"type\":\"number\",\"minimum\":0,\"maximum\":0.001},\"minItems\":2}",
        "{\"type\":\"array\",\"items\":{\"type\":\"number\",\"exclusiveMinimum\":-5e3,\"maximum\":2.5e4}}",
        "{\"type\":\"array\",\"items\":{\"type\":\"number\",\"multipleOf\":0.05,\"minimum\":-1,\"exclusiveMaximum\":1.2}}",
        "{\"type\":\"array\",\"items\":{\"multipleOf\":0.1},\"minItems\":2}",
        "{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"multipleOf\":7,\"maximum\":100}}",
        /* uniqueItems over literal items */
        "{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"ab\",1,1.5,true,{\"k\":[1]}]},\"uniqueItems\":true,\"minItems\":2}",
    };
    schema_walks_validate(schemas, (int)(sizeof schemas / sizeof *schemas), "number_bounds", 150);
}

/* not over a pattern: a string of printable ASCII the pattern does not match (where every engine
 * reads the pattern alike); merged nots match none of their patterns; oneOf branches of different
 * patterns exclude each other; not over an enum of strings the same way. */
#define S_NOT_A "{\"type\":\"string\",\"not\":{\"pattern\":\"^a\"}}"
#define S_NOT_X "{\"not\":{\"pattern\":\"x\"}}"
#define S_NOT_AB "{\"allOf\":[{\"not\":{\"pattern\":\"a\"}},{\"not\":{\"pattern\":\"b\"}}]}"
#define S_NOT_BAD "{\"type\":\"string\",\"pattern\":\"^[a-z]+$\",\"not\":{\"pattern\":\"bad\"}}"
#define S_ONE_OF "{\"oneOf\":[{\"type\":\"string\",\"pattern\":\"^a\"},{\"type\":\"string\",\"maxLength\":3}]}"
#define S_NOT_ENUM "{\"not\":{\"enum\":[\"a\",\"b.c\",\"\u00e9\"]}}"
#define S_ONE_OF_ENUM "{\"oneOf\":[{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},{\"type\":\"string\"}]}"
#define S_ONE_OF_PAT "{\"oneOf\":[{\"type\":\"string\",\"pattern\":\"^[0-9]+$\"},{\"type\":\"string\",\"pattern\":\"5\"}]}"

TEST(grammar_not_pattern) {
    static const pat_case cases[] = {
        {S_NOT_A, "\"b\"", 1}, {S_NOT_A, "\"ab\"", 0}, {S_NOT_A, "\"\"", 1}, {S_NOT_A, "\"ba\"", 1},
        {S_NOT_A, "\"\\u00e9\"", 0}, {S_NOT_A, "\"b\\n\"", 0}, {S_NOT_A, "1", 0},
        {S_NOT_X, "\"abc\"", 1}, {S_NOT_X, "\"axb\"", 0}, {S_NOT_X, "5", 0}, {S_NOT_X, "null", 0},
        {S_NOT_AB, "\"c\"", 1}, {S_NOT_AB, "\"ca\"", 0}, {S_NOT_AB, "\"bc\"", 0},
        {S_NOT_BAD, "\"good\"", 1}, {S_NOT_BAD, "\"isbad\"", 0}, {S_NOT_BAD, "\"Good\"", 0},
        {S_ONE_OF, "\"abcd\"", 1}, {S_ONE_OF, "\"abc\"", 0}, {S_ONE_OF, "\"bcd\"", 1}, {S_ONE_OF, "\"bcde\"", 0},
        {S_ONE_OF_PAT, "\"123\"", 1}, {S_ONE_OF_PAT, "\"125\"", 0}, {S_ONE_OF_PAT, "\"x5\"", 1}, {S_ONE_OF_PAT, "\"x\"", 0},
        /* not over an enum of strings: the other types, or a string none of them spells */
        {S_NOT_ENUM, "\"a\"", 0}, {S_NOT_ENUM, "\"b.c\"", 0}, {S_NOT_ENUM, "\"bxc\"", 1}, {S_NOT_ENUM, "\"ab\"", 1},
        {S_NOT_ENUM, "\"\"", 1}, {S_NOT_ENUM, "null", 1}, {S_NOT_ENUM, "[1]", 1}, {S_NOT_ENUM, "\"a\\u0000\"", 0},
        {S_ONE_OF_ENUM, "\"a\"", 0}, {S_ONE_OF_ENUM, "\"c\"", 1}, {S_ONE_OF_ENUM, "\"b\"", 0},
        /* beside a type list: only the strings, the other types fail `not` */
        {"{\"type\":[\"string\",\"null\"],\"not\":{\"pattern\":\"q\"}}", "null", 0},
        {"{\"type\":[\"string\",\"null\"],\"not\":{\"pattern\":\"q\"}}", "\"p\"", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int got = doc_ok(cases[i].schema, cases[i].doc);
        CHECKF(got == cases[i].want, "schema %s: '%s' got %d", cases[i].schema, cases[i].doc, got);
    }
    schema_expect_error("{\"type\":\"string\",\"not\":{\"pattern\":\".*\"}}", "admits no value");
    schema_expect_error("{\"type\":\"string\",\"not\":{\"pattern\":\"(a)\\\\1\"}}", "backreference");
    schema_expect_error("{\"type\":\"string\",\"not\":{\"format\":\"email\"}}", "keyword 'not' is not supported over 'format'");
    schema_expect_error("{\"type\":\"string\",\"not\":{\"enum\":[\"a\",2]}}", "keyword 'not' is not supported over 'enum'");
    static const char *const schemas[] = {S_NOT_A, S_NOT_X, S_NOT_AB, S_NOT_BAD, S_ONE_OF, S_ONE_OF_PAT, S_NOT_ENUM, S_ONE_OF_ENUM,
                                          "{\"type\":\"array\",\"items\":{\"type\":\"string\",\"not\":{\"pattern\":\"^\\\\s*$\"}},"
                                          "\"minItems\":1,\"maxItems\":3}"};
    schema_walks_validate(schemas, (int)(sizeof schemas / sizeof *schemas), "not_pattern", 100);
}
