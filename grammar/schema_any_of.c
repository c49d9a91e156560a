/* anyOf, and oneOf whose branches are provably disjoint (grammar/schema_cc.h). */
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

/* Both objects require a key whose values cannot be the same (a discriminator). */
static int discriminated(const pf_schema *s, const pf_schema_node *a, const pf_schema_node *b, int depth) {
    for (int i = 0; i < a->n_props; i++)
        for (int j = 0; j < b->n_props && a->required >> i & 1; j++)
            if (b->required >> j & 1 && a->keys.len[i] == b->keys.len[j] &&
                !memcmp(a->keys.s[i], b->keys.s[j], a->keys.len[i]) &&
                disjoint(s, a->prop_node[i], b->prop_node[j], depth + 1))
                return 1;
    return 0;
}

/* No value meets both nodes, as far as can be proven. */
static int disjoint(const pf_schema *s, int32_t x, int32_t y, int depth) {
    if (depth > 8) return 0;
    if (!(node_types(s, x, 0) & node_types(s, y, 0))) return 1;
    const pf_schema_node *a = &s->nodes[x], *b = &s->nodes[y];
    if ((a->kind == PF_SN_UNION && a->n_alts) || (b->kind == PF_SN_UNION && b->n_alts)) {
        const pf_schema_node *u = a->kind == PF_SN_UNION ? a : b;
        int32_t other = u == a ? y : x;
        for (int i = 0; i < u->n_alts; i++)
            if (!disjoint(s, u->alts[i], other, depth + 1)) return 0;
        return 1;
    }
    if (a->kind == PF_SN_LITERALS && b->kind == PF_SN_LITERALS) return lits_disjoint(s, a, b);
    if (a->kind == PF_SN_OBJECT && b->kind == PF_SN_OBJECT) return discriminated(s, a, b, depth);
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

/* anyOf, or oneOf (key) whose branches no value can meet two of: each branch merged with the
 * keywords beside it (allOf semantics), their union. */
int32_t sc_compile_any_of(cctx *c, const pf_json *v, const char *key, int depth, const char *path) {
    const pf_json *a = pf_json_get(v, key);
    if (a->type != PF_JSON_ARRAY || a->u.arr.n == 0) return sc_fail(c, path, "%s: not a non-empty array of schemas", key);
    int err;
    const pf_json *rest = beside(c, v, key, path, &err);
    int32_t *alts = err ? NULL : malloc(a->u.arr.n * sizeof *alts);
    if (!alts) return err ? FAIL : sc_fail_oom(c, path);
    int n = 0;
    for (size_t i = 0; i < a->u.arr.n; i++) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s/%s/%zu", path, key, i);
        const pf_json *b = rest ? sc_merge_schemas(c, rest, &a->u.arr.items[i], depth + 1, sub) : &a->u.arr.items[i];
        int32_t x = b ? sc_compile(c, b, depth + 1, sub) : FAIL;
        for (int j = 0; x >= 0 && key[0] == 'o' && j < n; j++)
            if (!disjoint(c->s, alts[j], x, 0))
                x = sc_fail(c, path, "oneOf: branches %d and %zu may both hold a value (only disjoint ones are supported)", j, i);
        if (x == FAIL) {
            free(alts);
            return FAIL;
        }
        if (x != UNSAT) alts[n++] = x;
    }
    int32_t id = sc_union_node(c, alts, n);
    free(alts);
    return id;
}
