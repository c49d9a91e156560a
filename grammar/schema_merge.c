/* allOf, and keywords beside anyOf / oneOf (grammar/schema_cc.h): schemas merged into one where
 * that is exact, refused where it is not. */
#include "grammar/schema_cc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/grow.h"
#include "grammar/lit_set.h"

/* ---- allOf, and keywords beside anyOf / oneOf: schemas merged into one where that is exact ---- */

static const pf_json k_false_schema = {.type = PF_JSON_BOOL, .u.b = false};
static const pf_json k_true_schema = {.type = PF_JSON_BOOL, .u.b = true};

/* Merging follows references without the compiled-once cache, so a schema whose branches refer
 * back to it would merge without end: a bound on merges per compile. */
#define MAX_MERGES 4096

int sc_same_text(cctx *c, const pf_json *x, const pf_json *y) {
    pf_sbuf a = {0}, b = {0};
    pf_json_compact(&a, x, c->src, c->src_len);
    pf_json_compact(&b, y, c->src, c->src_len);
    int same = a.p && b.p && a.n == b.n && !memcmp(a.p, b.p, a.n);
    free(a.p);
    free(b.p);
    return same;
}

/* The types both allow, as a list. */
static int merge_type(cctx *c, const pf_json *x, const pf_json *y, pf_json *out, const char *path) {
    static const char *const names[] = {"object", "array", "string", "number", "integer", "boolean", "null"};
    pf_json hx = {.type = PF_JSON_OBJECT, .u.obj = {&(pf_json_member){"type", 4, *x}, 1}};
    pf_json hy = {.type = PF_JSON_OBJECT, .u.obj = {&(pf_json_member){"type", 4, *y}, 1}};
    int sx = sc_type_set(c, &hx, path), sy = sc_type_set(c, &hy, path);
    if (sx < 0 || sy < 0) return FAIL;
    if (sx & T_NUM) sx |= T_INT;
    if (sy & T_NUM) sy |= T_INT;
    int both = sx & sy, n = 0;
    pf_json *items = sc_scratch(c, 7 * sizeof *items);
    if (!items) return sc_fail_oom(c, path);
    for (int i = 0; i < 7; i++)
        if (both >> i & 1) items[n++] = (pf_json){.type = PF_JSON_STRING, .u.str = {names[i], strlen(names[i])}};
    *out = (pf_json){.type = PF_JSON_ARRAY, .offset = x->offset, .u.arr = {items, (size_t)n}};
    return n ? 0 : UNSAT;
}

/* Members of x, then those of y whose key (or string value, for required) x lacks, each through
 * both when both have it (properties: merged schemas). */
static int merge_union(cctx *c, const pf_json *x, const pf_json *y, int keyed, pf_json *out, int depth, const char *path) {
    size_t nx = keyed ? x->u.obj.n : x->u.arr.n, ny = keyed ? y->u.obj.n : y->u.arr.n, n = 0;
    void *mem = sc_scratch(c, (nx + ny) * (keyed ? sizeof(pf_json_member) : sizeof(pf_json)));
    if (!mem) return sc_fail_oom(c, path);
    pf_json_member *m = mem;
    pf_json *it = mem;
    for (size_t i = 0; i < nx; i++, n++) {
        if (!keyed) {
            it[n] = x->u.arr.items[i];
            continue;
        }
        m[n] = x->u.obj.members[i];
        const pf_json *other = pf_json_get(y, m[n].key);
        if (!other) continue;
        const pf_json *s = sc_merge_schemas(c, &m[n].val, other, depth + 1, path);
        if (!s) return FAIL;
        m[n].val = *s;
    }
    for (size_t j = 0; j < ny; j++) {
        const pf_json *v = keyed ? &y->u.obj.members[j].val : &y->u.arr.items[j];
        int dup = 0;
        for (size_t i = 0; i < nx && !dup; i++)
            dup = keyed ? !strcmp(x->u.obj.members[i].key, y->u.obj.members[j].key) : sc_same_text(c, &x->u.arr.items[i], v);
        if (dup) continue;
        if (keyed) m[n++] = y->u.obj.members[j];
        else it[n++] = *v;
    }
    *out = *x;
    if (keyed) out->u.obj.members = m, out->u.obj.n = n;
    else out->u.arr.items = it, out->u.arr.n = n;
    return 0;
}

/* enum in both: the values of x that y lists too, compared as written (1 and 1.0 apart: a value
 * dropped, never one let through); UNSAT when none. */
static int merge_enum(cctx *c, const pf_json *x, const pf_json *y, pf_json *out, const char *path) {
    pf_json *it = sc_scratch(c, (x->u.arr.n ? x->u.arr.n : 1) * sizeof *it);
    if (!it) return sc_fail_oom(c, path);
    size_t n = 0;
    for (size_t i = 0; i < x->u.arr.n; i++)
        for (size_t j = 0; j < y->u.arr.n; j++)
            if (sc_same_text(c, &x->u.arr.items[i], &y->u.arr.items[j])) {
                it[n++] = x->u.arr.items[i];
                break;
            }
    *out = *x;
    out->u.arr.items = it, out->u.arr.n = n;
    return n ? 0 : UNSAT;
}

#define MAX_ANY_OF_PAIRS 64

/* anyOf in both: one of x's branches and one of y's, the anyOf of every pair merged. */
static int merge_any_of(cctx *c, const pf_json *x, const pf_json *y, pf_json *out, int depth, const char *path) {
    size_t nx = x->u.arr.n, ny = y->u.arr.n;
    if (!nx || !ny || nx * ny > MAX_ANY_OF_PAIRS)
        return sc_fail(c, path, "'anyOf' in two merged schemas with more than %d pairs of branches is not supported",
                       MAX_ANY_OF_PAIRS);
    pf_json *it = sc_scratch(c, nx * ny * sizeof *it);
    if (!it) return sc_fail_oom(c, path);
    for (size_t i = 0; i < nx; i++)
        for (size_t j = 0; j < ny; j++) {
            const pf_json *s = sc_merge_schemas(c, &x->u.arr.items[i], &y->u.arr.items[j], depth + 1, path);
            if (!s) return FAIL;
            it[i * ny + j] = *s;
        }
    *out = *x;
    out->u.arr.items = it, out->u.arr.n = nx * ny;
    return 0;
}

/* Every key of x's properties is one of y's. */
static int keys_within(const pf_json *x, const pf_json *y) {
    for (size_t i = 0; x && i < x->u.obj.n; i++)
        if (!y || !pf_json_get(y, x->u.obj.members[i].key)) return 0;
    return 1;
}

/* One keyword both schemas have, into out; FAIL with the reason when the merge is not exact. */
static int merge_keyword(cctx *c, const char *key, const pf_json *a, const pf_json *b, pf_json *out, int depth, const char *path) {
    const pf_json *x = pf_json_get(a, key), *y = pf_json_get(b, key);
    *out = *x;
    if (sc_same_text(c, x, y)) return 0;
    if (!strcmp(key, "type")) return merge_type(c, x, y, out, path);
    if (!strcmp(key, "required") && x->type == PF_JSON_ARRAY && y->type == PF_JSON_ARRAY)
        return merge_union(c, x, y, 0, out, depth, path);
    if (!strcmp(key, "properties") && x->type == PF_JSON_OBJECT && y->type == PF_JSON_OBJECT)
        return merge_union(c, x, y, 1, out, depth, path);
    if (!strcmp(key, "enum") && x->type == PF_JSON_ARRAY && y->type == PF_JSON_ARRAY) return merge_enum(c, x, y, out, path);
    if (!strcmp(key, "uniqueItems") && x->type == PF_JSON_BOOL && y->type == PF_JSON_BOOL)
        return *out = x->u.b ? *x : *y, 0; /* both hold: unique when either asks */
    if (!strcmp(key, "anyOf") && x->type == PF_JSON_ARRAY && y->type == PF_JSON_ARRAY)
        return merge_any_of(c, x, y, out, depth, path);
    if (!strcmp(key, "not")) { /* neither x nor y: not {"anyOf": [x, y]} */
        pf_json *both = sc_scratch(c, 2 * sizeof *both);
        if (!both) return sc_fail_oom(c, path);
        both[0] = *x;
        both[1] = *y;
        const pf_json *any = sc_object1(c, "anyOf", (pf_json){.type = PF_JSON_ARRAY, .u.arr = {both, 2}});
        return any ? (*out = *any, 0) : sc_fail_oom(c, path);
    }
    if ((!strcmp(key, "items") && x->type != PF_JSON_ARRAY && y->type != PF_JSON_ARRAY) ||
        !strcmp(key, "additionalProperties")) { /* both hold: the keys neither lists take both */
        const pf_json *s = sc_merge_schemas(c, x, y, depth + 1, path);
        return s ? (*out = *s, 0) : FAIL;
    }
    static const char *const lower[] = {"minLength", "minItems", "minProperties"},
                             *const upper[] = {"maxLength", "maxItems", "maxProperties"};
    for (int i = 0; i < 3 && x->type == PF_JSON_NUMBER && y->type == PF_JSON_NUMBER; i++) {
        if (!strcmp(key, lower[i])) return *out = x->u.num.d >= y->u.num.d ? *x : *y, 0;
        if (!strcmp(key, upper[i])) return *out = x->u.num.d <= y->u.num.d ? *x : *y, 0;
    }
    pf_json_member k = {key, strlen(key), *x};
    if (!sc_validation_keyword(&k))
        return 0; /* an annotation: either will do */
    return sc_fail(c, path, "'%s' in two merged schemas with different values is not supported", key);
}

/* additionalProperties in one schema limits the keys the other's properties may add. */
static int additional_exact(const pf_json *a, const pf_json *b) {
    const pf_json *pa = pf_json_get(a, "properties"), *pb = pf_json_get(b, "properties");
    int ha = pf_json_get(a, "additionalProperties") != NULL, hb = pf_json_get(b, "additionalProperties") != NULL;
    if (pf_json_get(a, "patternProperties") || pf_json_get(b, "patternProperties")) return !ha && !hb;
    return (!ha || keys_within(pb, pa)) && (!hb || keys_within(pa, pb));
}

/* a with the keys of other's properties that it does not list listed, each with a's
 * additionalProperties (absent: any value): the same schema (without patternProperties, a key
 * not listed takes additionalProperties), now naming every key other does, so the two merge key by
 * key. NULL when out of memory. */
static const pf_json *list_keys_of(cctx *c, const pf_json *a, const pf_json *other) {
    const pf_json *po = pf_json_get(other, "properties"), *pa = pf_json_get(a, "properties"),
                  *add = pf_json_get(a, "additionalProperties");
    if (!po || po->type != PF_JSON_OBJECT || (pa && pa->type != PF_JSON_OBJECT)) return a;
    size_t na = pa ? pa->u.obj.n : 0, n = na;
    pf_json_member *m = sc_scratch(c, (na + po->u.obj.n) * sizeof *m), *am = sc_scratch(c, (a->u.obj.n + 1) * sizeof *am);
    pf_json *props = sc_scratch(c, sizeof *props), *out = sc_scratch(c, sizeof *out);
    if (!m || !am || !props || !out) return NULL;
    for (size_t i = 0; i < na; i++) m[i] = pa->u.obj.members[i];
    for (size_t j = 0; j < po->u.obj.n; j++)
        if (!pa || !pf_json_get(pa, po->u.obj.members[j].key))
            m[n] = po->u.obj.members[j], m[n++].val = add ? *add : k_true_schema;
    *props = (pf_json){.type = PF_JSON_OBJECT, .offset = po->offset, .u.obj = {m, n}};
    size_t k = 0;
    for (size_t i = 0; i < a->u.obj.n; i++, k++) {
        am[k] = a->u.obj.members[i];
        if (!strcmp(am[k].key, "properties")) am[k].val = *props;
    }
    if (!pa) am[k++] = (pf_json_member){"properties", 10, *props};
    *out = *a;
    out->u.obj.members = am, out->u.obj.n = k;
    return out;
}

/* v with its $ref followed (keywords beside it merged in) and its allOf folded in: a schema with neither at its top. */
static const pf_json *flat_schema(cctx *c, const pf_json *v, int depth, const char *path) {
    for (int hops = 0; v && v->type == PF_JSON_OBJECT && pf_json_get(v, "$ref"); hops++) {
        if (hops >= PF_SCHEMA_MAX_DEPTH) return sc_fail(c, path, "$ref: a loop of references"), NULL;
        v = sc_ref_siblings(c, v) ? sc_ref_with_siblings(c, v, depth, path) : sc_ref_target(c, v, path);
    }
    if (!v || v->type != PF_JSON_OBJECT || !pf_json_get(v, "allOf")) return v;
    return sc_check_keywords(c, v, path) < 0 ? NULL : sc_fold_all_of(c, v, depth, path);
}

/* a and b as one schema (the allOf of the two), a boolean false when together they admit no
 * value; NULL after a failure (one that is not exact among them). */
const pf_json *sc_merge_schemas(cctx *c, const pf_json *a, const pf_json *b, int depth, const char *path) {
    if (depth > PF_SCHEMA_MAX_DEPTH) return sc_fail(c, path, "nested deeper than %d levels", PF_SCHEMA_MAX_DEPTH), NULL;
    if (++c->n_merges > MAX_MERGES)
        return sc_fail(c, path, "more than %d merged schemas (allOf, keywords beside anyOf)", MAX_MERGES), NULL;
    a = flat_schema(c, a, depth, path);
    b = a ? flat_schema(c, b, depth, path) : NULL;
    if (!a || !b) return NULL;
    if (a->type == PF_JSON_BOOL) return a->u.b ? b : a;
    if (b->type == PF_JSON_BOOL) return b->u.b ? a : b;
    if (a->type != PF_JSON_OBJECT || b->type != PF_JSON_OBJECT)
        return sc_fail(c, path, "a schema must be an object or a boolean"), NULL;
    if (!additional_exact(a, b)) {
        if (pf_json_get(a, "patternProperties") || pf_json_get(b, "patternProperties"))
            return sc_fail(c, path, "additionalProperties merged with properties it does not list is not supported"), NULL;
        const pf_json *a0 = a;
        a = list_keys_of(c, a, b);
        b = a ? list_keys_of(c, b, a0) : NULL;
        if (!a || !b) return sc_fail_oom(c, path), NULL;
    }
    pf_json_member *m = sc_scratch(c, (a->u.obj.n + b->u.obj.n) * sizeof *m);
    pf_json *out = sc_scratch(c, sizeof *out);
    if (!m || !out) return sc_fail_oom(c, path), NULL;
    size_t n = 0;
    for (size_t i = 0; i < a->u.obj.n; i++, n++) {
        m[n] = a->u.obj.members[i];
        int rc = pf_json_get(b, m[n].key) ? merge_keyword(c, m[n].key, a, b, &m[n].val, depth, path) : 0;
        if (rc == UNSAT) return &k_false_schema;
        if (rc < 0) return NULL;
    }
    for (size_t j = 0; j < b->u.obj.n; j++)
        if (!pf_json_get(a, b->u.obj.members[j].key)) m[n++] = b->u.obj.members[j];
    *out = *a;
    out->u.obj.members = m;
    out->u.obj.n = n;
    return out;
}

/* {"allOf": [...], ...}: the keywords beside it and every branch merged into one schema. */
const pf_json *sc_fold_all_of(cctx *c, const pf_json *v, int depth, const char *path) {
    const pf_json *all = pf_json_get(v, "allOf");
    if (all->type != PF_JSON_ARRAY || !all->u.arr.n) return sc_fail(c, path, "allOf: not a non-empty array of schemas"), NULL;
    const pf_json *acc = sc_without(c, v, "allOf", path);
    char sub[256];
    for (size_t i = 0; acc && i < all->u.arr.n; i++) {
        snprintf(sub, sizeof sub, "%s/allOf/%zu", path, i);
        acc = sc_merge_schemas(c, acc, &all->u.arr.items[i], depth + 1, sub);
    }
    return acc;
}
