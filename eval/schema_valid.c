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

/* The schema's root, the schema resource "#..." references are relative to (the innermost
 * subschema with its own $id, or draft 4's id, around the one being checked; else the root), and
 * the texts the schema and the document were parsed from (NULL: not at hand, numbers compared as
 * doubles). */
typedef struct {
    const pf_json *root, *base;
    const char *ssrc, *send, *dsrc, *dend;
} vctx;

/* Schema s sets a new base URI: its id (`id` where $schema names draft 3 or 4, else `$id`) is a
 * URI, not a fragment alone. */
static int own_base(const vctx *c, const pf_json *s) {
    if (s == c->root || s->type != PF_JSON_OBJECT) return 0;
    const pf_json *d = c->root->type == PF_JSON_OBJECT ? pf_json_get(c->root, "$schema") : NULL;
    int old = d && d->type == PF_JSON_STRING && (strstr(d->u.str.s, "draft-03") || strstr(d->u.str.s, "draft-04"));
    const pf_json *id = pf_json_get(s, old ? "id" : "$id");
    return id && id->type == PF_JSON_STRING && id->u.str.len && id->u.str.s[0] != '#';
}

static int valid_in(const vctx *c, const pf_json *s, const pf_json *v, int depth);

/* dependencies (a key's list of keys, or a schema), dependentRequired and dependentSchemas: each
 * applies when its key is present. */
static int deps_ok(const vctx *c, const pf_json *s, const pf_json *v, int depth) {
    static const char *const kws[] = {"dependencies", "dependentRequired", "dependentSchemas"};
    for (int w = 0; w < 3; w++) {
        const pf_json *d = pf_json_get(s, kws[w]);
        for (size_t i = 0; d && d->type == PF_JSON_OBJECT && i < d->u.obj.n; i++) {
            const pf_json_member *m = &d->u.obj.members[i];
            if (!pf_json_get(v, m->key)) continue;
            if (m->val.type != PF_JSON_ARRAY && !valid_in(c, &m->val, v, depth + 1)) return 0;
            for (size_t k = 0; m->val.type == PF_JSON_ARRAY && k < m->val.u.arr.n; k++)
                if (m->val.u.arr.items[k].type == PF_JSON_STRING && !pf_json_get(v, m->val.u.arr.items[k].u.str.s)) return 0;
        }
    }
    return 1;
}

static int object_ok(const vctx *c, const pf_json *s, const pf_json *v, int depth) {
    const pf_json *props = pf_json_get(s, "properties"), *req = pf_json_get(s, "required"),
                  *add = pf_json_get(s, "additionalProperties");
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const pf_json *ps = props ? pf_json_get(props, v->u.obj.members[i].key) : NULL;
        if (ps && !valid_in(c, ps, &v->u.obj.members[i].val, depth + 1)) return 0;
        if (!ps && add && add->type == PF_JSON_BOOL && !add->u.b) return 0;
        if (!ps && add && add->type == PF_JSON_OBJECT && !valid_in(c, add, &v->u.obj.members[i].val, depth + 1))
            return 0;
    }
    const pf_json *lo = pf_json_get(s, "minProperties"), *hi = pf_json_get(s, "maxProperties");
    if ((lo && (double)v->u.obj.n < lo->u.num.d) || (hi && (double)v->u.obj.n > hi->u.num.d)) return 0;
    for (size_t i = 0; req && i < req->u.arr.n; i++)
        if (!pf_json_get(v, req->u.arr.items[i].u.str.s)) return 0;
    return deps_ok(c, s, v, depth);
}

static int array_ok(const vctx *c, const pf_json *s, const pf_json *v, int depth) {
    const pf_json *items = pf_json_get(s, "items"), *lo = pf_json_get(s, "minItems"), *hi = pf_json_get(s, "maxItems");
    if (lo && (double)v->u.arr.n < lo->u.num.d) return 0;
    if (hi && (double)v->u.arr.n > hi->u.num.d) return 0;
    for (size_t i = 0; items && i < v->u.arr.n; i++)
        if (!valid_in(c, items, &v->u.arr.items[i], depth + 1)) return 0;
    const pf_json *uniq = pf_json_get(s, "uniqueItems");
    for (size_t i = 0; uniq && uniq->type == PF_JSON_BOOL && uniq->u.b && i < v->u.arr.n; i++)
        for (size_t j = i + 1; j < v->u.arr.n; j++)
            if (json_equal(&v->u.arr.items[i], &v->u.arr.items[j])) return 0;
    /* contains: at least minContains items (1 when absent; 0 asks nothing), at most maxContains */
    const pf_json *has = pf_json_get(s, "contains"), *cmin = pf_json_get(s, "minContains"), *cmax = pf_json_get(s, "maxContains");
    if (!has) return 1;
    double k = 0;
    for (size_t i = 0; i < v->u.arr.n; i++) k += valid_in(c, has, &v->u.arr.items[i], depth + 1);
    return k >= (cmin ? cmin->u.num.d : 1) && (!cmax || k <= cmax->u.num.d);
}

/* minLength / maxLength: characters (code points) of the decoded string. */
static int string_ok(const pf_json *s, const pf_json *v) {
    const pf_json *lo = pf_json_get(s, "minLength"), *hi = pf_json_get(s, "maxLength");
    double n = 0;
    for (size_t i = 0; i < v->u.str.len; i++) n += ((uint8_t)v->u.str.s[i] & 0xC0) != 0x80;
    return !(lo && n < lo->u.num.d) && !(hi && n > hi->u.num.d);
}

/* A number's exact value from its text: sign, significant digits (no leading or trailing zero;
 * none for 0) and the power of ten of the last one. */
typedef struct {
    int neg, nd, big;
    long exp;
    char d[48];
} num_text;

static num_text num_text_of(const char *p, const char *end) {
    num_text x = {0};
    if (p < end && *p == '-') x.neg = 1, p++;
    long frac = 0;
    for (int point = 0; p < end && ((*p >= '0' && *p <= '9') || *p == '.'); p++) {
        if (*p == '.') point = 1;
        else if (x.nd || *p != '0') {
            if (x.nd < (int)sizeof x.d) x.d[x.nd++] = *p;
            else x.big = 1, frac -= !point; /* a digit dropped: the value is only known roughly */
            frac += point;
        } else frac += point;
    }
    long e = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        int eneg = ++p < end && *p == '-';
        p += p < end && (*p == '-' || *p == '+');
        for (; p < end && *p >= '0' && *p <= '9'; p++) e = e < 100000000 ? e * 10 + (*p - '0') : e;
        e = eneg ? -e : e;
    }
    x.exp = e - frac;
    while (x.nd && x.d[x.nd - 1] == '0') x.nd--, x.exp++;
    if (!x.nd) x.neg = 0;
    return x;
}

static int num_text_cmp(const num_text *a, const num_text *b) {
    if (a->neg != b->neg) return a->neg ? -1 : 1;
    int s = a->neg ? -1 : 1;
    if (!a->nd || !b->nd) return a->nd ? s : b->nd ? -s : 0;
    long la = a->nd + a->exp, lb = b->nd + b->exp;
    if (la != lb) return la < lb ? -s : s;
    for (int i = 0; i < a->nd || i < b->nd; i++) {
        char x = i < a->nd ? a->d[i] : '0', y = i < b->nd ? b->d[i] : '0';
        if (x != y) return x < y ? -s : s;
    }
    return 0;
}

/* -1, 0, 1 as x < b, x == b (b a number of the schema, x one of the document): from their texts
 * where both are at hand, so a bound is compared with the decimal it spells, not its double. */
static int num_cmp(const vctx *c, const pf_json *x, const pf_json *b) {
    if (c->ssrc && c->dsrc) {
        num_text p = num_text_of(c->dsrc + x->offset, c->dend), q = num_text_of(c->ssrc + b->offset, c->send);
        if (!p.big && !q.big) return num_text_cmp(&p, &q);
    }
    return x->u.num.d < b->u.num.d ? -1 : x->u.num.d > b->u.num.d;
}

/* x is an integer multiple of m (> 0): exactly from the texts where their digits are few, else as
 * Python's jsonschema does with floats (the quotient integral). */
static int num_multiple(const vctx *c, const pf_json *x, const pf_json *m) {
    if (c->ssrc && c->dsrc) {
        num_text p = num_text_of(c->dsrc + x->offset, c->dend), q = num_text_of(c->ssrc + m->offset, c->send);
        if (!p.nd) return 1;
        if (!p.big && !q.big && p.nd <= 18 && q.nd <= 18 && p.exp - q.exp <= 4096) {
            if (p.exp < q.exp) return 0; /* p's last digit is nonzero: p is no multiple of 10^(q.exp - p.exp) */
            uint64_t a = 0, b = 0;
            for (int i = 0; i < p.nd; i++) a = a * 10 + (uint64_t)(p.d[i] - '0');
            for (int i = 0; i < q.nd; i++) b = b * 10 + (uint64_t)(q.d[i] - '0');
            uint64_t r = a % b;
            for (long k = p.exp - q.exp; k > 0 && r; k--) r = (uint64_t)((unsigned __int128)r * 10 % b);
            return r == 0;
        }
    }
    double q = x->u.num.d / m->u.num.d;
    return q == floor(q);
}

/* minimum / maximum, exclusive by draft 4's boolean or draft 6's number; multipleOf. */
static int number_ok(const vctx *c, const pf_json *s, const pf_json *v) {
    const pf_json *lo = pf_json_get(s, "minimum"), *hi = pf_json_get(s, "maximum"),
                  *xlo = pf_json_get(s, "exclusiveMinimum"), *xhi = pf_json_get(s, "exclusiveMaximum");
    int lo_open = xlo && xlo->type == PF_JSON_BOOL && xlo->u.b, hi_open = xhi && xhi->type == PF_JSON_BOOL && xhi->u.b;
    if (lo && lo->type == PF_JSON_NUMBER && num_cmp(c, v, lo) < lo_open) return 0;
    if (hi && hi->type == PF_JSON_NUMBER && num_cmp(c, v, hi) > -hi_open) return 0;
    if (xlo && xlo->type == PF_JSON_NUMBER && num_cmp(c, v, xlo) <= 0) return 0;
    if (xhi && xhi->type == PF_JSON_NUMBER && num_cmp(c, v, xhi) >= 0) return 0;
    const pf_json *m = pf_json_get(s, "multipleOf");
    return !(m && m->type == PF_JSON_NUMBER && m->u.num.d > 0 && !num_multiple(c, v, m));
}

/* The schema a "#/a/b~1c" reference names in c's base (RFC 6901: ~1 is '/', ~0 is '~'), NULL when
 * none; *base gets the resource it lies in (a subschema with its own id passed on the way). */
static const pf_json *deref(const vctx *c, const char *ref, const pf_json **base) {
    if (ref[0] != '#') return NULL;
    const pf_json *v = c->base;
    const char *p = ref + 1;
    *base = c->base;
    while (v && *p == '/') {
        if (v != c->base && own_base(c, v)) *base = v;
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

static int valid_in(const vctx *c, const pf_json *s, const pf_json *v, int depth) {
    if (depth > 256) return 0;
    if (s->type == PF_JSON_BOOL) return s->u.b;
    vctx inner;
    if (own_base(c, s) && s != c->base) {
        inner = *c;
        inner.base = s;
        c = &inner;
    }
    const pf_json *ref = pf_json_get(s, "$ref");
    if (ref) { /* the keywords beside it apply too, except under a draft before 2019-09 */
        vctx at = *c;
        const pf_json *t = ref->type == PF_JSON_STRING ? deref(c, ref->u.str.s, &at.base) : NULL;
        if (!t || !valid_in(&at, t, v, depth + 1)) return 0;
        const pf_json *d = c->root->type == PF_JSON_OBJECT ? pf_json_get(c->root, "$schema") : NULL;
        if (d && d->type == PF_JSON_STRING && strstr(d->u.str.s, "draft-0")) return 1;
    }
    const pf_json *any = pf_json_get(s, "anyOf"), *en = pf_json_get(s, "enum"), *k = pf_json_get(s, "const");
    if (any) {
        int ok = 0;
        for (size_t i = 0; i < any->u.arr.n && !ok; i++) ok = valid_in(c, &any->u.arr.items[i], v, depth + 1);
        if (!ok) return 0;
    }
    if (en) {
        int ok = 0;
        for (size_t i = 0; i < en->u.arr.n && !ok; i++) ok = json_equal(&en->u.arr.items[i], v);
        if (!ok) return 0;
    }
    if (k && !json_equal(k, v)) return 0;
    const pf_json *nt = pf_json_get(s, "not");
    if (nt && valid_in(c, nt, v, depth + 1)) return 0;
    const pf_json *all = pf_json_get(s, "allOf"), *one = pf_json_get(s, "oneOf");
    for (size_t i = 0; all && i < all->u.arr.n; i++)
        if (!valid_in(c, &all->u.arr.items[i], v, depth + 1)) return 0;
    size_t met = 0;
    for (size_t i = 0; one && i < one->u.arr.n; i++) met += (size_t)valid_in(c, &one->u.arr.items[i], v, depth + 1);
    if (one && met != 1) return 0;
    if (!types_ok(pf_json_get(s, "type"), v)) return 0;
    if (v->type == PF_JSON_OBJECT && !object_ok(c, s, v, depth)) return 0;
    if (v->type == PF_JSON_ARRAY && !array_ok(c, s, v, depth)) return 0;
    if (v->type == PF_JSON_STRING && !string_ok(s, v)) return 0;
    if (v->type == PF_JSON_NUMBER && !number_ok(c, s, v)) return 0;
    return 1;
}

int pf_schema_valid(const pf_json *s, const pf_json *v) {
    vctx c = {s, s, NULL, NULL, NULL, NULL};
    return valid_in(&c, s, v, 0);
}

int pf_schema_valid_text(const char *schema, const char *text, size_t n) {
    char err[PF_ERR_LEN];
    pf_json_doc *s = pf_json_parse(schema, strlen(schema), err), *d = pf_json_parse(text, n, err);
    const pf_json *root = s ? pf_json_root(s) : NULL;
    vctx c = {root, root, schema, schema + strlen(schema), text, text + n};
    int ok = s && d && valid_in(&c, c.root, pf_json_root(d), 0);
    pf_json_free(s);
    pf_json_free(d);
    return ok;
}
