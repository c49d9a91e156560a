/* The JSON Schema compiler's driver (grammar/schema.h): one schema to a node by what it holds
 * (not, $ref, allOf, anyOf / oneOf, enum / const, else a node per type), then the depth bounds and
 * the loop check over the finished graph. The keywords live in the schema_*.c files beside it. */
#include "grammar/schema_cc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/lit_set.h"
#include "grammar/regex.h"

/* The fixed nodes every schema has (grammar/schema.h). */
static int fixed_nodes(cctx *c) {
    static const char *const word[] = {"false", "null", "true"};
    if (sc_new_node(c, PF_SN_ANY) < 0 || sc_new_node(c, PF_SN_ARRAY) < 0 || sc_new_node(c, PF_SN_OBJECT) < 0 ||
        sc_words_node(c, word, 3) < 0 || sc_new_node(c, PF_SN_STRING) < 0 || sc_new_node(c, PF_SN_NUMBER) < 0 ||
        sc_new_node(c, PF_SN_STRING) < 0)
        return -1;
    c->s->nodes[PF_SN_ID_ANY_ARRAY].max_items = INT64_MAX;
    c->s->nodes[PF_SN_ID_ANY_OBJECT].free_keys = 1;
    c->s->nodes[PF_SN_ID_ANY_OBJECT].extra = PF_SN_ID_ANY;
    c->s->nodes[PF_SN_ID_KEY_STRING].no_escape = 1;
    return 0;
}

/* One node per allowed type, their union when there are several. */
static int32_t compile_types(cctx *c, const pf_json *v, int types, int depth, const char *path) {
    static const char *const f_t[] = {"false", "true"}, *const null[] = {"null"};
    int32_t alts[7];
    int n = 0;
    for (int bit = 1; bit <= T_NULL; bit <<= 1) {
        if (!(types & bit)) continue;
        int32_t x = bit == T_OBJ   ? sc_compile_object(c, v, depth, path)
                    : bit == T_ARR ? sc_compile_array(c, v, depth, path)
                    : bit == T_STR ? sc_compile_string(c, v, path)
                    : bit == T_NUM ? sc_compile_number(c, v, PF_SN_NUMBER, path)
                    : bit == T_INT ? sc_compile_number(c, v, PF_SN_INTEGER, path)
                    : bit == T_BOOL ? sc_words_node(c, f_t, 2)
                                    : sc_words_node(c, null, 1);
        if (x == FAIL) return FAIL;
        if (x != UNSAT) alts[n++] = x;
    }
    return sc_union_node(c, alts, n);
}

/* The deepest of the shortest documents an object's other keys may take (the matcher writes such
 * a key only where every one of them fits); -1 when there are none. */
static int32_t other_depth(const pf_schema *s, const pf_schema_node *n) {
    int32_t d = n->extra >= 0 ? s->nodes[n->extra].min_depth : -1;
    const uint32_t *masks;
    int m = n->key_node >= 0 ? pf_regex_masks(s->nodes[n->key_node].re, &masks) : 0;
    for (int i = 0; i < m; i++)
        if (n->key_vals[i] >= 0 && s->nodes[n->key_vals[i]].min_depth > d) d = s->nodes[n->key_vals[i]].min_depth;
    return d;
}

/* Every node's min_depth (grammar/schema.h), to the fixpoint: recursion makes the graph cyclic. */
static void min_depths(pf_schema *s) {
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < s->n_nodes; i++) {
            pf_schema_node *n = &s->nodes[i];
            int32_t d = 0;
            switch (n->kind) {
            case PF_SN_OBJECT:
                d = 1;
                for (int k = 0; k < n->n_props && !n->free_keys; k++)
                    if ((pf_keys_has(n->required, k) || (n->min_props > pf_keys_count(n->required) &&
                                                  s->nodes[n->prop_node[k]].min_depth < PF_SCHEMA_NO_DOC)) &&
                        s->nodes[n->prop_node[k]].min_depth + 1 > d)
                        d = s->nodes[n->prop_node[k]].min_depth + 1;
                if (n->min_props > pf_keys_count(n->required) && other_depth(s, n) >= 0 &&
                    other_depth(s, n) + 1 > d)
                    d = other_depth(s, n) + 1;
                break;
            case PF_SN_ARRAY:
                d = n->contains >= 0 ? s->nodes[n->contains].min_depth + 1
                    : n->min_items > 0 ? s->nodes[n->items].min_depth + 1 : 1;
                break;
            case PF_SN_UNION:
                d = PF_SCHEMA_NO_DOC;
                for (int k = 0; k < n->n_alts; k++)
                    if (s->nodes[n->alts[k]].min_depth < d) d = s->nodes[n->alts[k]].min_depth;
                break;
            default: d = 0;
            }
            if (d > PF_SCHEMA_NO_DOC) d = PF_SCHEMA_NO_DOC;
            if (d < n->min_depth) n->min_depth = d, changed = 1;
        }
    }
}

/* A union reached again through unions alone (`{"anyOf": [{"$ref": "#"}, ...]}`): the matcher
 * would expand it without end. 0, or 1 for such a loop. */
static int union_loop(const pf_schema *s, int32_t id, uint8_t *mark) {
    if (s->nodes[id].kind != PF_SN_UNION || mark[id] == 2) return 0;
    if (mark[id] == 1) return 1;
    mark[id] = 1;
    for (int k = 0; k < s->nodes[id].n_alts; k++)
        if (union_loop(s, s->nodes[id].alts[k], mark)) return 1;
    mark[id] = 2;
    return 0;
}

typedef struct {
    uint64_t hash;
    int32_t node;
} hashed_node;

static int hashed_cmp(const void *a, const void *b) {
    const hashed_node *x = a, *y = b;
    return x->hash != y->hash ? (x->hash < y->hash ? -1 : 1) : (x->node > y->node) - (x->node < y->node);
}

static int steps_alike(const pf_schema_node *a, const pf_schema_node *b) {
    return a->min_len == b->min_len && a->max_len == b->max_len && a->no_escape == b->no_escape &&
           pf_regex_same(a->re, b->re);
}

/* Each pattern string's pattern_id: the lowest node that steps alike (the strings of a schema
 * that repeat a `format` or `pattern` share one). 0 or FAIL. */
static int32_t pattern_ids(cctx *c) {
    pf_schema *s = c->s;
    hashed_node *v = malloc((size_t)s->n_nodes * sizeof *v + 1);
    if (!v) return sc_fail_oom(c, "");
    int n = 0;
    for (int32_t i = 0; i < s->n_nodes; i++)
        if (s->nodes[i].re) v[n++] = (hashed_node){pf_regex_hash(s->nodes[i].re), i};
    qsort(v, (size_t)n, sizeof *v, hashed_cmp);
    for (int k = 0; k < n; k++) {
        pf_schema_node *nd = &s->nodes[v[k].node];
        nd->pattern_id = v[k].node;
        for (int j = k - 1; j >= 0 && v[j].hash == v[k].hash && nd->pattern_id == v[k].node; j--)
            if (steps_alike(&s->nodes[v[j].node], nd)) nd->pattern_id = s->nodes[v[j].node].pattern_id;
    }
    free(v);
    return 0;
}

/* After compiling: the depth bounds, and no union loop. 0 or FAIL. */
static int32_t finish(cctx *c) {
    pf_schema *s = c->s;
    uint8_t *mark = calloc((size_t)s->n_nodes, 1);
    if (!mark) return sc_fail_oom(c, "");
    int loop = 0;
    for (int i = 0; i < s->n_nodes && !loop; i++) loop = union_loop(s, i, mark);
    free(mark);
    if (loop) return sc_fail(c, "", "$ref: a reference loop with no object or array in it");
    min_depths(s);
    return pattern_ids(c);
}

/* The member holding the values a schema with `enum` or `const` may take: its own, else one an
 * allOf branch holds (the branch itself or the schema its $ref names); NULL when none, or when a
 * $ref makes a draft before 2019-09 ignore the keywords beside it. Every value of v is one of them. */
static const pf_json_member *finite_values(cctx *c, const pf_json *v) {
    if (pf_json_get(v, "$ref") && sc_ref_siblings_ignored(c)) return NULL;
    for (size_t i = 0; i < v->u.obj.n; i++)
        if (!strcmp(v->u.obj.members[i].key, "enum") || !strcmp(v->u.obj.members[i].key, "const"))
            return &v->u.obj.members[i];
    const pf_json *all = pf_json_get(v, "allOf");
    for (size_t i = 0; all && all->type == PF_JSON_ARRAY && i < all->u.arr.n; i++) {
        const pf_json *b = &all->u.arr.items[i];
        if (b->type != PF_JSON_OBJECT) continue;
        const pf_json *ref = pf_json_get(b, "$ref");
        if (ref && ref->type == PF_JSON_STRING && ref->u.str.len && ref->u.str.s[0] == '#') {
            cctx probe = *c; /* a reference that fails here fails again where it is compiled */
            char err[PF_ERR_LEN];
            probe.err = err;
            const pf_json *t = sc_ref_resolve(&probe, ref, "");
            if (t && t->type == PF_JSON_OBJECT && !pf_json_get(t, "$ref")) b = t;
        }
        for (size_t k = 0; k < b->u.obj.n; k++)
            if (!strcmp(b->u.obj.members[k].key, "enum") || !strcmp(b->u.obj.members[k].key, "const"))
                return &b->u.obj.members[k];
    }
    return NULL;
}

int32_t sc_compile(cctx *c, const pf_json *v, int depth, const char *path) {
    if (depth > PF_SCHEMA_MAX_DEPTH) return sc_fail(c, path, "nested deeper than %d levels", PF_SCHEMA_MAX_DEPTH);
    if (v->type == PF_JSON_BOOL) return v->u.b ? PF_SN_ID_ANY : UNSAT;
    if (v->type != PF_JSON_OBJECT) return sc_fail(c, path, "a schema must be an object or a boolean");
    const pf_json_member *lits = finite_values(c, v);
    if (lits) return sc_compile_literals(c, v, lits, path);
    if (pf_json_get(v, "not") && !sc_not_pattern_string(c, v)) {
        const pf_json *f = sc_fold_not(c, v, depth, path);
        return f ? sc_compile(c, f, depth + 1, path) : FAIL;
    }
    const pf_json *dv = sc_fold_dependencies(c, v, path);
    if (dv != v) return dv ? sc_compile(c, dv, depth + 1, path) : FAIL;
    if (sc_check_keywords(c, v, path) < 0) return FAIL;
    if (pf_json_get(v, "$ref") && sc_ref_siblings(c, v)) {
        const pf_json *f = sc_ref_with_siblings(c, v, depth, path);
        return f ? sc_compile(c, f, depth + 1, path) : FAIL;
    }
    if (pf_json_get(v, "$ref")) return sc_compile_ref(c, v, depth, path);
    if (pf_json_get(v, "allOf")) {
        const pf_json *f = sc_fold_all_of(c, v, depth, path);
        return f ? sc_compile(c, f, depth + 1, path) : FAIL;
    }
    if (pf_json_get(v, "anyOf")) return sc_compile_any_of(c, v, "anyOf", depth, path);
    if (pf_json_get(v, "oneOf")) return sc_compile_any_of(c, v, "oneOf", depth, path);
    int types = sc_type_set(c, v, path);
    if (types < 0) return FAIL;
    if (!types) return PF_SN_ID_ANY;
    int32_t id = compile_types(c, v, types, depth, path);
    if (id < PF_SN_N_FIXED || pf_json_get(v, "type")) return id;
    pf_schema_node *n = &c->s->nodes[id];
    n->implied_type = 1;
    for (int i = 0; n->kind == PF_SN_UNION && i < n->n_alts; i++) /* each type's node: fresh, never a fixed one */
        if (n->alts[i] >= PF_SN_N_FIXED) c->s->nodes[n->alts[i]].implied_type = 1;
    return id;
}

static pf_schema *start(cctx *c, char err[PF_ERR_LEN]) {
    c->s = calloc(1, sizeof *c->s);
    c->err = err;
    if (!c->s) {
        c->oom = 1;
        snprintf(err, PF_ERR_LEN, "json schema: out of memory");
        return NULL;
    }
    if (fixed_nodes(c) < 0) {
        pf_schema_free(c->s);
        return NULL;
    }
    return c->s;
}

pf_schema_status pf_schema_compile(const char *text, size_t len, pf_schema **out, char err[PF_ERR_LEN]) {
    char why[PF_ERR_LEN];
    *out = NULL;
    pf_json_doc *d = pf_json_parse(text, len, why);
    if (!d) {
        snprintf(err, PF_ERR_LEN, "json schema: %.230s", why);
        return PF_SCHEMA_INVALID;
    }
    cctx c = {.src = text, .src_len = len, .root = pf_json_root(d), .ref_draft = -1};
    pf_schema *s = start(&c, err);
    int32_t root = s ? sc_compile_target(&c, c.root, 0, "") : FAIL;
    if (root >= 0 && finish(&c) < 0) root = FAIL;
    if (root >= 0 && s->nodes[root].min_depth >= PF_SCHEMA_NO_DOC) root = UNSAT; /* every document infinite */
    pf_json_free(d);
    free(c.refs);
    for (size_t i = 0; i < c.n_made; i++) free(c.made[i]);
    free(c.made);
    if (root == UNSAT) sc_fail(&c, "", "the schema admits no value");
    if (root < 0) {
        pf_schema_free(s);
        return c.oom ? PF_SCHEMA_NO_MEMORY : PF_SCHEMA_INVALID;
    }
    s->root = root;
    *out = s;
    return PF_SCHEMA_OK;
}

pf_schema_status pf_schema_json_object(pf_schema **out, char err[PF_ERR_LEN]) {
    cctx c = {0};
    pf_schema *s = start(&c, err);
    if (s && finish(&c) < 0) {
        pf_schema_free(s);
        return PF_SCHEMA_NO_MEMORY;
    }
    if (s) s->root = PF_SN_ID_ANY_OBJECT;
    *out = s;
    return s ? PF_SCHEMA_OK : PF_SCHEMA_NO_MEMORY;
}

pf_schema_status pf_schema_add_wrap(pf_schema *s, const char *prefix, int32_t node, const char *suffix,
                                    char err[PF_ERR_LEN]) {
    cctx c = {.s = s, .err = err};
    if (s->n_wraps >= PF_SCHEMA_MAX_WRAPS) {
        snprintf(err, PF_ERR_LEN, "json schema: more than %d wrapped forms", PF_SCHEMA_MAX_WRAPS);
        return PF_SCHEMA_INVALID;
    }
    pf_schema_wrap w = {0, node, 0}, *ws = realloc(s->wraps, (size_t)(s->n_wraps + 1) * sizeof *ws);
    if (!ws) return sc_fail_oom(&c, ""), PF_SCHEMA_NO_MEMORY;
    s->wraps = ws;
    const char *text[2] = {prefix, suffix};
    int32_t *slot[2] = {&w.prefix, &w.suffix};
    for (int k = 0; k < 2; k++) {
        if (!text[k] || !*text[k]) continue;
        char *d = strdup(text[k]);
        uint32_t len = (uint32_t)strlen(text[k]);
        if (!d) return sc_fail_oom(&c, ""), PF_SCHEMA_NO_MEMORY;
        int32_t id = sc_literal_node(&c, &d, &len, 1);
        if (id < 0) return PF_SCHEMA_NO_MEMORY;
        s->nodes[id].raw = 1;
        s->nodes[id].min_depth = 0;
        *slot[k] = id;
    }
    s->wraps[s->n_wraps++] = w;
    return PF_SCHEMA_OK;
}

int32_t pf_schema_property(const pf_schema *s, int32_t obj, const char *key) {
    const pf_schema_node *nd = &s->nodes[obj];
    if (nd->kind != PF_SN_OBJECT) return -1;
    size_t n = strlen(key);
    for (int i = 0; i < nd->n_props; i++) {
        const char *k = nd->keys.s[i];
        /* the set's texts are `"key":` */
        if (nd->keys.len[i] == n + 3 && k[0] == '"' && !memcmp(k + 1, key, n) && k[n + 1] == '"') return nd->prop_node[i];
    }
    return -1;
}

void pf_schema_free(pf_schema *s) {
    if (!s) return;
    for (int i = 0; i < s->n_nodes; i++) {
        pf_schema_node *n = &s->nodes[i];
        pf_lit_set_free(&n->keys);
        pf_lit_set_free(&n->lits);
        free(n->prop_node);
        free(n->deps);
        free(n->uniq_class);
        free(n->uniq_order);
        free(n->uniq_len);
        free(n->alts);
        free(n->key_vals);
        pf_regex_free(n->re);
    }
    free(s->nodes);
    free(s->wraps);
    free(s);
}
