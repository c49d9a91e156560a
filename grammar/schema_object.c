/* Objects (grammar/schema_cc.h): properties, required, additionalProperties, min/maxProperties
 * and patternProperties. */
#include "grammar/schema_cc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/grow.h"
#include "grammar/bytes_order.h"
#include "grammar/lit_set.h"
#include "grammar/regex.h"

typedef struct {
    char *text; /* "key": */
    uint32_t len;
    int32_t node;
    int required;
    int orig;      /* its place before sorting */
    pf_keys deps;  /* the keys (places before sorting) its presence requires */
} prop;

static int prop_cmp(const void *a, const void *b) {
    const prop *x = a, *y = b;
    return pf_bytes_cmp(x->text, x->len, y->text, y->len);
}

/* The property of that key among p[0..n) (compared as its `"key":` text), -1 when absent. */
static int find_prop(const prop *p, int n, const char *key, size_t len) {
    pf_sbuf b = {0};
    pf_json_quote(&b, key, len);
    pf_sbuf_put(&b, ":", 1);
    int k = -1;
    for (int i = 0; i < n && !b.oom && k < 0; i++)
        if (p[i].len == b.n && !memcmp(p[i].text, b.p, b.n)) k = i;
    free(b.p);
    return k;
}

static int add_prop(cctx *c, prop *p, int *n, const char *key, size_t len, int32_t node, const char *path) {
    if (*n == PF_SCHEMA_MAX_PROPS) return sc_fail(c, path, "more than %d properties in one object", PF_SCHEMA_MAX_PROPS);
    pf_sbuf b = {0};
    pf_json_quote(&b, key, len);
    pf_sbuf_put(&b, ":", 1);
    if (b.oom || !b.p) {
        free(b.p);
        return sc_fail_oom(c, path);
    }
    p[*n] = (prop){b.p, (uint32_t)b.n, node, 0, *n, 0};
    (*n)++;
    return 0;
}

/* The properties and the required keys (a required key outside `properties` takes node `other`:
 * any value, or additionalProperties' schema; when other < 0, additionalProperties false, the
 * object admits none). -1, or UNSAT. */
static int collect_props(cctx *c, const pf_json *props, const pf_json *req, int32_t other, int depth, const char *path,
                         prop *p, int *n) {
    char sub[256];
    for (size_t i = 0; props && i < props->u.obj.n; i++) {
        const pf_json_member *m = &props->u.obj.members[i];
        snprintf(sub, sizeof sub, "%s/properties/%s", path, m->key);
        if (find_prop(p, *n, m->key, m->key_len) >= 0) return sc_fail(c, sub, "property given twice");
        int32_t node = sc_compile(c, &m->val, depth + 1, sub);
        if (node == FAIL || add_prop(c, p, n, m->key, m->key_len, node, sub) < 0) return FAIL;
    }
    for (size_t i = 0; req && i < req->u.arr.n; i++) {
        const pf_json *r = &req->u.arr.items[i];
        if (r->type != PF_JSON_STRING) return sc_fail(c, path, "required: not an array of strings");
        int k = find_prop(p, *n, r->u.str.s, r->u.str.len);
        if (k < 0 && other < 0) return UNSAT;
        if (k < 0 && add_prop(c, p, n, r->u.str.s, r->u.str.len, other, path) < 0) return FAIL;
        p[k < 0 ? *n - 1 : k].required = 1;
    }
    return 0;
}

/* The keys one dependency asks for when its key is present: `dependencies`' array form or a schema
 * of `required` alone (true or {}: none), dependentRequired's array; *never: `false`, the key may
 * not appear. NULL with no keys; FAIL for another form. */
static int dep_targets(const pf_json *d, const pf_json **list, int *never) {
    *list = NULL;
    *never = d->type == PF_JSON_BOOL && !d->u.b;
    if (d->type == PF_JSON_ARRAY) *list = d;
    else if (d->type == PF_JSON_OBJECT) {
        for (size_t i = 0; i < d->u.obj.n; i++)
            if (sc_validation_keyword(&d->u.obj.members[i]) && strcmp(d->u.obj.members[i].key, "required")) return FAIL;
        *list = pf_json_get(d, "required");
    } else if (d->type != PF_JSON_BOOL) return FAIL;
    if (*list && (*list)->type != PF_JSON_ARRAY) return FAIL;
    for (size_t i = 0; *list && i < (*list)->u.arr.n; i++)
        if ((*list)->u.arr.items[i].type != PF_JSON_STRING) return FAIL;
    return 0;
}

/* The listed place of key (listed now, with node other, when it was not); UNSAT when no such key
 * may appear (other < 0), FAIL where patternProperties would decide its value. */
static int dep_place(cctx *c, prop *p, int *n, const pf_json *key, int32_t other, int patterns, const char *path) {
    int k = find_prop(p, *n, key->u.str.s, key->u.str.len);
    if (k >= 0) return k;
    if (other < 0) return UNSAT;
    if (patterns) return sc_fail(c, path, "keyword 'dependencies' on a key outside properties beside patternProperties is not supported");
    return add_prop(c, p, n, key->u.str.s, key->u.str.len, other, path) < 0 ? FAIL : *n - 1;
}

/* One dependency: key (present) requires list's keys (never: may not appear). */
static int add_dep(cctx *c, prop *p, int *n, const pf_json *key, const pf_json *list, int never, int32_t other,
                   int patterns, const char *path) {
    int k = dep_place(c, p, n, key, other, patterns, path);
    if (k < 0) return k == UNSAT ? 0 : FAIL; /* UNSAT: the key never appears, nothing to ask */
    if (never) p[k].node = UNSAT;
    for (size_t i = 0; list && i < list->u.arr.n; i++) {
        int j = dep_place(c, p, n, &list->u.arr.items[i], other, patterns, path);
        if (j == FAIL) return FAIL;
        if (j == UNSAT) p[k].node = UNSAT; /* what it requires cannot appear */
        else if (j != k) p[k].deps |= pf_key_bit(j);
    }
    return 0;
}

/* dependencies / dependentRequired on p: each key's requirements, followed through (a needs b, b
 * needs c: a needs c); a key needing one that admits no value admits none itself; a required key's
 * needs are required. 0 or FAIL. */
static int collect_deps(cctx *c, const pf_json *v, int32_t other, int patterns, const char *path, prop *p, int *n) {
    static const char *const kws[] = {"dependencies", "dependentRequired"};
    for (int w = 0; w < 2; w++) {
        const pf_json *d = pf_json_get(v, kws[w]);
        if (!d) continue;
        if (d->type != PF_JSON_OBJECT) return sc_fail(c, path, "keyword '%s' is not supported in this form", kws[w]);
        for (size_t i = 0; i < d->u.obj.n; i++) {
            const pf_json_member *m = &d->u.obj.members[i];
            const pf_json *list;
            int never;
            pf_json key = {.type = PF_JSON_STRING, .u.str = {m->key, m->key_len}};
            if (dep_targets(&m->val, &list, &never) < 0) return sc_fail(c, path, "keyword '%s' is not supported in this form", kws[w]);
            if (add_dep(c, p, n, &key, list, never, other, patterns, path) < 0) return FAIL;
        }
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < *n; i++)
            for (int j = 0; j < *n; j++)
                if (pf_keys_has(p[i].deps, j) && (p[i].deps | p[j].deps) != p[i].deps) p[i].deps |= p[j].deps, changed = 1;
    }
    for (int i = 0; i < *n; i++)
        for (int j = 0; j < *n; j++)
            if (pf_keys_has(p[i].deps, j)) {
                if (p[j].node == UNSAT) p[i].node = UNSAT;
                if (p[i].required) p[j].required = 1;
            }
    return 0;
}

/* The sorted props' dependency masks (places after sorting) into o->deps, when any; 0 or FAIL. */
static int sorted_deps(cctx *c, pf_schema_node *o, const prop *p, int n) {
    int at[PF_SCHEMA_MAX_PROPS], any = 0;
    for (int i = 0; i < n; i++) at[p[i].orig] = i, any |= p[i].deps != 0;
    if (!any) return 0;
    if (!(o->deps = calloc((size_t)n, sizeof *o->deps))) return sc_fail_oom(c, "");
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (pf_keys_has(p[i].deps, j)) o->deps[i] |= pf_key_bit(at[j]);
    return 0;
}

/* An object of the listed properties, sorted by their key texts (the object admits none when a
 * required one admits no value). A listed key admitting no value stays listed with a union of
 * no alternatives, which no value starts: other keys may be allowed, and that key is not one. */
static int32_t props_node(cctx *c, prop *p, int n) {
    int m = n;
    int32_t never = -1;
    for (int i = 0; i < n; i++) {
        int32_t bad = p[i].node == UNSAT && p[i].required ? UNSAT : 0;
        if (!bad && p[i].node == UNSAT && never < 0 && (never = sc_new_node(c, PF_SN_UNION)) < 0) bad = FAIL;
        if (bad) {
            for (int j = 0; j < n; j++) free(p[j].text);
            return bad;
        }
        if (p[i].node == UNSAT) p[i].node = never;
    }
    qsort(p, (size_t)m, sizeof *p, prop_cmp);
    int32_t id = sc_new_node(c, PF_SN_OBJECT);
    char **s = malloc((size_t)(m ? m : 1) * sizeof *s);
    uint32_t *len = malloc((size_t)(m ? m : 1) * sizeof *len);
    int32_t *node = malloc((size_t)(m ? m : 1) * sizeof *node);
    if (id < 0 || !s || !len || !node) {
        for (int i = 0; i < m; i++) free(p[i].text);
        free(s), free(len), free(node);
        return id < 0 ? FAIL : sc_fail_oom(c, "");
    }
    pf_schema_node *o = &c->s->nodes[id];
    for (int i = 0; i < m; i++) {
        s[i] = p[i].text;
        len[i] = p[i].len;
        node[i] = p[i].node;
        if (p[i].required) o->required |= pf_key_bit(i);
    }
    o->n_props = m;
    o->prop_node = node;
    if (sorted_deps(c, o, p, m) < 0) {
        for (int i = 0; i < m; i++) free(p[i].text);
        return FAIL;
    }
    int rc = pf_lit_set_take(&o->keys, s, len, m);
    free(s);
    free(len);
    if (rc == 0 && o->keys.n != m) return sc_fail(c, "", "a property is given twice");
    return rc < 0 ? sc_fail_oom(c, "") : id;
}

/* additionalProperties: the node of the keys `properties` does not list, PF_SN_ID_ANY when absent,
 * true or a schema any value meets, UNSAT when false or a schema no value meets; or FAIL. */
static int32_t compile_additional(cctx *c, const pf_json *add, int depth, const char *path) {
    if (!add) return PF_SN_ID_ANY;
    if (add->type == PF_JSON_BOOL) return add->u.b ? PF_SN_ID_ANY : UNSAT;
    char sub[256];
    snprintf(sub, sizeof sub, "%s/additionalProperties", path);
    return sc_compile(c, add, depth + 1, sub);
}

/* An object node's other keys and key counts (n_open: the listed keys that admit a value; more:
 * keys that patternProperties names may come too); UNSAT when no count fits. */
static int32_t object_counts(cctx *c, int32_t id, int32_t other, int64_t lo, int64_t hi, int n_open, int more) {
    pf_schema_node *o = &c->s->nodes[id];
    o->min_props = lo;
    o->max_props = hi;
    /* absent or true: any other key, with any value (the spec's default) */
    o->extra = other;
    int64_t req = pf_keys_count(o->required);
    if (lo > hi || req > hi || (o->extra < 0 && !more && lo > n_open)) return UNSAT;
    return id;
}

/* ---- patternProperties: every schema whose pattern a key matches applies to its value ---- */

/* The patterns (the member names of pp) as one automaton, a component each. */
static pf_regex *pattern_keys(cctx *c, const pf_json *pp, const char *path) {
    if (pp->u.obj.n > PF_REGEX_MAX_PATTERNS)
        return sc_fail(c, path, "patternProperties: more than %d patterns", PF_REGEX_MAX_PATTERNS), NULL;
    const char *pats[PF_REGEX_MAX_PATTERNS];
    size_t lens[PF_REGEX_MAX_PATTERNS];
    for (size_t i = 0; i < pp->u.obj.n; i++) pats[i] = pp->u.obj.members[i].key, lens[i] = pp->u.obj.members[i].key_len;
    char err[PF_ERR_LEN];
    int oom;
    pf_regex *re = pf_regex_compile(pats, lens, (int)pp->u.obj.n, err, &oom);
    if (!re) oom ? sc_fail_oom(c, path) : sc_fail(c, path, "patternProperties: %s", err);
    return re;
}

/* base (NULL: none) merged with the schemas of the patterns in mask (allOf); NULL on failure. */
static const pf_json *with_patterns(cctx *c, const pf_json *base, const pf_json *pp, uint32_t mask, int depth,
                                    const char *path) {
    const pf_json *acc = base;
    char sub[256];
    for (size_t i = 0; i < pp->u.obj.n; i++) {
        if (!(mask >> i & 1)) continue;
        snprintf(sub, sizeof sub, "%s/patternProperties/%s", path, pp->u.obj.members[i].key);
        acc = acc ? sc_merge_schemas(c, acc, &pp->u.obj.members[i].val, depth + 1, sub) : &pp->u.obj.members[i].val;
        if (!acc) return NULL;
    }
    return acc;
}

/* properties with each listed key's schema merged with those of the patterns it matches, and each
 * required key outside them that a pattern matches added with those patterns' schemas; props
 * itself when nothing changes. *err on failure. */
static const pf_json *props_with_patterns(cctx *c, const pf_json *props, const pf_json *req, const pf_json *pp,
                                          const pf_regex *re, int depth, const char *path, int *err) {
    size_t np = props ? props->u.obj.n : 0, nr = req ? req->u.arr.n : 0, n = 0;
    pf_json_member *m = sc_scratch(c, (np + nr) * sizeof *m);
    pf_json *out = sc_scratch(c, sizeof *out);
    *err = !m || !out;
    if (*err) return sc_fail_oom(c, path), NULL;
    for (size_t i = 0; i < np + nr; i++) {
        const pf_json_member *p = i < np ? &props->u.obj.members[i] : NULL;
        const pf_json *r = p ? NULL : &req->u.arr.items[i - np];
        if (r && r->type != PF_JSON_STRING) continue; /* collect_props refuses it */
        const char *key = p ? p->key : r->u.str.s;
        size_t len = p ? p->key_len : r->u.str.len;
        int seen = 0;
        for (size_t k = 0; k < n && r && !seen; k++) seen = m[k].key_len == len && !memcmp(m[k].key, key, len);
        if (seen) continue;
        uint32_t mask = pf_regex_match_mask(re, (const uint8_t *)key, len);
        if (r && !mask) continue; /* additionalProperties' */
        const pf_json *val = mask ? with_patterns(c, p ? &p->val : NULL, pp, mask, depth, path) : &p->val;
        if (!val) return *err = 1, NULL;
        m[n++] = (pf_json_member){key, len, *val};
    }
    if (!n && !props) return NULL;
    *out = (pf_json){.type = PF_JSON_OBJECT, .offset = props ? props->offset : pp->offset, .u.obj = {m, n}};
    return out;
}

/* Object node id's other keys through re (taken): each mask of patterns a key can match gets the
 * node of those patterns' schemas (none matched: additionalProperties'), and keys whose value no
 * schema admits are refused by the automaton. The node, or UNSAT / FAIL. */
static int32_t attach_pattern_keys(cctx *c, int32_t id, pf_regex *re, const pf_json *pp, int depth, const char *path,
                                   int n_open) {
    const uint32_t *masks;
    int n = pf_regex_masks(re, &masks);
    int32_t *vals = malloc((size_t)n * sizeof *vals);
    uint8_t *ok = malloc((size_t)n);
    char err[PF_ERR_LEN];
    int32_t rc = vals && ok ? 0 : sc_fail_oom(c, path);
    for (int i = 0; i < n && rc == 0; i++) {
        vals[i] = c->s->nodes[id].extra;
        if (masks[i]) {
            const pf_json *v = with_patterns(c, NULL, pp, masks[i], depth, path);
            vals[i] = v ? sc_compile(c, v, depth + 1, path) : FAIL;
            if (vals[i] == FAIL) rc = FAIL;
        }
        ok[i] = vals[i] >= 0;
    }
    if (rc == 0 && pf_regex_accept(re, ok, 0, INT64_MAX, err) < 0) rc = sc_fail(c, path, "patternProperties: %s", err);
    free(ok);
    if (rc == 0 && pf_regex_start(re) >= 0) {
        int32_t key = sc_new_node(c, PF_SN_STRING);
        if (key < 0) rc = FAIL;
        else {
            c->s->nodes[key].re = re;
            c->s->nodes[key].no_escape = 1;
            c->s->nodes[id].key_node = key;
            c->s->nodes[id].key_vals = vals;
            return id;
        }
    }
    free(vals);
    pf_regex_free(re);
    if (rc < 0) return rc;
    const pf_schema_node *o = &c->s->nodes[id]; /* no other key can be written */
    return o->min_props > n_open ? UNSAT : id;
}

int32_t sc_compile_object(cctx *c, const pf_json *v, int depth, const char *path) {
    const pf_json *props = pf_json_get(v, "properties"), *req = pf_json_get(v, "required");
    if (props && props->type != PF_JSON_OBJECT) return sc_fail(c, path, "properties: not an object");
    if (req && req->type != PF_JSON_ARRAY) return sc_fail(c, path, "required: not an array of strings");
    int64_t lo = 0, hi = INT64_MAX;
    if (sc_read_count(c, v, "minProperties", &lo, path) < 0 || sc_read_count(c, v, "maxProperties", &hi, path) < 0) return FAIL;
    const pf_json *pp = pf_json_get(v, "patternProperties");
    if (pp && pp->type != PF_JSON_OBJECT) return sc_fail(c, path, "patternProperties: not an object");
    pf_regex *keys = pp && pp->u.obj.n ? pattern_keys(c, pp, path) : NULL;
    if (pp && pp->u.obj.n && !keys) return FAIL;
    int err = 0;
    if (keys) props = props_with_patterns(c, props, req, pp, keys, depth, path, &err);
    int32_t other = err ? FAIL : compile_additional(c, pf_json_get(v, "additionalProperties"), depth, path);
    if (other == FAIL) {
        pf_regex_free(keys);
        return FAIL;
    }
    int deps = pf_json_get(v, "dependencies") || pf_json_get(v, "dependentRequired");
    if (!keys && !props && !req && !deps && other == PF_SN_ID_ANY && lo == 0 && hi == INT64_MAX) return PF_SN_ID_ANY_OBJECT;
    int32_t id;
    int n_open = 0;
    if (!props && !req && !deps && (other >= 0 || keys)) { /* any keys, their values of `other` (or a pattern's) */
        if ((id = sc_new_node(c, PF_SN_OBJECT)) < 0) {
            pf_regex_free(keys);
            return FAIL;
        }
        c->s->nodes[id].free_keys = 1;
    } else {
        prop p[PF_SCHEMA_MAX_PROPS];
        int n = 0;
        int rc = collect_props(c, props, req, other, depth, path, p, &n);
        if (rc == 0 && deps) rc = collect_deps(c, v, other, keys != NULL, path, p, &n);
        if (rc < 0) {
            for (int i = 0; i < n; i++) free(p[i].text);
            pf_regex_free(keys);
            return rc;
        }
        for (int i = 0; i < n; i++) n_open += p[i].node != UNSAT;
        if ((id = props_node(c, p, n)) < 0) {
            pf_regex_free(keys);
            return id;
        }
    }
    id = id < 0 ? id : object_counts(c, id, other, lo, hi, n_open, keys != NULL);
    if (id < 0 || !keys) {
        pf_regex_free(keys);
        return id;
    }
    return attach_pattern_keys(c, id, keys, pp, depth, path, n_open);
}
