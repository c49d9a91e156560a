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

/* A python3 with jsonschema: $PF_JSONSCHEMA_PYTHON, $PYTHON, python3 or /usr/bin/python3. */
static const char *jsonschema_python(void) {
    static const char *cands[4];
    cands[0] = getenv("PF_JSONSCHEMA_PYTHON");
    cands[1] = getenv("PYTHON");
    cands[2] = "python3";
    cands[3] = "/usr/bin/python3";
    for (int i = 0; i < 4; i++) {
        char cmd[512];
        if (!cands[i]) continue;
        snprintf(cmd, sizeof cmd, "%s -c 'import jsonschema' >/dev/null 2>&1", cands[i]);
        if (system(cmd) == 0) return cands[i];
    }
    return NULL;
}

/* The mask at m's position is what pushing each token's bytes says. */
static int mask_is_scan(pf_matcher *m, const schema_vocab *v, const uint32_t *bits) {
    for (int32_t id = 0; id < v->n; id++) {
        int ok = id == v->end ? pf_matcher_can_end(m) : pf_matcher_push_bytes(m, v->bytes[id], v->lens[id]) == 1;
        if (ok && id != v->end) pf_matcher_rollback(m, pf_matcher_pos(m) - v->lens[id]);
        if (ok != pf_mask_has(bits, id)) return fprintf(stderr, "token %d: scan %d, mask %d\n", id, ok, !ok), 0;
    }
    return 1;
}

/* One random walk through the masks to a complete document (appended to out as a line), 0 when
 * it did not complete; -1 when a position allowed nothing (a prefix that cannot be completed) or
 * a mask differs from the scan of the vocabulary. */
static int walk(const pf_token_masker *tm, pf_mask_cache *cache, pf_matcher *m, const schema_vocab *v, uint64_t *seed,
                FILE *out) {
    char doc[4096];
    size_t len = 0;
    uint32_t bits[64];
    pf_matcher_reset(m);
    for (int step = 0; step < 600; step++) {
        int32_t pick[1024], n = 0;
        pf_token_mask(tm, cache, m, bits);
        if (!mask_is_scan(m, v, bits)) return fprintf(stderr, "after '%.*s'\n", (int)len, doc), -1;
        for (int32_t id = 0; id < v->n; id++) {
            if (!pf_mask_has(bits, id)) continue;
            int w = id == v->end ? (step > 20 ? 64 : 2) : step > 20 && v->bytes[id][0] == '"' ? 24 : 1;
            for (int k = 0; k < w && n < 1024; k++) pick[n++] = id;
        }
        if (!n) return fprintf(stderr, "nothing allowed after '%.*s'\n", (int)len, doc), -1;
        int32_t id = pick[schema_rand(seed) % (uint64_t)n];
        if (id == v->end || pf_matcher_closed(m)) break;
        if (len + v->lens[id] >= sizeof doc || pf_matcher_push_bytes(m, v->bytes[id], v->lens[id]) != 1) return 0;
        memcpy(doc + len, v->bytes[id], v->lens[id]);
        len += v->lens[id];
    }
    if (!pf_matcher_can_end(m)) return 0;
    for (size_t i = 0; i < len; i++)
        if (doc[i] == '\n') return 0; /* never written raw (JSON escapes it); the line format needs it */
    fprintf(out, "%.*s\n", (int)len, doc);
    return 1;
}

/* 40 random walks through the masks per schema, the documents completed checked by Python's
 * jsonschema (the draft its $schema names, 2020-12 otherwise; with its format checker; numbers
 * read as decimals, so bounds compare exactly); at least min_complete of them complete. */
static void walks_validate(const char *const *schemas, int n, const char *name, int min_complete) {
    const char *py = jsonschema_python();
    if (!py) {
        pf_test_skip("needs python3 with jsonschema (Debian: python3-jsonschema; or $PF_JSONSCHEMA_PYTHON)");
        return;
    }
    char docs_path[512], py_path[512], file[64];
    snprintf(file, sizeof file, "%s_docs.txt", name);
    test_tmp_path(docs_path, sizeof docs_path, file);
    snprintf(file, sizeof file, "%s_check.py", name);
    test_tmp_path(py_path, sizeof py_path, file);
    CHECK(test_write_file(py_path,
          "import decimal, json, sys, jsonschema\n"
          "bad = 0\n"
          "for line in open(sys.argv[1], encoding='utf-8'):\n"
          "    schema, doc = line.rstrip('\\n').split('\\x01')\n"
          "    s = json.loads(schema, parse_float=decimal.Decimal)\n"
          "    cls = jsonschema.validators.validator_for(s, default=jsonschema.Draft202012Validator)\n"
          "    v = cls(s, format_checker=jsonschema.FormatChecker())\n"
          "    errs = list(v.iter_errors(json.loads(doc, parse_float=decimal.Decimal)))\n"
          "    if errs:\n"
          "        bad += 1\n"
          "        print('invalid:', schema, doc, errs[0].message)\n"
          "sys.exit(1 if bad else 0)\n",
          (size_t)-1) == 0);
    schema_vocab v;
    schema_vocab_make(&v);
    char err[PF_ERR_LEN];
    pf_token_masker *tm = pf_token_masker_new(v.n, v.bytes, v.lens, &v.end, 1, err);
    FILE *out = fopen(docs_path, "w");
    CHECK(tm && out);
    uint64_t seed = 99;
    int complete = 0;
    for (int i = 0; i < n && !pf_test_failed(); i++) {
        pf_schema *s;
        CHECKF(pf_schema_compile(schemas[i], strlen(schemas[i]), &s, err) == PF_SCHEMA_OK, "%s", err);
        pf_matcher *m = pf_matcher_new(s);
        pf_mask_cache *cache = pf_mask_cache_new(tm); /* the masks cached (odd walks) and walked */
        CHECK(cache);
        for (int w = 0; w < 40; w++) {
            char *line = NULL;
            size_t cap = 0;
            FILE *mem = open_memstream(&line, &cap);
            int r = walk(tm, w % 2 ? cache : NULL, m, &v, &seed, mem);
            fclose(mem);
            if (r < 0) pf_test_failf(__FILE__, __LINE__, "schema %s: a prefix with no way on, or a wrong mask", schemas[i]);
            if (r > 0) fprintf(out, "%s\x01%s", schemas[i], line), complete++;
            free(line);
        }
        pf_mask_cache_free(cache);
        pf_matcher_free(m);
        pf_schema_free(s);
    }
    fclose(out);
    pf_token_masker_free(tm);
    schema_vocab_free(&v);
    CHECKF(complete >= min_complete, "%d walks completed", complete);
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "%s %s %s 1>&2", py, py_path, docs_path);
    CHECKF(system(cmd) == 0, "documents the validator refuses (above)");
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
    walks_validate(schemas, (int)(sizeof schemas / sizeof *schemas), "pattern", 100);
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
    walks_validate(schemas, (int)(sizeof schemas / sizeof *schemas), "number_bounds", 150);
}
