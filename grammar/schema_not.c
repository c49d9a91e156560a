/* not (grammar/schema_cc.h): the complement of a schema, keyword by keyword, merged in. */
#include "grammar/schema_cc.h"

#include <stdlib.h>
#include <string.h>

#include "formats/grow.h"

/* ---- not: the complement of a schema, as a schema of the subset ----
 * not false: nothing; not true / not {}: no value; otherwise not (A and B and ...) is (not A) or
 * (not B) or ..., one term per keyword, each holding only values of the type the keyword constrains
 * (a value of another type meets it): not {"type": T} the other types (not "integer" takes every
 * number away, never letting one through), not required an object lacking a key, not properties an
 * object with a key whose value its schema refuses (with the key required too: absent or refused),
 * the counts and bounds reversed, not enum over true / false / null the others, not anyOf the
 * complements merged, not allOf their anyOf, not not the schema itself, not $ref what it names.
 * Where the complement is merged with a context (the keywords beside `not`, a oneOf branch), a
 * term none of its values can meet is dropped, one all of them meet takes it whole (an enum none of
 * whose values it admits, additionalProperties or items that it settles). Beside enum or const any
 * form (the values are checked one by one, grammar/schema_eval.c). not pattern is a string of type
 * "string" with `not` over the pattern left in it, for its automaton (grammar/schema_string.c). Any
 * other keyword (format, an enum of strings, oneOf, ...) is an error naming it. */

/* The annotations-only schema s: it asserts nothing (only keywords neither compiled nor refused). */
static int asserts_nothing(const pf_json *s) {
    for (size_t i = 0; i < s->u.obj.n; i++)
        if (sc_keyword_index(&s->u.obj.members[i]) >= 0 || sc_unsupported(s, &s->u.obj.members[i]) ||
            !strcmp(s->u.obj.members[i].key, "$ref"))
            return 0;
    return 1;
}

/* The one keyword of s that asserts something, NULL when there is not exactly one. */
static const pf_json_member *sole_keyword(const pf_json *s) {
    const pf_json_member *k = NULL;
    for (size_t i = 0; i < s->u.obj.n; i++) {
        const pf_json_member *m = &s->u.obj.members[i];
        if (sc_keyword_index(m) < 0 && !sc_unsupported(s, m) && strcmp(m->key, "$ref")) continue;
        if (k) return NULL;
        k = m;
    }
    return k;
}

pf_json *sc_object1(cctx *c, const char *key, pf_json val) {
    pf_json *o = sc_scratch(c, sizeof *o);
    pf_json_member *m = sc_scratch(c, sizeof *m);
    if (!o || !m) return NULL;
    m->key = key;
    m->key_len = strlen(key);
    m->val = val;
    o->type = PF_JSON_OBJECT;
    o->u.obj.members = m;
    o->u.obj.n = 1;
    return o;
}

/* The keys of `required` (or of an allOf whose branches hold only `required`) gathered into
 * keys[0..*n); 0, or -1 for another form. */
static int required_keys(const pf_json_member *k, const pf_json **keys, size_t *n, size_t cap) {
    if (!strcmp(k->key, "required")) {
        if (k->val.type != PF_JSON_ARRAY) return -1;
        for (size_t i = 0; i < k->val.u.arr.n; i++) {
            if (k->val.u.arr.items[i].type != PF_JSON_STRING || *n == cap) return -1;
            keys[(*n)++] = &k->val.u.arr.items[i];
        }
        return 0;
    }
    if (k->val.type != PF_JSON_ARRAY || !k->val.u.arr.n) return -1;
    for (size_t i = 0; i < k->val.u.arr.n; i++) {
        const pf_json *b = &k->val.u.arr.items[i];
        const pf_json_member *only = b->type == PF_JSON_OBJECT ? sole_keyword(b) : NULL;
        if (!only || strcmp(only->key, "required") || required_keys(only, keys, n, cap) < 0) return -1;
    }
    return 0;
}

/* not {"required": [k1, ..., kn]} (or an allOf of such): an object lacking one of the keys, as
 * {"type": "object", "anyOf": [{"properties": {ki: false}}, ...]} (a required key holds for every
 * value that is not an object, so its `not` holds for none); NULL for another form (c->oom set
 * when out of memory). */
static const pf_json *without_keys(cctx *c, const pf_json_member *k, const char *path) {
    static const pf_json k_false = {.type = PF_JSON_BOOL, .u.b = false};
    static const pf_json k_object = {.type = PF_JSON_STRING, .u.str = {"object", 6}};
    const pf_json *keys[PF_SCHEMA_MAX_PROPS];
    size_t n = 0;
    if (required_keys(k, keys, &n, PF_SCHEMA_MAX_PROPS) < 0) return NULL;
    if (!n) return &k_false; /* every object has all of no keys */
    pf_json *alts = sc_scratch(c, n * sizeof *alts);
    pf_json_member *top = sc_scratch(c, 2 * sizeof *top);
    pf_json *out = sc_scratch(c, sizeof *out);
    if (!alts || !top || !out) return sc_fail_oom(c, path), NULL;
    for (size_t i = 0; i < n; i++) {
        pf_json *props = sc_object1(c, keys[i]->u.str.s, k_false);
        if (props) props->u.obj.members[0].key_len = keys[i]->u.str.len;
        const pf_json *one = props ? sc_object1(c, "properties", *props) : NULL;
        if (!one) return sc_fail_oom(c, path), NULL;
        alts[i] = *one;
    }
    top[0] = (pf_json_member){"type", 4, k_object};
    if (n == 1) top[1] = alts[0].u.obj.members[0];
    else top[1] = (pf_json_member){"anyOf", 5, {.type = PF_JSON_ARRAY, .u.arr = {alts, n}}};
    *out = (pf_json){.type = PF_JSON_OBJECT, .u.obj = {top, 2}};
    return out;
}

static const pf_json *complement(cctx *c, const pf_json *n, const pf_json *ctx, int depth, const char *path);
static const pf_json *complement_any_of(cctx *c, const pf_json *list, const pf_json *ctx, int depth, const char *path);

static const pf_json k_true = {.type = PF_JSON_BOOL, .u.b = true}, k_false = {.type = PF_JSON_BOOL, .u.b = false};
static const char *const k_type_names[] = {"object", "array", "string", "number", "integer", "boolean", "null"};
#define ALL_TYPES (T_OBJ | T_ARR | T_STR | T_NUM | T_BOOL | T_NULL)

/* The terms of a complement: a value meets it when it meets one of them (an anyOf). */
typedef struct {
    pf_json *t;
    size_t n, cap;
    int all; /* a term holds for every value the context admits */
} terms;

static int add_term(cctx *c, terms *ts, const pf_json *t) {
    if (t->type == PF_JSON_BOOL) {
        ts->all |= t->u.b;
        return 0;
    }
    if (ts->n == ts->cap) {
        size_t cap = ts->cap ? 2 * ts->cap : 8;
        pf_json *grown = sc_scratch(c, cap * sizeof *grown);
        if (!grown) return -1;
        if (ts->n) memcpy(grown, ts->t, ts->n * sizeof *grown);
        ts->t = grown, ts->cap = cap;
    }
    ts->t[ts->n++] = *t;
    return 0;
}

/* {"type": [the types of set], more[0..n_more)}: NULL when out of memory. */
static const pf_json *typed(cctx *c, int set, const pf_json_member *more, size_t n_more) {
    pf_json *list = sc_scratch(c, 7 * sizeof *list);
    pf_json_member *m = sc_scratch(c, (1 + n_more) * sizeof *m);
    pf_json *out = sc_scratch(c, sizeof *out);
    if (!list || !m || !out) return NULL;
    size_t k = 0;
    for (int i = 0; i < 7; i++)
        if (set & (1 << i)) list[k].type = PF_JSON_STRING, list[k].u.str.s = k_type_names[i], list[k++].u.str.len = strlen(k_type_names[i]);
    m[0] = (pf_json_member){"type", 4, {.type = PF_JSON_ARRAY, .u.arr = {list, k}}};
    for (size_t i = 0; i < n_more; i++) m[1 + i] = more[i];
    *out = (pf_json){.type = PF_JSON_OBJECT, .u.obj = {m, 1 + n_more}};
    return out;
}

/* The types a schema's `type` names (every type when it has none, or it is not a schema object). */
static int named_types(cctx *c, const pf_json *s) {
    const pf_json *t = s && s->type == PF_JSON_OBJECT ? pf_json_get(s, "type") : NULL;
    if (!t) return ALL_TYPES;
    cctx probe = *c; /* type_set only reads */
    char err[PF_ERR_LEN];
    probe.err = err;
    int set = sc_type_set(&probe, s, "");
    if (set < 0) return ALL_TYPES;
    return set & T_INT ? (set & ~T_INT) | T_NUM : set;
}

/* The type a keyword constrains (it holds for every value of another type); 0 for the others. */
static int keyword_type(const char *k) {
    static const char *const obj[] = {"properties", "required", "additionalProperties", "patternProperties", "minProperties",
                                      "maxProperties", "dependencies", "dependentRequired", "propertyNames", "dependentSchemas"};
    static const char *const arr[] = {"items", "minItems", "maxItems", "uniqueItems", "contains"};
    static const char *const str[] = {"minLength", "maxLength", "pattern", "format"};
    static const char *const num[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"};
    for (size_t i = 0; i < sizeof obj / sizeof *obj; i++)
        if (!strcmp(k, obj[i])) return T_OBJ;
    for (size_t i = 0; i < sizeof arr / sizeof *arr; i++)
        if (!strcmp(k, arr[i])) return T_ARR;
    for (size_t i = 0; i < sizeof str / sizeof *str; i++)
        if (!strcmp(k, str[i])) return T_STR;
    for (size_t i = 0; i < sizeof num / sizeof *num; i++)
        if (!strcmp(k, num[i])) return T_NUM;
    return 0;
}

/* Keywords whose meaning depends on others beside them: the same text in the context proves nothing. */
static int self_contained(const char *k) {
    static const char *const dep[] = {"additionalProperties", "items", "additionalItems", "minimum", "maximum",
                                      "exclusiveMinimum", "exclusiveMaximum", "if", "then", "else", "contains",
                                      "minContains", "maxContains", "unevaluatedProperties", "unevaluatedItems",
                                      "$dynamicRef", "$recursiveRef"};
    for (size_t i = 0; i < sizeof dep / sizeof *dep; i++)
        if (!strcmp(k, dep[i])) return 0;
    return 1;
}

/* The string is printable ASCII, where the automata are exact under every engine's reading. */
static int plain_ascii(const pf_json *v) {
    for (size_t i = 0; i < v->u.str.len; i++)
        if ((unsigned char)v->u.str.s[i] < 0x20 || (unsigned char)v->u.str.s[i] > 0x7e) return 0;
    return 1;
}

/* No value of enum / const list vals[0..n) meets the context ctx (each checked, grammar/schema_eval.c):
 * scalars only; strings of printable ASCII, checked only against a ctx with no `format` (its
 * automaton is a subset of the specification) and nothing that could hold one. */
static int values_outside(cctx *c, const pf_json *vals, size_t n, const pf_json *ctx) {
    static const char *const hide[] = {"format", "$ref", "anyOf", "allOf", "oneOf", "not", "if"};
    if (!ctx || ctx->type != PF_JSON_OBJECT) return 0;
    int strings = 0; /* a format (a subset of its specification) may sit where ctx's top does not show */
    for (size_t i = 0; i < n; i++) strings |= vals[i].type == PF_JSON_STRING;
    for (size_t i = 0; strings && i < sizeof hide / sizeof *hide; i++)
        if (pf_json_get(ctx, hide[i])) return 0;
    for (size_t i = 0; i < n; i++) {
        const pf_json *v = &vals[i];
        if (v->type == PF_JSON_ARRAY || v->type == PF_JSON_OBJECT || (v->type == PF_JSON_STRING && !plain_ascii(v))) return 0;
        char err[PF_ERR_LEN], *keep = c->err;
        c->err = err; /* a value it cannot decide proves nothing */
        int r = sc_eval(c, ctx, v, "");
        c->err = keep;
        if (c->oom || r != 0) return 0;
    }
    return 1;
}

/* not {"enum": [...]} where every value is true, false or null: the other types, or the others of those. */
static const pf_json *finite_complement(cctx *c, const pf_json *vals, size_t n, const char *path) {
    int has_t = 0, has_f = 0, has_n = 0;
    for (size_t i = 0; i < n; i++) {
        if (vals[i].type == PF_JSON_BOOL) has_t |= vals[i].u.b, has_f |= !vals[i].u.b;
        else if (vals[i].type == PF_JSON_NULL) has_n = 1;
        else return NULL;
    }
    int other = ALL_TYPES & ~((has_t || has_f ? T_BOOL : 0) | (has_n ? T_NULL : 0));
    pf_json *alts = sc_scratch(c, 2 * sizeof *alts);
    const pf_json *t = alts ? typed(c, other, NULL, 0) : NULL;
    if (!t) return sc_fail_oom(c, path), NULL;
    size_t k = 0;
    if (other) alts[k++] = *t;
    if (has_t != has_f) {
        const pf_json *lit = sc_object1(c, "const", (pf_json){.type = PF_JSON_BOOL, .u.b = !has_t});
        if (!lit) return sc_fail_oom(c, path), NULL;
        alts[k++] = *lit;
    }
    if (!k) return &k_false;
    if (k == 1) return &alts[0];
    const pf_json *any = sc_object1(c, "anyOf", (pf_json){.type = PF_JSON_ARRAY, .u.arr = {alts, k}});
    return any ? any : (sc_fail_oom(c, path), NULL);
}

/* not {"enum": [...]} of strings alone: the other types, or a string of printable ASCII that none
 * of them spells (a `not` over one pattern matching exactly them, which the string's automaton
 * takes: grammar/schema_string.c; a value outside printable ASCII is no such string anyway). NULL
 * for another list (or values none of which is printable ASCII); after a failure too. */
static const pf_json *strings_complement(cctx *c, const pf_json *vals, size_t n, const char *path) {
    pf_sbuf b = {0};
    int k = 0;
    pf_sbuf_put(&b, "^(?:", 4);
    for (size_t i = 0; i < n; i++) {
        if (vals[i].type != PF_JSON_STRING) return free(b.p), NULL;
        if (!plain_ascii(&vals[i])) continue;
        if (k++) pf_sbuf_put(&b, "|", 1);
        for (size_t j = 0; j < vals[i].u.str.len; j++) {
            char ch = vals[i].u.str.s[j];
            int word = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
            if (!word) pf_sbuf_put(&b, "\\", 1); /* punctuation escaped: the character itself */
            pf_sbuf_put(&b, &ch, 1);
        }
    }
    pf_sbuf_put(&b, ")$", 2);
    char *text = b.oom || !k ? NULL : sc_scratch(c, b.n + 1);
    if (text) memcpy(text, b.p, b.n), text[b.n] = 0;
    free(b.p);
    if (!k) return NULL;
    pf_json *alts = text ? sc_scratch(c, 2 * sizeof *alts) : NULL;
    const pf_json *pat = alts ? sc_object1(c, "pattern", (pf_json){.type = PF_JSON_STRING, .u.str = {text, b.n}}) : NULL;
    pf_json_member more = {"not", 3, pat ? *pat : k_true};
    const pf_json *str = pat ? typed(c, T_STR, &more, 1) : NULL, *other = str ? typed(c, ALL_TYPES & ~T_STR, NULL, 0) : NULL;
    if (!other) return sc_fail_oom(c, path), NULL;
    alts[0] = *other, alts[1] = *str;
    const pf_json *any = sc_object1(c, "anyOf", (pf_json){.type = PF_JSON_ARRAY, .u.arr = {alts, 2}});
    return any ? any : (sc_fail_oom(c, path), NULL);
}

/* The schema ctx gives key k's value: its listed schema, false where its additionalProperties: false
 * leaves no room for k, NULL where it says nothing. */
static const pf_json *context_property(const pf_json *ctx, const char *k) {
    if (!ctx || ctx->type != PF_JSON_OBJECT) return NULL;
    const pf_json *props = pf_json_get(ctx, "properties"), *add = pf_json_get(ctx, "additionalProperties");
    const pf_json *p = props && props->type == PF_JSON_OBJECT ? pf_json_get(props, k) : NULL;
    if (p || pf_json_get(ctx, "patternProperties")) return p;
    return add && add->type == PF_JSON_BOOL && !add->u.b ? &k_false : NULL;
}

/* Schema n's `required` lists the key of property p. */
static int requires_key(const pf_json *n, const pf_json_member *p) {
    const pf_json *r = pf_json_get(n, "required");
    for (size_t i = 0; r && r->type == PF_JSON_ARRAY && i < r->u.arr.n; i++)
        if (r->u.arr.items[i].type == PF_JSON_STRING && r->u.arr.items[i].u.str.len == p->key_len &&
            !memcmp(r->u.arr.items[i].u.str.s, p->key, p->key_len))
            return 1;
    return 0;
}

/* `required` k of n without the keys n's properties list (their terms hold their absence too);
 * NULL when out of memory. */
static const pf_json_member *unlisted_keys(cctx *c, const pf_json *n, const pf_json_member *k) {
    const pf_json *props = pf_json_get(n, "properties");
    if (k->val.type != PF_JSON_ARRAY || !props || props->type != PF_JSON_OBJECT) return k;
    pf_json_member *out = sc_scratch(c, sizeof *out);
    pf_json *keys = sc_scratch(c, (k->val.u.arr.n + 1) * sizeof *keys);
    if (!out || !keys) return NULL;
    size_t m = 0;
    for (size_t i = 0; i < k->val.u.arr.n; i++) {
        const pf_json *r = &k->val.u.arr.items[i];
        if (r->type != PF_JSON_STRING || !pf_json_get(props, r->u.str.s) || strlen(r->u.str.s) != r->u.str.len) keys[m++] = *r;
    }
    *out = *k;
    out->val.u.arr.items = keys, out->val.u.arr.n = m;
    return out;
}

/* not {"properties": {...}}: an object holding one of the keys with a value its schema refuses. */
static int properties_terms(cctx *c, terms *ts, const pf_json *n, const pf_json *props, const pf_json *ctx, int depth,
                            const char *path) {
    if (props->type != PF_JSON_OBJECT) return sc_fail(c, path, "properties: not an object of schemas");
    for (size_t i = 0; i < props->u.obj.n; i++) {
        const pf_json_member *p = &props->u.obj.members[i];
        const pf_json *in_ctx = context_property(ctx, p->key);
        int req = requires_key(n, p);
        if (in_ctx && in_ctx->type == PF_JSON_BOOL && !in_ctx->u.b) { /* the key cannot appear there */
            ts->all |= req;
            continue;
        }
        const pf_json *neg = in_ctx && sc_same_text(c, in_ctx, &p->val) ? &k_false : complement(c, &p->val, in_ctx, depth + 1, path);
        if (!neg) return FAIL;
        if (neg->type == PF_JSON_BOOL && !neg->u.b && !req) continue;
        pf_json *key = sc_scratch(c, sizeof *key);
        pf_json *one = sc_object1(c, p->key, *neg);
        if (!key || !one) return sc_fail_oom(c, path);
        one->u.obj.members[0].key_len = p->key_len;
        *key = (pf_json){.type = PF_JSON_STRING, .u.str = {p->key, p->key_len}};
        /* a key n also requires: absent or refused, one term (`required`'s terms leave it out) */
        pf_json_member more[2] = {{"properties", 10, *one}, {"required", 8, {.type = PF_JSON_ARRAY, .u.arr = {key, 1}}}};
        const pf_json *t = typed(c, T_OBJ, more, req ? 1 : 2);
        if (!t || add_term(c, ts, t) < 0) return sc_fail_oom(c, path);
    }
    return 0;
}

/* not {"minLength": n} and the other counts: the value of that type with the other bound. */
static const pf_json *count_complement(cctx *c, const pf_json_member *k, const char *path) {
    static const char *const lo[] = {"minLength", "minItems", "minProperties"}, *const hi[] = {"maxLength", "maxItems", "maxProperties"};
    for (int i = 0; i < 3; i++) {
        int is_lo = !strcmp(k->key, lo[i]);
        if (!is_lo && strcmp(k->key, hi[i])) continue;
        const pf_json *v = &k->val;
        if (v->type != PF_JSON_NUMBER || !v->u.num.is_int || v->u.num.i < 0 || v->u.num.i == INT64_MAX)
            return sc_fail(c, path, "%s: not a non-negative integer", k->key), NULL;
        if (is_lo && !v->u.num.i) return &k_false;
        pf_json *n = sc_count(c, is_lo ? v->u.num.i - 1 : v->u.num.i + 1);
        pf_json_member more = {is_lo ? hi[i] : lo[i], strlen(is_lo ? hi[i] : lo[i]), n ? *n : k_true};
        const pf_json *t = n ? typed(c, keyword_type(k->key), &more, 1) : NULL;
        return t ? t : (sc_fail_oom(c, path), NULL);
    }
    return NULL;
}

/* not {"minimum": x} and the other bounds (draft 4's boolean exclusives read beside their bound):
 * a number past it the other way. */
static const pf_json *bound_complement(cctx *c, const pf_json *n, const pf_json_member *k, const char *path) {
    int upper = !strcmp(k->key, "maximum") || !strcmp(k->key, "exclusiveMaximum");
    int excl = !strncmp(k->key, "exclusive", 9);
    if (k->val.type == PF_JSON_BOOL) return &k_false; /* read with its bound (alone it asserts nothing) */
    if (k->val.type != PF_JSON_NUMBER) return sc_fail(c, path, "%s: not a number", k->key), NULL;
    if (!excl) {
        const pf_json *e = pf_json_get(n, upper ? "exclusiveMaximum" : "exclusiveMinimum");
        excl = e && e->type == PF_JSON_BOOL && e->u.b;
    }
    const char *other = excl ? (upper ? "minimum" : "maximum") : (upper ? "exclusiveMinimum" : "exclusiveMaximum");
    pf_json_member more = {other, strlen(other), k->val};
    const pf_json *t = typed(c, T_NUM, &more, 1);
    return t ? t : (sc_fail_oom(c, path), NULL);
}

/* not {"additionalProperties": S} where ctx's additionalProperties is false: one of the keys ctx
 * lists and n does not, with a value S refuses. 0, 1 where ctx does not settle it, or FAIL. */
static int other_keys_terms(cctx *c, terms *ts, const pf_json *n, const pf_json *s, const pf_json *ctx, int depth,
                            const char *path) {
    const pf_json *pc = ctx ? pf_json_get(ctx, "properties") : NULL, *pn = pf_json_get(n, "properties");
    const pf_json *ac = ctx ? pf_json_get(ctx, "additionalProperties") : NULL;
    if (!ac || ac->type != PF_JSON_BOOL || ac->u.b || pf_json_get(ctx, "patternProperties") || pf_json_get(n, "patternProperties"))
        return 1;
    if ((pc && pc->type != PF_JSON_OBJECT) || (pn && pn->type != PF_JSON_OBJECT)) return 1;
    for (size_t i = 0; pc && i < pc->u.obj.n; i++) {
        const pf_json_member *p = &pc->u.obj.members[i];
        if ((pn && pf_json_get(pn, p->key)) || strlen(p->key) != p->key_len) continue;
        const pf_json *neg = complement(c, s, &p->val, depth + 1, path);
        if (!neg) return FAIL;
        if (neg->type == PF_JSON_BOOL && !neg->u.b) continue;
        pf_json *key = sc_scratch(c, sizeof *key);
        pf_json *one = sc_object1(c, p->key, *neg);
        if (!key || !one) return sc_fail_oom(c, path);
        *key = (pf_json){.type = PF_JSON_STRING, .u.str = {p->key, p->key_len}};
        pf_json_member more[2] = {{"required", 8, {.type = PF_JSON_ARRAY, .u.arr = {key, 1}}}, {"properties", 10, *one}};
        const pf_json *t = typed(c, T_OBJ, more, 2);
        if (!t || add_term(c, ts, t) < 0) return sc_fail_oom(c, path);
    }
    return 0;
}

/* not {"items": S} where no item ctx's items admit meets S: a non-empty array. 0, 1 where that
 * is not proven, or FAIL. */
static int items_term(cctx *c, terms *ts, const pf_json *s, const pf_json *ctx, int depth, const char *path) {
    const pf_json *ic = ctx ? pf_json_get(ctx, "items") : NULL;
    if (!ic || ic->type == PF_JSON_ARRAY || s->type == PF_JSON_ARRAY) return 1;
    const pf_json *neg = complement(c, s, ic, depth + 1, path);
    if (!neg) return c->oom ? FAIL : 1; /* the reason is the items' own complement; the caller names `items` */
    if (neg->type != PF_JSON_BOOL || !neg->u.b) return 1;
    pf_json *one = sc_count(c, 1);
    pf_json_member more = {"minItems", 8, one ? *one : k_true};
    const pf_json *t = one ? typed(c, T_ARR, &more, 1) : NULL;
    return t && add_term(c, ts, t) == 0 ? 0 : sc_fail_oom(c, path);
}

/* ctx admits no value the keyword k (beside which the schema's keywords are n's) refuses, so its
 * complement adds nothing there. */
static int implied_by_context(cctx *c, const pf_json *n, const pf_json_member *k, const pf_json *ctx) {
    if (!ctx || ctx->type != PF_JSON_OBJECT) return 0;
    const pf_json *same = pf_json_get(ctx, k->key);
    if (same && self_contained(k->key) && sc_same_text(c, same, &k->val)) return 1;
    if (!strcmp(k->key, "additionalProperties")) {
        /* every key ctx admits is one n lists, or takes an additionalProperties no wider */
        const pf_json *pc = pf_json_get(ctx, "properties"), *pn = pf_json_get(n, "properties"), *ac = same;
        if (pf_json_get(ctx, "patternProperties") || pf_json_get(n, "patternProperties")) return 0;
        for (size_t i = 0; pc && pc->type == PF_JSON_OBJECT && i < pc->u.obj.n; i++)
            if (!pn || pn->type != PF_JSON_OBJECT || !pf_json_get(pn, pc->u.obj.members[i].key)) return 0;
        return ac && ((ac->type == PF_JSON_BOOL && !ac->u.b) || sc_same_text(c, ac, &k->val));
    }
    if (!strcmp(k->key, "items")) {
        const pf_json *mi = pf_json_get(ctx, "maxItems");
        if (mi && mi->type == PF_JSON_NUMBER && mi->u.num.is_int && mi->u.num.i == 0) return 1;
        return same && same->type != PF_JSON_ARRAY && k->val.type != PF_JSON_ARRAY && sc_same_text(c, same, &k->val);
    }
    return 0;
}

/* Adds the term t (NULL: a failure already reported) to ts. 0, or FAIL. */
static int add_made_term(cctx *c, terms *ts, const pf_json *t, const char *path) {
    if (!t) return FAIL;
    return add_term(c, ts, t) < 0 ? sc_fail_oom(c, path) : 0;
}

/* not {"type": ...}: the other types; nothing where ctx admits none of the named ones but them. */
static int type_terms(cctx *c, terms *ts, const pf_json *n, const pf_json *ctx, const char *path) {
    cctx probe = *c; /* type_set only reads */
    int set = sc_type_set(&probe, n, path);
    if (set < 0) return FAIL;
    if (set & T_INT) set |= T_NUM; /* "not an integer" still holds for 0.5: all numbers go, never too many */
    int left = ALL_TYPES & ~set;
    if (ctx && pf_json_get(ctx, "type") && !(named_types(c, ctx) & ~left)) { /* every value ctx admits */
        ts->all = 1;
        return 0;
    }
    return add_made_term(c, ts, left ? typed(c, left, NULL, 0) : &k_false, path);
}

/* not {"required": ...} (a listed key missing) and not {"allOf": ...} (some member's complement). */
static int required_terms(cctx *c, terms *ts, const pf_json *n, const pf_json_member *k, const pf_json *ctx, int depth,
                          const char *path) {
    const pf_json_member *own = !strcmp(k->key, "required") ? unlisted_keys(c, n, k) : k;
    if (!own) return sc_fail_oom(c, path);
    const pf_json *t = without_keys(c, own, path);
    if (!t && !c->oom && !strcmp(k->key, "allOf")) { /* not (A and B): not A, or not B */
        if (k->val.type != PF_JSON_ARRAY || !k->val.u.arr.n) return sc_fail(c, path, "allOf: not a non-empty array of schemas");
        for (size_t i = 0; i < k->val.u.arr.n; i++) {
            const pf_json *b = complement(c, &k->val.u.arr.items[i], ctx, depth + 1, path);
            if (!b || add_term(c, ts, b) < 0) return b ? sc_fail_oom(c, path) : FAIL;
        }
        return 0;
    }
    if (!t && !c->oom) return sc_fail(c, path, "required: not an array of strings");
    return add_made_term(c, ts, t, path);
}

/* not {"enum": ...} / not {"const": ...}: the values outside a finite set. */
static int enum_terms(cctx *c, terms *ts, const pf_json_member *k, const pf_json *ctx, const char *path) {
    int one = !strcmp(k->key, "const");
    if (!one && k->val.type != PF_JSON_ARRAY) return sc_fail(c, path, "enum: not an array");
    const pf_json *vals = one ? &k->val : k->val.u.arr.items;
    size_t nv = one ? 1 : k->val.u.arr.n;
    if (values_outside(c, vals, nv, ctx)) {
        ts->all = 1;
        return 0;
    }
    const pf_json *t = finite_complement(c, vals, nv, path);
    if (!t && !c->oom) t = strings_complement(c, vals, nv, path);
    if (!t && !c->oom) return sc_fail(c, path, "keyword 'not' is not supported over '%s' of strings, numbers, arrays or objects", k->key);
    return add_made_term(c, ts, t, path);
}

/* The complement of one keyword k of schema n into ts, within the context ctx (the schema the
 * complement is merged with; NULL: none). 0, or FAIL with the reason. */
static int keyword_terms(cctx *c, terms *ts, const pf_json *n, const pf_json_member *k, const pf_json *ctx, int depth,
                         const char *path) {
    const pf_json *t = NULL;
    int kt = keyword_type(k->key);
    if (implied_by_context(c, n, k, ctx)) return 0;
    if (kt && !(named_types(c, ctx) & kt)) return 0; /* it holds for every value ctx admits */
    if (!strcmp(k->key, "type")) return type_terms(c, ts, n, ctx, path);
    if (!strcmp(k->key, "required") || !strcmp(k->key, "allOf")) return required_terms(c, ts, n, k, ctx, depth, path);
    if (!strcmp(k->key, "properties")) return properties_terms(c, ts, n, &k->val, ctx, depth, path);
    if (!strcmp(k->key, "enum") || !strcmp(k->key, "const")) return enum_terms(c, ts, k, ctx, path);
    if (!strcmp(k->key, "anyOf")) {
        t = complement_any_of(c, &k->val, ctx, depth, path);
    } else if (!strcmp(k->key, "not")) {
        t = &k->val; /* not (not S) is S */
    } else if (kt == T_NUM && strcmp(k->key, "multipleOf")) {
        t = bound_complement(c, n, k, path);
    } else if (!strncmp(k->key, "min", 3) || !strncmp(k->key, "max", 3)) {
        t = count_complement(c, k, path);
        if (!t && !c->oom) return sc_fail(c, path, "keyword 'not' is not supported over '%s'", k->key);
    } else if (!strcmp(k->key, "additionalProperties") || !strcmp(k->key, "items")) {
        if (k->val.type == PF_JSON_BOOL ? k->val.u.b : k->val.type == PF_JSON_OBJECT && asserts_nothing(&k->val)) return 0;
        int r = k->key[0] == 'a' ? other_keys_terms(c, ts, n, &k->val, ctx, depth, path) : items_term(c, ts, &k->val, ctx, depth, path);
        if (r != 1) return r;
        return sc_fail(c, path, "keyword 'not' is not supported over '%s'", k->key);
    } else if (!strcmp(k->key, "uniqueItems") && k->val.type == PF_JSON_BOOL && !k->val.u.b) {
        return 0;
    } else if (!strcmp(k->key, "pattern") && k->val.type == PF_JSON_STRING) {
        /* a string the pattern does not match: kept as `not` over the pattern, which the string's
         * automaton takes (sc_not_patterns) */
        const pf_json *inner = sc_object1(c, "pattern", k->val);
        pf_json_member more = {"not", 3, inner ? *inner : k_true};
        if (!inner || !(t = typed(c, T_STR, &more, 1))) return sc_fail_oom(c, path);
    } else {
        return sc_fail(c, path, "keyword 'not' is not supported over '%s'", k->key);
    }
    return add_made_term(c, ts, t, path);
}

/* not {"anyOf": [s1, ..., sn]}: a value meeting none of them, the merge of their complements. */
static const pf_json *complement_any_of(cctx *c, const pf_json *list, const pf_json *ctx, int depth, const char *path) {
    if (list->type != PF_JSON_ARRAY || !list->u.arr.n) return sc_fail(c, path, "anyOf: not a non-empty array of schemas"), NULL;
    const pf_json *acc = complement(c, &list->u.arr.items[0], ctx, depth + 1, path);
    for (size_t i = 1; acc && i < list->u.arr.n; i++) {
        const pf_json *b = complement(c, &list->u.arr.items[i], ctx, depth + 1, path);
        acc = b ? sc_merge_schemas(c, acc, b, depth + 1, path) : NULL;
    }
    return acc;
}

/* s with a $ref (and no keyword beside it that applies) followed; s itself otherwise. */
static const pf_json *plain_target(cctx *c, const pf_json *s) {
    for (int hops = 0; s && s->type == PF_JSON_OBJECT && pf_json_get(s, "$ref") && !sc_ref_siblings(c, s) && hops < 8; hops++) {
        char err[PF_ERR_LEN], *keep = c->err;
        c->err = err;
        const pf_json *t = sc_ref_target(c, s, "");
        c->err = keep;
        if (!t) return NULL;
        s = t;
    }
    return s;
}

/* The schema `not` n stands for, as a schema of the subset, where it is merged with ctx (NULL:
 * nothing; a term that ctx's values all meet or all miss is dropped or taken whole): the anyOf of
 * its keywords' complements (not (A and B) is not A or not B). NULL after a failure. */
static const pf_json *complement(cctx *c, const pf_json *n, const pf_json *ctx, int depth, const char *path) {
    if (depth > PF_SCHEMA_MAX_DEPTH) return sc_fail(c, path, "nested deeper than %d levels", PF_SCHEMA_MAX_DEPTH), NULL;
    if (n->type == PF_JSON_BOOL) return n->u.b ? &k_false : &k_true;
    if (n->type != PF_JSON_OBJECT) return sc_fail(c, path, "keyword 'not' is not supported in this form"), NULL;
    if (asserts_nothing(n)) return &k_false;
    ctx = plain_target(c, ctx);
    if (ctx && ctx->type == PF_JSON_OBJECT && (pf_json_get(ctx, "enum") || pf_json_get(ctx, "const"))) {
        const pf_json *t = sc_object1(c, "not", *n); /* beside a finite set: each value checked */
        return t ? t : (sc_fail_oom(c, path), NULL);
    }
    if (pf_json_get(n, "$ref")) {
        const pf_json *t = sc_ref_siblings(c, n) ? sc_ref_with_siblings(c, n, depth, path) : sc_ref_target(c, n, path);
        return t ? complement(c, t, ctx, depth + 1, path) : NULL;
    }
    terms ts = {0};
    for (size_t i = 0; i < n->u.obj.n && !ts.all; i++) {
        const pf_json_member *k = &n->u.obj.members[i];
        if ((sc_keyword_index(k) >= 0 || sc_unsupported(n, k)) && keyword_terms(c, &ts, n, k, ctx, depth, path) < 0) return NULL;
    }
    if (ts.all) return &k_true;
    if (!ts.n) return &k_false;
    if (ts.n == 1) return &ts.t[0];
    const pf_json *any = sc_object1(c, "anyOf", (pf_json){.type = PF_JSON_ARRAY, .u.arr = {ts.t, ts.n}});
    return any ? any : (sc_fail_oom(c, path), NULL);
}

/* s is a schema of one keyword, a `pattern`, or an anyOf of such (what the complements of patterns
 * merge to); its patterns into pats/lens (up to cap; *n counts them all). */
static int pattern_only(const pf_json *s, const char **pats, size_t *lens, int *n, int cap) {
    const pf_json_member *k = s->type == PF_JSON_OBJECT ? sole_keyword(s) : NULL;
    if (!k) return 0;
    if (!strcmp(k->key, "pattern") && k->val.type == PF_JSON_STRING) {
        if (*n < cap) pats[*n] = k->val.u.str.s, lens[*n] = k->val.u.str.len;
        return ++*n, 1;
    }
    if (strcmp(k->key, "anyOf") || k->val.type != PF_JSON_ARRAY || !k->val.u.arr.n) return 0;
    for (size_t i = 0; i < k->val.u.arr.n; i++)
        if (!pattern_only(&k->val.u.arr.items[i], pats, lens, n, cap)) return 0;
    return 1;
}

int sc_not_patterns(const pf_json *v, const char **pats, size_t *lens, int *n, int cap) {
    const pf_json *x = pf_json_get(v, "not");
    *n = 0;
    return x && pattern_only(x, pats, lens, n, cap);
}

/* v with its `not` replaced by the schema it stands for, merged in (allOf semantics). */
const pf_json *sc_fold_not(cctx *c, const pf_json *v, int depth, const char *path) {
    const pf_json *rest = sc_without(c, v, "not", path);
    const pf_json *comp = rest ? complement(c, pf_json_get(v, "not"), rest, depth, path) : NULL;
    if (!comp) return NULL;
    if (comp->type == PF_JSON_BOOL) return comp->u.b ? rest : comp;
    return sc_merge_schemas(c, rest, comp, depth + 1, path);
}
