/* Closing distances and the token budget (grammar/close_budget.h, pf_token_mask_budget) over the
 * small test vocabulary: the distance is the exact fewest bytes to a complete document (0 exactly
 * where it may end, some byte shortens it by one, none by more), random walks under the budgeted
 * masks end complete and valid within every budget from the least that fits, and a budget below
 * that is refused. */
#include <stdlib.h>
#include <string.h>

#include "grammar/close_budget.h"
#include "grammar/matcher.h"
#include "grammar/schema.h"
#include "grammar/token_mask.h"
#include "schema_check.h"
#include "test.h"

/* Hand-written schemas: string lengths, array counts, nested objects, enums, patterns and formats,
 * bounded numbers, key counts, unions, recursion. */
static const char *const k_schemas[] = {
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"minLength\":3},\"age\":{\"type\":\"integer\","
    "\"minimum\":18,\"maximum\":130}},\"required\":[\"name\",\"age\"],\"additionalProperties\":false}",
    "{\"type\":\"array\",\"items\":{\"enum\":[\"red\",\"green\",\"blue\"]},\"minItems\":2,\"maxItems\":4}",
    "{\"type\":\"object\",\"properties\":{\"user\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1}},\"required\":[\"id\",\"tags\"]},"
    "\"ok\":{\"type\":\"boolean\"}},\"required\":[\"user\"]}",
    "{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}-[0-9]{2}$\"},"
    "\"day\":{\"type\":\"string\",\"format\":\"date\"}},\"required\":[\"code\",\"day\"],\"additionalProperties\":false}",
    "{\"type\":\"object\",\"minProperties\":2,\"properties\":{\"a\":{\"type\":\"null\"},\"bb\":{\"type\":\"string\"}},"
    "\"additionalProperties\":{\"type\":\"integer\"}}",
    "{\"anyOf\":[{\"type\":\"string\",\"minLength\":6},{\"type\":\"array\",\"items\":{\"type\":\"number\","
    "\"exclusiveMinimum\":5,\"exclusiveMaximum\":6},\"minItems\":1}]}",
    "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},\"next\":{\"anyOf\":"
    "[{\"$ref\":\"#/$defs/node\"},{\"type\":\"null\"}]}},\"required\":[\"v\",\"next\"],\"additionalProperties\":false}},"
    "\"$ref\":\"#/$defs/node\"}",
    "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\",\"minimum\":-250,\"maximum\":-120}},"
    "\"required\":[\"x\"]}",
    "{\"type\":\"string\",\"pattern\":\"\\\"q\\\\\\\\\",\"minLength\":0}",
    /* a key given requires others (dependencies): they count in the distance */
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"bb\":{\"type\":\"string\",\"minLength\":4},"
    "\"c\":{\"type\":\"null\"}},\"additionalProperties\":false,\"dependencies\":{\"a\":[\"bb\"],\"bb\":[\"c\"]}}",
    /* bounds with a fraction: the fraction's digits needed count */
    "{\"type\":\"array\",\"items\":{\"type\":\"number\",\"exclusiveMinimum\":0.125,\"maximum\":0.13},\"minItems\":1}",
    "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\",\"minimum\":-2.0625,\"exclusiveMaximum\":-2.06}},"
    "\"required\":[\"x\"]}",
    /* exponent forms: 5e-4 is shorter than 0.0005 */
    "{\"type\":\"array\",\"items\":{\"type\":\"number\",\"minimum\":0.0001,\"maximum\":0.001},\"minItems\":1}",
    /* multipleOf: the digits a multiple within the bounds needs */
    "{\"type\":\"array\",\"items\":{\"type\":\"number\",\"multipleOf\":0.25,\"minimum\":10.3,\"maximum\":12},\"minItems\":1}",
    "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\",\"multipleOf\":25,\"minimum\":-180}},"
    "\"required\":[\"x\"]}",
    /* uniqueItems: the items still needed take the shortest values not taken yet */
    "{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"abcd\",\"abc\",7]},\"uniqueItems\":true,\"minItems\":3}",
    NULL, /* JSON mode */
};
enum { N_SCHEMAS = sizeof k_schemas / sizeof *k_schemas };

/* The distance at the current state is exact by one step: 0 exactly where the document may end;
 * otherwise some byte leads to distance - 1 and none to less. 1, or 0 (printed). */
static int one_step_exact(schema_fx *f, const char *schema, const char *doc, size_t len) {
    int64_t d = pf_close_dist(f->cl, f->m);
    if ((d == 0) != (pf_matcher_can_end(f->m) != 0))
        return fprintf(stderr, "%s after '%.*s': distance %lld, can end %d\n", schema, (int)len, doc, (long long)d,
                       pf_matcher_can_end(f->m)), 0;
    if (d == 0) return 1;
    size_t pos = pf_matcher_pos(f->m);
    int64_t least = PF_CLOSE_INF;
    for (int b = 0; b < 256; b++) {
        if (pf_matcher_push(f->m, (uint8_t)b) != 1) continue;
        int64_t e = pf_close_dist(f->cl, f->m);
        if (e < least) least = e;
        pf_matcher_rollback(f->m, pos);
    }
    if (least == d - 1) return 1;
    return fprintf(stderr, "%s after '%.*s': distance %lld, least after a byte %lld\n", schema, (int)len, doc,
                   (long long)d, (long long)least), 0;
}

/* Random byte walks, each distance checked; the walk leans to bytes that keep the distance short
 * so documents of every depth are reached. */
static int walk_bytes(schema_fx *f, const char *schema, uint64_t *seed) {
    char doc[2048];
    size_t len = 0;
    pf_matcher_reset(f->m);
    for (int step = 0; step < 400 && len < sizeof doc; step++) {
        if (!one_step_exact(f, schema, doc, len)) return 0;
        if (pf_matcher_closed(f->m)) break;
        uint8_t ok[256];
        int n = 0;
        size_t pos = pf_matcher_pos(f->m);
        int64_t d = pf_close_dist(f->cl, f->m);
        for (int b = 0; b < 256; b++) {
            if (pf_matcher_push(f->m, (uint8_t)b) != 1) continue;
            int closer = pf_close_dist(f->cl, f->m) < d;
            pf_matcher_rollback(f->m, pos);
            if (closer || step < 30 || schema_rand(seed) % 4 == 0) ok[n++] = (uint8_t)b;
        }
        if (n == 0) break;
        uint8_t b = ok[schema_rand(seed) % (uint64_t)n];
        if (pf_matcher_push(f->m, b) != 1) return fprintf(stderr, "%s: an accepted byte refused\n", schema), 0;
        doc[len++] = (char)b;
    }
    return 1;
}

/* check over every hand-written schema (each must compile; NULL: any JSON value), one seed stream
 * for all: 1, or 0 at the first that fails (printed). */
static int over_hand_schemas(uint64_t seed, int (*check)(schema_fx *f, const char *schema, uint64_t *seed)) {
    for (int k = 0; k < N_SCHEMAS; k++) {
        schema_fx f;
        if (schema_fx_open(&f, true, k_schemas[k]) != 0) return fprintf(stderr, "schema %d does not compile\n", k), 0;
        int ok = check(&f, k_schemas[k], &seed);
        schema_fx_close(&f);
        if (!ok) return fprintf(stderr, "at hand-written schema %d\n", k), 0;
    }
    return 1;
}

/* check over n random schemas drawn from seed (one stream for the schemas and the checks; a schema
 * that does not compile is passed over): 1, or 0 at the first check that fails (it prints why). */
static int over_random_schemas(uint64_t seed, int n, int (*check)(schema_fx *f, const char *schema, uint64_t *seed)) {
    schema_draws d;
    schema_draws_start(&d, &seed, n, true, schema_random);
    while (schema_draws_next(&d))
        if (!check(&d.f, d.schema, &seed)) return schema_draws_stop(&d), 0;
    return 1;
}

static int twenty_walks(schema_fx *f, const char *schema, uint64_t *seed) {
    for (int w = 0; w < 20; w++)
        if (!walk_bytes(f, schema ? schema : "json", seed)) return 0;
    return 1;
}

static int three_walks(schema_fx *f, const char *schema, uint64_t *seed) {
    for (int w = 0; w < 3; w++)
        if (!walk_bytes(f, schema, seed)) return 0;
    return 1;
}

TEST(close_budget_distance_exact_hand_schemas) { CHECK(over_hand_schemas(7, twenty_walks)); }
TEST(close_budget_distance_exact_random_schemas) { CHECK(over_random_schemas(4242, 150, three_walks)); }

/* The least budget whose first mask has a token that fits (pf_token_mask_budget's *fits). */
static int64_t least_budget(schema_fx *f) {
    for (int64_t left = 0;; left++) {
        int fits;
        pf_matcher_reset(f->m);
        pf_token_mask_budget(f->tm, f->cache, f->m, f->cl, left, f->bits, &fits);
        if (fits) return left;
    }
}

/* One random walk under the budgeted masks with `budget` tokens: 1 when it ends complete, valid and
 * within the budget, with every mask the unbudgeted one less the tokens whose distance after them
 * exceeds what is left; 0 otherwise (printed). */
static int budget_walk(schema_fx *f, const char *schema, int64_t budget, uint64_t *seed) {
    char doc[4096];
    size_t len = 0;
    uint32_t full[64];
    pf_matcher_reset(f->m);
    int64_t used = 0;
    for (; used < budget && !pf_matcher_closed(f->m); used++) {
        int fits;
        pf_token_mask_budget(f->tm, f->cache, f->m, f->cl, budget - used, f->bits, &fits);
        pf_token_mask(f->tm, f->cache, f->m, full);
        if (!fits) return fprintf(stderr, "%s: nothing fits %lld of %lld\n", schema, (long long)used, (long long)budget), 0;
        int32_t pick[1024];
        int n = 0;
        size_t pos = pf_matcher_pos(f->m);
        for (int32_t id = 0; id < f->v.n; id++) {
            int want = pf_mask_has(full, id);
            if (want && id != f->v.end) {
                if (pf_matcher_push_bytes(f->m, f->v.bytes[id], f->v.lens[id]) != 1)
                    return fprintf(stderr, "%s: an allowed token refused\n", schema), 0;
                want = pf_close_dist(f->cl, f->m) <= budget - used - 1;
                pf_matcher_rollback(f->m, pos);
            }
            if (want != pf_mask_has(f->bits, id))
                return fprintf(stderr, "%s: token %d after '%.*s' with %lld left: mask %d, want %d\n", schema, id,
                               (int)len, doc, (long long)(budget - used), !want, want), 0;
            for (int r = 0; want && r < (f->v.lens[id] > 1 ? 3 : 1) && n < 1024; r++) pick[n++] = id;
        }
        int32_t id = pick[schema_rand(seed) % (uint64_t)n];
        if (id == f->v.end) break;
        if (len + f->v.lens[id] >= sizeof doc) return 1; /* too long to keep: not a failure */
        if (pf_matcher_push_bytes(f->m, f->v.bytes[id], f->v.lens[id]) != 1)
            return fprintf(stderr, "%s: an allowed token refused\n", schema), 0;
        memcpy(doc + len, f->v.bytes[id], f->v.lens[id]);
        len += f->v.lens[id];
    }
    if (!pf_matcher_can_end(f->m))
        return fprintf(stderr, "%s: '%.*s' incomplete after %lld tokens\n", schema, (int)len, doc, (long long)used), 0;
    if (!pf_schema_valid_text(schema ? schema : "{\"type\":\"object\"}", doc, len))
        return fprintf(stderr, "%s: invalid '%.*s'\n", schema, (int)len, doc), 0;
    return 1;
}

/* The least budget lies in [1, the shortest document's tokens]; six walks under each of the twelve
 * budgets from it up. */
static int every_budget(schema_fx *f, const char *schema, uint64_t *seed) {
    int64_t least = least_budget(f);
    if (least < 1 || least > pf_close_doc(f->cl))
        return fprintf(stderr, "least budget %lld, doc %lld\n", (long long)least, (long long)pf_close_doc(f->cl)), 0;
    for (int64_t b = least; b < least + 12; b++)
        for (int w = 0; w < 6; w++)
            if (!budget_walk(f, schema, b, seed)) return fprintf(stderr, "budget %lld\n", (long long)b), 0;
    return 1;
}

TEST(close_budget_walks_close_within_every_budget) { CHECK(over_hand_schemas(99, every_budget)); }

/* Six budgets from the least up, each raised by 0, 10 or 20 at random. */
static int budget_walks(schema_fx *f, const char *schema, uint64_t *seed) {
    int64_t least = least_budget(f);
    for (int64_t b = least; b < least + 6; b++)
        if (!budget_walk(f, schema, b + (int64_t)(schema_rand(seed) % 3) * 10, seed)) return 0;
    return 1;
}

TEST(close_budget_random_schemas_close_within_budget) { CHECK(over_random_schemas(2027, 120, budget_walks)); }

/* The shortest documents: the distance at the start is the byte length of the shortest document. */
TEST(close_budget_shortest_documents) {
    static const struct {
        const char *schema;
        int64_t doc;
    } cases[] = {
        {"{\"type\":\"string\",\"minLength\":4}", 6},
        {"{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":100},\"minItems\":2}", 9},
        {"{\"type\":\"object\",\"properties\":{\"ab\":{\"type\":\"null\"}},\"required\":[\"ab\"]}", 11},
        {"{\"enum\":[\"long one\",12345,\"ab\"]}", 4},
        {"{\"type\":\"string\",\"format\":\"date\"}", 12},
        {"{\"type\":\"integer\",\"minimum\":-5,\"maximum\":-3}", 2},
        {"{\"type\":\"number\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":1}", 3},
        {"{\"type\":\"object\",\"minProperties\":1}", 6},
        {"{\"type\":\"number\",\"minimum\":0.125,\"maximum\":0.13}", 4},
        {"{\"type\":\"number\",\"exclusiveMinimum\":0.5,\"exclusiveMaximum\":0.51}", 5},
        {"{\"type\":\"number\",\"minimum\":-0.0625,\"exclusiveMaximum\":-0.06}", 6},
        {"{\"type\":\"number\",\"minimum\":99.99,\"maximum\":100.5}", 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        schema_fx f;
        CHECKF(schema_fx_open(&f, true, cases[i].schema) == 0, "%s", cases[i].schema);
        CHECKF(pf_close_doc(f.cl) == cases[i].doc && pf_close_dist(f.cl, f.m) == cases[i].doc, "%s: %lld, want %lld",
               cases[i].schema, (long long)pf_close_doc(f.cl), (long long)cases[i].doc);
        schema_fx_close(&f);
    }
}
