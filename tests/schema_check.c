#include "schema_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "util.h"

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
void schema_walks_validate(const char *const *schemas, int n, const char *name, int min_complete) {
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

/* An object of n properties "p0".."p{n-1}" (integers; sorted as texts, so "p70" is the 69th and
 * "p99" the last), with what follows inside the braces after them. */
char *schema_wide_object(int n, const char *more) {
    size_t cap = 64 + (size_t)n * 32 + strlen(more);
    char *s = malloc(cap), *p = s;
    p += sprintf(p, "{\"type\":\"object\",\"properties\":{");
    for (int i = 0; i < n; i++) p += sprintf(p, "%s\"p%d\":{\"type\":\"integer\"}", i ? "," : "", i);
    sprintf(p, "}%s}", more);
    return s;
}
