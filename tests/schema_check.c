#include "schema_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int json_equal(const pf_json *a, const pf_json *b) {
    if (a->type != b->type) return 0;
    switch (a->type) {
    case PF_JSON_NULL: return 1;
    case PF_JSON_BOOL: return a->u.b == b->u.b;
    case PF_JSON_NUMBER: return a->u.num.d == b->u.num.d;
    case PF_JSON_STRING: return a->u.str.len == b->u.str.len && !memcmp(a->u.str.s, b->u.str.s, a->u.str.len);
    case PF_JSON_ARRAY:
        if (a->u.arr.n != b->u.arr.n) return 0;
        for (size_t i = 0; i < a->u.arr.n; i++)
            if (!json_equal(&a->u.arr.items[i], &b->u.arr.items[i])) return 0;
        return 1;
    case PF_JSON_OBJECT:
        if (a->u.obj.n != b->u.obj.n) return 0;
        for (size_t i = 0; i < a->u.obj.n; i++) {
            const pf_json *x = pf_json_get(b, a->u.obj.members[i].key);
            if (!x || !json_equal(&a->u.obj.members[i].val, x)) return 0;
        }
        return 1;
    }
    return 0;
}

static int type_ok(const char *t, const pf_json *v) {
    if (!strcmp(t, "object")) return v->type == PF_JSON_OBJECT;
    if (!strcmp(t, "array")) return v->type == PF_JSON_ARRAY;
    if (!strcmp(t, "string")) return v->type == PF_JSON_STRING;
    if (!strcmp(t, "number")) return v->type == PF_JSON_NUMBER;
    if (!strcmp(t, "integer")) return v->type == PF_JSON_NUMBER && v->u.num.d == floor(v->u.num.d);
    if (!strcmp(t, "boolean")) return v->type == PF_JSON_BOOL;
    if (!strcmp(t, "null")) return v->type == PF_JSON_NULL;
    return 0;
}

static int types_ok(const pf_json *t, const pf_json *v) {
    if (!t) return 1;
    if (t->type == PF_JSON_STRING) return type_ok(t->u.str.s, v);
    for (size_t i = 0; i < t->u.arr.n; i++)
        if (type_ok(t->u.arr.items[i].u.str.s, v)) return 1;
    return 0;
}

static int object_ok(const pf_json *s, const pf_json *v) {
    const pf_json *props = pf_json_get(s, "properties"), *req = pf_json_get(s, "required"),
                  *add = pf_json_get(s, "additionalProperties");
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const pf_json *ps = props ? pf_json_get(props, v->u.obj.members[i].key) : NULL;
        if (ps && !schema_valid(ps, &v->u.obj.members[i].val)) return 0;
        if (!ps && add && add->type == PF_JSON_BOOL && !add->u.b) return 0;
    }
    for (size_t i = 0; req && i < req->u.arr.n; i++)
        if (!pf_json_get(v, req->u.arr.items[i].u.str.s)) return 0;
    return 1;
}

static int array_ok(const pf_json *s, const pf_json *v) {
    const pf_json *items = pf_json_get(s, "items"), *lo = pf_json_get(s, "minItems"), *hi = pf_json_get(s, "maxItems");
    if (lo && (double)v->u.arr.n < lo->u.num.d) return 0;
    if (hi && (double)v->u.arr.n > hi->u.num.d) return 0;
    for (size_t i = 0; items && i < v->u.arr.n; i++)
        if (!schema_valid(items, &v->u.arr.items[i])) return 0;
    return 1;
}

int schema_valid(const pf_json *s, const pf_json *v) {
    if (s->type == PF_JSON_BOOL) return s->u.b;
    const pf_json *any = pf_json_get(s, "anyOf"), *en = pf_json_get(s, "enum"), *k = pf_json_get(s, "const");
    if (any) {
        int ok = 0;
        for (size_t i = 0; i < any->u.arr.n && !ok; i++) ok = schema_valid(&any->u.arr.items[i], v);
        if (!ok) return 0;
    }
    if (en) {
        int ok = 0;
        for (size_t i = 0; i < en->u.arr.n && !ok; i++) ok = json_equal(&en->u.arr.items[i], v);
        if (!ok) return 0;
    }
    if (k && !json_equal(k, v)) return 0;
    if (!types_ok(pf_json_get(s, "type"), v)) return 0;
    if (v->type == PF_JSON_OBJECT && !object_ok(s, v)) return 0;
    if (v->type == PF_JSON_ARRAY && !array_ok(s, v)) return 0;
    return 1;
}

int schema_valid_text(const char *schema, const char *text, size_t n) {
    char err[PF_ERR_LEN];
    pf_json_doc *s = pf_json_parse(schema, strlen(schema), err), *d = pf_json_parse(text, n, err);
    int ok = s && d && schema_valid(pf_json_root(s), pf_json_root(d));
    pf_json_free(s);
    pf_json_free(d);
    return ok;
}

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
    if (schema_rand(seed) % 2) append(s, n, ",\"additionalProperties\":false");
    append(s, n, "}");
}

char *schema_random(uint64_t *seed, int depth) {
    static const char *const leaf[] = {
        "{\"type\":\"string\"}", "{\"type\":\"number\"}", "{\"type\":\"integer\"}", "{\"type\":\"boolean\"}",
        "{\"type\":\"null\"}", "{\"type\":[\"string\",\"null\"]}", "{\"enum\":[\"red\",\"green\",\"re\",1,12,null]}",
        "{\"const\":\"fixed\"}", "{\"enum\":[true,[1,2],{\"a\":\"b\"}]}", "{}", "{\"type\":\"object\"}",
        "{\"type\":[\"integer\",\"boolean\"]}", "{\"enum\":[\"\\u00e9t\\u00e9\",\"x\\ny\"]}", "{\"description\":\"any\"}"};
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
