/* The constraint core (grammar/): schema compile errors, golden token masks of hand-written
 * schemas over a small vocabulary, rollback, and the property test: random schemas of the subset,
 * random token walks; every trie mask equals a scan of the whole vocabulary and every completed
 * document parses and validates (eval/schema_valid.c, written from the keywords' meaning). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grammar/matcher.h"
#include "grammar/schema.h"
#include "grammar/token_mask.h"
#include "schema_check.h"
#include "test.h"

/* The allowed tokens after prefix, as "|spelling|..." ("<end>" for the end token) in id order. */
static void allowed_after(schema_fx *f, const char *prefix, char *out, size_t n) {
    pf_matcher_reset(f->m);
    out[0] = 0;
    if (pf_matcher_push_bytes(f->m, (const uint8_t *)prefix, strlen(prefix)) != 1) {
        snprintf(out, n, "prefix rejected");
        return;
    }
    pf_token_mask(f->tm, f->cache, f->m, f->bits);
    for (int32_t id = 0; id < f->v.n; id++) {
        if (!pf_mask_has(f->bits, id)) continue;
        size_t k = strlen(out);
        if (id == f->v.end) snprintf(out + k, n - k, "|<end>");
        else snprintf(out + k, n - k, "|%.*s", (int)f->v.lens[id], (const char *)f->v.bytes[id]);
    }
}

#define CHECK_MASK(f, prefix, want)                                                              \
    do {                                                                                         \
        char got_[4096];                                                                         \
        allowed_after((f), (prefix), got_, sizeof got_);                                         \
        CHECKF(!strcmp(got_, (want)), "after '%s': got %s, want %s", (prefix), got_, (want));    \
    } while (0)

static const char k_person[] =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"}},"
    "\"required\":[\"name\"],\"additionalProperties\":false}";

/* A schema and, for each prefix, the tokens allowed after it (allowed_after's spelling). */
typedef struct {
    const char *prefix, *want;
} mask_case;

/* Every case of one schema; 0, or -1 after a failure was recorded. */
static int check_masks(const char *schema, const mask_case *cases, int n) {
    schema_fx f;
    if (schema_fx_open(&f, false, schema) < 0) {
        pf_test_failf(__FILE__, __LINE__, "schema %s does not compile", schema);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char got[4096];
        allowed_after(&f, cases[i].prefix, got, sizeof got);
        if (strcmp(got, cases[i].want)) {
            pf_test_failf(__FILE__, __LINE__, "after '%s': got %s, want %s", cases[i].prefix, got, cases[i].want);
            break;
        }
    }
    schema_fx_close(&f);
    return pf_test_failed() ? -1 : 0;
}

#define CHECK_MASKS(schema, cases) CHECK(check_masks((schema), (cases), (int)(sizeof(cases) / sizeof(cases)[0])) == 0)

TEST(grammar_masks_object) {
    static const mask_case cases[] = {
        {"", "|{|{\""},
        {"{", "|\"|\"name\":"},
        /* one space may follow ':' and ',' (the spacing models write), no more */
        {"{\"name\":", "| |\"|\"}|\":|\",|\"]| |\"\"|\":\"|\":[|\":{\"|\"red\""},
        {"{\"name\": ", "|\"|\"}|\":|\",|\"]|\"\"|\":\"|\":[|\":{\"|\"red\""},
        {"{\"name\":  ", "prefix rejected"},
        {"{ ", "prefix rejected"},
        {"{\"name\":\"x\"", "|,|}|,\""},
        {"{\"age\":", "| |-|0|1|2|3|4|5|6|7|8|9|12| |0,|-1"},
        {"{\"age\":1,", "| |\"|\"name\":| "},
        {"{\"age\":1, ", "|\"|\"name\":"},
        /* a number's part has at most 16 digits: then only what may follow it */
        {"{\"age\":1234567890123456", "|,|,\""},
        {"{\"age\":12345678901234567", "prefix rejected"},
        {"{\"age\":1,\"name\":\"\"}", "|<end>"},
    };
    CHECK_MASKS(k_person, cases);
}

TEST(grammar_masks_enum_array) {
    static const mask_case enum_cases[] = {
        {"", "|\"|1|n|null|12|\"red\""},
        {"\"re", "|\"|d"},
        {"1", "|.|2|<end>"},
    };
    static const mask_case array_cases[] = {
        {"[", "|f|t|true|false"},
        {"[true,false", "|]"},
        {"[true", "|,|]"},
        {"[true,", "| |f|t|true|false| "},
        {"[ ", "prefix rejected"},
    };
    CHECK_MASKS("{\"enum\":[\"red\",\"green\",\"re\",1,12,null]}", enum_cases);
    CHECK_MASKS("{\"type\":\"array\",\"items\":{\"type\":\"boolean\"},\"minItems\":1,\"maxItems\":2}", array_cases);
}

/* A character split across tokens: only its continuation bytes may follow. */
TEST(grammar_masks_utf8) {
    schema_fx f;
    CHECK(schema_fx_open(&f, false, "{\"type\":\"string\"}") == 0);
    pf_matcher_reset(f.m);
    CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)"\"\xc3", 2) == 1);
    CHECK(pf_token_mask(f.tm, f.cache, f.m, f.bits) == 65);
    for (int b = 0x80; b <= 0xBF; b++) CHECK(pf_mask_has(f.bits, b));
    CHECK(pf_mask_has(f.bits, schema_vocab_find(&f.v, "\xa9x")));
    CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)"\xa9\"", 2) == 1);
    CHECK(pf_matcher_closed(f.m) && pf_matcher_can_end(f.m));
    pf_matcher_reset(f.m); /* a surrogate escape is refused, another \u escape is not */
    CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)"\"\\ud8", 5) == 0);
    CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)"\"\\u00e9\"", 8) == 1);
    schema_fx_close(&f);
}

TEST(grammar_rollback) {
    schema_fx f;
    CHECK(schema_fx_open(&f, false, k_person) == 0);
    uint32_t before[64];
    pf_matcher_reset(f.m);
    CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)"{\"name\":\"a", 10) == 1);
    size_t pos = pf_matcher_pos(f.m);
    int n = pf_token_mask(f.tm, NULL, f.m, before);
    CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)"b\",\"age\":12", 11) == 1);
    CHECK(pf_matcher_pos(f.m) == pos + 11);
    CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)"x", 1) == 0); /* refused: nothing changed */
    CHECK(pf_matcher_pos(f.m) == pos + 11);
    pf_matcher_rollback(f.m, pos);
    CHECK(pf_token_mask(f.tm, NULL, f.m, f.bits) == n);
    CHECK(!memcmp(before, f.bits, (size_t)pf_token_masker_words(f.tm) * 4));
    schema_fx_close(&f);
}

TEST(grammar_schema_errors) {
    schema_expect_error("{\"type\":\"array\",\"prefixItems\":[{}]}", "keyword 'prefixItems' is not supported");
    schema_expect_error("{\"properties\":{\"x\":{\"if\":{}}}}", "/properties/x: keyword 'if'");
    schema_expect_error("{\"type\":\"object\",", "json schema: byte");
    schema_expect_error("{\"type\":\"strin\"}", "type: not one of");
    schema_expect_error("{\"enum\":[]}", "admits no value");
    schema_expect_error("{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}", "admits no value");
    schema_expect_error("{\"additionalProperties\":{\"if\":{}}}", "/additionalProperties: keyword 'if'");
    schema_expect_error("{\"anyOf\":[]}", "anyOf: not a non-empty array");
    schema_expect_error("{\"items\":[{}]}", "tuple form");
    schema_expect_error("{\"minItems\":-1}", "minItems: not a non-negative integer");
    schema_expect_error("{\"required\":[\"a\"],\"additionalProperties\":false}", "admits no value");
    schema_expect_error("3", "a schema must be an object or a boolean");
    schema_expect_error("{\"enum\":[1,{\"a\":{\"b\":1,\"c\":2,\"b\":1}}]}", "enum: an object in it has the key 'b' twice");
    schema_expect_error("{\"const\":[{\"k\":1,\"k\":2}]}", "const: an object in it has the key 'k' twice");
    /* keys that share a prefix, or differ after a NUL, are different keys */
    pf_schema *s = NULL;
    char err[PF_ERR_LEN];
    const char *distinct = "{\"enum\":[{\"a\":1,\"ab\":2,\"a\\u0000x\":3,\"a\\u0000y\":4}]}";
    CHECKF(pf_schema_compile(distinct, strlen(distinct), &s, err) == PF_SCHEMA_OK, "%s", err);
    pf_schema_free(s);
    char deep[2000] = "";
    for (int i = 0; i < 40; i++) strcat(deep, "{\"items\":");
    strcat(deep, "{}");
    for (int i = 0; i < 40; i++) strcat(deep, "}");
    schema_expect_error(deep, "nested deeper than 32 levels");
}

/* Annotations and keywords JSON Schema does not define are ignored (the spec's rule for a keyword
 * an implementation does not know): the masks are those of the schema without them. */
TEST(grammar_annotations_ignored) {
    static const char annotated[] =
        "{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"id\":\"person\",\"$id\":\"p\","
        "\"title\":\"P\",\"description\":\"d\",\"$comment\":\"c\",\"x-order\":1,\"self\":{\"href\":\"/\"},"
        "\"name\":\"Person\",\"definitions\":{\"u\":{\"pattern\":\"^a\"}},\"$defs\":{},\"javaType\":\"P\","
        "\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"example\":\"Jo\",\"examples\":[\"Jo\"],"
        "\"default\":\"\",\"readOnly\":true,\"readonly\":true,\"writeOnly\":false,\"deprecated\":false,"
        "\"contentMediaType\":\"text/plain\",\"nullable\":true,\"then\":{\"minLength\":3}},"
        "\"age\":{\"type\":\"integer\",\"x-unit\":\"years\",\"else\":false,\"type\\u0000\":\"string\"}},"
        "\"required\":[\"name\"],\"additionalProperties\":false,\"discriminator\":{\"propertyName\":\"name\"}}";
    static const mask_case cases[] = {
        {"", "|{|{\""},
        {"{", "|\"|\"name\":"},
        {"{\"age\":", "| |-|0|1|2|3|4|5|6|7|8|9|12| |0,|-1"},
        {"{\"age\":1,", "| |\"|\"name\":| "},
        {"{\"age\":1,\"name\":\"\"}", "|<end>"},
    };
    CHECK_MASKS(k_person, cases);
    CHECK_MASKS(annotated, cases);
}

/* A validation keyword the compiler does not enforce is an error naming it and its path, wherever
 * it is and whatever sits beside it: never a schema compiled looser than it reads. */
TEST(grammar_unsupported_validation_keywords) {
    static const char *const kw[] = {
        "maxContains", "prefixItems",
        "unevaluatedItems", "dependentRequired",
        "dependentSchemas", "dependencies", "propertyNames", "unevaluatedProperties",
        "if", "$dynamicRef", "$recursiveRef", "divisibleBy", "disallow", "extends"};
    for (size_t i = 0; i < sizeof kw / sizeof *kw; i++) {
        char schema[256], want[128];
        snprintf(schema, sizeof schema,
                 "{\"title\":\"t\",\"properties\":{\"a\":{\"items\":{\"description\":\"d\",\"%s\":1}}}}", kw[i]);
        snprintf(want, sizeof want, "json schema: /properties/a/items: keyword '%s' is not supported", kw[i]);
        schema_expect_error(schema, want);
        if (pf_test_failed()) return;
    }
    /* then and else assert something only beside if */
    schema_expect_error("{\"if\":{},\"then\":{}}", "keyword 'if' is not supported");
    schema_expect_error("{\"then\":{},\"if\":{}}", "keyword 'then' is not supported");
    /* draft 3's boolean required would be a constraint dropped */
    schema_expect_error("{\"properties\":{\"a\":{\"type\":\"string\",\"required\":true}}}",
                        "/properties/a: required: not an array of strings");
    /* a keyword the compiler knows is still refused twice; an unknown one given twice is ignored */
    schema_expect_error("{\"type\":\"string\",\"type\":\"integer\"}", "keyword 'type' given twice");
    pf_schema *s = NULL;
    char err[PF_ERR_LEN];
    const char *twice = "{\"x-a\":1,\"x-a\":2,\"type\":\"string\"}";
    CHECKF(pf_schema_compile(twice, strlen(twice), &s, err) == PF_SCHEMA_OK, "%s", err);
    pf_schema_free(s);
}

/* Every mask the trie walk gives (through the cache) equals a scan of the whole vocabulary. */
static int mask_matches_scan(schema_fx *f) {
    int n = pf_token_mask(f->tm, f->cache, f->m, f->bits);
    int count = 0;
    for (int32_t id = 0; id < f->v.n; id++) {
        int ok = id == f->v.end ? pf_matcher_can_end(f->m)
                                : pf_matcher_push_bytes(f->m, f->v.bytes[id], f->v.lens[id]) == 1;
        if (ok && id != f->v.end) pf_matcher_rollback(f->m, pf_matcher_pos(f->m) - f->v.lens[id]);
        if (ok != pf_mask_has(f->bits, id)) {
            fprintf(stderr, "token %d: scan %d, mask %d\n", id, ok, !ok);
            return 0;
        }
        count += ok;
    }
    return count == n && n > 0;
}

/* One random walk: returns 1 complete and valid, 0 incomplete, -1 a failure (printed). */
static int walk_once(schema_fx *f, const char *schema, uint64_t *seed) {
    char doc[8192];
    size_t len = 0;
    pf_matcher_reset(f->m);
    for (int step = 0; step < 3000; step++) {
        if (!mask_matches_scan(f)) return fprintf(stderr, "schema %s after '%.*s'\n", schema, (int)len, doc), -1;
        int32_t pick[512], n = 0;
        for (int32_t id = 0; id < f->v.n; id++) {
            if (!pf_mask_has(f->bits, id)) continue;
            int weight = 1;
            if (step > 40 && id != f->v.end) { /* late: prefer what closes values */
                uint8_t c = f->v.bytes[id][0];
                weight = f->v.lens[id] == 1 && strchr("\"]}0", c) && c ? 16 : c == '[' || c == '{' ? 1 : 2;
            }
            if (id == f->v.end) weight = step > 40 ? 64 : 4;
            for (int w = 0; w < weight && n < 512; w++) pick[n++] = id;
        }
        if (n == 0) return fprintf(stderr, "schema %s: no allowed token after '%.*s'\n", schema, (int)len, doc), -1;
        int32_t id = pick[schema_rand(seed) % (uint64_t)n];
        if (id == f->v.end || pf_matcher_closed(f->m)) break;
        if (len + f->v.lens[id] >= sizeof doc) return 0;
        if (pf_matcher_push_bytes(f->m, f->v.bytes[id], f->v.lens[id]) != 1) return fprintf(stderr, "allowed token refused\n"), -1;
        memcpy(doc + len, f->v.bytes[id], f->v.lens[id]);
        len += f->v.lens[id];
    }
    if (!pf_matcher_can_end(f->m)) return 0;
    if (!pf_schema_valid_text(schema, doc, len))
        return fprintf(stderr, "invalid: schema %s document '%.*s'\n", schema, (int)len, doc), -1;
    return 1;
}

/* $ref to a JSON pointer into the document: $defs, definitions, escaped names (~0, ~1, %25), an
 * array index, the root; the masks are the inlined schema's. */
TEST(grammar_ref_pointers) {
    static const char defs[] =
        "{\"$defs\":{\"name\":{\"type\":\"string\"}},\"definitions\":{\"a/b\":{\"type\":\"integer\"},\"m~n\":"
        "{\"$ref\":\"#/definitions/a~1b\"},\"p%q\":{\"$ref\":\"#/$defs/name\",\"description\":\"d\"}},"
        "\"type\":\"object\",\"properties\":{\"name\":{\"$ref\":\"#/definitions/p%25q\"},\"age\":{\"$ref\":"
        "\"#/definitions/m~0n\"}},\"required\":[\"name\"],\"additionalProperties\":false}";
    static const mask_case cases[] = {
        {"", "|{|{\""},
        {"{", "|\"|\"name\":"},
        {"{\"age\":", "| |-|0|1|2|3|4|5|6|7|8|9|12| |0,|-1"},
        {"{\"age\":1,", "| |\"|\"name\":| "},
        {"{\"age\":1,\"name\":\"\"}", "|<end>"},
    };
    CHECK_MASKS(k_person, cases);
    CHECK_MASKS(defs, cases);
    static const char idx[] = "{\"anyOf\":[{\"enum\":[\"red\",12]},{\"type\":\"array\",\"items\":{\"$ref\":\"#/anyOf/0\"}}]}";
    static const mask_case idx_cases[] = {
        {"[", "|\"|1|]|12|\"red\""},
        {"[12,", "| |\"|1|12| |\"red\""},
    };
    CHECK_MASKS(idx, idx_cases);
}

/* The deepest document a recursive schema may nest: its values stop opening containers where the
 * shortest document no longer fits under the matcher's depth bound, and every prefix accepted up
 * to there can still be completed. */
static int nest_and_close(const char *schema, const char *open, const char *leaf, const char *close, int *levels) {
    schema_fx f;
    if (schema_fx_open(&f, false, schema) < 0) return schema_fx_close(&f), -1;
    int ok = 1;
    *levels = 0;
    while (pf_matcher_push_bytes(f.m, (const uint8_t *)open, strlen(open)) == 1) (*levels)++;
    ok &= *levels > 4 && *levels < PF_MATCHER_MAX_FRAMES;
    ok &= mask_matches_scan(&f);
    ok &= pf_matcher_push_bytes(f.m, (const uint8_t *)leaf, strlen(leaf)) == 1;
    for (int i = 0; ok && i < *levels; i++) ok &= pf_matcher_push_bytes(f.m, (const uint8_t *)close, strlen(close)) == 1;
    ok &= pf_matcher_can_end(f.m);
    schema_fx_close(&f);
    return ok ? 0 : -1;
}

TEST(grammar_ref_recursive) {
    static const char tree[] =
        "{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},\"kids\":{\"type\":\"array\",\"items\":"
        "{\"$ref\":\"#\"}}},\"required\":[\"v\"],\"additionalProperties\":false}";
    static const char list[] =
        "{\"$ref\":\"#/$defs/node\",\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":"
        "\"integer\"},\"next\":{\"anyOf\":[{\"$ref\":\"#/$defs/node\"},{\"type\":\"null\"}]}},"
        "\"required\":[\"v\",\"next\"],\"additionalProperties\":false}}}";
    int levels = 0;
    CHECKF(nest_and_close(tree, "{\"v\":1,\"kids\":[", "{\"v\":2}", "]}", &levels) == 0, "tree, %d levels", levels);
    CHECKF(nest_and_close(list, "{\"v\":1,\"next\":", "null", "}", &levels) == 0, "list, %d levels", levels);
    static const mask_case list_cases[] = {
        {"{\"v\":1,\"next\":", "| |n|{|{\"|null| "},
        {"{\"v\":1,\"next\":null", "|}"}, /* every key given */
    };
    CHECK_MASKS(list, list_cases);
    /* random walks: every mask equals the vocabulary scan (never empty), every document validates */
    const char *const schemas[] = {tree, list};
    uint64_t seed = 777;
    for (int k = 0; k < 2; k++) {
        schema_fx f;
        CHECK(schema_fx_open(&f, false, schemas[k]) == 0);
        int bad = 0;
        for (int w = 0; w < 40 && !bad; w++) bad = walk_once(&f, schemas[k], &seed) < 0;
        schema_fx_close(&f);
        CHECK(!bad);
    }
}

TEST(grammar_ref_errors) {
    schema_expect_error("{\"$ref\":\"other.json#/definitions/a\"}", "$ref 'other.json#/definitions/a' outside the document is not supported");
    schema_expect_error("{\"properties\":{\"a\":{\"$ref\":\"https://x/y.json\"}}}", "/properties/a: $ref 'https://x/y.json' outside");
    schema_expect_error("{\"properties\":{\"a\":{\"$ref\":\"#/definitions/b\"}}}", "$ref '#/definitions/b': names nothing");
    schema_expect_error("{\"$ref\":\"#node\",\"$defs\":{\"n\":{\"$anchor\":\"node\"}}}", "not a JSON pointer");
    schema_expect_error("{\"definitions\":{\"a\":{}},\"$ref\":\"#/definitions/~2a\"}", "a '~' not followed by 0 or 1");
    schema_expect_error("{\"$ref\":1}", "$ref: not a string");
    schema_expect_error("{\"definitions\":{\"a\":{\"if\":{}}},\"properties\":{\"x\":{\"$ref\":\"#/definitions/a\"}}}",
                        "json schema: /definitions/a: keyword 'if' is not supported");
    schema_expect_error("{\"anyOf\":[{\"$ref\":\"#\"},{\"type\":\"string\"}]}", "a reference loop with no object or array");
    schema_expect_error("{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#\"}},\"required\":[\"a\"]}", "admits no value");
    schema_expect_error("{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"definitions\":{\"a\":{}},"
                        "\"properties\":{\"p\":{\"$id\":\"p.json\",\"$ref\":\"#/definitions/a\"}}}",
                        "the base URI is unclear: an id beside it");
    schema_expect_error("{\"definitions\":{\"a\":{}},\"properties\":{\"p\":{\"$id\":\"\",\"items\":{\"$ref\":\"#/definitions/a\"}}}}",
                        "an empty id on the way to it");
    schema_expect_error("{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"definitions\":{\"a\":{\"id\":\"a\","
                        "\"definitions\":{\"b\":{}},\"items\":{\"$ref\":\"#/definitions/a/definitions/b\"}}},\"$ref\":\"#/definitions/a\"}",
                        "names nothing in the document (its base: the subschema whose id sets it)");
    /* no $schema: `id` and `$id` read alike, or an error */
    schema_expect_error("{\"definitions\":{\"a\":{}},\"properties\":{\"p\":{\"id\":\"p.json\",\"definitions\":{\"a\":{}},"
                        "\"items\":{\"$ref\":\"#/definitions/a\"}}}}",
                        "names another schema where 'id' sets the base URI");
}


/* Documents of a schema: each whole text either a complete document the matcher accepts, or not. */
typedef struct {
    const char *doc;
    int ok;
} doc_case;

static int check_docs(const char *schema, const doc_case *cases, int n) {
    schema_fx f;
    if (schema_fx_open(&f, false, schema) < 0) {
        pf_test_failf(__FILE__, __LINE__, "schema %s does not compile", schema);
        return schema_fx_close(&f), -1;
    }
    for (int i = 0; i < n && !pf_test_failed(); i++) {
        pf_matcher_reset(f.m);
        int got = pf_matcher_push_bytes(f.m, (const uint8_t *)cases[i].doc, strlen(cases[i].doc)) == 1 &&
                  pf_matcher_can_end(f.m);
        if (got != cases[i].ok)
            pf_test_failf(__FILE__, __LINE__, "schema %s: '%s' %s", schema, cases[i].doc, got ? "accepted" : "refused");
        else if (got != pf_schema_valid_text(schema, cases[i].doc, strlen(cases[i].doc)))
            pf_test_failf(__FILE__, __LINE__, "schema %s: the validator disagrees on '%s'", schema, cases[i].doc);
    }
    uint64_t seed = 31;
    for (int w = 0; w < 30 && !pf_test_failed(); w++)
        if (walk_once(&f, schema, &seed) < 0) pf_test_failf(__FILE__, __LINE__, "schema %s: a random walk failed", schema);
    schema_fx_close(&f);
    return pf_test_failed() ? -1 : 0;
}

#define CHECK_DOCS(schema, cases) CHECK(check_docs((schema), (cases), (int)(sizeof(cases) / sizeof(cases)[0])) == 0)

/* Keywords beside a $ref apply with it (2019-09 on, and where no $schema says otherwise); a document
 * of an older draft ignores them, as that draft says. */
TEST(grammar_ref_siblings) {
    static const char s[] = "{\"$defs\":{\"l\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}},"
                            "\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/l\",\"maxItems\":2}}}";
    static const doc_case c[] = {{"{\"a\":[1,2]}", 1}, {"{\"a\":[1,2,3]}", 0}, {"{\"a\":[\"x\"]}", 0}, {"{}", 1}};
    CHECK_DOCS(s, c);
    static const char s7[] = "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"definitions\":{\"l\":{\"type\":"
                             "\"array\"}},\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/definitions/l\",\"maxItems\":2}}}";
    static const doc_case c7[] = {{"{\"a\":[1,2,3]}", 1}, {"{\"a\":3}", 0}};
    CHECK_DOCS(s7, c7);
    static const char st[] = "{\"$defs\":{\"s\":{\"type\":[\"string\",\"null\"]}},\"$ref\":\"#/$defs/s\",\"type\":\"string\"}";
    static const doc_case ct[] = {{"\"x\"", 1}, {"null", 0}};
    CHECK_DOCS(st, ct);
}

/* minLength / maxLength count characters: a UTF-8 character of several bytes, or an escape, is one. */
TEST(grammar_string_lengths) {
    static const char two_three[] = "{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}";
    static const doc_case docs[] = {
        {"\"ab\"", 1}, {"\"abc\"", 1}, {"\"a\"", 0}, {"\"abcd\"", 0}, {"\"\"", 0},
        {"\"\xc3\xa9\xe4\xb8\xad\"", 1}, {"\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\"", 1},
        {"\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\"", 0}, {"\"\\n\\u00e9x\"", 1},
        {"\"\\n\\u00e9xy\"", 0}, {"\"\\\\\"", 0}, {"\"\\\\\\\"\"", 1},
    };
    CHECK_DOCS(two_three, docs);
    static const mask_case masks[] = {
        {"\"abc", "|\""}, /* full: only the closing quote */
    };
    CHECK_MASKS(two_three, masks);
    /* one character left: a one-character token (an escape of six bytes, a UTF-8 character) fits,
     * a two-character one does not */
    schema_fx f;
    CHECK(schema_fx_open(&f, false, two_three) == 0);
    char got[4096];
    allowed_after(&f, "\"\xe4\xb8\xad\\n", got, sizeof got);
    CHECKF(strstr(got, "|a|") && strstr(got, "|\\u00e9|") && strstr(got, "|\xc3\xa9|") && strstr(got, "|\"|") &&
               !strstr(got, "|ab|") && !strstr(got, "|red|") && !strstr(got, "|\xa9x|"),
           "%s", got);
    schema_fx_close(&f);
    static const char in_object[] =
        "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\",\"maxLength\":1},\"n\":{\"minLength\":1}},"
        "\"required\":[\"id\"],\"additionalProperties\":false}";
    static const doc_case obj_docs[] = {
        {"{\"id\":\"x\"}", 1}, {"{\"id\":\"\"}", 1}, {"{\"id\":\"xy\"}", 0}, {"{\"id\":\"x\",\"n\":\"\"}", 0},
        {"{\"id\":\"x\",\"n\":\"red\"}", 1},
    };
    CHECK_DOCS(in_object, obj_docs);
    static const mask_case obj_masks[] = {{"{\"id\":\"x", "|\"|\"}|\","}};
    CHECK_MASKS(in_object, obj_masks);
    schema_expect_error("{\"type\":\"string\",\"minLength\":1.5}", "minLength: not a non-negative integer");
    schema_expect_error("{\"type\":\"string\",\"minLength\":4,\"maxLength\":3}", "admits no value");
    schema_expect_error("{\"enum\":[\"abcd\"],\"maxLength\":3}", "admits no value"); /* the value checked */
}

/* minimum / maximum and both forms of exclusiveMinimum / exclusiveMaximum, on integers and on
 * numbers (integer bounds), decided digit by digit from the bound's decimal text. */
TEST(grammar_number_bounds) {
    static const doc_case ints[] = {
        {"0", 1}, {"-5", 1}, {"120", 1}, {"-0", 1}, {"99", 1}, {"121", 0}, {"-6", 0}, {"1000", 0},
        {"-10", 0}, {"12", 1},
    };
    CHECK_DOCS("{\"type\":\"integer\",\"minimum\":-5,\"maximum\":120}", ints);
    static const mask_case int_masks[] = {{"12", "|0|<end>"}, {"-", "|0|1|2|3|4|5"}};
    CHECK_MASKS("{\"type\":\"integer\",\"minimum\":-5,\"maximum\":120}", int_masks);
    static const doc_case draft4[] = {{"0", 0}, {"10", 0}, {"1", 1}, {"9", 1}, {"-0", 0}};
    CHECK_DOCS("{\"type\":\"integer\",\"minimum\":0,\"exclusiveMinimum\":true,\"maximum\":10,\"exclusiveMaximum\":true}", draft4);
    static const doc_case draft6[] = {{"0", 0}, {"1", 1}, {"2", 1}, {"3", 0}};
    CHECK_DOCS("{\"type\":\"integer\",\"exclusiveMinimum\":0.5,\"exclusiveMaximum\":3}", draft6);
    static const doc_case frac_bounds[] = {{"-2", 0}, {"-1", 1}, {"2", 1}, {"3", 0}};
    CHECK_DOCS("{\"type\":\"integer\",\"minimum\":-1.5,\"maximum\":2.5}", frac_bounds);
    static const doc_case unit[] = {
        {"0", 1}, {"0.5", 1}, {"1", 1}, {"1.0", 1}, {"1.000", 1}, {"1.01", 0}, {"-0.1", 0}, {"2", 0},
        {"-0", 1}, {"-0.0", 1}, {"0.999", 1},
    };
    CHECK_DOCS("{\"type\":\"number\",\"minimum\":0,\"maximum\":1}", unit);
    static const doc_case positive[] = {{"0", 0}, {"0.0", 0}, {"0.001", 1}, {"-0", 0}, {"5", 1}, {"-3.5", 0}};
    CHECK_DOCS("{\"type\":\"number\",\"exclusiveMinimum\":0}", positive);
    static const doc_case below[] = {{"-1", 0}, {"-1.5", 1}, {"-1.0", 0}, {"-100", 1}, {"0", 0}};
    CHECK_DOCS("{\"type\":\"number\",\"maximum\":-1,\"exclusiveMaximum\":true}", below);
    /* the bound's text decides, not its nearest double (1.00000000000000000001 rounds to 1.0) */
    schema_fx f;
    CHECK(schema_fx_open(&f, false, "{\"type\":\"integer\",\"minimum\":1.00000000000000000001}") == 0);
    CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)"1", 1) == 1 && !pf_matcher_can_end(f.m));
    pf_matcher_reset(f.m);
    CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)"2", 1) == 1 && pf_matcher_can_end(f.m));
    schema_fx_close(&f);
    static const doc_case huge[] = {{"9999999999999999", 1}, {"-9999999999999999", 1}};
    CHECK_DOCS("{\"type\":\"integer\",\"maximum\":1e300,\"minimum\":-1e300}", huge);
    schema_expect_error("{\"type\":\"integer\",\"minimum\":1e300}", "admits no value");
    schema_expect_error("{\"type\":\"integer\",\"minimum\":5,\"maximum\":3}", "admits no value");
    schema_expect_error("{\"type\":\"number\",\"minimum\":1,\"exclusiveMaximum\":1}", "admits no value");
    schema_expect_error("{\"type\":\"integer\",\"minimum\":\"1\"}", "minimum: not a number");
}

/* Bounds with a fraction on a number: exact from their decimal text, inclusive and exclusive in
 * both drafts, negative, both ends at once; a digit only where some completion lands in range. */
TEST(grammar_number_fraction_bounds) {
    static const doc_case unit[] = {
        {"0.01", 1}, {"0.5", 1}, {"0.50", 1}, {"0.5000001", 0}, {"0.009", 0}, {"0.0100", 1}, {"0.25", 1},
        {"0", 0}, {"1", 0}, {"-0.1", 0}, {"0.499999", 1}, {"0.51", 0}, {"0.0099999999999999", 0},
    };
    CHECK_DOCS("{\"type\":\"number\",\"minimum\":0.01,\"maximum\":0.5}", unit);
    static const doc_case above[] = {
        {"2.5", 0}, {"2.50", 0}, {"2.5001", 1}, {"3", 1}, {"2", 0}, {"2.49", 0}, {"-3", 0}, {"2.6", 1}, {"12", 1},
    };
    CHECK_DOCS("{\"type\":\"number\",\"exclusiveMinimum\":2.5}", above);
    static const doc_case around0[] = {
        {"-0.5", 1}, {"-0.50", 1}, {"-0.51", 0}, {"-0.5000000000000001", 0}, {"-0", 1}, {"0", 1}, {"0.25", 1},
        {"0.2500", 1}, {"0.251", 0}, {"-1", 0}, {"1", 0}, {"-0.4999", 1}, {"0.1", 1},
    };
    CHECK_DOCS("{\"type\":\"number\",\"minimum\":-0.5,\"maximum\":0.25}", around0);
    static const doc_case draft4[] = {
        {"-1.25", 0}, {"-1.2499", 1}, {"-1", 1}, {"-0.75", 0}, {"-0.7500001", 1}, {"-0.75000", 0}, {"-0.7", 0},
        {"-1.3", 0}, {"0", 0}, {"-1.250", 0},
    };
    CHECK_DOCS("{\"type\":\"number\",\"minimum\":-1.25,\"exclusiveMinimum\":true,\"maximum\":-0.75,\"exclusiveMaximum\":true}",
               draft4);
    static const doc_case draft6[] = {{"0.125", 0}, {"0.1251", 1}, {"0.13", 1}, {"0.13001", 0}, {"0.12999", 1}};
    CHECK_DOCS("{\"type\":\"number\",\"exclusiveMinimum\":0.125,\"maximum\":0.13}", draft6);
    static const doc_case expo[] = {{"0.001", 1}, {"0.0009", 0}, {"25", 1}, {"25.0001", 0}, {"0.01", 1}};
    CHECK_DOCS("{\"type\":\"number\",\"minimum\":1e-3,\"maximum\":2.5E1}", expo);
    static const mask_case masks[] = {
        {"", "|0|3|4|5|3.5"}, {"0", "|."}, {"0.", "|2|3|4|5"}, {"0.2", "|5|6|7|8|9"}, {"0.5", "|0|<end>"},
        {"0.4", "|0|1|2|3|4|5|6|7|8|9|12|<end>"},
    };
    CHECK_MASKS("{\"type\":\"number\",\"minimum\":0.25,\"maximum\":0.5}", masks);
    /* past 16 fraction digits a bound is rounded inward, from its text: exact for every number written */
    static const struct {
        const char *schema, *doc;
        int ok;
    } grid[] = {
        {"{\"type\":\"number\",\"maximum\":0.12345678901234567}", "0.1234567890123456", 1},
        {"{\"type\":\"number\",\"maximum\":0.12345678901234567}", "0.1234567890123457", 0},
        {"{\"type\":\"number\",\"exclusiveMinimum\":0.99999999999999999}", "0.9999999999999999", 0},
        {"{\"type\":\"number\",\"exclusiveMinimum\":0.99999999999999999}", "1", 1},
        {"{\"type\":\"number\",\"minimum\":-0.00000000000000000001,\"maximum\":0}", "-0.0000000000000001", 0},
        {"{\"type\":\"number\",\"minimum\":-0.00000000000000000001,\"maximum\":0}", "-0.0", 1},
        {"{\"type\":\"number\",\"maximum\":-0.00000000000000000001}", "-0.0000000000000001", 1},
        {"{\"type\":\"number\",\"maximum\":-0.00000000000000000001}", "0", 0},
    };
    for (size_t i = 0; i < sizeof grid / sizeof *grid; i++) {
        schema_fx f;
        CHECK(schema_fx_open(&f, false, grid[i].schema) == 0);
        int got = pf_matcher_push_bytes(f.m, (const uint8_t *)grid[i].doc, strlen(grid[i].doc)) == 1 && pf_matcher_can_end(f.m);
        CHECKF(got == grid[i].ok, "%s: %s %s", grid[i].schema, grid[i].doc, got ? "accepted" : "refused");
        schema_fx_close(&f);
    }
    schema_expect_error("{\"type\":\"number\",\"exclusiveMinimum\":0.1,\"exclusiveMaximum\":0.1000000000000001}", "admits no value");
    schema_expect_error("{\"type\":\"number\",\"minimum\":0.3,\"maximum\":0.2}", "admits no value");
}

/* The exact value of a JSON number text compared with another's: sign, then integer digits (no
 * leading zeros), then fraction digits (no trailing zeros). */
static int dec_cmp(const char *x, const char *y) {
    char ix[40], fx[40], iy[40], fy[40];
    int nx = 0, ny = 0;
    const char *t[2] = {x, y};
    char *ip[2] = {ix, iy}, *fp[2] = {fx, fy};
    int *neg[2] = {&nx, &ny};
    for (int k = 0; k < 2; k++) {
        const char *p = t[k];
        if (*p == '-') *neg[k] = 1, p++;
        while (*p == '0' && p[1] >= '0' && p[1] <= '9') p++;
        size_t n = strcspn(p, ".");
        snprintf(ip[k], 40, "%.*s", (int)n, p);
        snprintf(fp[k], 40, "%s", p[n] == '.' ? p + n + 1 : "");
        for (size_t m = strlen(fp[k]); m && fp[k][m - 1] == '0'; m--) fp[k][m - 1] = 0;
        if (!strcmp(ip[k], "0") && !fp[k][0]) *neg[k] = 0;
    }
    int mag = strlen(ix) != strlen(iy) ? (strlen(ix) < strlen(iy) ? -1 : 1) : strcmp(ix, iy);
    if (!mag) mag = strcmp(fx, fy);
    mag = mag < 0 ? -1 : mag > 0;
    if (nx != ny) return nx ? -1 : 1;
    return nx ? -mag : mag;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)? */
static int is_plain_number(const char *p) {
    p += *p == '-';
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') p += strspn(p, "0123456789");
    else return 0;
    if (*p == '.') {
        size_t n = strspn(p + 1, "0123456789");
        if (!n) return 0;
        p += 1 + n;
    }
    return !*p;
}

/* Every number text of up to 6 bytes over a few digits against the bounds compared exactly. */
TEST(grammar_number_fraction_bounds_exhaustive) {
    static const struct {
        const char *lo, *hi; /* NULL: none */
        int lo_open, hi_open;
    } b[] = {
        {"0.25", "0.5", 0, 0}, {"0.25", "0.5", 1, 1}, {"-0.5", "0.25", 0, 1}, {"-1.25", "-0.05", 1, 0},
        {"0.205", NULL, 1, 0}, {NULL, "-0.1", 0, 1}, {"1.9", "2.1", 0, 0}, {"0.4", "0.41", 1, 1},
    };
    static const char alpha[] = "-.01259";
    for (size_t k = 0; k < sizeof b / sizeof *b && !pf_test_failed(); k++) {
        char schema[200];
        int n = snprintf(schema, sizeof schema, "{\"type\":\"number\"");
        if (b[k].lo) n += snprintf(schema + n, sizeof schema - (size_t)n, ",\"%s\":%s", b[k].lo_open ? "exclusiveMinimum" : "minimum", b[k].lo);
        if (b[k].hi) n += snprintf(schema + n, sizeof schema - (size_t)n, ",\"%s\":%s", b[k].hi_open ? "exclusiveMaximum" : "maximum", b[k].hi);
        snprintf(schema + n, sizeof schema - (size_t)n, "}");
        schema_fx f;
        CHECK(schema_fx_open(&f, false, schema) == 0);
        char doc[8];
        for (long code = 0; code < 8L * 8 * 8 * 8 * 8 * 8 && !pf_test_failed(); code++) {
            int len = 0;
            long c = code;
            for (; c % 8 && len < 6; c /= 8) doc[len++] = alpha[c % 8 - 1];
            if (c) continue; /* one text per length: no digit 0 inside the code */
            doc[len] = 0;
            int number = is_plain_number(doc);
            int want = number && (!b[k].lo || dec_cmp(doc, b[k].lo) > -!b[k].lo_open) &&
                       (!b[k].hi || dec_cmp(doc, b[k].hi) < !b[k].hi_open);
            pf_matcher_reset(f.m);
            int got = pf_matcher_push_bytes(f.m, (const uint8_t *)doc, (size_t)len) == 1 && pf_matcher_can_end(f.m);
            CHECKF(got == want, "%s: '%s' %s", schema, doc, got ? "accepted" : "refused");
        }
        schema_fx_close(&f);
    }
}

/* A JSON number text as sign, significant digits (no leading or trailing zero) and the power of
 * ten of its first digit; 0 on a text that is no JSON number. */
typedef struct {
    int neg, nd;
    long lead;
    char d[64];
} test_dec;

static int test_dec_of(const char *p, test_dec *x) {
    memset(x, 0, sizeof *x);
    if (*p == '-') x->neg = 1, p++;
    if (!(*p >= '0' && *p <= '9') || (p[0] == '0' && p[1] >= '0' && p[1] <= '9')) return 0;
    long ints = 0, skipped = 0;
    int point = 0;
    for (; (*p >= '0' && *p <= '9') || (*p == '.' && !point); p++) {
        if (*p == '.') {
            if (!(p[1] >= '0' && p[1] <= '9')) return 0;
            point = 1;
            continue;
        }
        ints += !point;
        if (!x->nd && *p == '0') skipped++;
        else if (x->nd < 63) x->d[x->nd++] = *p;
    }
    long e = 0;
    if (*p == 'e' || *p == 'E') {
        int eneg = *++p == '-';
        p += *p == '-' || *p == '+';
        if (!(*p >= '0' && *p <= '9')) return 0;
        for (; *p >= '0' && *p <= '9'; p++) e = e * 10 + (*p - '0');
        e = eneg ? -e : e;
    }
    if (*p) return 0;
    while (x->nd && x->d[x->nd - 1] == '0') x->nd--;
    if (!x->nd) x->neg = 0;
    x->lead = ints - 1 - skipped + e;
    return 1;
}

/* The code-th text over a 6-character alphabet (code < 7^6: every text of up to 6 bytes once), in
 * doc; its length, or -1 where code spells no text (a 0 digit before a later one). */
static int text_of_code(long code, const char alpha[6], char doc[8]) {
    int len = 0;
    long c = code;
    for (; c % 7 && len < 6; c /= 7) doc[len++] = alpha[c % 7 - 1];
    if (c) return -1;
    doc[len] = 0;
    return len;
}

static int test_dec_cmp(const test_dec *a, const test_dec *b) {
    if (a->neg != b->neg) return a->neg ? -1 : 1;
    int s = a->neg ? -1 : 1, m;
    if (!a->nd || !b->nd) m = a->nd ? 1 : b->nd ? -1 : 0;
    else if (a->lead != b->lead) m = a->lead < b->lead ? -1 : 1;
    else {
        m = 0;
        for (int i = 0; !m && (i < a->nd || i < b->nd); i++) {
            char x = i < a->nd ? a->d[i] : '0', y = i < b->nd ? b->d[i] : '0';
            m = x < y ? -1 : x > y;
        }
    }
    return s * m;
}

/* Bounded numbers with an exponent, as writers put floats (Python's 1e-06, 2.5e+20): a mantissa
 * of one digit 1-9 and its fraction, up to 3 exponent digits, where the mantissa as it stands
 * still lands in range with some exponent, or the number without one still can. */
TEST(grammar_number_bounds_exponent) {
    static const doc_case nonneg[] = {
        {"1e-06", 1}, {"1E-06", 1}, {"1.5e-07", 1}, {"-1e-06", 0}, {"1e+16", 1}, {"1e16", 1}, {"9.75e300", 1},
        {"1e-999", 1}, {"1.e5", 0}, {"1e", 0}, {"1e+", 0}, {"-0.5e-3", 0},
    };
    CHECK_DOCS("{\"type\":\"number\",\"minimum\":0}", nonneg);
    /* valid, but not as writers put a float: refused (a mantissa of one digit 1-9, 3 exponent digits) */
    static const char *const refused[] = {"0e5", "10e5", "0.5e-3", "1e1000", "1e0001"};
    schema_fx g;
    CHECK(schema_fx_open(&g, false, "{\"type\":\"integer\",\"minimum\":0}") == 0); /* an integer: digits only */
    CHECK(pf_matcher_push_bytes(g.m, (const uint8_t *)"1e2", 3) != 1);
    schema_fx_close(&g);
    schema_fx f;
    CHECK(schema_fx_open(&f, false, "{\"type\":\"number\",\"minimum\":0}") == 0);
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        pf_matcher_reset(f.m);
        CHECKF(pf_matcher_push_bytes(f.m, (const uint8_t *)refused[i], strlen(refused[i])) != 1 || !pf_matcher_can_end(f.m),
               "'%s' accepted", refused[i]);
    }
    schema_fx_close(&f);
    static const doc_case unit[] = {
        {"5e-05", 1}, {"5e-01", 1}, {"5e0", 0}, {"1e0", 1}, {"1e+0", 1}, {"1.0e0", 1}, {"1.5e0", 0}, {"2e-1", 1},
        {"9.99e-1", 1}, {"1e1", 0}, {"-1e-5", 0}, {"1e-999", 1}, {"1.0000000000000001e0", 0}, {"-0", 1},
    };
    CHECK_DOCS("{\"type\":\"number\",\"minimum\":0,\"maximum\":1}", unit);
    static const doc_case open[] = {{"5e-1", 1}, {"5.1e-1", 0}, {"5e-17", 1}, {"5e-999", 1}, {"0", 0}};
    CHECK_DOCS("{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":0.5}", open);
    static const doc_case neg[] = {
        {"-1e-3", 1}, {"-1e-4", 0}, {"-5e-1", 1}, {"-1e0", 1}, {"-1.5e0", 0}, {"-1.0e-3", 1}, {"1e-3", 0},
    };
    CHECK_DOCS("{\"type\":\"number\",\"minimum\":-1,\"maximum\":-0.001}", neg);
    static const doc_case big[] = {{"2e5", 1}, {"2.5e5", 1}, {"3e5", 1}, {"3.01e5", 0}, {"1.9e5", 0}, {"200000", 1}};
    CHECK_DOCS("{\"type\":\"number\",\"minimum\":2e5,\"maximum\":300000}", big);
    /* every text of up to 6 bytes over a few characters: none out of range accepted */
    static const struct {
        const char *lo, *hi; /* NULL: none */
        int lo_open, hi_open;
    } b[] = {
        {"0", "1", 0, 0}, {"0", "0.5", 1, 0}, {"-1", "-0.001", 0, 0}, {"0.001", NULL, 0, 0}, {NULL, "-50", 0, 1},
        {"5e-5", "0.05", 0, 0}, {"-0.5", "5e-3", 1, 1},
    };
    static const char alpha[] = "-.015e";
    for (size_t k = 0; k < sizeof b / sizeof *b && !pf_test_failed(); k++) {
        char schema[200];
        int n = snprintf(schema, sizeof schema, "{\"type\":\"number\"");
        if (b[k].lo) n += snprintf(schema + n, sizeof schema - (size_t)n, ",\"%s\":%s", b[k].lo_open ? "exclusiveMinimum" : "minimum", b[k].lo);
        if (b[k].hi) n += snprintf(schema + n, sizeof schema - (size_t)n, ",\"%s\":%s", b[k].hi_open ? "exclusiveMaximum" : "maximum", b[k].hi);
        snprintf(schema + n, sizeof schema - (size_t)n, "}");
        test_dec lo, hi;
        CHECK((!b[k].lo || test_dec_of(b[k].lo, &lo)) && (!b[k].hi || test_dec_of(b[k].hi, &hi)));
        CHECK(schema_fx_open(&f, false, schema) == 0);
        char doc[8];
        for (long code = 0; code < 7L * 7 * 7 * 7 * 7 * 7 && !pf_test_failed(); code++) {
            int len = text_of_code(code, alpha, doc);
            if (len < 0) continue;
            pf_matcher_reset(f.m);
            if (pf_matcher_push_bytes(f.m, (const uint8_t *)doc, (size_t)len) != 1 || !pf_matcher_can_end(f.m)) continue;
            test_dec x;
            int ok = test_dec_of(doc, &x) && (!b[k].lo || test_dec_cmp(&x, &lo) > -!b[k].lo_open) &&
                     (!b[k].hi || test_dec_cmp(&x, &hi) < !b[k].hi_open);
            CHECKF(ok, "%s: '%s' accepted", schema, doc);
        }
        schema_fx_close(&f);
    }
}

/* multipleOf on numbers and integers, exact from its decimal text (0.3 is a multiple of 0.1), with
 * the bounds: a digit only where some multiple within them can still be written. */
TEST(grammar_multiple_of) {
    static const doc_case cents[] = {
        {"1.25", 1}, {"1.255", 0}, {"0.1", 1}, {"3", 1}, {"-2.5", 1}, {"1.250", 1}, {"1.2500", 1}, {"0.001", 0},
        {"0.3", 1}, {"-0.07", 1}, {"1.2501", 0}, {"12345678901234.56", 1},
    };
    CHECK_DOCS("{\"type\":\"number\",\"multipleOf\":0.01}", cents);
    static const doc_case halves[] = {
        {"0.5", 1}, {"1", 1}, {"1.5", 1}, {"2", 1}, {"2.0", 1}, {"2.5", 0}, {"0", 0}, {"0.3", 0}, {"0.75", 0}, {"-0.5", 0},
    };
    CHECK_DOCS("{\"type\":\"number\",\"multipleOf\":0.5,\"minimum\":0.3,\"maximum\":2}", halves);
    static const doc_case fives[] = {{"-10", 1}, {"-12", 0}, {"0", 1}, {"30", 1}, {"35", 0}, {"7", 0}, {"-0", 1}};
    CHECK_DOCS("{\"type\":\"integer\",\"multipleOf\":5,\"minimum\":-12,\"maximum\":30}", fives);
    static const doc_case every[] = {{"3", 1}, {"-7", 1}, {"0.5", 0}};
    CHECK_DOCS("{\"type\":\"integer\",\"multipleOf\":0.5}", every);
    static const doc_case by25[] = {{"5", 1}, {"10", 1}, {"3", 0}, {"2", 0}};
    CHECK_DOCS("{\"type\":\"integer\",\"multipleOf\":2.5}", by25);
    static const doc_case threes[] = {{"9", 1}, {"9.0", 1}, {"9.00", 1}, {"9.5", 0}, {"-3", 1}, {"10", 0}, {"0.0", 1}};
    CHECK_DOCS("{\"type\":\"number\",\"multipleOf\":3}", threes);
    static const doc_case tenth[] = {{"0.3", 1}, {"0.30", 1}, {"0.31", 0}, {"0.4", 0}, {"-1.2", 1}};
    CHECK_DOCS("{\"multipleOf\":0.1,\"maximum\":0.3}", tenth);
    static const doc_case hundreds[] = {{"1700", 1}, {"1750", 0}, {"100", 0}, {"2000", 1}, {"2100", 0}};
    CHECK_DOCS("{\"type\":\"integer\",\"multipleOf\":1e2,\"exclusiveMinimum\":150,\"maximum\":2050}", hundreds);
    /* the masks: after "1." under 0.25 steps in [1, 1.5], only 0, 2, 5 go on */
    static const mask_case masks[] = {{"1.", "|0|2|5"}, {"1.2", "|5"}, {"1.5", "|0|<end>"}};
    CHECK_MASKS("{\"type\":\"number\",\"multipleOf\":0.25,\"minimum\":1,\"maximum\":1.5}", masks);
    /* every text of up to 6 bytes over a few characters, against exact decimals: accepted exactly
     * when it is a number without exponent, a multiple, and within the bounds */
    static const struct {
        const char *mult, *lo, *hi; /* lo, hi: inclusive; NULL none */
        uint64_t m;
        int k;
    } mb[] = {
        {"0.25", "-1", "2", 25, 2}, {"5", NULL, "60", 5, 0}, {"0.05", "0.1", NULL, 5, 2}, {"1.5", "-3", "3", 15, 1},
    };
    static const char malpha[] = "-.0125";
    for (size_t k = 0; k < sizeof mb / sizeof *mb && !pf_test_failed(); k++) {
        char schema[200];
        int n = snprintf(schema, sizeof schema, "{\"type\":\"number\",\"multipleOf\":%s", mb[k].mult);
        if (mb[k].lo) n += snprintf(schema + n, sizeof schema - (size_t)n, ",\"minimum\":%s", mb[k].lo);
        if (mb[k].hi) n += snprintf(schema + n, sizeof schema - (size_t)n, ",\"maximum\":%s", mb[k].hi);
        snprintf(schema + n, sizeof schema - (size_t)n, "}");
        test_dec lo, hi;
        CHECK((!mb[k].lo || test_dec_of(mb[k].lo, &lo)) && (!mb[k].hi || test_dec_of(mb[k].hi, &hi)));
        schema_fx f;
        CHECK(schema_fx_open(&f, false, schema) == 0);
        char doc[8];
        for (long code = 0; code < 7L * 7 * 7 * 7 * 7 * 7 && !pf_test_failed(); code++) {
            int len = text_of_code(code, malpha, doc);
            if (len < 0) continue;
            test_dec x;
            int want = test_dec_of(doc, &x) && (!mb[k].lo || test_dec_cmp(&x, &lo) >= 0) &&
                       (!mb[k].hi || test_dec_cmp(&x, &hi) <= 0);
            if (want && x.nd) { /* x * 10^k an integer divisible by m */
                long e = x.lead - x.nd + 1 + mb[k].k;
                uint64_t r = 0;
                for (int i = 0; i < x.nd; i++) r = (r * 10 + (uint64_t)(x.d[i] - '0')) % mb[k].m;
                for (long i = 0; i < e; i++) r = r * 10 % mb[k].m;
                want = e >= 0 && r == 0;
            }
            pf_matcher_reset(f.m);
            int got = pf_matcher_push_bytes(f.m, (const uint8_t *)doc, (size_t)len) == 1 && pf_matcher_can_end(f.m);
            CHECKF(got == want, "%s: '%s' %s", schema, doc, got ? "accepted" : "refused");
        }
        schema_fx_close(&f);
    }
    schema_expect_error("{\"type\":\"number\",\"multipleOf\":0.25,\"exclusiveMinimum\":0.3,\"exclusiveMaximum\":0.45}",
                        "admits no value");
    schema_expect_error("{\"type\":\"integer\",\"multipleOf\":7,\"minimum\":1,\"maximum\":6}", "admits no value");
    schema_expect_error("{\"type\":\"number\",\"multipleOf\":1e-20}", "multipleOf: more than 16 fraction digits");
    schema_expect_error("{\"type\":\"number\",\"multipleOf\":0}", "multipleOf: not a positive number");
    schema_expect_error("{\"type\":\"number\",\"multipleOf\":-2}", "multipleOf: not a positive number");
}

/* uniqueItems over items that are a few literals (each value taken once, equal values one: 1 and
 * 1.0, objects whatever their keys' order), or an array of at most one item. */
TEST(grammar_unique_items) {
    static const doc_case letters[] = {
        {"[\"a\",\"b\"]", 1}, {"[\"a\",\"a\"]", 0}, {"[\"a\",\"b\",\"c\"]", 1}, {"[\"c\", \"b\", \"a\"]", 1},
        {"[\"a\",\"b\",\"a\"]", 0}, {"[]", 1}, {"[\"b\",\"b\"]", 0},
    };
    CHECK_DOCS("{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\",\"c\"]},\"uniqueItems\":true}", letters);
    static const doc_case nums[] = {{"[1,1.0]", 0}, {"[1,2]", 1}, {"[1.0,2]", 1}, {"[2,1]", 1}, {"[2,2.0]", 0}};
    CHECK_DOCS("{\"items\":{\"enum\":[1,2]},\"uniqueItems\":true}", nums);
    static const doc_case flags[] = {{"[true,false]", 1}, {"[true,true]", 0}, {"[false]", 1}, {"[true,false,true]", 0}};
    CHECK_DOCS("{\"type\":\"array\",\"items\":{\"type\":\"boolean\"},\"uniqueItems\":true}", flags);
    static const doc_case prefix[] = {{"[\"ab\",\"abc\"]", 1}, {"[\"abc\",\"ab\"]", 1}, {"[\"ab\",\"ab\"]", 0}, {"[\"abc\",\"abc\"]", 0}};
    CHECK_DOCS("{\"items\":{\"enum\":[\"ab\",\"abc\"]},\"uniqueItems\":true,\"minItems\":1}", prefix);
    static const doc_case objs[] = {
        {"[{\"a\":1,\"b\":2},{\"b\":2,\"a\":1}]", 0}, {"[{\"a\":1,\"b\":2},{\"a\":2}]", 1}, {"[{\"a\":2},{\"a\":2}]", 0},
    };
    CHECK_DOCS("{\"items\":{\"enum\":[{\"a\":1,\"b\":2},{\"b\":2,\"a\":1},{\"a\":2}]},\"uniqueItems\":true}", objs);
    static const doc_case one[] = {{"[\"x\"]", 1}, {"[\"x\",\"y\"]", 0}, {"[]", 1}};
    CHECK_DOCS("{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"uniqueItems\":true,\"maxItems\":1}", one);
    schema_expect_error("{\"items\":{\"type\":\"boolean\"},\"uniqueItems\":true,\"minItems\":3}", "admits no value");
    schema_expect_error("{\"items\":{\"type\":\"string\"},\"uniqueItems\":true}", "keyword 'uniqueItems' is not supported");
    schema_expect_error("{\"items\":{\"enum\":[1,2]},\"uniqueItems\":1}", "uniqueItems: not a boolean");
    /* beside a $ref (2019-09 on), merged in allOf (unique when either asks), under not (an error) */
    static const doc_case ref[] = {{"[\"a\",\"b\"]", 1}, {"[\"a\",\"a\"]", 0}};
    CHECK_DOCS("{\"$defs\":{\"l\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\"]}}},\"$ref\":\"#/$defs/l\","
               "\"uniqueItems\":true}", ref);
    CHECK_DOCS("{\"allOf\":[{\"items\":{\"enum\":[\"a\",\"b\"]},\"uniqueItems\":false},{\"uniqueItems\":true}]}", ref);
    schema_expect_error("{\"type\":\"array\",\"not\":{\"uniqueItems\":true}}", "keyword 'not' is not supported");
}

/* additionalProperties as a schema: the listed keys with their own schemas, any other key (never
 * one spelling a listed key, given or not) with its schema; minProperties / maxProperties count
 * every key and leave room for the required ones. */
TEST(grammar_object_other_keys) {
    static const char mixed[] =
        "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"},\"name\":{\"type\":\"string\"}},"
        "\"required\":[\"id\"],\"additionalProperties\":{\"type\":\"boolean\"}}";
    static const doc_case docs[] = {
        {"{\"id\":1}", 1}, {"{\"id\":1,\"x\":true}", 1}, {"{\"x\":false,\"id\":1,\"name\":\"n\"}", 1},
        {"{\"id\":1,\"x\":1}", 0}, {"{\"id\":1,\"name\":true}", 0},
        {"{\"id\":1,\"i\":true}", 1}, {"{\"id\":1,\"idx\":true}", 1}, {"{\"id\":1,\"\\u0069d\":true}", 0},
        {"{\"x\":true}", 0}, {"{\"\xc3\xa9\":true,\"id\":0}", 1},
    };
    CHECK_DOCS(mixed, docs);
    static const char map[] = "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\",\"minimum\":0},"
                              "\"minProperties\":1,\"maxProperties\":2}";
    static const doc_case map_docs[] = {
        {"{}", 0}, {"{\"a\":1}", 1}, {"{\"a\":1,\"b\":2}", 1}, {"{\"a\":1,\"b\":2,\"c\":3}", 0}, {"{\"a\":-1}", 0},
        {"{\"\\u0061\":1}", 1},
    };
    CHECK_DOCS(map, map_docs);
    static const char counted[] =
        "{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{},\"c\":{}},\"required\":[\"c\"],\"maxProperties\":2,"
        "\"minProperties\":2}";
    static const doc_case counted_docs[] = {
        {"{\"c\":1}", 0}, {"{\"a\":1,\"c\":1}", 1}, {"{\"a\":1,\"b\":1}", 0}, {"{\"a\":1,\"b\":1,\"c\":1}", 0},
    };
    CHECK_DOCS(counted, counted_docs);
    static const mask_case counted_masks[] = {{"{\"a\":1,", "| |\"| "}, {"{\"a\":1,\"", "|c"}}; /* only the required key fits */
    CHECK_MASKS(counted, counted_masks);
    schema_expect_error("{\"type\":\"object\",\"properties\":{\"a\":{}},\"additionalProperties\":false,\"minProperties\":2}",
                        "admits no value");
    schema_expect_error("{\"type\":\"object\",\"required\":[\"a\",\"b\"],\"maxProperties\":1}", "admits no value");
    schema_expect_error("{\"type\":\"object\",\"maxProperties\":-1}", "maxProperties: not a non-negative integer");
}

/* Keys `properties` does not list are allowed with any value when additionalProperties is absent
 * (the spec's default), never one spelling a listed key; a listed key whose schema admits no value
 * stays forbidden; an other key takes the short escapes (the one spelling listed keys have). */
TEST(grammar_other_keys_by_default) {
    static const char open_obj[] =
        "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"},\"no\":{\"type\":\"object\",\"enum\":[1]},"
        "\"q\\\"\":{\"type\":\"null\"}},\"required\":[\"id\"]}";
    static const doc_case docs[] = {
        {"{\"id\":1}", 1}, {"{\"id\":1,\"x\":[1,{\"a\":null}]}", 1}, {"{\"x\": \"s\", \"id\": 2}", 1},
        {"{\"id\":1,\"no\":1}", 0}, {"{\"id\":\"1\"}", 0},
        {"{\"id\":1,\"a\\\"b\\n\":1}", 1}, {"{\"id\":1,\"q\\\"\":null}", 1}, {"{\"id\":1,\"q\\\"\":1}", 0},
    };
    CHECK_DOCS(open_obj, docs);
}

/* enum / const: a number in any spelling of its value, an array or object value with the spaces
 * documents put after ',' and ':', the short escapes; an anyOf of many consts is one literal set. */
TEST(grammar_literal_spellings) {
    static const doc_case nums[] = {
        {"2", 1}, {"2.0", 1}, {"0.5", 1}, {"1e-05", 1}, {"0.00001", 1}, {"1e+16", 1}, {"10000000000000000", 1},
        {"3", 0}, {"2.5", 0}, {"0.25", 0}, {"-0.0", 1}, {"0", 1}, {"[1, {\"a\": \"b\"}]", 1}, {"[1,{\"a\":\"b\"}]", 1},
        {"\"x\\ny\"", 1},
    };
    CHECK_DOCS("{\"enum\":[2,0.5e0,0.00001,1e16,-0,[1,{\"a\":\"b\"}],\"x\\ny\"]}", nums);
    char many[2048] = "{\"oneOf\":[";
    for (int i = 0; i < 40; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s{\"const\":\"v%d\",\"title\":\"t\"}", i ? "," : "", i);
    strcat(many, "]}");
    static const doc_case many_docs[] = {{"\"v0\"", 1}, {"\"v39\"", 1}, {"\"v40\"", 0}, {"\"v17\"", 1}};
    CHECK_DOCS(many, many_docs);
}

/* not: the forms whose complement the subset holds exactly, merged with the keywords beside it. */
TEST(grammar_not) {
    static const doc_case not_null[] = {{"1", 1}, {"\"a\"", 1}, {"null", 0}, {"{}", 1}};
    CHECK_DOCS("{\"not\":{\"type\":\"null\",\"description\":\"d\"}}", not_null);
    static const doc_case not_int[] = {{"\"a\"", 1}, {"1", 0}, {"true", 1}};
    CHECK_DOCS("{\"type\":[\"string\",\"integer\",\"boolean\"],\"not\":{\"type\":\"integer\"}}", not_int);
    static const doc_case not_req[] = {{"{\"a\":1}", 1}, {"{\"a\":1,\"b\":2}", 0}, {"{\"c\":1}", 1}};
    CHECK_DOCS("{\"type\":\"object\",\"properties\":{\"a\":{}},\"not\":{\"required\":[\"b\"]}}", not_req);
    static const doc_case not_false[] = {{"\"a\"", 1}, {"\"\"", 0}};
    CHECK_DOCS("{\"type\":\"string\",\"minLength\":1,\"not\":false}", not_false);
    schema_expect_error("{\"type\":\"string\",\"not\":{}}", "admits no value");
    schema_expect_error("{\"not\":true}", "admits no value");
    schema_expect_error("{\"type\":\"object\",\"required\":[\"b\"],\"not\":{\"required\":[\"b\"]}}", "admits no value");
    schema_expect_error("{\"properties\":{\"a\":{\"not\":{\"format\":\"email\"}}}}", "/properties/a: keyword 'not' is not supported over 'format'");
    /* not required: an object lacking a key (a non-object meets `required`, so never its `not`) */
    static const doc_case not_req_typed[] = {{"\"s\"", 0}, {"{}", 1}, {"{\"b\":1}", 0}, {"{\"a\":1}", 1}};
    CHECK_DOCS("{\"type\":[\"object\",\"string\"],\"not\":{\"required\":[\"b\"]}}", not_req_typed);
    static const doc_case not_both[] = {{"{\"a\":1}", 1}, {"{\"a\":1,\"b\":2}", 0}, {"{\"b\":1}", 1}, {"{}", 1}, {"3", 0}};
    CHECK_DOCS("{\"not\":{\"required\":[\"a\",\"b\"]}}", not_both);
    CHECK_DOCS("{\"not\":{\"allOf\":[{\"required\":[\"a\"]},{\"required\":[\"b\"]}]}}", not_both);
    schema_expect_error("{\"not\":{\"required\":[\"a\",1]}}", "required: not an array of strings");
}

/* additionalItems asserts something only after items in the tuple form, uniqueItems only when true. */
TEST(grammar_array_keywords_ignored) {
    schema_expect_error("{\"items\":[{}],\"additionalItems\":false}", "keyword 'additionalItems' is not supported");
    static const doc_case add_items[] = {{"[\"a\",\"b\"]", 1}, {"[1]", 0}, {"[]", 1}};
    CHECK_DOCS("{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"additionalItems\":false}", add_items);
    CHECK_DOCS("{\"items\":{\"type\":\"string\"},\"additionalItems\":{\"type\":\"integer\"}}", add_items);
    CHECK_DOCS("{\"items\":{\"type\":\"string\"},\"uniqueItems\":false}", add_items);
    schema_expect_error("{\"items\":{},\"uniqueItems\":true}", "keyword 'uniqueItems' is not supported");
}

/* enum / const beside any keyword: each value kept or dropped by the whole schema, checked exactly
 * at compile time (numbers as decimals, strings through the automata). */
TEST(grammar_enum_filtered) {
    static const doc_case odd[] = {{"1", 1}, {"2", 0}, {"3", 1}, {"6", 0}, {"\"x\"", 0}};
    CHECK_DOCS("{\"allOf\":[{\"enum\":[1,2,3,6,\"x\"]},{\"not\":{\"multipleOf\":2}},{\"type\":\"integer\"}]}", odd);
    static const doc_case len[] = {{"\"a\"", 0}, {"\"bb\"", 1}, {"\"ccc\"", 0}};
    CHECK_DOCS("{\"type\":\"string\",\"enum\":[\"a\",\"bb\",\"ccc\"],\"minLength\":2,\"maxLength\":2}", len);
    static const doc_case objs[] = {{"{\"a\":1}", 0}, {"{\"b\":2}", 1}, {"{\"b\": 2}", 1}};
    CHECK_DOCS("{\"enum\":[{\"a\":1},{\"b\":2}],\"not\":{\"required\":[\"a\"]}}", objs);
    static const doc_case bound[] = {{"1.5", 0}, {"2", 1}, {"2.0", 1}, {"\"x\"", 0}};
    CHECK_DOCS("{\"allOf\":[{\"enum\":[1.5,2,\"x\"]},{\"not\":{\"maximum\":1.9}}]}", bound);
    /* decimals, not doubles: 2^53 + 1 is above 2^53 though both read as the same double */
    schema_expect_error("{\"enum\":[9007199254740993],\"maximum\":9007199254740992}", "admits no value");
    schema_expect_error("{\"const\":0.3,\"multipleOf\":0.1,\"exclusiveMaximum\":0.3}", "admits no value");
    schema_expect_error("{\"enum\":[{}],\"unevaluatedProperties\":false}", "cannot be checked against 'unevaluatedProperties'");
    schema_expect_error("{\"enum\":[\"a\"],\"format\":\"regex\"}", "cannot be checked against 'format'");
    pf_schema *s = NULL;
    char err[PF_ERR_LEN];
    const char *dec = "{\"const\":0.3,\"multipleOf\":0.1}"; /* 0.3 / 0.1 is not 3 in doubles */
    CHECKF(pf_schema_compile(dec, strlen(dec), &s, err) == PF_SCHEMA_OK, "%s", err);
    pf_schema_free(s);
}

/* allOf merged into one schema where the merge is exact ($ref branches followed, properties merged
 * key by key, required joined, types intersected); keywords beside anyOf / oneOf go into every
 * branch; oneOf only where no value can meet two branches (types, string literals, a required
 * discriminator key). */
TEST(grammar_all_of_one_of) {
    static const char all[] =
        "{\"$defs\":{\"base\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\",\"minimum\":0}},"
        "\"required\":[\"id\"]}},\"allOf\":[{\"$ref\":\"#/$defs/base\"},{\"properties\":{\"id\":{\"maximum\":9},"
        "\"name\":{\"type\":\"string\",\"maxLength\":2}},\"required\":[\"name\"]}]}";
    static const doc_case all_docs[] = {
        {"{\"id\":3,\"name\":\"ab\"}", 1}, {"{\"id\":10,\"name\":\"ab\"}", 0}, {"{\"id\":3}", 0},
        {"{\"id\":-1,\"name\":\"\"}", 0}, {"{\"name\":\"abc\",\"id\":1}", 0}, {"{\"name\":\"\",\"id\":9}", 1},
    };
    CHECK_DOCS(all, all_docs);
    static const char typed_any[] = "{\"type\":\"string\",\"anyOf\":[{\"maxLength\":1},{\"enum\":[\"abc\",\"x\",3]}]}";
    static const doc_case any_docs[] = {{"\"a\"", 1}, {"\"abc\"", 1}, {"\"ab\"", 0}, {"3", 0}, {"\"\"", 1}};
    CHECK_DOCS(typed_any, any_docs);
    static const char one[] =
        "{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"},{\"type\":\"object\",\"properties\":{\"kind\":"
        "{\"const\":\"a\"}},\"required\":[\"kind\"]},{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"b\"},"
        "\"n\":{\"type\":\"integer\"}},\"required\":[\"kind\"]}]}";
    static const doc_case one_docs[] = {
        {"\"x\"", 1}, {"5", 1}, {"{\"kind\":\"a\"}", 1}, {"{\"kind\":\"b\",\"n\":1}", 1}, {"{\"kind\":\"c\"}", 0},
        {"5.5", 0},
    };
    CHECK_DOCS(one, one_docs);
    schema_expect_error("{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"string\",\"format\":\"email\"}]}",
                        "keyword 'oneOf' (branches 0 and 1 may both hold a value; excluded: keyword 'not' is not supported over 'format'");
    /* "not an integer" takes every number away (stricter than the spec), so nothing is left */
    schema_expect_error("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "admits no value");
    schema_expect_error("{\"allOf\":[{\"type\":\"integer\",\"minimum\":1},{\"minimum\":2}]}",
                        "/allOf/1: 'minimum' in two merged schemas with different values is not supported");
    schema_expect_error("{\"allOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "admits no value");
    /* additionalProperties beside properties the other branch does not list: each branch lists the
     * other's keys with its own additionalProperties, then they merge key by key */
    static const char closed[] =
        "{\"allOf\":[{\"properties\":{\"a\":{}},\"additionalProperties\":false},{\"properties\":{\"b\":{}}}]}";
    static const doc_case closed_docs[] = {{"{\"a\":1}", 1}, {"{\"b\":1}", 0}, {"{\"c\":1}", 0}, {"{}", 1}};
    CHECK_DOCS(closed, closed_docs);
    static const char typed[] =
        "{\"type\":\"object\",\"allOf\":[{\"properties\":{\"a\":{\"type\":\"integer\"}},\"additionalProperties\":"
        "{\"type\":\"string\"}},{\"properties\":{\"b\":{\"maxLength\":2},\"a\":{\"minimum\":0}},"
        "\"additionalProperties\":{\"minLength\":1}}]}";
    static const doc_case typed_docs[] = {
        {"{\"a\":1,\"b\":\"xy\"}", 1}, {"{\"b\":\"xyz\"}", 0}, {"{\"b\":1}", 0}, {"{\"c\":\"\"}", 0},
        {"{\"c\":\"z\"}", 1}, {"{\"a\":-1}", 0}, {"{\"a\":\"s\"}", 0},
    };
    CHECK_DOCS(typed, typed_docs);
    schema_expect_error("{\"allOf\":[{\"properties\":{\"a\":{}},\"additionalProperties\":false},{\"properties\":{\"b\":{}},"
                        "\"required\":[\"b\"]}]}", "admits no value");
    schema_expect_error("{\"allOf\":[{\"properties\":{\"a\":{}},\"additionalProperties\":false},{\"patternProperties\":"
                        "{\"^b\":{}}}]}", "additionalProperties merged with properties it does not list");
    /* two enums: the values both list; two anyOfs: every pair of branches merged */
    static const doc_case enums[] = {{"\"b\"", 1}, {"1", 1}, {"\"a\"", 0}, {"\"c\"", 0}};
    CHECK_DOCS("{\"allOf\":[{\"enum\":[\"a\",\"b\",1]},{\"enum\":[\"b\",1,\"c\"]}]}", enums);
    schema_expect_error("{\"allOf\":[{\"enum\":[\"a\"]},{\"enum\":[\"b\"]}]}", "admits no value");
    static const doc_case pairs[] = {{"\"a\"", 1}, {"\"\"", 0}, {"\"ab\"", 0}, {"7", 1}, {"3", 0}, {"true", 0}};
    CHECK_DOCS("{\"allOf\":[{\"anyOf\":[{\"type\":\"string\",\"maxLength\":1},{\"type\":\"integer\"}]},{\"anyOf\":"
               "[{\"type\":\"string\",\"minLength\":1},{\"type\":\"integer\",\"minimum\":5}]}]}", pairs);
    schema_expect_error("{\"allOf\":[]}", "allOf: not a non-empty array");
    schema_expect_error("{\"allOf\":[{\"pattern\":\"a\"},{\"pattern\":\"b\"}]}", "'pattern' in two merged schemas");
    schema_expect_error("{\"type\":\"object\",\"anyOf\":[{\"$ref\":\"#\"},{\"$ref\":\"#\"}]}", "json schema: ");
}

/* oneOf whose branches may overlap: each branch with the others excluded (not {"anyOf": the
 * others}, its complement merged in, or each literal checked), and object branches told apart by a
 * key one requires and the other forbids or gives disjoint values. */
TEST(grammar_one_of_overlapping) {
    static const char req[] = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{}},"
                              "\"additionalProperties\":{\"type\":\"integer\"},\"maxProperties\":2,\"oneOf\":[{\"required\":[\"a\"]},{\"required\":[\"b\"]}]}";
    static const doc_case req_docs[] = {
        {"{\"a\":1}", 1}, {"{\"b\":\"x\"}", 1}, {"{\"a\":1,\"b\":2}", 0}, {"{}", 0}, {"{\"c\":1,\"b\":null}", 1},
        {"{\"a\":\"x\"}", 0},
    };
    CHECK_DOCS(req, req_docs);
    static const char three[] = "{\"maxProperties\":2,\"oneOf\":[{\"required\":[\"x\"]},{\"required\":[\"y\"]},{\"type\":\"string\"}]}";
    static const doc_case three_docs[] = {
        {"{\"x\":1}", 1}, {"{\"y\":1,\"z\":2}", 1}, {"{\"x\":1,\"y\":1}", 0}, {"\"s\"", 0}, {"{}", 0}, {"1", 0},
    };
    CHECK_DOCS(three, three_docs);
    static const char lits[] = "{\"oneOf\":[{\"enum\":[1,\"a\",\"b\"]},{\"enum\":[1.0,\"b\",\"c\"]}]}";
    static const doc_case lit_docs[] = {{"\"a\"", 1}, {"\"c\"", 1}, {"\"b\"", 0}, {"1", 0}, {"1.0", 0}};
    CHECK_DOCS(lits, lit_docs);
    static const char ref[] = "{\"$defs\":{\"s\":{\"type\":\"string\"}},\"oneOf\":[{\"$ref\":\"#/$defs/s\"},"
                              "{\"type\":[\"string\",\"null\"]}]}";
    static const doc_case ref_docs[] = {{"null", 1}, {"\"x\"", 0}, {"1", 0}};
    CHECK_DOCS(ref, ref_docs);
    static const char closed[] = "{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"a\"],"
                                 "\"additionalProperties\":false},{\"type\":\"object\",\"properties\":{\"b\":{},\"c\":{}},"
                                 "\"required\":[\"b\"],\"additionalProperties\":{\"type\":\"integer\"}}]}";
    static const doc_case closed_docs[] = {
        {"{\"a\":1}", 1}, {"{\"b\":1,\"c\":2}", 1}, {"{\"b\":1,\"a\":2}", 1}, {"{\"a\":1,\"c\":2}", 0}, {"{\"c\":1}", 0},
    };
    CHECK_DOCS(closed, closed_docs);
    static const char nots[] = "{\"allOf\":[{\"not\":{\"required\":[\"a\"]}},{\"not\":{\"type\":\"string\"}}],"
                               "\"type\":[\"object\",\"string\"]}";
    static const doc_case not_docs[] = {{"{\"b\":1}", 1}, {"{\"a\":1}", 0}, {"\"s\"", 0}};
    CHECK_DOCS(nots, not_docs);
    schema_expect_error("{\"oneOf\":[{\"required\":[\"a\"]},{\"items\":{\"type\":\"string\"}}]}",
                        "keyword 'oneOf' (branches 0 and 1 may both hold a value; excluded: keyword 'not' is not supported over 'items'");
}

/* dependencies (the array form, a schema of required alone, false) and dependentRequired: a key
 * present requires its keys, followed through, counted against maxProperties; other forms refused. */
TEST(grammar_dependencies) {
    static const char arr[] = "{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{},\"c\":{\"type\":\"integer\"}},"
                              "\"dependencies\":{\"a\":[\"b\"],\"b\":{\"required\":[\"c\"]}},\"maxProperties\":3,"
                              "\"additionalProperties\":{\"type\":\"integer\"}}";
    static const doc_case arr_docs[] = {
        {"{}", 1}, {"{\"c\":1}", 1}, {"{\"b\":1,\"c\":2}", 1}, {"{\"a\":1,\"b\":2,\"c\":3}", 1}, {"{\"c\":3,\"a\":1,\"b\":2}", 1},
        {"{\"a\":1,\"b\":2}", 0}, {"{\"a\":1,\"c\":2}", 0}, {"{\"b\":1}", 0}, {"{\"d\":1,\"a\":1,\"b\":2,\"c\":3}", 0},
        {"{\"a\":1,\"d\":1,\"b\":2,\"c\":3}", 0},
    };
    CHECK_DOCS(arr, arr_docs);
    /* a key outside properties takes additionalProperties' values; one that may not appear forbids
     * the key requiring it */
    static const char add[] = "{\"properties\":{\"x\":{}},\"additionalProperties\":{\"type\":\"string\"},"
                              "\"dependentRequired\":{\"x\":[\"y\"]},\"dependencies\":{\"z\":false}}";
    static const doc_case add_docs[] = {
        {"{\"x\":1,\"y\":\"s\"}", 1}, {"{\"x\":1}", 0}, {"{\"x\":1,\"y\":2}", 0}, {"{\"y\":\"s\"}", 1}, {"{\"z\":\"s\"}", 0},
    };
    CHECK_DOCS(add, add_docs);
    static const char closed[] = "{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{}},\"additionalProperties\":false,"
                                 "\"dependencies\":{\"a\":[\"q\"]}}";
    static const doc_case closed_docs[] = {{"{\"b\":1}", 1}, {"{\"a\":1}", 0}, {"{}", 1}};
    CHECK_DOCS(closed, closed_docs);
    static const char req[] = "{\"type\":\"object\",\"required\":[\"a\"],\"dependencies\":{\"a\":[\"b\"]},"
                              "\"additionalProperties\":{\"type\":\"integer\"}}";
    static const doc_case req_docs[] = {{"{\"a\":1,\"b\":2}", 1}, {"{\"a\":1}", 0}, {"{}", 0}};
    CHECK_DOCS(req, req_docs);
    schema_expect_error("{\"type\":\"object\",\"dependencies\":{\"a\":{\"propertyNames\":{\"maxLength\":3}}}}",
                        "keyword 'propertyNames' is not supported");
    schema_expect_error("{\"type\":\"object\",\"required\":[\"a\"],\"additionalProperties\":false,\"properties\":{\"a\":{}},"
                        "\"dependencies\":{\"a\":[\"b\"]}}",
                        "admits no value");
    schema_expect_error("{\"patternProperties\":{\"^p\":{}},\"dependencies\":{\"pa\":[\"b\"]}}", "keyword 'dependencies' on a key");
}

TEST(grammar_property_random_schemas) {
    uint64_t seed = 12345;
    int complete = 0, walks = 0;
    schema_draws d; /* a random schema that admits no value is passed over (schema_fx_open printed why) */
    schema_draws_start(&d, &seed, 400, false, schema_random);
    while (schema_draws_next(&d))
        for (int w = 0; w < 5; w++, walks++) {
            int r = walk_once(&d.f, d.schema, &seed);
            if (r < 0) {
                schema_draws_stop(&d);
                CHECK(0);
            }
            complete += r;
        }
    CHECKF(complete * 10 >= walks * 9, "%d of %d walks completed", complete, walks);
}

TEST(grammar_json_mode) {
    schema_fx f;
    CHECK(schema_fx_open(&f, false, NULL) == 0);
    CHECK_MASK(&f, "", "|{|{\"|{}");
    uint64_t seed = 99;
    for (int i = 0; i < 20; i++) CHECK(walk_once(&f, "{\"type\":\"object\"}", &seed) >= 0);
    schema_fx_close(&f);
}

/* Adversarial sizes stay fast: a 20,000-value enum, 32 levels of arrays, 16-way anyOf chains. */
TEST(grammar_bounded) {
    size_t cap = 400000, n = 0;
    char *s = malloc(cap);
    n += (size_t)snprintf(s + n, cap - n, "{\"enum\":[");
    for (int i = 0; i < 20000; i++) n += (size_t)snprintf(s + n, cap - n, "%s\"v%d\"", i ? "," : "", i * 7);
    snprintf(s + n, cap - n, "]}");
    clock_t t0 = clock();
    schema_fx f;
    CHECK(schema_fx_open(&f, false, s) == 0);
    CHECK_MASK(&f, "\"v1400", "|\"|0|7");
    schema_fx_close(&f);
    n = 0;
    for (int i = 0; i < 16; i++) n += (size_t)snprintf(s + n, cap - n, "{\"anyOf\":[{\"type\":\"array\",\"items\":");
    n += (size_t)snprintf(s + n, cap - n, "{}");
    for (int i = 0; i < 16; i++) n += (size_t)snprintf(s + n, cap - n, "},{\"type\":\"array\"}]}");
    CHECK(schema_fx_open(&f, false, s) == 0);
    uint64_t seed = 5;
    for (int i = 0; i < 10; i++) CHECK(walk_once(&f, s, &seed) >= 0);
    schema_fx_close(&f);
    free(s);
    CHECKF((double)(clock() - t0) / CLOCKS_PER_SEC < 20, "took %.1f s", (double)(clock() - t0) / CLOCKS_PER_SEC);
}

/* pf_mask_apply against the bit-by-bit rule: zero words, full words, mixed words, a partial last
 * word; allowed logits keep their values, every other one is -inf. */
TEST(grammar_mask_apply) {
    enum { N = 32 * 9 + 13, WORDS = (N + 31) / 32 };
    uint32_t bits[WORDS] = {0, UINT32_MAX, 0x80000001u, 0x7FFFFFFEu, 0x00010000u, 0, UINT32_MAX, 0xA5A5A5A5u,
                            0xFFFF0000u, 0x00001ABCu};
    float logits[N];
    for (int i = 0; i < N; i++) logits[i] = (float)i - 100.0f;
    pf_mask_apply(bits, N, logits);
    for (int i = 0; i < N; i++) {
        if (pf_mask_has(bits, i)) CHECKF(logits[i] == (float)i - 100.0f, "logit %d changed", i);
        else CHECKF(isinf(logits[i]) && logits[i] < 0, "logit %d not masked", i);
    }
}

/* id's longest allowed proper-prefix token by a scan of the vocabulary: its length, -1 if none. */
static int scan_prefix_len(const schema_fx *f, int32_t id) {
    int best = -1;
    for (int32_t a = 0; a < f->v.n; a++) {
        uint32_t la = f->v.lens[a];
        if (!pf_mask_has(f->bits, a) || !la || la >= f->v.lens[id] || (int)la <= best) continue;
        if (!memcmp(f->v.bytes[a], f->v.bytes[id], la)) best = (int)la;
    }
    return best;
}

/* pf_mask_apply_aligned: a refused top-scoring token gives its score to its longest allowed prefix
 * token; an allowed top changes nothing; every token's allowed prefix equals a scan of the
 * vocabulary at each state of a document. */
TEST(grammar_mask_aligned) {
    static const char k_both[] =
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"}},"
        "\"required\":[\"name\",\"age\"],\"additionalProperties\":false}";
    static const char *const prefixes[] = {"", "{", "{\"name\":\"Al", "{\"name\":\"Al\",", "{\"name\":\"Al\",\"age\":1"};
    schema_fx f;
    CHECK(schema_fx_open(&f, false, k_both) == 0);
    for (size_t p = 0; p < sizeof prefixes / sizeof *prefixes; p++) {
        pf_matcher_reset(f.m);
        CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)prefixes[p], strlen(prefixes[p])) == 1);
        pf_token_mask(f.tm, f.cache, f.m, f.bits);
        for (int32_t id = 0; id < f.v.n; id++) {
            int32_t a = pf_token_masker_allowed_prefix(f.tm, f.bits, id);
            int want = f.v.lens[id] ? scan_prefix_len(&f, id) : -1;
            CHECKF((a < 0 ? -1 : (int)f.v.lens[a]) == want, "after '%s': token %d's allowed prefix %d, want length %d",
                   prefixes[p], id, a, want);
            CHECKF(a < 0 || pf_mask_has(f.bits, a), "prefix %d of %d not allowed", a, id);
        }
    }
    /* after {"name":"Al the schema refuses "} (age is required) and allows " and ", */
    int32_t close = schema_vocab_find(&f.v, "\"}"), quote = '"', comma = schema_vocab_find(&f.v, "\","),
            ab = schema_vocab_find(&f.v, "ab");
    CHECK(close >= 0 && comma >= 0 && ab >= 0);
    pf_matcher_reset(f.m);
    CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)"{\"name\":\"Al", 11) == 1);
    pf_token_mask(f.tm, f.cache, f.m, f.bits);
    CHECK(!pf_mask_has(f.bits, close) && pf_mask_has(f.bits, quote) && pf_mask_has(f.bits, comma) && pf_mask_has(f.bits, ab));
    float *l = calloc((size_t)f.v.n, sizeof *l);
    CHECK(l != NULL);
    l[close] = 5.0f;
    l[ab] = 1.0f;
    pf_mask_apply_aligned(f.tm, f.bits, f.v.n, l);
    CHECKF(l[quote] == 5.0f && l[ab] == 1.0f && l[comma] == 0.0f && isinf(l[close]), "aligned: \" %g ab %g \", %g \"} %g",
           l[quote], l[ab], l[comma], l[close]);
    for (int32_t id = 0; id < f.v.n; id++) l[id] = 0.0f;
    l[close] = 5.0f;
    l[ab] = 6.0f; /* the top is allowed: the mask alone */
    pf_mask_apply_aligned(f.tm, f.bits, f.v.n, l);
    CHECKF(l[quote] == 0.0f && l[ab] == 6.0f && isinf(l[close]), "the top allowed: \" %g", l[quote]);
    free(l);
    schema_fx_close(&f);
}

/* Wrapped documents (pf_schema_add_wrap), two forms: the prefix byte for byte (no space after its ':' or ','),
 * then the document, then the suffix; complete only after the suffix, closed there; masks stay a
 * scan of the vocabulary across the seams. */
TEST(grammar_wrap_prefix_suffix) {
    schema_fx f;
    char err[PF_ERR_LEN];
    CHECK(schema_fx_open(&f, false, "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"],"
                      "\"additionalProperties\":false}") == 0);
    pf_matcher_free(f.m);
    CHECK(pf_schema_add_wrap(f.s, "<t>\n{\"x\":", f.s->root, "}\n</t>", err) == PF_SCHEMA_OK);
    CHECK(pf_schema_add_wrap(f.s, "<u>", PF_SN_ID_ANY_STRING, NULL, err) == PF_SCHEMA_OK);
    CHECK((f.m = pf_matcher_new(f.s)) != NULL);
    static const struct { const char *text; int push, can_end, closed; } cases[] = {
        {"<t>\n{\"x\":{\"a\":1}}\n</t>", 1, 1, 1},
        {"<t>\n{\"x\":{\"a\":12}", 1, 0, 0},
        {"<t>\n{\"x\":{\"a\":1}}\n</t", 1, 0, 0},
        {"<t>\n{\"x\": {\"a\":1}}\n</t>", 0, 0, 0},  /* no space inside the wrap's text */
        {"<u>\"hi\"", 1, 1, 1},                        /* the second form, no suffix */
        {"<u>{\"a\":1}", 0, 0, 0},
        {"<t> {\"x\":{\"a\":1}}\n</t>", 0, 0, 0},
        {"{\"a\":1}", 0, 0, 0},                        /* the prefix is required */
        {"<t>\n{\"x\":{\"a\":1}}\n</t>x", 0, 0, 0},    /* nothing after the suffix */
        {"<t>\n{\"x\":{\"a\": 1}}\n</t>", 1, 1, 1},   /* the document keeps its spacing */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pf_matcher_reset(f.m);
        int r = pf_matcher_push_bytes(f.m, (const uint8_t *)cases[i].text, strlen(cases[i].text));
        CHECKF(r == cases[i].push, "'%s': push %d", cases[i].text, r);
        if (r == 1) {
            CHECKF(pf_matcher_can_end(f.m) == cases[i].can_end && pf_matcher_closed(f.m) == cases[i].closed,
                   "'%s': can_end %d closed %d", cases[i].text, pf_matcher_can_end(f.m), pf_matcher_closed(f.m));
        }
    }
    static const char *walk[] = {"", "<", "<t>\n{\"x\":", "<t>\n{\"x\":{\"a\":1}", "<t>\n{\"x\":{\"a\":1}}\n"};
    for (size_t i = 0; i < sizeof walk / sizeof walk[0]; i++) {
        pf_matcher_reset(f.m);
        CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)walk[i], strlen(walk[i])) == 1);
        CHECKF(mask_matches_scan(&f), "after '%s'", walk[i]);
    }
    schema_fx_close(&f);
}

/* A "#..." $ref inside a subschema with its own $id (or draft 4's id) is relative to that
 * subschema, one outside it to the document; an anchor-only id changes nothing. */
TEST(grammar_ref_inner_id) {
    static const char *const inner =
        "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"definitions\":{\"x\":{\"type\":\"integer\"}},"
        "\"properties\":{\"p\":{\"$id\":\"http://e.org/p.json\",\"definitions\":{\"x\":{\"type\":\"string\"}},"
        "\"properties\":{\"q\":{\"$ref\":\"#/definitions/x\"},\"r\":{\"$ref\":\"#\"}}},"
        "\"s\":{\"$ref\":\"#/definitions/x\"},\"t\":{\"$ref\":\"#/properties/p/definitions/x\"}},"
        "\"additionalProperties\":false}";
    static const doc_case inner_docs[] = {
        {"{\"p\":{\"q\":\"a\"},\"s\":1,\"t\":\"b\"}", 1}, {"{\"p\":{\"q\":1}}", 0}, {"{\"s\":\"a\"}", 0},
        {"{\"t\":1}", 0}, {"{\"p\":{\"r\":{\"q\":\"a\",\"r\":{}}}}", 1}, {"{\"p\":{\"r\":{\"q\":2}}}", 0},
    };
    CHECK_DOCS(inner, inner_docs);
    static const char *const old =
        "{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"definitions\":{\"x\":{\"type\":\"integer\"}},"
        "\"items\":{\"id\":\"item.json\",\"definitions\":{\"x\":{\"type\":\"boolean\"}},"
        "\"properties\":{\"v\":{\"$ref\":\"#/definitions/x\"}}}}";
    static const doc_case old_docs[] = {{"[{\"v\":true}]", 1}, {"[{\"v\":1}]", 0}};
    CHECK_DOCS(old, old_docs);
    static const char *const anchor =
        "{\"definitions\":{\"x\":{\"type\":\"integer\"}},\"items\":{\"$id\":\"#item\",\"definitions\":{\"x\":{\"type\":\"null\"}},"
        "\"properties\":{\"v\":{\"$ref\":\"#/definitions/x\"}}}}";
    static const doc_case anchor_docs[] = {{"[{\"v\":1}]", 1}, {"[{\"v\":null}]", 0}};
    CHECK_DOCS(anchor, anchor_docs);
    static const char *const no_draft =
        "{\"definitions\":{\"x\":{\"type\":\"integer\"}},\"items\":{\"$id\":\"item.json\",\"definitions\":{\"x\":{\"type\":\"null\"}},"
        "\"properties\":{\"v\":{\"$ref\":\"#/definitions/x\"}}}}";
    static const doc_case no_draft_docs[] = {{"[{\"v\":null}]", 1}, {"[{\"v\":1}]", 0}};
    CHECK_DOCS(no_draft, no_draft_docs);
}

/* More than 64 listed keys (up to 128): each key once, the required ones and those a given one
 * requires (a key past the 64th among them), maxProperties leaving room for them. */
TEST(grammar_object_many_properties) {
    char *s = schema_wide_object(100, ",\"required\":[\"p3\",\"p70\",\"p99\"],\"dependentRequired\":{\"p90\":[\"p5\"],"
                               "\"p6\":[\"p80\"]},\"maxProperties\":6,\"additionalProperties\":false");
    static const doc_case docs[] = {
        {"{\"p3\":1,\"p70\":2,\"p99\":3}", 1},
        {"{\"p99\":3,\"p70\":2,\"p3\":1}", 1},
        {"{\"p3\":1,\"p99\":3}", 0},
        {"{\"p3\":1,\"p70\":2,\"p99\":3,\"p90\":4}", 0},
        {"{\"p3\":1,\"p70\":2,\"p99\":3,\"p90\":4,\"p5\":0}", 1},
        {"{\"p3\":1,\"p70\":2,\"p99\":3,\"p6\":4}", 0},
        {"{\"p3\":1,\"p6\":4,\"p70\":2,\"p80\":0,\"p99\":3}", 1},
        {"{\"p3\":1,\"p70\":2,\"p99\":3,\"p90\":4,\"p5\":0,\"p6\":1}", 0}, /* p80 would be a 7th key */
        {"{\"p3\":1,\"p70\":2,\"p99\":3,\"p64\":1,\"p65\":1,\"p66\":1}", 1},
        {"{\"p3\":1,\"p70\":2,\"p99\":3,\"p64\":1,\"p65\":1,\"p66\":1,\"p67\":1}", 0},
        {"{\"p3\":1,\"p70\":2,\"p99\":3,\"p100\":1}", 0},
    };
    CHECK_DOCS(s, docs);
    schema_fx f;
    CHECK(schema_fx_open(&f, false, s) == 0);
    static const char given[] = "{\"p3\":1,\"p99\":3,";
    CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)given, strlen(given)) == 1);
    CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)"\"p99\"", 5) == 0); /* a key past the 64th, twice */
    CHECK(pf_matcher_push_bytes(f.m, (const uint8_t *)"\"p70\"", 5) == 1);
    schema_fx_close(&f);
    free(s);
    /* 128 keys, the last ones required, other keys allowed (a listed key given twice is refused too,
     * as every key text: grammar_masks_object) */
    s = schema_wide_object(128, ",\"required\":[\"p127\",\"p99\"],\"minProperties\":3");
    static const doc_case all[] = {
        {"{\"p127\":1,\"p99\":2}", 0}, {"{\"p127\":1,\"p99\":2,\"q\":3}", 1}, 
        {"{\"p127\":1,\"p98\":0,\"p99\":2}", 1}
    };
    CHECK_DOCS(s, all);
    free(s);
    s = schema_wide_object(129, "");
    schema_expect_error(s, "more than 128 properties in one object");
    free(s);
}

/* Random walks through wide objects' masks, validated by Python's jsonschema. */
TEST(grammar_object_many_properties_walks_validate) {
    char *a = schema_wide_object(90, ",\"required\":[\"p1\",\"p88\"],\"dependentRequired\":{\"p77\":[\"p66\",\"p7\"]},"
                              "\"maxProperties\":5,\"additionalProperties\":false");
    char *b = schema_wide_object(128, ",\"required\":[\"p127\"],\"minProperties\":2,\"maxProperties\":4");
    const char *const schemas[] = {a, b};
    schema_walks_validate(schemas, 2, "many_properties", 40);
    free(a);
    free(b);
}

/* contains (with minContains): at least that many items of the items schema merged with the
 * contains schema; `]` refused until then, and an item that does not count refused once the items
 * maxItems leaves are all needed for ones that do. */
TEST(grammar_contains) {
    static const doc_case ten[] = {
        {"[10]", 1}, {"[1,2]", 0}, {"[1,2,30]", 1}, {"[1,2,3]", 0}, {"[]", 0}, {"[11,1]", 1}, {"[1, 12, 2]", 1},
        {"[1,2,3,40]", 0}, {"[\"x\",10]", 0},
    };
    CHECK_DOCS("{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"contains\":{\"minimum\":10},\"maxItems\":3}", ten);
    static const doc_case two[] = {
        {"[\"x\",\"x\"]", 1}, {"[\"x\",\"y\",\"x\"]", 1}, {"[\"x\",\"y\",\"z\"]", 0}, {"[\"x\"]", 0}, {"[\"y\",\"x\",\"x\",\"y\"]", 1},
    };
    CHECK_DOCS("{\"items\":{\"type\":\"string\"},\"contains\":{\"const\":\"x\"},\"minContains\":2}", two);
    static const doc_case any[] = {{"[\"ab\"]", 1}, {"[1,\"ab\"]", 1}, {"[1]", 0}, {"[\"a\"]", 0}, {"[[\"ab\"]]", 0}, {"[]", 0}};
    CHECK_DOCS("{\"contains\":{\"type\":\"string\",\"minLength\":2}}", any);
    static const doc_case none[] = {{"[]", 1}, {"[1]", 1}};
    CHECK_DOCS("{\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"minContains\":0}", none);
    /* nested, and beside minItems */
    static const doc_case nest[] = {
        {"[[true],[false,true]]", 1}, {"[[true],[false]]", 0}, {"[[true]]", 0}, {"[[true],[true],[]]", 0},
    };
    CHECK_DOCS("{\"type\":\"array\",\"minItems\":2,\"items\":{\"type\":\"array\",\"contains\":{\"const\":true}}}", nest);
    schema_expect_error("{\"type\":\"array\",\"contains\":false}", "admits no value");
    schema_expect_error("{\"type\":\"array\",\"contains\":{},\"maxItems\":0}", "admits no value");
    schema_expect_error("{\"type\":\"array\",\"contains\":{},\"minContains\":3,\"maxItems\":2}", "admits no value");
    schema_expect_error("{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"contains\":{\"type\":\"integer\"}}",
                        "admits no value");
    schema_expect_error("{\"type\":\"array\",\"contains\":{},\"maxContains\":2}", "keyword 'maxContains' is not supported");
    schema_expect_error("{\"type\":\"array\",\"items\":{\"enum\":[1,2]},\"contains\":{\"const\":1},\"uniqueItems\":true}",
                        "keyword 'contains' is not supported beside uniqueItems");
    schema_expect_error("{\"type\":\"array\",\"items\":{\"minimum\":1},\"contains\":{\"minimum\":2}}",
                        "keyword 'contains' is not supported with these items");
    schema_expect_error("{\"type\":\"array\",\"not\":{\"contains\":{}}}", "keyword 'not' is not supported");
}

/* Random walks under contains, validated by Python's jsonschema. */
TEST(grammar_contains_walks_validate) {
    static const char *const schemas[] = {
        "{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"contains\":{\"minimum\":10},\"maxItems\":3}",
        "{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\",\"c\"]},\"contains\":{\"const\":\"c\"},\"minContains\":2,"
        "\"maxItems\":4}",
        "{\"type\":\"object\",\"properties\":{\"t\":{\"type\":\"array\",\"contains\":{\"type\":\"string\",\"pattern\":\"^x\"}}},"
        "\"required\":[\"t\"],\"additionalProperties\":false}",
        "{\"type\":\"array\",\"minItems\":2,\"maxItems\":3,\"items\":{\"type\":\"array\",\"contains\":{\"const\":true},"
        "\"maxItems\":2}}",
    };
    schema_walks_validate(schemas, (int)(sizeof schemas / sizeof *schemas), "contains", 60);
}
