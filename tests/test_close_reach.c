/* The bound on every state's closing distance (pf_close_reach) and the budgeted mask's shortcut
 * that rests on it: along random walks over the small test vocabulary, the distance of every
 * state reached and of every state one allowed token leads to is within the bound, and at budgets
 * around it (and around the distances themselves) pf_token_mask_budget is exactly the unbudgeted
 * mask less the tokens whose distance after them exceeds what is left. Over hand-written schemas
 * (patterns, patternProperties beside a bounded number, key counts, dependencies, unique items,
 * contains, more than 64 keys, recursion, free JSON) and random ones of those keywords. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/close_budget.h"
#include "grammar/matcher.h"
#include "grammar/schema.h"
#include "grammar/token_mask.h"
#include "schema_check.h"
#include "test.h"

static const char *const k_schemas[] = {
    /* the anyOf of a pattern-keyed object and a bounded number ({"ab":-0.5e1,"a":"abz"}) */
    "{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"pattern\":\"^ab[a-z]$\"}},"
    "\"patternProperties\":{\"^a[a-z]$\":{\"type\":\"number\",\"minimum\":-10,\"maximum\":-0.25}},"
    "\"additionalProperties\":false},{\"type\":\"number\",\"minimum\":-0.5e1,\"maximum\":2.5e1}]}",
    "{\"type\":\"object\",\"patternProperties\":{\"^[a-z]+$\":{\"type\":\"number\",\"exclusiveMinimum\":-5.5,"
    "\"maximum\":1e3},\"^x\":{\"type\":\"integer\",\"multipleOf\":7}},\"properties\":{\"AB\":{\"type\":\"string\","
    "\"minLength\":3}},\"required\":[\"AB\"]}",
    "{\"type\":\"object\",\"minProperties\":3,\"maxProperties\":4,\"properties\":{\"a\":{\"type\":\"null\"},"
    "\"bb\":{\"type\":\"string\",\"format\":\"date\"}},\"additionalProperties\":{\"type\":\"number\",\"minimum\":0.0001,"
    "\"maximum\":0.001}}",
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"bb\":{\"type\":\"string\",\"minLength\":4},"
    "\"c\":{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"yy\",3]},\"uniqueItems\":true,\"minItems\":2}},"
    "\"additionalProperties\":false,\"dependentRequired\":{\"a\":[\"bb\"],\"bb\":[\"c\"]}}",
    "{\"$defs\":{\"t\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"number\",\"minimum\":5.5e10,"
    "\"maximum\":5.6e10},\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/t\"}}},\"required\":[\"v\"]}},"
    "\"$ref\":\"#/$defs/t\"}",
    "{\"type\":\"array\",\"items\":{\"type\":\"string\",\"pattern\":\"^(\\\\d{3}-)?[A-Z]{2,4}$\"},\"minItems\":3}",
    "{\"type\":\"object\",\"properties\":{\"x\":{}},\"required\":[\"x\"]}",
    /* alone, where the bound has no slack from around them */
    "{\"type\":\"number\",\"minimum\":5.5e10,\"maximum\":5.6e10}",
    "{\"type\":\"number\",\"exclusiveMinimum\":0.125,\"maximum\":0.13}",
    "{\"type\":\"number\",\"multipleOf\":0.25,\"minimum\":10.3,\"maximum\":12}",
    "{\"type\":\"string\",\"minLength\":3}",
    "{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}-[0-9]{2}$\"}",
    "{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"yyy\",7,true]},\"uniqueItems\":true,\"minItems\":3}",
    "{\"type\":\"object\",\"minProperties\":2,\"additionalProperties\":{\"type\":\"integer\"}}",
    /* contains: the items that count dearer than the others, maxItems leaving no room for others */
    "{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"contains\":{\"minimum\":1000},\"minContains\":2,"
    "\"maxItems\":3}",
    "{\"type\":\"array\",\"items\":{\"type\":\"array\",\"contains\":{\"type\":\"string\",\"minLength\":3}},"
    "\"minItems\":1}",
    NULL, /* JSON mode */
};
enum { N_SCHEMAS = sizeof k_schemas / sizeof *k_schemas };

/* Walk one state: the distances within the bound, and the budgeted masks at budgets near it and
 * near the distances after the tokens, each the unbudgeted mask less what the budget refuses. */
static int64_t after[1024]; /* per token: the distance after it from the state checked last, -1 if refused */

static int check_state(schema_fx *f, const char *schema, int64_t reach, uint64_t *seed, const char *doc, size_t len) {
    uint32_t full[64], bits[64];
    int64_t d = pf_close_dist(f->cl, f->m), most = -1;
    if (d > reach)
        return fprintf(stderr, "%s after '%.*s': distance %lld above the bound %lld\n", schema, (int)len, doc,
                       (long long)d, (long long)reach), 0;
    pf_token_mask(f->tm, f->cache, f->m, full);
    size_t pos = pf_matcher_pos(f->m);
    for (int32_t id = 0; id < f->v.n; id++) {
        after[id] = -1;
        if (!pf_mask_has(full, id) || id == f->v.end) continue;
        if (pf_matcher_push_bytes(f->m, f->v.bytes[id], f->v.lens[id]) != 1)
            return fprintf(stderr, "%s: an allowed token refused\n", schema), 0;
        after[id] = pf_close_dist(f->cl, f->m);
        pf_matcher_rollback(f->m, pos);
        if (after[id] > reach)
            return fprintf(stderr, "%s after '%.*s' + token %d: distance %lld above the bound %lld\n", schema, (int)len,
                           doc, id, (long long)after[id], (long long)reach), 0;
        if (after[id] > most) most = after[id];
    }
    int64_t lefts[] = {reach + 1, reach + 2 + (int64_t)(schema_rand(seed) % 100), reach, most + 1, most, d + 1, d};
    for (size_t k = 0; k < sizeof lefts / sizeof *lefts; k++) {
        int64_t left = lefts[k];
        int fits;
        if (left < 1) continue;
        pf_token_mask_budget(f->tm, f->cache, f->m, f->cl, left, bits, &fits);
        if (!fits) continue; /* nothing fits: the tokens closing soonest (test_close_budget.c) */
        for (int32_t id = 0; id < f->v.n; id++) {
            int want = pf_mask_has(full, id) && (id == f->v.end || after[id] <= left - 1);
            if (want != pf_mask_has(bits, id))
                return fprintf(stderr, "%s after '%.*s', %lld left (bound %lld): token %d mask %d, want %d\n", schema,
                               (int)len, doc, (long long)left, (long long)reach, id, !want, want), 0;
        }
    }
    return 1;
}

/* Random token walks under the unbudgeted masks, every state checked; half the steps take a token
 * after which the distance is greatest, so the walks seek the states the bound must cover. */
static int walks(schema_fx *f, const char *schema, uint64_t *seed, int n_walks) {
    int64_t reach = pf_close_reach(f->cl);
    if (reach >= PF_CLOSE_INF) return 1; /* no bound: the budget always walks */
    for (int w = 0; w < n_walks; w++) {
        char doc[1024];
        size_t len = 0;
        uint32_t full[64];
        pf_matcher_reset(f->m);
        for (int step = 0; step < 60; step++) {
            if (!check_state(f, schema, reach, seed, doc, len)) return 0;
            if (pf_matcher_closed(f->m)) break;
            pf_token_mask(f->tm, f->cache, f->m, full);
            int32_t pick[512];
            int n = 0, far = schema_rand(seed) % 2;
            int64_t most = -1;
            for (int32_t id = 0; id < f->v.n; id++) most = after[id] > most ? after[id] : most;
            for (int32_t id = 0; id < f->v.n && n < 512; id++)
                if (pf_mask_has(full, id) && id != f->v.end && (!far || after[id] == most)) pick[n++] = id;
            if (n == 0) break;
            int32_t id = pick[schema_rand(seed) % (uint64_t)n];
            if (len + f->v.lens[id] >= sizeof doc) break;
            pf_matcher_push_bytes(f->m, f->v.bytes[id], f->v.lens[id]);
            memcpy(doc + len, f->v.bytes[id], f->v.lens[id]);
            len += f->v.lens[id];
        }
    }
    return 1;
}

/* The given text byte by byte, the state of every prefix the matcher takes checked: 1, or 0
 * (printed). *taken: the bytes it took. */
static int along(schema_fx *f, const char *schema, const char *doc, uint64_t *seed, size_t *taken) {
    int64_t reach = pf_close_reach(f->cl);
    pf_matcher_reset(f->m);
    for (*taken = 0;; ++*taken) {
        if (!check_state(f, schema, reach, seed, doc, *taken)) return 0;
        if (!doc[*taken] || pf_matcher_push(f->m, (uint8_t)doc[*taken]) != 1) return 1;
    }
}

TEST(close_reach_bounds_hand_schemas) {
    uint64_t seed = 53;
    for (int k = 0; k < N_SCHEMAS; k++) {
        schema_fx f;
        CHECKF(schema_fx_open(&f, true, k_schemas[k]) == 0, "schema %d does not compile", k);
        CHECKF(pf_close_reach(f.cl) < PF_CLOSE_INF, "schema %d: no bound", k);
        CHECKF(walks(&f, k_schemas[k] ? k_schemas[k] : "json", &seed, 25), "at hand-written schema %d", k);
        schema_fx_close(&f);
    }
    schema_fx f;
    CHECK(schema_fx_open(&f, true, k_schemas[0]) == 0);
    /* the matcher writes an exponent after one nonzero digit: this one's prefix up to the 'e' */
    size_t taken;
    CHECK(along(&f, k_schemas[0], "{\"ab\":-0.5e1,\"a\":\"abz\"}", &seed, &taken) && taken == 10);
    static const char *const whole[] = {"{\"ab\":-5e0,\"a\":\"abz\"}", "{\"ab\":-0.5,\"a\":\"abz\"}", "-5e0", "2.5e1",
                                        "{\"a\":\"abz\",\"az\":-1e1}"};
    for (size_t i = 0; i < sizeof whole / sizeof *whole; i++) {
        CHECKF(along(&f, k_schemas[0], whole[i], &seed, &taken) && taken == strlen(whole[i]) && pf_matcher_can_end(f.m),
               "%s: %zu bytes taken", whole[i], taken);
    }
    schema_fx_close(&f);
    /* escapes under way: the most a string's character can still take */
    static const struct {
        const char *schema, *doc;
    } esc[] = {{"{\"type\":\"string\",\"minLength\":3}", "\"\\u0041\\n\\u00e9\""},
               {"{\"type\":\"string\",\"pattern\":\"^a\\\\n?b+$\"}", "\"a\\nbb\""},
               {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\",\"minLength\":2}}",
                "{\"\\n\":\"\\u0041\\u00e9\"}"}}; /* another key takes the short escapes only */
    for (size_t i = 0; i < sizeof esc / sizeof *esc; i++) {
        CHECK(schema_fx_open(&f, true, esc[i].schema) == 0);
        CHECKF(along(&f, esc[i].schema, esc[i].doc, &seed, &taken) && taken == strlen(esc[i].doc), "%s: %zu bytes taken",
               esc[i].doc, taken);
        schema_fx_close(&f);
    }
}

/* A random schema of the keywords the bound reads (malloc'd text). */
static char *rich_schema(uint64_t *seed, int depth) {
    static const char *const leaf[] = {
        "{\"type\":\"number\",\"minimum\":-0.5e1,\"maximum\":2.5e1}",
        "{\"type\":\"number\",\"exclusiveMinimum\":0.125,\"maximum\":0.13}",
        "{\"type\":\"number\",\"minimum\":5.5e10,\"maximum\":5.6e10}",
        "{\"type\":\"number\",\"minimum\":0.0001,\"maximum\":0.001}",
        "{\"type\":\"number\",\"multipleOf\":0.25,\"minimum\":10.3,\"maximum\":12}",
        "{\"type\":\"integer\",\"multipleOf\":25,\"minimum\":-180}",
        "{\"type\":\"integer\",\"minimum\":-5,\"exclusiveMaximum\":1000}",
        "{\"type\":\"number\",\"maximum\":-1e-3}",
        "{\"type\":\"string\",\"pattern\":\"^a[bc]*z?$\"}",
        "{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}-[0-9]{2}$\"}",
        "{\"type\":\"string\",\"minLength\":2,\"maxLength\":5}",
        "{\"type\":\"string\",\"format\":\"date\"}",
        "{\"enum\":[\"red\",\"green\",12,null,[1,2]]}",
        "{\"type\":[\"integer\",\"null\"]}",
        "{}",
        "{\"type\":\"object\"}",
    };
    int n_leaf = (int)(sizeof leaf / sizeof *leaf);
    uint64_t r = schema_rand(seed) % (depth >= 3 ? 1 : 7); /* a leaf alone too: no slack around it */
    char buf[512], *a, *b;
    char *out = malloc(16384);
    if (r == 0) return strcpy(out, leaf[schema_rand(seed) % (uint64_t)n_leaf]);
    a = rich_schema(seed, depth + 1);
    b = rich_schema(seed, depth + 1);
    switch (r) {
    case 1:
        snprintf(buf, sizeof buf, "\"minProperties\":%d,\"maxProperties\":%d,", (int)(schema_rand(seed) % 3),
                 3 + (int)(schema_rand(seed) % 3));
        snprintf(out, 16384,
                 "{\"type\":\"object\",%s\"properties\":{\"ab\":%s,\"b\":%s},\"required\":[\"%s\"],"
                 "\"patternProperties\":{\"^a[a-z]$\":%s},\"additionalProperties\":false}",
                 schema_rand(seed) % 2 ? buf : "", a, b, schema_rand(seed) % 2 ? "ab" : "b", leaf[schema_rand(seed) % 8]);
        break;
    case 2:
        snprintf(out, 16384,
                 "{\"type\":\"object\",\"properties\":{\"k\":%s,\"kk\":%s},\"additionalProperties\":%s,"
                 "\"dependentRequired\":{\"k\":[\"kk\"]}}",
                 a, b, leaf[schema_rand(seed) % (uint64_t)n_leaf]);
        break;
    case 3:
        snprintf(out, 16384, "{\"type\":\"array\",\"items\":%s,\"minItems\":%d,\"maxItems\":4}", a,
                 (int)(schema_rand(seed) % 3));
        break;
    case 4:
        snprintf(out, 16384, "{\"anyOf\":[%s,%s]}", a, b);
        break;
    case 5:
        snprintf(out, 16384, "{\"type\":\"array\",\"items\":%s,\"contains\":%s,\"minContains\":%d,\"maxItems\":%d}", a,
                 leaf[schema_rand(seed) % (uint64_t)n_leaf], 1 + (int)(schema_rand(seed) % 2), 2 + (int)(schema_rand(seed) % 3));
        break;
    default:
        snprintf(out, 16384, "{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"yyy\",7,true]},\"uniqueItems\":true,"
                            "\"minItems\":%d}",
                 (int)(schema_rand(seed) % 4));
    }
    free(a);
    free(b);
    return out;
}

TEST(close_reach_bounds_random_schemas) {
    uint64_t seed = 20261207;
    int bounded = 0;
    schema_draws d;
    schema_draws_start(&d, &seed, 300, true, rich_schema);
    while (schema_draws_next(&d)) {
        bounded += pf_close_reach(d.f.cl) < PF_CLOSE_INF;
        CHECKF(walks(&d.f, d.schema, &seed, 4), "random schema %d", d.k);
    }
    /* a schema without a bound has a state whose distance is infinite (a key that requires one
     * that has no value): there the budget does refuse tokens, however large */
    CHECKF(d.compiled >= 100 && bounded * 10 >= d.compiled * 9, "%d compiled, %d with a bound", d.compiled, bounded);
}

/* More than 64 listed keys: required and depended-on keys past the 64th, maxProperties. */
TEST(close_reach_bounds_many_properties) {
    uint64_t seed = 71;
    char *s = schema_wide_object(100, ",\"required\":[\"p3\",\"p99\"],\"dependentRequired\":{\"p90\":[\"p5\",\"p70\"]},"
                                      "\"minProperties\":3,\"maxProperties\":5");
    schema_fx f;
    CHECK(schema_fx_open(&f, true, s) == 0);
    CHECK(pf_close_reach(f.cl) < PF_CLOSE_INF);
    CHECK(walks(&f, s, &seed, 25));
    size_t taken;
    static const char doc[] = "{\"p99\":1,\"p90\":2,\"p70\":3,\"p5\":4,\"p3\":5}";
    CHECK(along(&f, s, doc, &seed, &taken) && taken == strlen(doc) && pf_matcher_can_end(f.m));
    schema_fx_close(&f);
    free(s);
}
