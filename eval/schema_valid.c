#include "eval/schema_valid.h"

#include <math.h>
#include <stdint.h>
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

static int valid_in(const pf_json *root, const pf_json *s, const pf_json *v, int depth);

/* dependencies (a key's list of keys, or a schema), dependentRequired and dependentSchemas: each
 * applies when its key is present. */
static int deps_ok(const pf_json *root, const pf_json *s, const pf_json *v, int depth) {
    static const char *const kws[] = {"dependencies", "dependentRequired", "dependentSchemas"};
    for (int w = 0; w < 3; w++) {
        const pf_json *d = pf_json_get(s, kws[w]);
        for (size_t i = 0; d && d->type == PF_JSON_OBJECT && i < d->u.obj.n; i++) {
            const pf_json_member *m = &d->u.obj.members[i];
            if (!pf_json_get(v, m->key)) continue;
            if (m->val.type != PF_JSON_ARRAY && !valid_in(root, &m->val, v, depth + 1)) return 0;
            for (size_t k = 0; m->val.type == PF_JSON_ARRAY && k < m->val.u.arr.n; k++)
                if (m->val.u.arr.items[k].type == PF_JSON_STRING && !pf_json_get(v, m->val.u.arr.items[k].u.str.s)) return 0;
        }
    }
    return 1;
}

static int object_ok(const pf_json *root, const pf_json *s, const pf_json *v, int depth) {
    const pf_json *props = pf_json_get(s, "properties"), *req = pf_json_get(s, "required"),
                  *add = pf_json_get(s, "additionalProperties");
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const pf_json *ps = props ? pf_json_get(props, v->u.obj.members[i].key) : NULL;
        if (ps && !valid_in(root, ps, &v->u.obj.members[i].val, depth + 1)) return 0;
        if (!ps && add && add->type == PF_JSON_BOOL && !add->u.b) return 0;
        if (!ps && add && add->type == PF_JSON_OBJECT && !valid_in(root, add, &v->u.obj.members[i].val, depth + 1))
            return 0;
    }
    const pf_json *lo = pf_json_get(s, "minProperties"), *hi = pf_json_get(s, "maxProperties");
    if ((lo && (double)v->u.obj.n < lo->u.num.d) || (hi && (double)v->u.obj.n > hi->u.num.d)) return 0;
    for (size_t i = 0; req && i < req->u.arr.n; i++)
        if (!pf_json_get(v, req->u.arr.items[i].u.str.s)) return 0;
    return deps_ok(root, s, v, depth);
}

static int array_ok(const pf_json *root, const pf_json *s, const pf_json *v, int depth) {
    const pf_json *items = pf_json_get(s, "items"), *lo = pf_json_get(s, "minItems"), *hi = pf_json_get(s, "maxItems");
    if (lo && (double)v->u.arr.n < lo->u.num.d) return 0;
    if (hi && (double)v->u.arr.n > hi->u.num.d) return 0;
    for (size_t i = 0; items && i < v->u.arr.n; i++)
        if (!valid_in(root, items, &v->u.arr.items[i], depth + 1)) return 0;
    const pf_json *uniq = pf_json_get(s, "uniqueItems");
    for (size_t i = 0; uniq && uniq->type == PF_JSON_BOOL && uniq->u.b && i < v->u.arr.n; i++)
        for (size_t j = i + 1; j < v->u.arr.n; j++)
            if (json_equal(&v->u.arr.items[i], &v->u.arr.items[j])) return 0;
    return 1;
}

/* minLength / maxLength: characters (code points) of the decoded string. */
static int string_ok(const pf_json *s, const pf_json *v) {
    const pf_json *lo = pf_json_get(s, "minLength"), *hi = pf_json_get(s, "maxLength");
    double n = 0;
    for (size_t i = 0; i < v->u.str.len; i++) n += ((uint8_t)v->u.str.s[i] & 0xC0) != 0x80;
    return !(lo && n < lo->u.num.d) && !(hi && n > hi->u.num.d);
}

/* minimum / maximum, exclusive by draft 4's boolean or draft 6's number; multipleOf. */
static int number_ok(const pf_json *s, const pf_json *v) {
    const pf_json *lo = pf_json_get(s, "minimum"), *hi = pf_json_get(s, "maximum"),
                  *xlo = pf_json_get(s, "exclusiveMinimum"), *xhi = pf_json_get(s, "exclusiveMaximum");
    double x = v->u.num.d;
    int lo_open = xlo && xlo->type == PF_JSON_BOOL && xlo->u.b, hi_open = xhi && xhi->type == PF_JSON_BOOL && xhi->u.b;
    if (lo && (x < lo->u.num.d || (lo_open && x == lo->u.num.d))) return 0;
    if (hi && (x > hi->u.num.d || (hi_open && x == hi->u.num.d))) return 0;
    if (xlo && xlo->type == PF_JSON_NUMBER && x <= xlo->u.num.d) return 0;
    if (xhi && xhi->type == PF_JSON_NUMBER && x >= xhi->u.num.d) return 0;
    const pf_json *m = pf_json_get(s, "multipleOf"); /* as Python's jsonschema: the quotient integral */
    return !(m && m->type == PF_JSON_NUMBER && m->u.num.d > 0 && x / m->u.num.d != floor(x / m->u.num.d));
}

/* The schema a "#/a/b~1c" reference names in root (RFC 6901: ~1 is '/', ~0 is '~'), NULL when none. */
static const pf_json *deref(const pf_json *root, const char *ref) {
    if (ref[0] != '#') return NULL;
    const pf_json *v = root;
    const char *p = ref + 1;
    while (v && *p == '/') {
        char seg[256];
        size_t n = 0;
        for (p++; *p && *p != '/' && n < sizeof seg - 1; p++) {
            if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) seg[n++] = p[1] == '0' ? '~' : '/', p++;
            else seg[n++] = *p;
        }
        seg[n] = 0;
        if (v->type == PF_JSON_ARRAY) {
            char *end;
            unsigned long i = strtoul(seg, &end, 10);
            v = *end || !n || i >= v->u.arr.n ? NULL : &v->u.arr.items[i];
        } else {
            v = pf_json_get(v, seg);
        }
    }
    return *p ? NULL : v;
}

static int valid_in(const pf_json *root, const pf_json *s, const pf_json *v, int depth) {
    if (depth > 256) return 0;
    if (s->type == PF_JSON_BOOL) return s->u.b;
    const pf_json *ref = pf_json_get(s, "$ref");
    if (ref) { /* the keywords beside it apply too, except under a draft before 2019-09 */
        const pf_json *t = ref->type == PF_JSON_STRING ? deref(root, ref->u.str.s) : NULL;
        if (!t || !valid_in(root, t, v, depth + 1)) return 0;
        const pf_json *d = root->type == PF_JSON_OBJECT ? pf_json_get(root, "$schema") : NULL;
        if (d && d->type == PF_JSON_STRING && strstr(d->u.str.s, "draft-0")) return 1;
    }
    const pf_json *any = pf_json_get(s, "anyOf"), *en = pf_json_get(s, "enum"), *k = pf_json_get(s, "const");
    if (any) {
        int ok = 0;
        for (size_t i = 0; i < any->u.arr.n && !ok; i++) ok = valid_in(root, &any->u.arr.items[i], v, depth + 1);
        if (!ok) return 0;
    }
    if (en) {
        int ok = 0;
        for (size_t i = 0; i < en->u.arr.n && !ok; i++) ok = json_equal(&en->u.arr.items[i], v);
        if (!ok) return 0;
    }
    if (k && !json_equal(k, v)) return 0;
    const pf_json *nt = pf_json_get(s, "not");
    if (nt && valid_in(root, nt, v, depth + 1)) return 0;
    const pf_json *all = pf_json_get(s, "allOf"), *one = pf_json_get(s, "oneOf");
    for (size_t i = 0; all && i < all->u.arr.n; i++)
        if (!valid_in(root, &all->u.arr.items[i], v, depth + 1)) return 0;
    size_t met = 0;
    for (size_t i = 0; one && i < one->u.arr.n; i++) met += (size_t)valid_in(root, &one->u.arr.items[i], v, depth + 1);
    if (one && met != 1) return 0;
    if (!types_ok(pf_json_get(s, "type"), v)) return 0;
    if (v->type == PF_JSON_OBJECT && !object_ok(root, s, v, depth)) return 0;
    if (v->type == PF_JSON_ARRAY && !array_ok(root, s, v, depth)) return 0;
    if (v->type == PF_JSON_STRING && !string_ok(s, v)) return 0;
    if (v->type == PF_JSON_NUMBER && !number_ok(s, v)) return 0;
    return 1;
}

int pf_schema_valid(const pf_json *s, const pf_json *v) { return valid_in(s, s, v, 0); }

int pf_schema_valid_text(const char *schema, const char *text, size_t n) {
    char err[PF_ERR_LEN];
    pf_json_doc *s = pf_json_parse(schema, strlen(schema), err), *d = pf_json_parse(text, n, err);
    int ok = s && d && pf_schema_valid(pf_json_root(s), pf_json_root(d));
    pf_json_free(s);
    pf_json_free(d);
    return ok;
}
