/* not (grammar/schema_cc.h): the forms whose complement is a schema of the subset, merged in. */
#include "grammar/schema_cc.h"

#include <string.h>

/* ---- not: the forms whose complement is a schema of the subset ----
 * not false: nothing; not true / not {}: no value; not {"type": T}: the other types (not
 * "integer" alone takes every number away, never letting one through); not {"required": [...]}
 * and an allOf of such: an object lacking one of the keys; not {"$ref": ...}: the complement of
 * what it names; not {"anyOf": [...]}: the complements of its branches merged (allOf). (Beside enum or const, any form: the
 * values are checked one by one, grammar/schema_eval.c.) Any other form is an error. */

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

static const pf_json *complement(cctx *c, const pf_json *n, int depth, const char *path);

/* not {"anyOf": [s1, ..., sn]}: a value meeting none of them, the merge of their complements. */
static const pf_json *complement_any_of(cctx *c, const pf_json *list, int depth, const char *path) {
    if (list->type != PF_JSON_ARRAY || !list->u.arr.n) return sc_fail(c, path, "anyOf: not a non-empty array of schemas"), NULL;
    const pf_json *acc = complement(c, &list->u.arr.items[0], depth + 1, path);
    for (size_t i = 1; acc && i < list->u.arr.n; i++) {
        const pf_json *b = complement(c, &list->u.arr.items[i], depth + 1, path);
        acc = b ? sc_merge_schemas(c, acc, b, depth + 1, path) : NULL;
    }
    return acc;
}

/* The schema `not` n stands for, as a schema of the subset; NULL after a failure. */
static const pf_json *complement(cctx *c, const pf_json *n, int depth, const char *path) {
    if (depth > PF_SCHEMA_MAX_DEPTH) return sc_fail(c, path, "nested deeper than %d levels", PF_SCHEMA_MAX_DEPTH), NULL;
    static const char *const names[] = {"object", "array", "string", "number", "integer", "boolean", "null"};
    static const pf_json k_true = {.type = PF_JSON_BOOL, .u.b = true}, k_false = {.type = PF_JSON_BOOL, .u.b = false};
    if (n->type == PF_JSON_BOOL) return n->u.b ? &k_false : &k_true;
    if (n->type != PF_JSON_OBJECT) return sc_fail(c, path, "keyword 'not' is not supported in this form"), NULL;
    if (asserts_nothing(n)) return &k_false;
    const pf_json_member *k = sole_keyword(n);
    if (k && !strcmp(k->key, "type")) {
        cctx probe = *c; /* type_set only reads */
        int t = sc_type_set(&probe, n, path);
        if (t < 0) return NULL;
        if (t & T_INT) t |= T_NUM; /* "not an integer" still holds for 0.5: all numbers go, never too many */
        int left = (T_OBJ | T_ARR | T_STR | T_NUM | T_BOOL | T_NULL) & ~t;
        if (!left) return &k_false;
        pf_json *list = sc_scratch(c, 7 * sizeof *list);
        if (!list) return sc_fail_oom(c, path), NULL;
        size_t m = 0;
        for (int i = 0; i < 7; i++)
            if (left & (1 << i)) list[m].type = PF_JSON_STRING, list[m].u.str.s = names[i], list[m++].u.str.len = strlen(names[i]);
        pf_json arr = {.type = PF_JSON_ARRAY, .u.arr = {list, m}};
        const pf_json *r = sc_object1(c, "type", arr);
        return r ? r : (sc_fail_oom(c, path), NULL);
    }
    if (k && !strcmp(k->key, "$ref")) {
        const pf_json *t = sc_ref_target(c, n, path);
        return t ? complement(c, t, depth + 1, path) : NULL;
    }
    if (k && !strcmp(k->key, "anyOf")) return complement_any_of(c, &k->val, depth, path);
    if (k && (!strcmp(k->key, "required") || !strcmp(k->key, "allOf"))) {
        const pf_json *r = without_keys(c, k, path);
        if (r || c->oom) return r;
    }
    return sc_fail(c, path, "keyword 'not' is not supported in this form (only {}, true, false, {type}, {required: [keys]}, their anyOf)"), NULL;
}

/* v with its `not` replaced by the schema it stands for, merged in (allOf semantics). */
const pf_json *sc_fold_not(cctx *c, const pf_json *v, int depth, const char *path) {
    const pf_json *comp = complement(c, pf_json_get(v, "not"), depth, path);
    const pf_json *rest = comp ? sc_without(c, v, "not", path) : NULL;
    if (!rest) return NULL;
    if (comp->type == PF_JSON_BOOL) return comp->u.b ? rest : comp;
    return sc_merge_schemas(c, rest, comp, depth + 1, path);
}
