/* anyOf, and oneOf: branches provably disjoint as they are, or made so by excluding the others
 * from each (grammar/schema_cc.h). */
#include "grammar/schema_cc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- oneOf: anyOf where no value can meet two branches ---- */

/* The JSON types a node's values may have (a number covers the integers). */
static int node_types(const pf_schema *s, int32_t id, int depth) {
    const pf_schema_node *n = &s->nodes[id];
    int all = T_OBJ | T_ARR | T_STR | T_NUM | T_BOOL | T_NULL, t = 0;
    switch (n->kind) {
    case PF_SN_OBJECT: return T_OBJ;
    case PF_SN_ARRAY: return T_ARR;
    case PF_SN_STRING: return T_STR;
    case PF_SN_NUMBER:
    case PF_SN_INTEGER: return T_NUM;
    case PF_SN_LITERALS:
        for (int i = 0; i < n->lits.n; i++) {
            char f = n->lits.s[i][0];
            t |= f == '"' ? T_STR : f == 't' || f == 'f' ? T_BOOL : f == 'n' ? T_NULL
                 : f == '[' ? T_ARR : f == '{' ? T_OBJ : T_NUM;
        }
        return t;
    case PF_SN_UNION: /* a recursion's placeholder is still empty: any type */
        for (int i = 0; i < n->n_alts && depth < 16; i++) t |= node_types(s, n->alts[i], depth + 1);
        return n->n_alts && depth < 16 ? t : all;
    default: return all;
    }
}

/* The types of the values the schema a node was compiled from holds: a node whose type its
 * keywords implied narrows the schema, which holds for every value of another type. */
static int schema_types(const pf_schema *s, int32_t id, int depth) {
    const pf_schema_node *n = &s->nodes[id];
    if (n->implied_type) return T_OBJ | T_ARR | T_STR | T_NUM | T_BOOL | T_NULL;
    if (n->kind != PF_SN_UNION || !n->n_alts || depth >= 16) return node_types(s, id, depth);
    int t = 0;
    for (int i = 0; i < n->n_alts; i++) t |= schema_types(s, n->alts[i], depth + 1);
    return t;
}

/* No value is in both literal sets: strings, true, false and null are written one way only, so
 * equal values have equal texts; numbers, arrays and objects are not (1 and 1.0), so a set holding
 * one proves nothing against a set that may hold the same type. */
static int lits_disjoint(const pf_schema *s, const pf_schema_node *a, const pf_schema_node *b) {
    for (int i = 0; i < a->lits.n; i++) {
        char f = a->lits.s[i][0];
        if (!strchr("\"tfn", f) || !f) {
            int both = node_types(s, (int32_t)(b - s->nodes), 0) & node_types(s, (int32_t)(a - s->nodes), 0);
            if (both & (T_NUM | T_ARR | T_OBJ)) return 0;
            continue;
        }
        for (int j = 0; j < b->lits.n; j++)
            if (a->lits.len[i] == b->lits.len[j] && !memcmp(a->lits.s[i], b->lits.s[j], a->lits.len[i])) return 0;
    }
    return 1;
}

static int disjoint(const pf_schema *s, int32_t x, int32_t y, int depth);

/* The node of the value key k (its `"key":` text) takes in object b: a listed key's node, or the
 * other keys' node; UNSAT where b admits no such key, FAIL where patterns decide it. */
static int32_t key_value_node(const pf_schema_node *b, const char *k, uint32_t len) {
    for (int j = 0; j < b->n_props && !b->free_keys; j++)
        if (b->keys.len[j] == len && !memcmp(b->keys.s[j], k, len)) return b->prop_node[j];
    return b->key_node >= 0 ? FAIL : b->extra;
}

/* Object a requires a key whose value no value b admits for it can equal: b forbids the key, or
 * its values there are disjoint from a's (a discriminator such as "kind": {"const": "a"}). */
static int discriminated(const pf_schema *s, const pf_schema_node *a, const pf_schema_node *b, int depth) {
    for (int i = 0; i < a->n_props && !a->free_keys; i++) {
        if (!pf_keys_has(a->required, i)) continue;
        int32_t vb = key_value_node(b, a->keys.s[i], a->keys.len[i]);
        if (vb == UNSAT || (vb >= 0 && disjoint(s, a->prop_node[i], vb, depth + 1))) return 1;
    }
    return 0;
}

/* No value meets both nodes, as far as can be proven. */
static int disjoint(const pf_schema *s, int32_t x, int32_t y, int depth) {
    if (depth > 8) return 0;
    /* a value of one node is none of the other's schema (not only its node) */
    if (!(node_types(s, x, 0) & schema_types(s, y, 0)) && !(schema_types(s, x, 0) & node_types(s, y, 0))) return 1;
    const pf_schema_node *a = &s->nodes[x], *b = &s->nodes[y];
    if ((a->kind == PF_SN_UNION && a->n_alts) || (b->kind == PF_SN_UNION && b->n_alts)) {
        const pf_schema_node *u = a->kind == PF_SN_UNION ? a : b;
        int32_t other = u == a ? y : x;
        for (int i = 0; i < u->n_alts; i++)
            if (!disjoint(s, u->alts[i], other, depth + 1)) return 0;
        return 1;
    }
    if (a->kind == PF_SN_LITERALS && b->kind == PF_SN_LITERALS) return lits_disjoint(s, a, b);
    if (a->kind == PF_SN_OBJECT && b->kind == PF_SN_OBJECT) return discriminated(s, a, b, depth) || discriminated(s, b, a, depth);
    return 0;
}

/* The keywords beside anyOf / oneOf (key), without it; NULL when there are none. */
static const pf_json *beside(cctx *c, const pf_json *v, const char *key, const char *path, int *err) {
    *err = 0;
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const pf_json_member *m = &v->u.obj.members[i];
        if ((sc_keyword_index(m) >= 0 || sc_unsupported(v, m)) && strcmp(m->key, key)) {
            const pf_json *r = sc_without(c, v, key, path);
            *err = !r;
            return r;
        }
    }
    return NULL;
}

/* Branch i of oneOf list a, with rest (the keywords beside it; NULL: none) and not {"anyOf": the
 * branches it may share a value with (first[j]: branch j as compiled first, UNSAT for none)}
 * merged in: a value meeting it meets branch i alone. */
static const pf_json *only_branch(cctx *c, const pf_json *a, size_t i, const pf_json *rest, const int32_t *first,
                                  int depth, const char *path) {
    size_t n = a->u.arr.n, k = 0;
    pf_json *others = sc_scratch(c, n * sizeof *others);
    if (!others) return sc_fail_oom(c, path), NULL;
    for (size_t j = 0; j < n; j++)
        if (j != i && first[j] != UNSAT && !disjoint(c->s, first[i], first[j], 0)) others[k++] = a->u.arr.items[j];
    const pf_json *b = &a->u.arr.items[i];
    if (rest) b = sc_merge_schemas(c, rest, b, depth + 1, path);
    if (!b || !k) return b;
    const pf_json *none = k == 1 ? &others[0] : sc_object1(c, "anyOf", (pf_json){.type = PF_JSON_ARRAY, .u.arr = {others, k}});
    const pf_json *not = none ? sc_object1(c, "not", *none) : NULL;
    if (!not) return sc_fail_oom(c, path), NULL;
    return sc_merge_schemas(c, b, not, depth + 1, path);
}

/* oneOf whose branches j and i may overlap: each branch with those it may overlap excluded
 * (only_branch), into alts; their count, or FAIL (an exclusion not exact here, named as oneOf's). */
static int exclusive_branches(cctx *c, const pf_json *a, const pf_json *rest, const int32_t *first, int32_t *alts,
                              int depth, const char *path, size_t j, size_t i) {
    int n = 0;
    for (size_t k = 0; k < a->u.arr.n; k++) {
        if (first[k] == UNSAT) continue;
        char sub[256];
        snprintf(sub, sizeof sub, "%s/oneOf/%zu", path, k);
        const pf_json *b = only_branch(c, a, k, rest, first, depth, sub);
        int32_t x = b ? sc_compile(c, b, depth + 1, sub) : FAIL;
        if (x == FAIL) {
            if (c->oom) return FAIL;
            char why[PF_ERR_LEN];
            const char *w = strstr(c->err, ": ");
            w = w ? strstr(w + 2, ": ") : NULL;
            snprintf(why, sizeof why, "%s", w ? w + 2 : c->err);
            return sc_fail(c, path, "keyword 'oneOf' (branches %zu and %zu may both hold a value; excluded: %s)", j, i, why);
        }
        if (x != UNSAT) alts[n++] = x;
    }
    return n;
}

/* anyOf, or oneOf (key): each branch merged with the keywords beside it (allOf semantics), their
 * union; a oneOf whose branches are not provably disjoint has from each branch the others it
 * may share a value with excluded. */
int32_t sc_compile_any_of(cctx *c, const pf_json *v, const char *key, int depth, const char *path) {
    const pf_json *a = pf_json_get(v, key);
    if (a->type != PF_JSON_ARRAY || a->u.arr.n == 0) return sc_fail(c, path, "%s: not a non-empty array of schemas", key);
    int err;
    const pf_json *rest = beside(c, v, key, path, &err);
    size_t n_b = a->u.arr.n;
    int32_t *alts = err ? NULL : malloc(2 * n_b * sizeof *alts), *first = alts ? alts + n_b : NULL;
    if (!alts) return err ? FAIL : sc_fail_oom(c, path);
    int n = 0, overlap = 0;
    size_t over_j = 0, over_i = 0;
    for (size_t i = 0; i < n_b; i++) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s/%s/%zu", path, key, i);
        const pf_json *b = rest ? sc_merge_schemas(c, rest, &a->u.arr.items[i], depth + 1, sub) : &a->u.arr.items[i];
        int32_t x = b ? sc_compile(c, b, depth + 1, sub) : FAIL;
        for (size_t j = 0; x >= 0 && key[0] == 'o' && j < i && !overlap; j++)
            if (first[j] != UNSAT && !disjoint(c->s, first[j], x, 0)) overlap = 1, over_j = j, over_i = i;
        if (x == FAIL) {
            free(alts);
            return FAIL;
        }
        first[i] = x;
        if (x != UNSAT) alts[n++] = x;
    }
    if (overlap) n = exclusive_branches(c, a, rest, first, alts, depth, path, over_j, over_i);
    int32_t id = n < 0 ? FAIL : sc_union_node(c, alts, n);
    free(alts);
    return id;
}
