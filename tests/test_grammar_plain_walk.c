/* The pattern strings' subtree shortcuts (grammar/plain_walk.c) against the scan of every token:
 * on a vocabulary deep enough for whole subtrees to be taken at once (runs of one byte class, runs
 * that loop the automaton, characters of several UTF-8 lengths, some a pattern's class refuses),
 * every mask along a document, cached and walked, without a budget and under budgets near the
 * closing distance, is what pushing each token's bytes says; so also inside keys beside
 * patternProperties, inside strings far from their maxLength and then near it, and across strings that
 * share the per-state cache (their pattern_id); and from every
 * state of a pattern, the class trie's plain tokens (grammar/class_trie.h) are the byte walk's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/class_trie.h"
#include "grammar/close_budget.h"
#include "grammar/matcher.h"
#include "grammar/plain_walk.h"
#include "grammar/schema.h"
#include "grammar/token_mask.h"
#include "test.h"

enum { N_TOK = 3000, MAX_LEN = 12 };

typedef struct {
    int n;
    uint8_t *bytes[N_TOK + 1];
    uint32_t lens[N_TOK + 1];
    int32_t end;
} deep_vocab;

/* Pieces a token is made of: ASCII of several classes, a space, a quote and a backslash, and
 * characters of two to four bytes (NBSP, U+2028 and U+3000 are refused by `.` or `\S`). */
static const char *const k_pieces[] = {"a", "b", "z", "e", "A", "Q", "0", "7", "-", ".", " ", "_", "@",
                                       "\"", "\\", "\xc3\xa9", "\xc2\xa0", "\xe4\xb8\xad", "\xe3\x80\x80",
                                       "\xe2\x80\xa8", "\xf0\x9f\x98\x80", "\xe4\xb8"};

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* Every byte alone, then random strings weighted to letters (the deep subtrees), then the end. */
static void deep_vocab_make(deep_vocab *v) {
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    int n = 0;
    for (int b = 1; b < 256; b++) {
        v->bytes[n] = malloc(1);
        v->bytes[n][0] = (uint8_t)b;
        v->lens[n++] = 1;
    }
    while (n < N_TOK) {
        uint8_t buf[64];
        uint32_t len = 0;
        int pieces = 1 + (int)(rnd(&seed) % MAX_LEN);
        for (int p = 0; p < pieces; p++) {
            uint64_t r = rnd(&seed) % 100;
            const char *s = r < 60 ? k_pieces[r % 4] : k_pieces[rnd(&seed) % (sizeof k_pieces / sizeof *k_pieces)];
            memcpy(buf + len, s, strlen(s));
            len += (uint32_t)strlen(s);
        }
        v->bytes[n] = malloc(len);
        memcpy(v->bytes[n], buf, len);
        v->lens[n++] = len;
    }
    v->bytes[n] = NULL, v->lens[n] = 0, v->end = n++;
    v->n = n;
}

/* The deep vocabulary made into v and its token masker (NULL, said, when it cannot be built). */
static pf_token_masker *deep_masker(deep_vocab *v) {
    char err[PF_ERR_LEN];
    deep_vocab_make(v);
    pf_token_masker *tm = pf_token_masker_new(v->n, (const uint8_t *const *)v->bytes, v->lens, &v->end, 1, err);
    if (!tm) fprintf(stderr, "%s\n", err);
    return tm;
}

static void deep_vocab_free(deep_vocab *v) {
    for (int i = 0; i < v->n; i++) free(v->bytes[i]);
}

/* The mask bits at m's position (left tokens still to go, under cl; cl NULL: no budget) equal
 * the scan: a token's bytes pushed, and the closing distance after them within left - 1. */
static int mask_is_scan(pf_matcher *m, const deep_vocab *v, const pf_close *cl, int64_t left, const uint32_t *bits,
                        const char *where) {
    for (int32_t id = 0; id < v->n; id++) {
        int ok;
        if (id == v->end) ok = pf_matcher_can_end(m);
        else {
            size_t pos = pf_matcher_pos(m);
            ok = pf_matcher_push_bytes(m, v->bytes[id], v->lens[id]) == 1 && (!cl || pf_close_dist(cl, m) <= left - 1);
            pf_matcher_rollback(m, pos);
        }
        if (ok != pf_mask_has(bits, id))
            return fprintf(stderr, "%s: token %d (%.*s): scan %d, mask %d\n", where, id, (int)v->lens[id],
                           (const char *)v->bytes[id], ok, !ok),
                   0;
    }
    return 1;
}

/* Along doc (a document's prefix in schema), each position's mask, cached and not, and within
 * budgets from its closing distance up. */
static int doc_masks_exact(const pf_token_masker *tm, const deep_vocab *v, const char *schema, const char *doc) {
    char err[PF_ERR_LEN], where[200];
    pf_schema *s;
    if (pf_schema_compile(schema, strlen(schema), &s, err) != PF_SCHEMA_OK) return fprintf(stderr, "%s\n", err), 0;
    pf_matcher *m = pf_matcher_new(s);
    pf_close *cl = pf_close_new(s);
    pf_mask_cache *cache = pf_mask_cache_new(tm);
    uint32_t bits[(N_TOK + 32) / 32];
    int ok = m && cl && cache;
    for (size_t i = 0; ok && i <= strlen(doc); i++) {
        snprintf(where, sizeof where, "%s after %.*s", schema, (int)i, doc);
        for (int cached = 0; cached < 2 && ok; cached++) {
            pf_token_mask(tm, cached ? cache : NULL, m, bits);
            ok = mask_is_scan(m, v, NULL, 0, bits, where);
        }
        int64_t d = pf_close_dist(cl, m);
        for (int64_t left = d; left <= d + 3 && ok; left++) {
            int fits;
            pf_token_mask_budget(tm, cache, m, cl, left, bits, &fits);
            ok = !fits || mask_is_scan(m, v, cl, left, bits, where);
        }
        if (ok && i < strlen(doc) && !(ok = pf_matcher_push(m, (uint8_t)doc[i]) == 1))
            fprintf(stderr, "%s: the document refused at byte %zu\n", schema, i);
    }
    pf_mask_cache_free(cache);
    pf_close_free(cl);
    pf_matcher_free(m);
    pf_schema_free(s);
    return ok;
}

/* From every state of schema's pattern (its string opened), the class trie's plain tokens and end
 * states are the byte walk's. */
static int class_trie_is_walk(const pf_token_masker *tm, const char *schema) {
    char err[PF_ERR_LEN];
    pf_schema *s;
    if (pf_schema_compile(schema, strlen(schema), &s, err) != PF_SCHEMA_OK) return fprintf(stderr, "%s\n", err), 0;
    pf_matcher *m = pf_matcher_new(s);
    pf_frame cur;
    int ok = m && pf_matcher_push(m, '"') == 1 && pf_matcher_pattern_cursor(m, &cur);
    const pf_regex *re = ok ? s->nodes[cur.node].re : NULL;
    pf_class_trie *ct = re ? pf_class_trie_new(tm, re) : NULL;
    uint32_t walked[(N_TOK + 32) / 32], classed[(N_TOK + 32) / 32];
    for (int32_t q = 0; ct && ok && q < pf_regex_states(re); q++) {
        pf_plain_ends a = {0}, b = {0};
        cur.hi = q;
        memset(walked, 0, sizeof walked), memset(classed, 0, sizeof classed);
        pf_walk_ctx w = {walked, NULL, INT64_MAX, -1, INT64_MAX, 0};
        pf_plain_walk(tm, m, &cur, &w, &a);
        pf_class_trie_walk(ct, q, pf_matcher_pattern_used(m, &cur), classed, &b);
        ok = !memcmp(walked, classed, sizeof walked) && a.n == b.n;
        for (int i = 0; ok && a.n <= PF_PLAIN_ENDS && i < a.n; i++) { /* past PF_PLAIN_ENDS: which are kept is open */
            int found = 0;
            for (int j = 0; j < b.n; j++) found |= a.s[i] == b.s[j];
            ok = found;
        }
        if (!ok) fprintf(stderr, "%s: state %d: the class trie's tokens or ends are not the walk's\n", schema, q);
    }
    ok = ok && ct;
    pf_class_trie_free(ct);
    pf_matcher_free(m);
    pf_schema_free(s);
    return ok;
}

TEST(grammar_pattern_shortcuts_are_the_scan) {
    static deep_vocab v;
    pf_token_masker *tm = deep_masker(&v);
    CHECK(tm);
    static const struct {
        const char *schema, *doc;
    } cases[] = {
        {"{\"type\":\"string\",\"pattern\":\"^[0-9A-Za-z]{8}-[0-9A-Za-z]{4}$\"}", "\"ab01Q7ze-zz0"},
        {"{\"type\":\"string\",\"pattern\":\"^(?:\\\\S+\\\\s+){0,3}\\\\S+$\"}", "\"ab e\xc3\xa9 z"},
        {"{\"type\":\"string\",\"pattern\":\"^http(s?)://.*$\"}", "\"https://a.b/\xe4\xb8\xad z"},
        {"{\"type\":\"string\",\"pattern\":\"^[a-z]+$\",\"minLength\":3}", "\"abzea"},
        {"{\"type\":\"string\",\"pattern\":\"^[a-z ]*$\",\"maxLength\":10}", "\"ab z eab"},
        {"{\"type\":\"string\",\"format\":\"email\"}", "\"ab.e@zz.ab"},
        {"{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"string\",\"pattern\":\"[a-z]\"}},\"required\":[\"k\"]}",
         "{\"k\":\"-0ab"},
        /* keys: listed ones beside patternProperties' (the other keys' pattern from the per-state
         * cache, the listed texts walked), required keys with a pattern alone, characters of two bytes */
        {"{\"type\":\"object\",\"properties\":{\"abz\":{\"type\":\"integer\"},\"ab_e\":{\"type\":\"null\"}},"
         "\"patternProperties\":{\"^[a-z_]+$\":{}},\"additionalProperties\":false}",
         "{\"abz\":1,\"ab_e\":null,\"abze\":true,\"ab"},
        {"{\"type\":\"object\",\"patternProperties\":{\"[a-z0-9_]*\":{\"type\":\"integer\"}},\"required\":[\"ab\",\"ba\"],"
         "\"additionalProperties\":false}",
         "{\"ba\":1,\"a\":2,\"ab"},
        {"{\"type\":\"object\",\"properties\":{\"\u00e9a\":{}},\"patternProperties\":{\"^[a-z\u00e9]+$\":{\"type\":\"null\"}}}",
         "{\"\xc3\xa9" "a\":null,\"\xc3\xa9\xc3\xa9z"},
        {"{\"type\":\"object\",\"properties\":{\"a.b\":{}},\"patternProperties\":{\"^[ab]\":{\"type\":\"null\"},\"b$\":{\"type\":\"null\"}},"
         "\"additionalProperties\":{\"type\":\"integer\"}}",
         "{\"a.b\":null,\"a\":null,\"zb\":null,\"z\":3,\"a."},
        {"{\"type\":\"object\",\"properties\":{\"abc\":{},\"ab.d\":{},\"xyz\":{}},\"patternProperties\":{\"^x[0-9]+$\":{\"type\":\"null\"}},"
         "\"additionalProperties\":false}",
         "{\"x1\":null,\"abc\":1,\"x"},
        /* a maxLength far ahead (pf_matcher_pattern_far: the per-state cache), then near, with a
         * minLength, a pattern whose states end at different lengths, and a stack of each kind */
        {"{\"type\":\"string\",\"pattern\":\"^[a-z.@]+$\",\"maxLength\":22}", "\"ab.e@zz.abab.e@zz.abzz"},
        {"{\"type\":\"string\",\"format\":\"email\",\"maxLength\":30}", "\"ab.eab.eab.eab@zz.ab.zz.ab.zza"},
        {"{\"type\":\"string\",\"pattern\":\"^[a-z]{3,6}(-[0-9]{2})?(\\\\.[a-z]+)*$\",\"minLength\":5,\"maxLength\":26}",
         "\"abzea-07.abzeab.zeab.ab.e"},
        {"{\"anyOf\":[{\"type\":\"string\",\"pattern\":\"^[a-z]+$\",\"maxLength\":24},{\"type\":\"string\",\"pattern\":\"^[0-9a]+$\"}]}",
         "\"aaaaaaaaaaaaaaaaaaaaaaa"},
        /* several parse stacks: each stack's plain tokens apart, their union taken */
        {"{\"anyOf\":[{\"type\":\"string\",\"pattern\":\"^[a-z]+$\"},{\"type\":\"string\",\"pattern\":\"^[0-9a]+$\"},"
         "{\"type\":\"string\",\"maxLength\":2}]}",
         "\"a0"},
        {"{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"abc\":{\"type\":\"integer\"}},\"patternProperties\":{\"^x[0-9]+$\":{}},"
         "\"additionalProperties\":false},{\"type\":\"object\",\"patternProperties\":{\"^[a-z]+$\":{\"type\":\"null\"}},"
         "\"additionalProperties\":false},{\"type\":\"object\",\"properties\":{\"ab.e\":{\"type\":\"string\"}}}]}",
         "{\"ab"},
        /* strings that step alike share the per-state cache (their pattern_id); a maxLength, or a
         * key's escapes, sets one apart */
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"format\":\"email\"},"
         "\"b\":{\"type\":\"string\",\"format\":\"email\",\"maxLength\":12},\"c\":{\"type\":\"string\",\"format\":\"email\"}},"
         "\"required\":[\"a\",\"b\",\"c\"]}",
         "{\"a\":\"ab.e@zz.ab\",\"b\":\"ab@zz.abab\",\"c\":\"ab.e@zz.a"},
        {"{\"type\":\"object\",\"patternProperties\":{\"^[a-z]+$\":{\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}},"
         "\"additionalProperties\":false}",
         "{\"ab\":\"abz\",\"zz\":\"a"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases && tm; i++)
        CHECKF(doc_masks_exact(tm, &v, cases[i].schema, cases[i].doc), "case %zu", i);
    pf_token_masker_free(tm);
    deep_vocab_free(&v);
}

TEST(grammar_class_trie_is_the_walk) {
    static deep_vocab v;
    pf_token_masker *tm = deep_masker(&v);
    CHECK(tm);
    static const char *const schemas[] = {
        "{\"type\":\"string\",\"pattern\":\"^[0-9A-Za-z]{8}-[0-9A-Za-z]{4}$\"}",
        "{\"type\":\"string\",\"pattern\":\"^(?:\\\\S+\\\\s+){0,3}\\\\S+$\"}",
        "{\"type\":\"string\",\"pattern\":\"^http(s?)://.*$\"}",
        "{\"type\":\"string\",\"pattern\":\"^[a-z\\u00e9 ]+[.@-]?$\"}",
        "{\"type\":\"string\",\"format\":\"email\"}", /* bounded, far from its maxLength */
        "{\"type\":\"string\",\"pattern\":\"^[a-z]{3,6}(-[0-9]{2})?(\\\\.[a-z]+)*$\",\"maxLength\":60}",
    };
    for (size_t i = 0; i < sizeof schemas / sizeof *schemas && tm; i++) CHECKF(class_trie_is_walk(tm, schemas[i]), "schema %zu", i);
    pf_token_masker_free(tm);
    deep_vocab_free(&v);
}

/* The distinct pattern ids among a schema's pattern strings. */
static int pattern_id_count(const char *schema) {
    char err[PF_ERR_LEN];
    pf_schema *s;
    if (pf_schema_compile(schema, strlen(schema), &s, err) != PF_SCHEMA_OK) return fprintf(stderr, "%s\n", err), -1;
    int n = 0;
    for (int32_t i = 0; i < s->n_nodes; i++)
        if (s->nodes[i].re && s->nodes[i].pattern_id == i) n++;
        else if (s->nodes[i].re && (s->nodes[i].pattern_id > i || !s->nodes[s->nodes[i].pattern_id].re)) n = -100;
    pf_schema_free(s);
    return n;
}

TEST(grammar_pattern_ids_join_strings_that_step_alike) {
    /* three date-times and a uuid: two automata */
    CHECK(pattern_id_count("{\"properties\":{\"a\":{\"format\":\"date-time\"},\"b\":{\"format\":\"uuid\"},"
                           "\"c\":{\"items\":{\"format\":\"date-time\"}},\"d\":{\"format\":\"date-time\"}}}") == 2);
    /* the same pattern under other lengths, or as an object's other keys (no \\u escapes): apart */
    CHECK(pattern_id_count("{\"properties\":{\"a\":{\"pattern\":\"^[a-z]+$\"},\"b\":{\"pattern\":\"^[a-z]+$\",\"maxLength\":4},"
                           "\"c\":{\"pattern\":\"^[a-z]+$\",\"minLength\":2},\"d\":{\"pattern\":\"^[a-z]+$\"},"
                           "\"e\":{\"type\":\"object\",\"patternProperties\":{\"^[a-z]+$\":{}},\"additionalProperties\":false}}}") == 4);
}
