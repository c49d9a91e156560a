/* A JSON value checked against a schema at compile time (grammar/schema_cc.h): what lets a schema
 * with `enum` or `const` take any keyword beside it, since its values are a finite set, each kept
 * or dropped by the whole schema. Exact or an error: numbers compared as the decimals their texts
 * spell, strings matched by the same automata the matcher runs, and a keyword it cannot decide
 * (unevaluatedProperties, a format not compiled, ...) fails the compile naming it. */
#include "grammar/schema_cc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/regex.h"
#include "grammar/string_format.h"

#define EVAL_DEPTH 64 /* nested schemas; a $ref back to a schema on the same value ends here */
#define DEC_DIGITS 40

/* A number's exact value: the digits d[0..nd) (no leading or trailing zero; none for 0) times
 * 10^exp, from the text the schema or the value was written in. */
typedef struct {
    int neg, nd, big;
    int64_t exp;
    char d[DEC_DIGITS];
} dec;

static dec dec_of(const cctx *c, const pf_json *x) {
    dec r = {0};
    const char *p = c->src + x->offset, *end = c->src + c->src_len;
    if (p < end && *p == '-') r.neg = 1, p++;
    int64_t frac = 0;
    for (int point = 0; p < end && ((*p >= '0' && *p <= '9') || *p == '.'); p++) {
        if (*p == '.') {
            point = 1;
            continue;
        }
        frac += point;
        if (!r.nd && *p == '0') continue;
        if (r.nd == DEC_DIGITS) r.big = 1;
        else r.d[r.nd++] = *p;
    }
    int64_t e = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        int eneg = ++p < end && *p == '-';
        if (p < end && (*p == '-' || *p == '+')) p++;
        for (; p < end && *p >= '0' && *p <= '9'; p++) e = e < 1000000000 ? e * 10 + (*p - '0') : e;
        e = eneg ? -e : e;
    }
    r.exp = e - frac;
    while (r.nd && r.d[r.nd - 1] == '0') r.nd--, r.exp++;
    if (!r.nd) r.neg = 0;
    return r;
}

/* -1, 0, 1 as a < b, a == b, a > b. */
static int dec_cmp(const dec *a, const dec *b) {
    if (a->neg != b->neg) return a->neg ? -1 : 1;
    int s = a->neg ? -1 : 1;
    if (!a->nd || !b->nd) return a->nd ? s : b->nd ? -s : 0;
    int64_t la = a->nd + a->exp, lb = b->nd + b->exp;
    if (la != lb) return la < lb ? -s : s;
    for (int i = 0; i < a->nd || i < b->nd; i++) {
        char x = i < a->nd ? a->d[i] : '0', y = i < b->nd ? b->d[i] : '0';
        if (x != y) return x < y ? -s : s;
    }
    return 0;
}

static int dec_is_integer(const dec *a) { return !a->nd || a->exp >= 0; }

static uint64_t dec_digits(const dec *a) {
    uint64_t v = 0;
    for (int i = 0; i < a->nd; i++) v = v * 10 + (uint64_t)(a->d[i] - '0');
    return v;
}

/* a is an integer multiple of b (b > 0): 1, 0, or -1 where the digits are too many to tell. */
static int dec_multiple(const dec *a, const dec *b) {
    if (!a->nd) return 1;
    if (a->big || b->big || a->nd > 18 || b->nd > 18) return -1;
    if (a->exp < b->exp) return 0; /* a's digits end in no zero: never divisible by 10^(b.exp - a.exp) */
    if (a->exp - b->exp > 4096) return -1;
    uint64_t m = dec_digits(b), r = dec_digits(a) % m;
    for (int64_t k = a->exp - b->exp; k > 0 && r; k--) r = (uint64_t)((unsigned __int128)r * 10 % m);
    return r == 0;
}

/* Equal JSON values, as JSON Schema compares them: numbers by value (1 and 1.0), true never 1. */
static int json_equal(const cctx *c, const pf_json *a, const pf_json *b) {
    if (a->type != b->type) return 0;
    switch (a->type) {
    case PF_JSON_NULL: return 1;
    case PF_JSON_BOOL: return a->u.b == b->u.b;
    case PF_JSON_NUMBER: {
        dec x = dec_of(c, a), y = dec_of(c, b);
        return !x.big && !y.big ? !dec_cmp(&x, &y) : -1;
    }
    case PF_JSON_STRING: return a->u.str.len == b->u.str.len && !memcmp(a->u.str.s, b->u.str.s, a->u.str.len);
    case PF_JSON_ARRAY:
        if (a->u.arr.n != b->u.arr.n) return 0;
        for (size_t i = 0; i < a->u.arr.n; i++) {
            int r = json_equal(c, &a->u.arr.items[i], &b->u.arr.items[i]);
            if (r != 1) return r;
        }
        return 1;
    case PF_JSON_OBJECT:
        if (a->u.obj.n != b->u.obj.n) return 0;
        for (size_t i = 0; i < a->u.obj.n; i++) {
            const pf_json_member *m = &a->u.obj.members[i];
            const pf_json *x = NULL;
            for (size_t j = 0; j < b->u.obj.n && !x; j++)
                if (b->u.obj.members[j].key_len == m->key_len && !memcmp(b->u.obj.members[j].key, m->key, m->key_len))
                    x = &b->u.obj.members[j].val;
            int r = x ? json_equal(c, &m->val, x) : 0;
            if (r != 1) return r;
        }
        return 1;
    }
    return 0;
}

typedef struct {
    cctx *c;
    const char *path;
} ev;

/* The root's $schema names 2020-12 (none named: readers differ on the draft they assume). */
static int draft_2020(const cctx *c) {
    const pf_json *d = c->root && c->root->type == PF_JSON_OBJECT ? pf_json_get(c->root, "$schema") : NULL;
    return d && d->type == PF_JSON_STRING && strstr(d->u.str.s, "2020-12");
}

static int undecided(ev *e, const char *key) {
    return sc_fail(e->c, e->path, "enum / const: its values cannot be checked against '%s'", key);
}

static int eval(ev *e, const pf_json *s, const pf_json *v, int depth);

/* The string key as a JSON value (for propertyNames). */
static pf_json string_value(const char *s, size_t n) {
    pf_json j = {.type = PF_JSON_STRING};
    j.u.str.s = s;
    j.u.str.len = n;
    return j;
}

/* Mask of the patterns pats[0..n) that the string s matches; FAIL on a pattern not compiled. */
static int64_t match_patterns(ev *e, const char *const *pats, const size_t *lens, int n, const char *s, size_t len) {
    char err[PF_ERR_LEN];
    int oom;
    pf_regex *re = pf_regex_compile(pats, lens, n, err, &oom);
    if (!re) return oom ? sc_fail_oom(e->c, e->path) : sc_fail(e->c, e->path, "%s", err);
    int64_t m = pf_regex_match_mask(re, (const uint8_t *)s, len);
    pf_regex_free(re);
    return m;
}

static int64_t code_points(const pf_json *v) {
    int64_t n = 0;
    for (size_t i = 0; i < v->u.str.len; i++) n += ((uint8_t)v->u.str.s[i] & 0xC0) != 0x80;
    return n;
}

static int type_ok(ev *e, const pf_json *t, const pf_json *v) {
    static const char *const names[] = {"object", "array", "string", "number", "integer", "boolean", "null"};
    static const pf_json_type types[] = {PF_JSON_OBJECT, PF_JSON_ARRAY, PF_JSON_STRING, PF_JSON_NUMBER,
                                         PF_JSON_NUMBER, PF_JSON_BOOL, PF_JSON_NULL};
    if (t->type == PF_JSON_ARRAY) {
        for (size_t i = 0; i < t->u.arr.n; i++) {
            int r = type_ok(e, &t->u.arr.items[i], v);
            if (r) return r;
        }
        return 0;
    }
    for (int i = 0; i < 7 && t->type == PF_JSON_STRING; i++) {
        if (strcmp(t->u.str.s, names[i])) continue;
        if (v->type != types[i]) return 0;
        if (i != 4) return 1;
        dec d = dec_of(e->c, v);
        return d.big ? undecided(e, "type") : dec_is_integer(&d);
    }
    return undecided(e, "type");
}

static int count_of(ev *e, const pf_json *x, const char *key, int64_t *out) {
    if (x->type != PF_JSON_NUMBER || !x->u.num.is_int || x->u.num.i < 0)
        return sc_fail(e->c, e->path, "%s: not a non-negative integer", key);
    *out = x->u.num.i;
    return 0;
}

/* One bound: v against x (lower or upper, open or closed). */
static int bound_ok(ev *e, const pf_json *x, const pf_json *v, int upper, int open, const char *key) {
    if (x->type != PF_JSON_NUMBER) return sc_fail(e->c, e->path, "%s: not a number", key);
    dec a = dec_of(e->c, v), b = dec_of(e->c, x);
    if (a.big || b.big) return undecided(e, key);
    int r = dec_cmp(&a, &b);
    return upper ? (open ? r < 0 : r <= 0) : (open ? r > 0 : r >= 0);
}

static int number_keyword(ev *e, const pf_json *s, const char *key, const pf_json *x, const pf_json *v) {
    static const char *const k[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(key, k[i])) continue;
        int upper = i & 1;
        if (i >= 2 && x->type == PF_JSON_BOOL) return 1; /* draft 4: read beside minimum / maximum */
        const pf_json *ex = i < 2 ? pf_json_get(s, k[i + 2]) : NULL;
        int open = i >= 2 || (ex && ex->type == PF_JSON_BOOL && ex->u.b);
        return bound_ok(e, x, v, upper, open, key);
    }
    /* multipleOf (draft 3's divisibleBy is refused as unknown here) */
    if (x->type != PF_JSON_NUMBER || x->u.num.d <= 0) return sc_fail(e->c, e->path, "multipleOf: not a positive number");
    dec a = dec_of(e->c, v), b = dec_of(e->c, x);
    int r = dec_multiple(&a, &b);
    return r < 0 ? undecided(e, key) : r;
}

static int string_keyword(ev *e, const char *key, const pf_json *x, const pf_json *v) {
    if (!strcmp(key, "minLength") || !strcmp(key, "maxLength")) {
        int64_t n = 0;
        if (count_of(e, x, key, &n) < 0) return FAIL;
        return key[1] == 'i' ? code_points(v) >= n : code_points(v) <= n;
    }
    if (x->type != PF_JSON_STRING) return sc_fail(e->c, e->path, "%s: not a string", key);
    const char *pat = x->u.str.s;
    size_t len = x->u.str.len;
    if (!strcmp(key, "format")) {
        int64_t cap;
        pf_format_kind k = pf_format_lookup(x->u.str.s, x->u.str.len, &pat, &cap);
        if (k == PF_FORMAT_IGNORED) return 1;
        if (k == PF_FORMAT_UNSUPPORTED) return undecided(e, "format");
        if (code_points(v) > cap) return 0;
        len = strlen(pat);
    }
    int64_t m = match_patterns(e, &pat, &len, 1, v->u.str.s, v->u.str.len);
    return m < 0 ? FAIL : m == 1;
}

/* properties, patternProperties and additionalProperties over v's members. */
static int object_members(ev *e, const pf_json *s, const pf_json *v, int depth) {
    const pf_json *props = pf_json_get(s, "properties"), *pp = pf_json_get(s, "patternProperties"),
                  *add = pf_json_get(s, "additionalProperties");
    if ((props && props->type != PF_JSON_OBJECT) || (pp && pp->type != PF_JSON_OBJECT))
        return sc_fail(e->c, e->path, "properties / patternProperties: not an object");
    if (pp && pp->u.obj.n > PF_REGEX_MAX_PATTERNS) return undecided(e, "patternProperties");
    const char *pats[PF_REGEX_MAX_PATTERNS];
    size_t lens[PF_REGEX_MAX_PATTERNS];
    int np = pp ? (int)pp->u.obj.n : 0;
    for (int i = 0; i < np; i++) pats[i] = pp->u.obj.members[i].key, lens[i] = pp->u.obj.members[i].key_len;
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const pf_json_member *m = &v->u.obj.members[i];
        const pf_json *ps = NULL;
        for (size_t j = 0; props && j < props->u.obj.n && !ps; j++)
            if (props->u.obj.members[j].key_len == m->key_len && !memcmp(props->u.obj.members[j].key, m->key, m->key_len))
                ps = &props->u.obj.members[j].val;
        int r = ps ? eval(e, ps, &m->val, depth + 1) : 1;
        int64_t mask = np && r == 1 ? match_patterns(e, pats, lens, np, m->key, m->key_len) : 0;
        if (mask < 0) return FAIL;
        for (int k = 0; k < np && r == 1; k++)
            if (mask >> k & 1) r = eval(e, &pp->u.obj.members[k].val, &m->val, depth + 1);
        if (r == 1 && !ps && !mask && add) r = eval(e, add, &m->val, depth + 1);
        if (r != 1) return r;
    }
    return 1;
}

/* required, dependencies (both forms), dependentRequired, dependentSchemas, propertyNames and the
 * key counts. */
static int object_keyword(ev *e, const char *key, const pf_json *x, const pf_json *v, int depth) {
    int req = !strcmp(key, "required"), dep_req = !strcmp(key, "dependentRequired"),
        dep_schemas = !strcmp(key, "dependentSchemas");
    if (req || dep_req || dep_schemas || !strcmp(key, "dependencies")) {
        if (x->type != (req ? PF_JSON_ARRAY : PF_JSON_OBJECT)) return sc_fail(e->c, e->path, "%s: not of its form", key);
        for (size_t i = 0; i < (req ? 1 : x->u.obj.n); i++) {
            const pf_json *dep = req ? x : &x->u.obj.members[i].val;
            if (!req && !pf_json_get(v, x->u.obj.members[i].key)) continue;
            if (dep_schemas || dep->type != PF_JSON_ARRAY) {
                if (dep_req) return sc_fail(e->c, e->path, "%s: not an array of strings", key);
                int r = eval(e, dep, v, depth + 1);
                if (r != 1) return r;
                continue;
            }
            for (size_t k = 0; k < dep->u.arr.n; k++) {
                if (dep->u.arr.items[k].type != PF_JSON_STRING) return sc_fail(e->c, e->path, "%s: not an array of strings", key);
                if (!pf_json_get(v, dep->u.arr.items[k].u.str.s)) return 0;
            }
        }
        return 1;
    }
    if (!strcmp(key, "propertyNames")) {
        for (size_t i = 0; i < v->u.obj.n; i++) {
            pf_json k = string_value(v->u.obj.members[i].key, v->u.obj.members[i].key_len);
            int r = eval(e, x, &k, depth + 1);
            if (r != 1) return r;
        }
        return 1;
    }
    int64_t n = 0;
    if (count_of(e, x, key, &n) < 0) return FAIL;
    return key[1] == 'i' ? (int64_t)v->u.obj.n >= n : (int64_t)v->u.obj.n <= n;
}

/* items (one schema, or the tuple form with additionalItems), prefixItems, contains with its
 * counts, uniqueItems and the item counts. */
static int array_keyword(ev *e, const pf_json *s, const char *key, const pf_json *x, const pf_json *v, int depth) {
    size_t n = v->u.arr.n;
    if (!strcmp(key, "items") || !strcmp(key, "additionalItems") || !strcmp(key, "prefixItems")) {
        const pf_json *items = pf_json_get(s, "items"), *prefix = pf_json_get(s, "prefixItems");
        int tuple_items = items && items->type == PF_JSON_ARRAY;
        /* before 2020-12, prefixItems is no keyword and items applies to every item */
        if (prefix && (tuple_items || prefix->type != PF_JSON_ARRAY || !draft_2020(e->c))) return undecided(e, "prefixItems");
        const pf_json *tuple = NULL, *rest = x;
        size_t from = 0;
        if (key[0] == 'a') { /* additionalItems: the items after a tuple, nothing otherwise */
            if (!tuple_items) return 1;
            from = items->u.arr.n;
        } else if (key[0] == 'p' || tuple_items) {
            tuple = x, rest = NULL;
        } else if (prefix) {
            from = prefix->u.arr.n; /* items after prefixItems */
        }
        for (size_t i = from; i < n; i++) {
            const pf_json *is = tuple ? (i < tuple->u.arr.n ? &tuple->u.arr.items[i] : NULL) : rest;
            int r = is ? eval(e, is, &v->u.arr.items[i], depth + 1) : 1;
            if (r != 1) return r;
        }
        return 1;
    }
    if (!strcmp(key, "contains") || !strcmp(key, "minContains") || !strcmp(key, "maxContains")) {
        const pf_json *has = pf_json_get(s, "contains");
        if (key[0] != 'c') return 1; /* read beside contains */
        if ((pf_json_get(s, "minContains") || pf_json_get(s, "maxContains")) && sc_ref_siblings_ignored(e->c))
            return undecided(e, "minContains"); /* no keyword before 2019-09 */
        int64_t lo = 1, hi = INT64_MAX, found = 0;
        const pf_json *l = pf_json_get(s, "minContains"), *h = pf_json_get(s, "maxContains");
        if ((l && count_of(e, l, "minContains", &lo) < 0) || (h && count_of(e, h, "maxContains", &hi) < 0)) return FAIL;
        for (size_t i = 0; i < n; i++) {
            int r = eval(e, has, &v->u.arr.items[i], depth + 1);
            if (r < 0) return r;
            found += r;
        }
        return found >= lo && found <= hi;
    }
    if (!strcmp(key, "uniqueItems")) {
        if (x->type != PF_JSON_BOOL) return sc_fail(e->c, e->path, "uniqueItems: not a boolean");
        for (size_t i = 0; x->u.b && i < n; i++)
            for (size_t j = i + 1; j < n; j++) {
                int r = json_equal(e->c, &v->u.arr.items[i], &v->u.arr.items[j]);
                if (r) return r < 0 ? undecided(e, key) : 0;
            }
        return 1;
    }
    int64_t k = 0;
    if (count_of(e, x, key, &k) < 0) return FAIL;
    return key[1] == 'i' ? (int64_t)n >= k : (int64_t)n <= k;
}

/* allOf, anyOf, oneOf, not, if / then / else. */
static int combinator(ev *e, const pf_json *s, const char *key, const pf_json *x, const pf_json *v, int depth) {
    if (!strcmp(key, "not")) {
        int r = eval(e, x, v, depth + 1);
        return r < 0 ? r : !r;
    }
    if (!strcmp(key, "if")) {
        int r = eval(e, x, v, depth + 1);
        const pf_json *next = r == 1 ? pf_json_get(s, "then") : pf_json_get(s, "else");
        return r < 0 || !next ? (r < 0 ? r : 1) : eval(e, next, v, depth + 1);
    }
    if (!strcmp(key, "then") || !strcmp(key, "else")) return 1; /* read beside if */
    if (x->type != PF_JSON_ARRAY || !x->u.arr.n) return sc_fail(e->c, e->path, "%s: not a non-empty array of schemas", key);
    int met = 0;
    for (size_t i = 0; i < x->u.arr.n; i++) {
        int r = eval(e, &x->u.arr.items[i], v, depth + 1);
        if (r < 0) return r;
        met += r;
        if (key[1] == 'l' && !r) return 0;
    }
    return key[1] == 'l' ? 1 : key[0] == 'a' ? met > 0 : met == 1;
}

static int keyword(ev *e, const pf_json *s, const pf_json_member *m, const pf_json *v, int depth) {
    static const char *const obj[] = {"required", "minProperties", "maxProperties", "propertyNames",
                                      "dependencies", "dependentRequired", "dependentSchemas"};
    static const char *const arr[] = {"items", "additionalItems", "prefixItems", "minItems", "maxItems",
                                      "uniqueItems", "contains", "minContains", "maxContains"};
    static const char *const str[] = {"minLength", "maxLength", "pattern", "format"};
    static const char *const num[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"};
    static const char *const comb[] = {"allOf", "anyOf", "oneOf", "not", "if", "then", "else"};
    const char *k = m->key;
    const pf_json *x = &m->val;
    if (!strcmp(k, "type")) return type_ok(e, x, v);
    if (!strcmp(k, "enum") || !strcmp(k, "const")) {
        if (k[0] == 'e' && x->type != PF_JSON_ARRAY) return sc_fail(e->c, e->path, "enum: not an array");
        size_t n = k[0] == 'e' ? x->u.arr.n : 1;
        for (size_t i = 0; i < n; i++) {
            int r = json_equal(e->c, k[0] == 'e' ? &x->u.arr.items[i] : x, v);
            if (r) return r < 0 ? undecided(e, k) : 1;
        }
        return 0;
    }
    if (!strcmp(k, "properties") || !strcmp(k, "additionalProperties") || !strcmp(k, "patternProperties")) {
        /* the three read together, by the first of them the schema has */
        const char *lead = pf_json_get(s, "properties") ? "properties"
                           : pf_json_get(s, "patternProperties") ? "patternProperties" : "additionalProperties";
        return v->type == PF_JSON_OBJECT && !strcmp(k, lead) ? object_members(e, s, v, depth) : 1;
    }
    for (size_t i = 0; i < sizeof obj / sizeof *obj; i++)
        if (!strcmp(k, obj[i])) {
            return v->type == PF_JSON_OBJECT ? object_keyword(e, k, x, v, depth) : 1;
        }
    for (size_t i = 0; i < sizeof arr / sizeof *arr; i++)
        if (!strcmp(k, arr[i])) return v->type == PF_JSON_ARRAY ? array_keyword(e, s, k, x, v, depth) : 1;
    for (size_t i = 0; i < sizeof str / sizeof *str; i++)
        if (!strcmp(k, str[i])) return v->type == PF_JSON_STRING ? string_keyword(e, k, x, v) : 1;
    for (size_t i = 0; i < sizeof num / sizeof *num; i++)
        if (!strcmp(k, num[i])) return v->type == PF_JSON_NUMBER ? number_keyword(e, s, k, x, v) : 1;
    for (size_t i = 0; i < sizeof comb / sizeof *comb; i++)
        if (!strcmp(k, comb[i])) return combinator(e, s, k, x, v, depth);
    return undecided(e, k);
}

static int eval(ev *e, const pf_json *s, const pf_json *v, int depth) {
    if (depth > EVAL_DEPTH) return sc_fail(e->c, e->path, "enum / const: its values checked deeper than %d schemas", EVAL_DEPTH);
    if (s->type == PF_JSON_BOOL) return s->u.b;
    if (s->type != PF_JSON_OBJECT) return sc_fail(e->c, e->path, "a schema must be an object or a boolean");
    const pf_json *ref = pf_json_get(s, "$ref");
    if (ref) {
        const pf_json *t = sc_ref_resolve(e->c, ref, e->path);
        int r = t ? eval(e, t, v, depth + 1) : FAIL;
        if (r != 1 || sc_ref_siblings_ignored(e->c)) return r;
    }
    for (size_t i = 0; i < s->u.obj.n; i++) {
        const pf_json_member *m = &s->u.obj.members[i];
        if (!sc_validation_keyword(m)) continue;
        for (size_t j = 0; j < i; j++)
            if (s->u.obj.members[j].key_len == m->key_len && !strcmp(s->u.obj.members[j].key, m->key))
                return sc_fail(e->c, e->path, "keyword '%s' given twice", m->key);
        if (!strcmp(m->key, "required") && m->val.type != PF_JSON_ARRAY)
            return sc_fail(e->c, e->path, "required: not an array of strings");
        int r = keyword(e, s, m, v, depth);
        if (r != 1) return r;
    }
    return 1;
}

int sc_eval(cctx *c, const pf_json *s, const pf_json *v, const char *path) {
    ev e = {c, path};
    return eval(&e, s, v, 0);
}
