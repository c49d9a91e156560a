#include "schema_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

uint64_t schema_rand(uint64_t *seed) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t x = *seed;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    return x ^ (x >> 33);
}

static const char *pick(uint64_t *seed, const char *const *a, int n) { return a[schema_rand(seed) % (uint64_t)n]; }

static void append(char **s, size_t *n, const char *t) {
    size_t k = strlen(t);
    *s = realloc(*s, *n + k + 1);
    memcpy(*s + *n, t, k + 1);
    *n += k;
}

static void object_schema(uint64_t *seed, int depth, char **s, size_t *n) {
    static const char *const keys[] = {"name", "id", "tags", "é", "a\\\"b", "n", "x"};
    int np = (int)(schema_rand(seed) % 4);
    append(s, n, "{\"type\":\"object\",\"properties\":{");
    char req[200] = "";
    for (int i = 0; i < np; i++) {
        char key[32], buf[64];
        snprintf(key, sizeof key, "%s%d", keys[schema_rand(seed) % 7], i);
        snprintf(buf, sizeof buf, "%s\"%s\":", i ? "," : "", key);
        append(s, n, buf);
        char *sub = schema_random(seed, depth + 1);
        append(s, n, sub);
        free(sub);
        if (schema_rand(seed) % 2)
            snprintf(req + strlen(req), sizeof req - strlen(req), "%s\"%s\"", req[0] ? "," : "", key);
    }
    append(s, n, "}");
    if (req[0]) {
        append(s, n, ",\"required\":[");
        append(s, n, req);
        append(s, n, "]");
    }
    int add = (int)(schema_rand(seed) % 4);
    if (add == 1) append(s, n, ",\"additionalProperties\":false");
    if (add == 2) append(s, n, ",\"additionalProperties\":{\"type\":[\"integer\",\"null\"],\"maximum\":9},\"maxProperties\":4");
    if (add == 3) append(s, n, ",\"minProperties\":1");
    append(s, n, "}");
}

char *schema_random(uint64_t *seed, int depth) {
    static const char *const leaf[] = {
        "{\"type\":\"string\"}", "{\"type\":\"number\"}", "{\"type\":\"integer\"}", "{\"type\":\"boolean\"}",
        "{\"type\":\"null\"}", "{\"type\":[\"string\",\"null\"]}", "{\"enum\":[\"red\",\"green\",\"re\",1,12,null]}",
        "{\"const\":\"fixed\"}", "{\"enum\":[true,[1,2],{\"a\":\"b\"}]}", "{}", "{\"type\":\"object\"}",
        "{\"type\":[\"integer\",\"boolean\"]}", "{\"enum\":[\"\\u00e9t\\u00e9\",\"x\\ny\"]}", "{\"description\":\"any\"}",
        "{\"type\":\"string\",\"minLength\":1,\"maxLength\":3}", "{\"maxLength\":2}",
        "{\"type\":\"integer\",\"minimum\":-3,\"exclusiveMaximum\":40}", "{\"type\":\"number\",\"minimum\":0,\"maximum\":1}",
        "{\"type\":[\"number\",\"string\"],\"exclusiveMinimum\":-2,\"minLength\":2}",
        "{\"allOf\":[{\"type\":\"integer\",\"minimum\":0},{\"maximum\":7}]}",
        /* bounds with a fraction, where a double tells every 16-digit fraction from them (the
         * walks' validator compares doubles) */
        "{\"type\":\"number\",\"minimum\":-0.45,\"exclusiveMaximum\":0.25}",
        "{\"type\":\"number\",\"exclusiveMinimum\":0.125,\"maximum\":0.13}",
        "{\"type\":\"string\",\"anyOf\":[{\"maxLength\":1},{\"const\":\"abc\"}]}",
        "{\"oneOf\":[{\"type\":\"string\",\"minLength\":1},{\"type\":\"null\"},{\"enum\":[true]}]}"};
    char *s = NULL;
    size_t n = 0;
    int kind = depth >= 3 ? 0 : (int)(schema_rand(seed) % 5);
    if (kind <= 1) {
        append(&s, &n, pick(seed, leaf, (int)(sizeof leaf / sizeof *leaf)));
    } else if (kind == 2) {
        object_schema(seed, depth, &s, &n);
    } else if (kind == 3) {
        char buf[96];
        int lo = (int)(schema_rand(seed) % 3), hi = lo + (int)(schema_rand(seed) % 3);
        char *it = schema_random(seed, depth + 1);
        snprintf(buf, sizeof buf, "{\"type\":\"array\",\"minItems\":%d,\"maxItems\":%d,\"items\":", lo, hi);
        append(&s, &n, buf);
        append(&s, &n, it);
        append(&s, &n, "}");
        free(it);
    } else {
        char *a = schema_random(seed, depth + 1), *b = schema_random(seed, depth + 1);
        append(&s, &n, "{\"anyOf\":[");
        append(&s, &n, a);
        append(&s, &n, ",");
        append(&s, &n, b);
        append(&s, &n, "]}");
        free(a);
        free(b);
    }
    return s;
}

static const char *const k_pieces[] = {
    "{\"", "\"}", "\":", "\",", ",\"", "\"]", "[\"", "[{", "}]", "},{", "true", "false", "null", "name",
    "\"name\":", "12", "3.5", "e+", "\xc3\xa9", "\xc3", "\xa9x", "\xe4\xb8\xad", "\xe4\xb8", "\\n", "\\u00",
    "ab", " ", "\"\"", "0,", "-1", "]}", "\":\"", "\":[", "\":{\"", "red", "green", "fixed", "\"red\"",
    "id", "tags", "{}", "[]", "\\\"", "\\ud8", "\\u00e9", "re", "\xf0\x9f\x98\x80", "\xf0\x9f"};

void schema_vocab_make(schema_vocab *v) {
    int np = (int)(sizeof k_pieces / sizeof *k_pieces);
    v->n = 256 + np + 1;
    v->bytes = calloc((size_t)v->n, sizeof *v->bytes);
    v->lens = calloc((size_t)v->n, sizeof *v->lens);
    static uint8_t single[256];
    for (int i = 0; i < 256; i++) {
        single[i] = (uint8_t)i;
        v->bytes[i] = &single[i];
        v->lens[i] = 1;
    }
    for (int i = 0; i < np; i++) {
        v->bytes[256 + i] = (const uint8_t *)k_pieces[i];
        v->lens[256 + i] = (uint32_t)strlen(k_pieces[i]);
    }
    v->end = v->n - 1;
}

void schema_vocab_free(schema_vocab *v) {
    free(v->bytes);
    free(v->lens);
}

int32_t schema_vocab_find(const schema_vocab *v, const char *s) {
    size_t n = strlen(s);
    for (int i = 0; i < v->n; i++)
        if (v->lens[i] == n && !memcmp(v->bytes[i], s, n)) return i;
    return -1;
}

int schema_fx_open(schema_fx *f, bool close, const char *schema) {
    char err[PF_ERR_LEN];
    memset(f, 0, sizeof *f);
    schema_vocab_make(&f->v);
    f->tm = pf_token_masker_new(f->v.n, f->v.bytes, f->v.lens, &f->v.end, 1, err);
    if (schema) pf_schema_compile(schema, strlen(schema), &f->s, err);
    else pf_schema_json_object(&f->s, err);
    if (!f->s) fprintf(stderr, "%s\n", err);
    f->m = f->s ? pf_matcher_new(f->s) : NULL;
    f->cl = f->s && close ? pf_close_new(f->s) : NULL;
    f->cache = f->tm ? pf_mask_cache_new(f->tm) : NULL;
    return f->tm && f->m && (f->cl || !close) && f->cache && pf_token_masker_words(f->tm) <= 64 ? 0 : -1;
}

void schema_fx_close(schema_fx *f) {
    pf_mask_cache_free(f->cache);
    pf_close_free(f->cl);
    pf_matcher_free(f->m);
    pf_schema_free(f->s);
    pf_token_masker_free(f->tm);
    schema_vocab_free(&f->v);
}

void schema_draws_start(schema_draws *d, uint64_t *seed, int n, bool close, char *(*draw)(uint64_t *seed, int depth)) {
    *d = (schema_draws){.k = -1, .seed = seed, .n = n, .close = close, .draw = draw};
}

bool schema_draws_next(schema_draws *d) {
    schema_draws_stop(d);
    while (++d->k < d->n) {
        d->schema = d->draw(d->seed, 0);
        if (schema_fx_open(&d->f, d->close, d->schema) == 0) return d->compiled++, true;
        schema_draws_stop(d);
    }
    return false;
}

void schema_draws_stop(schema_draws *d) {
    if (!d->schema) return;
    schema_fx_close(&d->f);
    free(d->schema);
    d->schema = NULL;
}

void schema_expect_error(const char *schema, const char *needle) {
    char err[PF_ERR_LEN] = "";
    pf_schema *s;
    CHECKF(pf_schema_compile(schema, strlen(schema), &s, err) == PF_SCHEMA_INVALID && !s, "compiled: %s", schema);
    CHECKF(strstr(err, needle) && !strchr(err, '\n'), "'%s': error '%s' lacks '%s'", schema, err, needle);
}
