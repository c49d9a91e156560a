/* The JSON Schema compiler (grammar/schema.h): a schema's JSON tree to nodes, keyword by keyword,
 * refusing what the subset lacks and pruning what admits no value. */
#include "grammar/schema.h"
#include "grammar/bytes_order.h"
#include "formats/grow.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "grammar/lit_set.h"
#include "grammar/num_spell.h"
#include "grammar/regex.h"
#include "grammar/string_format.h"

enum { UNSAT = -2, FAIL = -1 };
enum { T_OBJ = 1, T_ARR = 2, T_STR = 4, T_NUM = 8, T_INT = 16, T_BOOL = 32, T_NULL = 64 };

/* A schema a $ref names: its node once compiled; while it is being compiled, a reference to it
 * (a recursion) gets a placeholder union filled with the node when it is done. */
typedef struct {
    const pf_json *target;
    int32_t node, placeholder;
    int done;
} ref_entry;

typedef struct {
    pf_schema *s;
    const char *src;
    size_t src_len;
    char *err;
    int oom; /* the failure was out of memory */
    const pf_json *root;
    ref_entry *refs;
    size_t n_refs, cap_refs;
    int inner_id; /* -1 not looked for yet; 1: a subschema below the root has its own $id / id */
    void **made;  /* what merged schemas are made of, freed when compiling ends */
    size_t n_made, cap_made;
    int n_merges;
} cctx;

static int32_t compile(cctx *c, const pf_json *v, int depth, const char *path);
static int32_t compile_ref(cctx *c, const pf_json *v, int depth, const char *path);

static int32_t fail(cctx *c, const char *path, const char *fmt, ...) {
    char msg[PF_ERR_LEN], p[160];
    size_t i = 0;
    for (; path[i] && i < sizeof p - 1; i++) p[i] = (unsigned char)path[i] < 0x20 ? '?' : path[i];
    p[i] = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *q = msg; *q; q++)
        if ((unsigned char)*q < 0x20) *q = '?';
    snprintf(c->err, PF_ERR_LEN, "json schema: %.100s: %.120s", p[0] ? p : "/", msg);
    return FAIL;
}

static int32_t fail_oom(cctx *c, const char *path) {
    c->oom = 1;
    return fail(c, path, "out of memory");
}

static int32_t new_node(cctx *c, pf_schema_kind kind) {
    pf_schema *s = c->s;
    pf_schema_node *n = pf_grow(s->nodes, &s->cap_nodes, (size_t)s->n_nodes + 1, sizeof *n, 16);
    if (!n) return fail_oom(c, "");
    s->nodes = n;
    memset(&s->nodes[s->n_nodes], 0, sizeof s->nodes[0]);
    s->nodes[s->n_nodes].kind = kind;
    s->nodes[s->n_nodes].items = PF_SN_ID_ANY;
    s->nodes[s->n_nodes].min_depth = PF_SCHEMA_NO_DOC;
    s->nodes[s->n_nodes].max_len = INT64_MAX;
    s->nodes[s->n_nodes].num_lo = INT64_MIN;
    s->nodes[s->n_nodes].num_hi = INT64_MAX;
    s->nodes[s->n_nodes].extra = -1;
    s->nodes[s->n_nodes].max_props = INT64_MAX;
    s->nodes[s->n_nodes].key_node = -1;
    return s->n_nodes++;
}

/* A literal node of the given texts (taken). */
static int32_t literal_node(cctx *c, char **s, uint32_t *len, int n) {
    int32_t id = new_node(c, PF_SN_LITERALS);
    if (id < 0) {
        for (int i = 0; i < n; i++) free(s[i]);
        return FAIL;
    }
    if (pf_lit_set_take(&c->s->nodes[id].lits, s, len, n) < 0) return fail_oom(c, "");
    return id;
}

static int32_t words_node(cctx *c, const char *const *w, int n) {
    char *s[3];
    uint32_t len[3];
    for (int i = 0; i < n; i++) {
        s[i] = strdup(w[i]);
        len[i] = (uint32_t)strlen(w[i]);
        if (!s[i]) {
            for (int j = 0; j < i; j++) free(s[j]);
            return fail_oom(c, "");
        }
    }
    return literal_node(c, s, len, n);
}

/* One literal node holding the texts of every literal node among alts[0..n) (their union), put
 * in the first one's place: a union's alternatives each cost the matcher a parse stack, and an
 * anyOf of many consts would need more than it keeps. The count left. */
static int merge_literal_alts(cctx *c, int32_t *alts, int n) {
    int lits = 0, total = 0;
    for (int i = 0; i < n; i++)
        if (c->s->nodes[alts[i]].kind == PF_SN_LITERALS) lits++, total += c->s->nodes[alts[i]].lits.n;
    if (lits < 2) return n;
    char **s = malloc((size_t)total * sizeof *s);
    uint32_t *len = malloc((size_t)total * sizeof *len);
    int k = 0, m = 0, first = -1, oom = !s || !len;
    for (int i = 0; i < n && !oom; i++) {
        const pf_lit_set *set = &c->s->nodes[alts[i]].lits;
        if (c->s->nodes[alts[i]].kind != PF_SN_LITERALS) {
            alts[m++] = alts[i];
            continue;
        }
        if (first < 0) first = m++;
        for (int j = 0; j < set->n && !oom; j++) {
            s[k] = malloc(set->len[j] + 1);
            oom = !s[k];
            if (!oom) memcpy(s[k], set->s[j], set->len[j]), s[k][set->len[j]] = 0, len[k++] = set->len[j];
        }
    }
    int32_t id = oom ? FAIL : literal_node(c, s, len, k);
    if (oom)
        for (int j = 0; j < k; j++) free(s[j]);
    free(s);
    free(len);
    if (id < 0) return oom ? fail_oom(c, "") : FAIL;
    alts[first] = id;
    return m;
}

static int32_t union_node(cctx *c, const int32_t *alts_in, int n) {
    if (n == 0) return UNSAT;
    if (n == 1) return alts_in[0];
    int32_t alts[64], *heap = NULL, *a0 = alts;
    if (n > 64 && !(a0 = heap = malloc((size_t)n * sizeof *heap))) return fail_oom(c, "");
    memcpy(a0, alts_in, (size_t)n * sizeof *a0);
    n = merge_literal_alts(c, a0, n);
    if (n < 0 || n == 1) {
        int32_t r = n < 0 ? FAIL : a0[0];
        free(heap);
        return r;
    }
    alts_in = a0;
    int32_t id = new_node(c, PF_SN_UNION);
    int32_t *a = id < 0 ? NULL : malloc((size_t)n * sizeof *a);
    if (a) memcpy(a, alts_in, (size_t)n * sizeof *a);
    free(heap);
    if (id < 0) return FAIL;
    if (!a) return fail_oom(c, "");
    c->s->nodes[id].alts = a;
    c->s->nodes[id].n_alts = n;
    return id;
}

/* The fixed nodes every schema has (grammar/schema.h). */
static int fixed_nodes(cctx *c) {
    static const char *const word[] = {"false", "null", "true"};
    if (new_node(c, PF_SN_ANY) < 0 || new_node(c, PF_SN_ARRAY) < 0 || new_node(c, PF_SN_OBJECT) < 0 ||
        words_node(c, word, 3) < 0 || new_node(c, PF_SN_STRING) < 0 || new_node(c, PF_SN_NUMBER) < 0 ||
        new_node(c, PF_SN_STRING) < 0)
        return -1;
    c->s->nodes[PF_SN_ID_ANY_ARRAY].max_items = INT64_MAX;
    c->s->nodes[PF_SN_ID_ANY_OBJECT].free_keys = 1;
    c->s->nodes[PF_SN_ID_ANY_OBJECT].extra = PF_SN_ID_ANY;
    c->s->nodes[PF_SN_ID_KEY_STRING].no_escape = 1;
    return 0;
}

/* The keywords compiled here. */
static const char *const k_keywords[] = {"type", "properties", "required", "additionalProperties", "items",
                                         "minItems", "maxItems", "enum", "const", "anyOf", "minLength", "maxLength",
                                         "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                         "minProperties", "maxProperties", "allOf", "oneOf", "pattern", "format",
                                         "patternProperties"};
enum { K_TYPE = 0, K_ENUM = 7, K_CONST = 8, K_ANY_OF = 9, K_MINIMUM = 12 };

/* The validation keywords of JSON Schema (drafts 3 to 2020-12, and the applicators) that are not
 * compiled here: a schema with one is refused, never compiled looser than it reads. Every other
 * keyword is an annotation (title, description, default, examples, readOnly, deprecated, ...), a
 * container (definitions, $defs) or unknown (x-..., id, self, name, ...): ignored, as the spec
 * says an implementation treats a keyword it does not know (2020-12 core, 4.3.1). */
static const char *const k_unsupported[] = {
    "multipleOf", "uniqueItems", "contains", "maxContains", "minContains", "prefixItems",
    "additionalItems", "unevaluatedItems", "dependentRequired",
    "dependentSchemas", "dependencies", "propertyNames", "unevaluatedProperties",
    "not", "if", "then", "else", "$dynamicRef", "$recursiveRef", "divisibleBy",
    "disallow", "extends"};

static int in_list(const pf_json_member *m, const char *const *list, int n) {
    if (strlen(m->key) != m->key_len) return -1; /* a NUL inside: no keyword */
    for (int i = 0; i < n; i++)
        if (!strcmp(m->key, list[i])) return i;
    return -1;
}

/* Index of a keyword compiled here, -1 for any other. */
static int keyword_index(const pf_json_member *m) {
    return in_list(m, k_keywords, (int)(sizeof k_keywords / sizeof *k_keywords));
}

/* A validation keyword that is not compiled here (then and else count only beside if: alone
 * they assert nothing). */
static int unsupported(const pf_json *v, const pf_json_member *m) {
    if (in_list(m, k_unsupported, (int)(sizeof k_unsupported / sizeof *k_unsupported)) < 0) return 0;
    return strcmp(m->key, "then") && strcmp(m->key, "else") ? 1 : pf_json_get(v, "if") != NULL;
}

static int check_keywords(cctx *c, const pf_json *v, const char *path) {
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const pf_json_member *m = &v->u.obj.members[i];
        int known = keyword_index(m) >= 0;
        if (unsupported(v, m)) return fail(c, path, "keyword '%s' is not supported", m->key);
        /* draft 3's `"required": true` in a property would be a constraint ignored */
        if (known && !strcmp(m->key, "required") && m->val.type != PF_JSON_ARRAY)
            return fail(c, path, "required: not an array of strings");
        for (size_t j = 0; known && j < i; j++)
            if (!strcmp(v->u.obj.members[j].key, m->key) && v->u.obj.members[j].key_len == m->key_len)
                return fail(c, path, "keyword '%s' given twice", m->key);
    }
    return 0;
}

/* A format compiled or refused (not one that is ignored). */
static int format_asserts(const pf_json *f) {
    const char *pat;
    int64_t cap;
    return f && (f->type != PF_JSON_STRING || pf_format_lookup(f->u.str.s, f->u.str.len, &pat, &cap) != PF_FORMAT_IGNORED);
}

static int type_bit(const pf_json *t) {
    static const char *const names[] = {"object", "array", "string", "number", "integer", "boolean", "null"};
    for (int i = 0; i < 7 && t->type == PF_JSON_STRING; i++)
        if (!strcmp(t->u.str.s, names[i])) return 1 << i;
    return 0;
}

/* Keyword key of v is there and asserts something: `"properties": {}`, `"required": []`,
 * `"items": {}` or `true`, `"minItems": 0` and the like hold for every value, so they imply no type
 * (the spec's schema without `type` takes every type; the subset narrows it to the type its
 * keywords constrain, and only those that constrain count). */
static int asserts(const pf_json *v, const char *key) {
    const pf_json *x = pf_json_get(v, key);
    if (!x) return 0;
    switch (x->type) {
    case PF_JSON_OBJECT: return x->u.obj.n > 0;
    case PF_JSON_ARRAY: return x->u.arr.n > 0;
    case PF_JSON_BOOL: return !x->u.b;
    case PF_JSON_NUMBER: return !(x->u.num.is_int && x->u.num.i == 0);
    default: return 1;
    }
}

/* The types the schema allows: `type`, else what its keywords imply (any value when none). */
static int type_set(cctx *c, const pf_json *v, const char *path) {
    const pf_json *t = pf_json_get(v, "type");
    int set = 0;
    if (t && t->type == PF_JSON_ARRAY) {
        for (size_t i = 0; i < t->u.arr.n; i++) {
            int b = type_bit(&t->u.arr.items[i]);
            if (!b) return fail(c, path, "type: unknown type in the list (object, array, string, number, integer, boolean, null)");
            set |= b;
        }
        if (!set) return fail(c, path, "type: an empty list");
    } else if (t) {
        set = type_bit(t);
        if (!set) return fail(c, path, "type: not one of object, array, string, number, integer, boolean, null");
    } else {
        if (asserts(v, "properties") || asserts(v, "required") || asserts(v, "additionalProperties") ||
            asserts(v, "minProperties") || pf_json_get(v, "maxProperties") || asserts(v, "patternProperties"))
            set |= T_OBJ;
        if (asserts(v, "items") || asserts(v, "minItems") || pf_json_get(v, "maxItems")) set |= T_ARR;
        if (asserts(v, "minLength") || pf_json_get(v, "maxLength") || pf_json_get(v, "pattern") ||
            format_asserts(pf_json_get(v, "format")))
            set |= T_STR;
        for (int i = 0; i < 4; i++)
            if (pf_json_get(v, k_keywords[K_MINIMUM + i])) set |= T_NUM;
    }
    if ((set & T_NUM) && (set & T_INT)) set &= ~T_INT;
    return set;
}

static int literal_fits(const pf_json *v, int types) {
    if (!types) return 1;
    switch (v->type) {
    case PF_JSON_NULL: return types & T_NULL;
    case PF_JSON_BOOL: return types & T_BOOL;
    case PF_JSON_NUMBER: return (types & T_NUM) || ((types & T_INT) && v->u.num.is_int);
    case PF_JSON_STRING: return types & T_STR;
    case PF_JSON_ARRAY: return types & T_ARR;
    case PF_JSON_OBJECT: return types & T_OBJ;
    }
    return 0;
}

static int member_cmp(const void *a, const void *b) {
    const pf_json_member *x = *(const pf_json_member *const *)a, *y = *(const pf_json_member *const *)b;
    int r = memcmp(x->key, y->key, x->key_len < y->key_len ? x->key_len : y->key_len);
    return r ? r : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* A key that an object within v holds twice, NULL when none (*oom: out of memory). Such a value
 * means different things to different readers (the first or the last of the two), so a document
 * written as it is would be equal to it for some and not for others. */
static const char *key_twice(const pf_json *v, int *oom) {
    if (v->type == PF_JSON_ARRAY) {
        for (size_t i = 0; i < v->u.arr.n; i++) {
            const char *k = key_twice(&v->u.arr.items[i], oom);
            if (k || *oom) return k;
        }
        return NULL;
    }
    if (v->type != PF_JSON_OBJECT) return NULL;
    const char *k = NULL;
    size_t n = v->u.obj.n;
    for (size_t i = 0; i < n && !k && !*oom; i++) k = key_twice(&v->u.obj.members[i].val, oom);
    if (k || *oom || n < 2) return k;
    const pf_json_member **m = malloc(n * sizeof *m);
    if (!m) return *oom = 1, NULL;
    for (size_t i = 0; i < n; i++) m[i] = &v->u.obj.members[i];
    qsort(m, n, sizeof *m, member_cmp);
    for (size_t i = 1; i < n && !k; i++)
        if (!member_cmp(&m[i - 1], &m[i])) k = m[i]->key;
    free(m);
    return k;
}

/* enum / const (with at most `type` beside them): the compact texts of the values of the types. */
static int32_t compile_literals(cctx *c, const pf_json *v, const char *path) {
    for (size_t i = 0; i < v->u.obj.n; i++) {
        int k = keyword_index(&v->u.obj.members[i]);
        if (k > K_TYPE && k != K_ENUM && k != K_CONST)
            return fail(c, path, "'%s' combined with enum or const is not supported", k_keywords[k]);
    }
    const pf_json *e = pf_json_get(v, "enum"), *k = pf_json_get(v, "const");
    if (e && k) return fail(c, path, "enum combined with const is not supported");
    if (e && e->type != PF_JSON_ARRAY) return fail(c, path, "enum: not an array");
    int types = pf_json_get(v, "type") ? type_set(c, v, path) : 0;
    if (types < 0) return FAIL;
    int twice_oom = 0;
    const char *twice = key_twice(e ? e : k, &twice_oom);
    if (twice_oom) return fail_oom(c, path);
    if (twice) return fail(c, path, "%s: an object in it has the key '%.60s' twice", e ? "enum" : "const", twice);
    size_t n = e ? e->u.arr.n : 1, cap = n * (1 + PF_NUM_SPELL_MAX);
    char **s = calloc(cap ? cap : 1, sizeof *s);
    uint32_t *len = calloc(cap ? cap : 1, sizeof *len);
    int m = 0, oom = !s || !len;
    for (size_t i = 0; !oom && i < n; i++) {
        const pf_json *x = e ? &e->u.arr.items[i] : k;
        if (!literal_fits(x, types)) continue;
        pf_sbuf b = {0};
        pf_json_compact(&b, x, c->src, c->src_len);
        oom = b.oom || !b.p || b.n > UINT32_MAX;
        if (oom) {
            free(b.p);
            break;
        }
        s[m] = b.p;
        len[m++] = (uint32_t)b.n;
        /* a number equals every number of its value: its other spellings too */
        char sp[PF_NUM_SPELL_MAX][PF_NUM_SPELL_LEN];
        int ns = x->type == PF_JSON_NUMBER ? pf_num_spellings(b.p, b.n, sp) : 0;
        int int_only = types && !(types & T_NUM); /* an integer type: no fraction or exponent written */
        for (int j = 0; j < ns && !oom; j++) {
            if (int_only && strpbrk(sp[j], ".eE")) continue;
            s[m] = strdup(sp[j]);
            oom = !s[m];
            if (!oom) len[m] = (uint32_t)strlen(sp[j]), m++;
        }
    }
    int32_t id;
    if (oom) {
        for (int i = 0; i < m; i++) free(s[i]);
        id = fail_oom(c, path);
    } else {
        id = m ? literal_node(c, s, len, m) : UNSAT;
    }
    free(s);
    free(len);
    return id;
}

typedef struct {
    char *text; /* "key": */
    uint32_t len;
    int32_t node;
    int required;
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
    if (*n == PF_SCHEMA_MAX_PROPS) return fail(c, path, "more than %d properties in one object", PF_SCHEMA_MAX_PROPS);
    pf_sbuf b = {0};
    pf_json_quote(&b, key, len);
    pf_sbuf_put(&b, ":", 1);
    if (b.oom || !b.p) {
        free(b.p);
        return fail_oom(c, path);
    }
    p[(*n)++] = (prop){b.p, (uint32_t)b.n, node, 0};
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
        if (find_prop(p, *n, m->key, m->key_len) >= 0) return fail(c, sub, "property given twice");
        int32_t node = compile(c, &m->val, depth + 1, sub);
        if (node == FAIL || add_prop(c, p, n, m->key, m->key_len, node, sub) < 0) return FAIL;
    }
    for (size_t i = 0; req && i < req->u.arr.n; i++) {
        const pf_json *r = &req->u.arr.items[i];
        if (r->type != PF_JSON_STRING) return fail(c, path, "required: not an array of strings");
        int k = find_prop(p, *n, r->u.str.s, r->u.str.len);
        if (k < 0 && other < 0) return UNSAT;
        if (k < 0 && add_prop(c, p, n, r->u.str.s, r->u.str.len, other, path) < 0) return FAIL;
        p[k < 0 ? *n - 1 : k].required = 1;
    }
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
        if (!bad && p[i].node == UNSAT && never < 0 && (never = new_node(c, PF_SN_UNION)) < 0) bad = FAIL;
        if (bad) {
            for (int j = 0; j < n; j++) free(p[j].text);
            return bad;
        }
        if (p[i].node == UNSAT) p[i].node = never;
    }
    qsort(p, (size_t)m, sizeof *p, prop_cmp);
    int32_t id = new_node(c, PF_SN_OBJECT);
    char **s = malloc((size_t)(m ? m : 1) * sizeof *s);
    uint32_t *len = malloc((size_t)(m ? m : 1) * sizeof *len);
    int32_t *node = malloc((size_t)(m ? m : 1) * sizeof *node);
    if (id < 0 || !s || !len || !node) {
        for (int i = 0; i < m; i++) free(p[i].text);
        free(s), free(len), free(node);
        return id < 0 ? FAIL : fail_oom(c, "");
    }
    pf_schema_node *o = &c->s->nodes[id];
    for (int i = 0; i < m; i++) {
        s[i] = p[i].text;
        len[i] = p[i].len;
        node[i] = p[i].node;
        if (p[i].required) o->required |= 1ull << i;
    }
    o->n_props = m;
    o->prop_node = node;
    int rc = pf_lit_set_take(&o->keys, s, len, m);
    free(s);
    free(len);
    if (rc == 0 && o->keys.n != m) return fail(c, "", "a property is given twice");
    return rc < 0 ? fail_oom(c, "") : id;
}

static int read_count(cctx *c, const pf_json *v, const char *key, int64_t *out, const char *path);

/* additionalProperties: the node of the keys `properties` does not list, PF_SN_ID_ANY when absent,
 * true or a schema any value meets, UNSAT when false or a schema no value meets; or FAIL. */
static int32_t compile_additional(cctx *c, const pf_json *add, int depth, const char *path) {
    if (!add) return PF_SN_ID_ANY;
    if (add->type == PF_JSON_BOOL) return add->u.b ? PF_SN_ID_ANY : UNSAT;
    char sub[256];
    snprintf(sub, sizeof sub, "%s/additionalProperties", path);
    return compile(c, add, depth + 1, sub);
}

/* An object node's other keys and key counts (n_open: the listed keys that admit a value; more:
 * keys that patternProperties names may come too); UNSAT when no count fits. */
static int32_t object_counts(cctx *c, int32_t id, int32_t other, int64_t lo, int64_t hi, int n_open, int more) {
    pf_schema_node *o = &c->s->nodes[id];
    o->min_props = lo;
    o->max_props = hi;
    /* absent or true: any other key, with any value (the spec's default) */
    o->extra = other;
    int64_t req = __builtin_popcountll(o->required);
    if (lo > hi || req > hi || (o->extra < 0 && !more && lo > n_open)) return UNSAT;
    return id;
}

static const pf_json *merge_schemas(cctx *c, const pf_json *a, const pf_json *b, int depth, const char *path);
static void *scratch(cctx *c, size_t n);

/* ---- patternProperties: every schema whose pattern a key matches applies to its value ---- */

/* The patterns (the member names of pp) as one automaton, a component each. */
static pf_regex *pattern_keys(cctx *c, const pf_json *pp, const char *path) {
    if (pp->u.obj.n > PF_REGEX_MAX_PATTERNS)
        return fail(c, path, "patternProperties: more than %d patterns", PF_REGEX_MAX_PATTERNS), NULL;
    const char *pats[PF_REGEX_MAX_PATTERNS];
    size_t lens[PF_REGEX_MAX_PATTERNS];
    for (size_t i = 0; i < pp->u.obj.n; i++) pats[i] = pp->u.obj.members[i].key, lens[i] = pp->u.obj.members[i].key_len;
    char err[PF_ERR_LEN];
    int oom;
    pf_regex *re = pf_regex_compile(pats, lens, (int)pp->u.obj.n, err, &oom);
    if (!re) oom ? fail_oom(c, path) : fail(c, path, "patternProperties: %s", err);
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
        acc = acc ? merge_schemas(c, acc, &pp->u.obj.members[i].val, depth + 1, sub) : &pp->u.obj.members[i].val;
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
    pf_json_member *m = scratch(c, (np + nr) * sizeof *m);
    pf_json *out = scratch(c, sizeof *out);
    *err = !m || !out;
    if (*err) return fail_oom(c, path), NULL;
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
    int32_t rc = vals && ok ? 0 : fail_oom(c, path);
    for (int i = 0; i < n && rc == 0; i++) {
        vals[i] = c->s->nodes[id].extra;
        if (masks[i]) {
            const pf_json *v = with_patterns(c, NULL, pp, masks[i], depth, path);
            vals[i] = v ? compile(c, v, depth + 1, path) : FAIL;
            if (vals[i] == FAIL) rc = FAIL;
        }
        ok[i] = vals[i] >= 0;
    }
    if (rc == 0 && pf_regex_accept(re, ok, 0, INT64_MAX, err) < 0) rc = fail(c, path, "patternProperties: %s", err);
    free(ok);
    if (rc == 0 && pf_regex_start(re) >= 0) {
        int32_t key = new_node(c, PF_SN_STRING);
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

static int32_t compile_object(cctx *c, const pf_json *v, int depth, const char *path) {
    const pf_json *props = pf_json_get(v, "properties"), *req = pf_json_get(v, "required");
    if (props && props->type != PF_JSON_OBJECT) return fail(c, path, "properties: not an object");
    if (req && req->type != PF_JSON_ARRAY) return fail(c, path, "required: not an array of strings");
    int64_t lo = 0, hi = INT64_MAX;
    if (read_count(c, v, "minProperties", &lo, path) < 0 || read_count(c, v, "maxProperties", &hi, path) < 0) return FAIL;
    const pf_json *pp = pf_json_get(v, "patternProperties");
    if (pp && pp->type != PF_JSON_OBJECT) return fail(c, path, "patternProperties: not an object");
    pf_regex *keys = pp && pp->u.obj.n ? pattern_keys(c, pp, path) : NULL;
    if (pp && pp->u.obj.n && !keys) return FAIL;
    int err = 0;
    if (keys) props = props_with_patterns(c, props, req, pp, keys, depth, path, &err);
    int32_t other = err ? FAIL : compile_additional(c, pf_json_get(v, "additionalProperties"), depth, path);
    if (other == FAIL) {
        pf_regex_free(keys);
        return FAIL;
    }
    if (!keys && !props && !req && other == PF_SN_ID_ANY && lo == 0 && hi == INT64_MAX) return PF_SN_ID_ANY_OBJECT;
    int32_t id;
    int n_open = 0;
    if (!props && !req && (other >= 0 || keys)) { /* any keys, their values of `other` (or a pattern's) */
        if ((id = new_node(c, PF_SN_OBJECT)) < 0) {
            pf_regex_free(keys);
            return FAIL;
        }
        c->s->nodes[id].free_keys = 1;
    } else {
        prop p[PF_SCHEMA_MAX_PROPS];
        int n = 0;
        int rc = collect_props(c, props, req, other, depth, path, p, &n);
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

static int read_count(cctx *c, const pf_json *v, const char *key, int64_t *out, const char *path) {
    const pf_json *x = pf_json_get(v, key);
    if (!x) return 0;
    if (x->type != PF_JSON_NUMBER || !x->u.num.is_int || x->u.num.i < 0)
        return fail(c, path, "%s: not a non-negative integer", key);
    *out = x->u.num.i;
    return 0;
}

/* pattern and format as one automaton (both must match; grammar/regex.h) into *out, NULL when
 * neither asserts anything; *hi tightened by the format's cap. 0, FAIL or UNSAT. */
static int32_t string_regex(cctx *c, const pf_json *v, int64_t lo, int64_t *hi, const char *path, pf_regex **out) {
    const pf_json *pat = pf_json_get(v, "pattern"), *fmt = pf_json_get(v, "format");
    const char *pats[2];
    size_t lens[2];
    int n = 0;
    *out = NULL;
    if (pat && pat->type != PF_JSON_STRING) return fail(c, path, "pattern: not a string");
    if (fmt && fmt->type != PF_JSON_STRING) return fail(c, path, "format: not a string");
    if (pat) pats[n] = pat->u.str.s, lens[n++] = pat->u.str.len;
    if (fmt) {
        int64_t cap;
        pf_format_kind k = pf_format_lookup(fmt->u.str.s, fmt->u.str.len, &pats[n], &cap);
        if (k == PF_FORMAT_UNSUPPORTED) return fail(c, path, "format: '%.40s' is not supported", fmt->u.str.s);
        if (k == PF_FORMAT_PATTERN) {
            lens[n] = strlen(pats[n]);
            n++;
            if (cap < *hi) *hi = cap;
        }
    }
    if (!n) return 0;
    if (lo > *hi) return UNSAT;
    char err[PF_ERR_LEN];
    int oom;
    pf_regex *re = pf_regex_compile(pats, lens, n, err, &oom);
    if (!re) return oom ? fail_oom(c, path) : fail(c, path, "%s", err);
    const uint32_t *masks;
    uint8_t ok[PF_REGEX_MAX_STATES];
    int m = pf_regex_masks(re, &masks);
    for (int i = 0; i < m; i++) ok[i] = masks[i] == (1u << n) - 1;
    if (pf_regex_accept(re, ok, lo, *hi, err) < 0) {
        pf_regex_free(re);
        return fail(c, path, "%s", err);
    }
    if (pf_regex_start(re) < 0 || !pf_regex_ok(re, pf_regex_start(re), 0)) {
        pf_regex_free(re);
        return UNSAT;
    }
    *out = re;
    return 0;
}

/* minLength / maxLength: the characters of the decoded string (grammar/matcher.c counts them);
 * pattern and format. */
static int32_t compile_string(cctx *c, const pf_json *v, const char *path) {
    int64_t lo = 0, hi = INT64_MAX;
    if (read_count(c, v, "minLength", &lo, path) < 0 || read_count(c, v, "maxLength", &hi, path) < 0) return FAIL;
    pf_regex *re;
    int32_t rc = string_regex(c, v, lo, &hi, path, &re);
    if (rc < 0) return rc;
    if (lo > hi) return UNSAT;
    if (!re && lo == 0 && hi == INT64_MAX) return PF_SN_ID_ANY_STRING;
    int32_t id = new_node(c, PF_SN_STRING);
    if (id < 0) {
        pf_regex_free(re);
        return FAIL;
    }
    c->s->nodes[id].min_len = lo;
    c->s->nodes[id].max_len = hi;
    c->s->nodes[id].re = re;
    return id;
}

/* A JSON number's exact decimal value split as sign, integer part (saturated at BOUND_BIG, far
 * past any number the matcher writes) and whether a fraction follows; read from its source text,
 * so no rounding to a double decides a bound. */
#define BOUND_BIG 100000000000000000LL  /* 1e17 */
#define BOUND_WRITTEN 9999999999999999LL /* the largest integer part of 16 digits (PF_MATCHER_MAX_DIGITS) */
typedef struct {
    int neg, frac;
    int64_t whole;
} decimal;

static decimal decimal_of(const char *p, size_t n) {
    decimal d = {0, 0, 0};
    size_t i = 0;
    if (i < n && p[i] == '-') d.neg = 1, i++;
    char dig[64];
    int nd = 0, point = 0, extra = 0; /* extra: digits dropped past dig's room (all integer digits) */
    for (int seen_point = 0; i < n && ((p[i] >= '0' && p[i] <= '9') || p[i] == '.'); i++) {
        if (p[i] == '.') seen_point = 1;
        else if (nd < (int)sizeof dig) dig[nd++] = p[i], point += !seen_point;
        else if (!seen_point) extra++;
        else d.frac |= p[i] != '0';
    }
    long e = 0;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        int eneg = ++i < n && p[i] == '-';
        if (i < n && (p[i] == '-' || p[i] == '+')) i++;
        for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) e = e < 100000 ? e * 10 + (p[i] - '0') : e;
        e = eneg ? -e : e;
    }
    long whole_digits = point + extra + e;
    for (int k = 0; k < nd; k++) {
        if (k < whole_digits) d.whole = d.whole < BOUND_BIG ? d.whole * 10 + (dig[k] - '0') : BOUND_BIG;
        else d.frac |= dig[k] != '0';
    }
    for (long k = nd; k < whole_digits && d.whole && d.whole < BOUND_BIG; k++) d.whole *= 10;
    if (d.whole > BOUND_BIG) d.whole = BOUND_BIG;
    return d;
}

/* One bound (lower or upper, open or closed) tightened into node nd; an integer's bounds become
 * closed integers, a number's must be integers themselves. 0, or FAIL. */
static int add_bound(cctx *c, pf_schema_node *nd, const pf_json *x, int upper, int open, const char *key, const char *path) {
    if (x->type != PF_JSON_NUMBER) return fail(c, path, "%s: not a number", key);
    decimal d = decimal_of(c->src + x->offset, c->src_len - x->offset);
    int64_t v = d.neg ? -d.whole : d.whole;
    if (nd->kind == PF_SN_NUMBER && d.frac)
        return fail(c, path, "%s: a bound with a fraction on a number is not supported (only on an integer)", key);
    if (nd->kind == PF_SN_INTEGER) {
        if (d.frac) v += upper ? -d.neg : !d.neg; /* floor for an upper bound, ceil for a lower */
        else if (open) v += upper ? -1 : 1;
        open = 0;
    }
    if (upper && (v < nd->num_hi || (v == nd->num_hi && open))) nd->num_hi = v, nd->hi_open = (uint8_t)open;
    if (!upper && (v > nd->num_lo || (v == nd->num_lo && open))) nd->num_lo = v, nd->lo_open = (uint8_t)open;
    return 0;
}

/* minimum / maximum with draft 4's boolean exclusiveMinimum / exclusiveMaximum, or draft 6's
 * numeric ones, on a number or an integer node. */
static int32_t compile_number(cctx *c, const pf_json *v, pf_schema_kind kind, const char *path) {
    int32_t id = new_node(c, kind);
    if (id < 0) return FAIL;
    for (int upper = 0; upper < 2; upper++) {
        const char *kb = k_keywords[K_MINIMUM + upper], *ke = k_keywords[K_MINIMUM + 2 + upper];
        const pf_json *b = pf_json_get(v, kb), *e = pf_json_get(v, ke);
        if (e && e->type == PF_JSON_BOOL) {
            if (b && add_bound(c, &c->s->nodes[id], b, upper, e->u.b, kb, path) < 0) return FAIL;
            continue;
        }
        if (b && add_bound(c, &c->s->nodes[id], b, upper, 0, kb, path) < 0) return FAIL;
        if (e && add_bound(c, &c->s->nodes[id], e, upper, 1, ke, path) < 0) return FAIL;
    }
    const pf_schema_node *nd = &c->s->nodes[id];
    if (nd->num_lo > nd->num_hi || (nd->num_lo == nd->num_hi && (nd->lo_open || nd->hi_open))) return UNSAT;
    if (nd->num_lo > BOUND_WRITTEN || nd->num_hi < -BOUND_WRITTEN) return UNSAT; /* past any number written */
    if (kind == PF_SN_NUMBER && nd->num_lo == INT64_MIN && nd->num_hi == INT64_MAX) return PF_SN_ID_ANY_NUMBER;
    return id;
}

static int32_t compile_array(cctx *c, const pf_json *v, int depth, const char *path) {
    int64_t lo = 0, hi = INT64_MAX;
    if (read_count(c, v, "minItems", &lo, path) < 0 || read_count(c, v, "maxItems", &hi, path) < 0) return FAIL;
    const pf_json *it = pf_json_get(v, "items");
    if (it && it->type == PF_JSON_ARRAY) return fail(c, path, "items: a list of schemas (tuple form) is not supported");
    char sub[256];
    snprintf(sub, sizeof sub, "%s/items", path);
    int32_t items = it ? compile(c, it, depth + 1, sub) : PF_SN_ID_ANY;
    if (items == FAIL) return FAIL;
    if (items == UNSAT) hi = 0;
    if (lo > hi) return UNSAT;
    if (!it && lo == 0 && hi == INT64_MAX) return PF_SN_ID_ANY_ARRAY;
    int32_t id = new_node(c, PF_SN_ARRAY);
    if (id < 0) return FAIL;
    c->s->nodes[id].items = items == UNSAT ? PF_SN_ID_ANY : items;
    c->s->nodes[id].min_items = lo;
    c->s->nodes[id].max_items = hi;
    return id;
}

static const pf_json *ref_target(cctx *c, const pf_json *v, const char *path);

/* ---- allOf, and keywords beside anyOf / oneOf: schemas merged into one where that is exact ---- */

static const pf_json k_false_schema = {.type = PF_JSON_BOOL, .u.b = false};

/* Merging follows references without the compiled-once cache, so a schema whose branches refer
 * back to it would merge without end: a bound on merges per compile. */
#define MAX_MERGES 4096

/* Zeroed memory freed with the compile context (merged schemas point into it). */
static void *scratch(cctx *c, size_t n) {
    void **l = pf_grow(c->made, &c->cap_made, c->n_made + 1, sizeof *l, 16);
    void *p = l ? calloc(1, n ? n : 1) : NULL;
    if (l) c->made = l;
    if (p) c->made[c->n_made++] = p;
    return p;
}

/* x and y spell the same JSON text (numbers as written). */
static int same_text(cctx *c, const pf_json *x, const pf_json *y) {
    pf_sbuf a = {0}, b = {0};
    pf_json_compact(&a, x, c->src, c->src_len);
    pf_json_compact(&b, y, c->src, c->src_len);
    int same = a.p && b.p && a.n == b.n && !memcmp(a.p, b.p, a.n);
    free(a.p);
    free(b.p);
    return same;
}

static const pf_json *merge_schemas(cctx *c, const pf_json *a, const pf_json *b, int depth, const char *path);

/* The types both allow, as a list. */
static int merge_type(cctx *c, const pf_json *x, const pf_json *y, pf_json *out, const char *path) {
    static const char *const names[] = {"object", "array", "string", "number", "integer", "boolean", "null"};
    pf_json hx = {.type = PF_JSON_OBJECT, .u.obj = {&(pf_json_member){"type", 4, *x}, 1}};
    pf_json hy = {.type = PF_JSON_OBJECT, .u.obj = {&(pf_json_member){"type", 4, *y}, 1}};
    int sx = type_set(c, &hx, path), sy = type_set(c, &hy, path);
    if (sx < 0 || sy < 0) return FAIL;
    if (sx & T_NUM) sx |= T_INT;
    if (sy & T_NUM) sy |= T_INT;
    int both = sx & sy, n = 0;
    pf_json *items = scratch(c, 7 * sizeof *items);
    if (!items) return fail_oom(c, path);
    for (int i = 0; i < 7; i++)
        if (both >> i & 1) items[n++] = (pf_json){.type = PF_JSON_STRING, .u.str = {names[i], strlen(names[i])}};
    *out = (pf_json){.type = PF_JSON_ARRAY, .offset = x->offset, .u.arr = {items, (size_t)n}};
    return n ? 0 : UNSAT;
}

/* Members of x, then those of y whose key (or string value, for required) x lacks, each through
 * both when both have it (properties: merged schemas). */
static int merge_union(cctx *c, const pf_json *x, const pf_json *y, int keyed, pf_json *out, int depth, const char *path) {
    size_t nx = keyed ? x->u.obj.n : x->u.arr.n, ny = keyed ? y->u.obj.n : y->u.arr.n, n = 0;
    void *mem = scratch(c, (nx + ny) * (keyed ? sizeof(pf_json_member) : sizeof(pf_json)));
    if (!mem) return fail_oom(c, path);
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
        const pf_json *s = merge_schemas(c, &m[n].val, other, depth + 1, path);
        if (!s) return FAIL;
        m[n].val = *s;
    }
    for (size_t j = 0; j < ny; j++) {
        const pf_json *v = keyed ? &y->u.obj.members[j].val : &y->u.arr.items[j];
        int dup = 0;
        for (size_t i = 0; i < nx && !dup; i++)
            dup = keyed ? !strcmp(x->u.obj.members[i].key, y->u.obj.members[j].key) : same_text(c, &x->u.arr.items[i], v);
        if (dup) continue;
        if (keyed) m[n++] = y->u.obj.members[j];
        else it[n++] = *v;
    }
    *out = *x;
    if (keyed) out->u.obj.members = m, out->u.obj.n = n;
    else out->u.arr.items = it, out->u.arr.n = n;
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
    if (same_text(c, x, y)) return 0;
    if (!strcmp(key, "type")) return merge_type(c, x, y, out, path);
    if (!strcmp(key, "required") && x->type == PF_JSON_ARRAY && y->type == PF_JSON_ARRAY)
        return merge_union(c, x, y, 0, out, depth, path);
    if (!strcmp(key, "properties") && x->type == PF_JSON_OBJECT && y->type == PF_JSON_OBJECT)
        return merge_union(c, x, y, 1, out, depth, path);
    if (!strcmp(key, "items") && x->type != PF_JSON_ARRAY && y->type != PF_JSON_ARRAY) {
        const pf_json *s = merge_schemas(c, x, y, depth + 1, path);
        return s ? (*out = *s, 0) : FAIL;
    }
    static const char *const lower[] = {"minLength", "minItems", "minProperties"},
                             *const upper[] = {"maxLength", "maxItems", "maxProperties"};
    for (int i = 0; i < 3 && x->type == PF_JSON_NUMBER && y->type == PF_JSON_NUMBER; i++) {
        if (!strcmp(key, lower[i])) return *out = x->u.num.d >= y->u.num.d ? *x : *y, 0;
        if (!strcmp(key, upper[i])) return *out = x->u.num.d <= y->u.num.d ? *x : *y, 0;
    }
    pf_json_member k = {key, strlen(key), *x};
    if (in_list(&k, k_unsupported, (int)(sizeof k_unsupported / sizeof *k_unsupported)) < 0 && keyword_index(&k) < 0)
        return 0; /* an annotation: either will do */
    return fail(c, path, "'%s' in two merged schemas with different values is not supported", key);
}

/* additionalProperties in one schema limits the keys the other's properties may add. */
static int additional_exact(const pf_json *a, const pf_json *b) {
    const pf_json *pa = pf_json_get(a, "properties"), *pb = pf_json_get(b, "properties");
    int ha = pf_json_get(a, "additionalProperties") != NULL, hb = pf_json_get(b, "additionalProperties") != NULL;
    if (pf_json_get(a, "patternProperties") || pf_json_get(b, "patternProperties")) return !ha && !hb;
    return (!ha || keys_within(pb, pa)) && (!hb || keys_within(pa, pb));
}

/* v without its member `key`. */
static const pf_json *without(cctx *c, const pf_json *v, const char *key, const char *path) {
    pf_json_member *m = scratch(c, v->u.obj.n * sizeof *m);
    pf_json *out = scratch(c, sizeof *out);
    if (!m || !out) return fail_oom(c, path), NULL;
    size_t n = 0;
    for (size_t i = 0; i < v->u.obj.n; i++)
        if (strcmp(v->u.obj.members[i].key, key)) m[n++] = v->u.obj.members[i];
    *out = *v;
    out->u.obj.members = m;
    out->u.obj.n = n;
    return out;
}

static const pf_json *fold_all_of(cctx *c, const pf_json *v, int depth, const char *path);

/* v with a lone $ref followed and its allOf folded in: a schema with neither at its top. */
static const pf_json *flat_schema(cctx *c, const pf_json *v, int depth, const char *path) {
    for (int hops = 0; v && v->type == PF_JSON_OBJECT && pf_json_get(v, "$ref"); hops++)
        v = hops < PF_SCHEMA_MAX_DEPTH ? ref_target(c, v, path) : (fail(c, path, "$ref: a loop of references"), NULL);
    if (!v || v->type != PF_JSON_OBJECT || !pf_json_get(v, "allOf")) return v;
    return check_keywords(c, v, path) < 0 ? NULL : fold_all_of(c, v, depth, path);
}

/* a and b as one schema (the allOf of the two), a boolean false when together they admit no
 * value; NULL after a failure (one that is not exact among them). */
static const pf_json *merge_schemas(cctx *c, const pf_json *a, const pf_json *b, int depth, const char *path) {
    if (depth > PF_SCHEMA_MAX_DEPTH) return fail(c, path, "nested deeper than %d levels", PF_SCHEMA_MAX_DEPTH), NULL;
    if (++c->n_merges > MAX_MERGES)
        return fail(c, path, "more than %d merged schemas (allOf, keywords beside anyOf)", MAX_MERGES), NULL;
    a = flat_schema(c, a, depth, path);
    b = a ? flat_schema(c, b, depth, path) : NULL;
    if (!a || !b) return NULL;
    if (a->type == PF_JSON_BOOL) return a->u.b ? b : a;
    if (b->type == PF_JSON_BOOL) return b->u.b ? a : b;
    if (a->type != PF_JSON_OBJECT || b->type != PF_JSON_OBJECT)
        return fail(c, path, "a schema must be an object or a boolean"), NULL;
    if (!additional_exact(a, b))
        return fail(c, path, "additionalProperties merged with properties it does not list is not supported"), NULL;
    pf_json_member *m = scratch(c, (a->u.obj.n + b->u.obj.n) * sizeof *m);
    pf_json *out = scratch(c, sizeof *out);
    if (!m || !out) return fail_oom(c, path), NULL;
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
static const pf_json *fold_all_of(cctx *c, const pf_json *v, int depth, const char *path) {
    const pf_json *all = pf_json_get(v, "allOf");
    if (all->type != PF_JSON_ARRAY || !all->u.arr.n) return fail(c, path, "allOf: not a non-empty array of schemas"), NULL;
    const pf_json *acc = without(c, v, "allOf", path);
    char sub[256];
    for (size_t i = 0; acc && i < all->u.arr.n; i++) {
        snprintf(sub, sizeof sub, "%s/allOf/%zu", path, i);
        acc = merge_schemas(c, acc, &all->u.arr.items[i], depth + 1, sub);
    }
    return acc;
}

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
        if ((keyword_index(m) >= 0 || unsupported(v, m)) && strcmp(m->key, key)) {
            const pf_json *r = without(c, v, key, path);
            *err = !r;
            return r;
        }
    }
    return NULL;
}

/* anyOf, or oneOf (key) whose branches no value can meet two of: each branch merged with the
 * keywords beside it (allOf semantics), their union. */
static int32_t compile_any_of(cctx *c, const pf_json *v, const char *key, int depth, const char *path) {
    const pf_json *a = pf_json_get(v, key);
    if (a->type != PF_JSON_ARRAY || a->u.arr.n == 0) return fail(c, path, "%s: not a non-empty array of schemas", key);
    int err;
    const pf_json *rest = beside(c, v, key, path, &err);
    int32_t *alts = err ? NULL : malloc(a->u.arr.n * sizeof *alts);
    if (!alts) return err ? FAIL : fail_oom(c, path);
    int n = 0;
    for (size_t i = 0; i < a->u.arr.n; i++) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s/%s/%zu", path, key, i);
        const pf_json *b = rest ? merge_schemas(c, rest, &a->u.arr.items[i], depth + 1, sub) : &a->u.arr.items[i];
        int32_t x = b ? compile(c, b, depth + 1, sub) : FAIL;
        for (int j = 0; x >= 0 && key[0] == 'o' && j < n; j++)
            if (!disjoint(c->s, alts[j], x, 0))
                x = fail(c, path, "oneOf: branches %d and %zu may both hold a value (only disjoint ones are supported)", j, i);
        if (x == FAIL) {
            free(alts);
            return FAIL;
        }
        if (x != UNSAT) alts[n++] = x;
    }
    int32_t id = union_node(c, alts, n);
    free(alts);
    return id;
}

/* One node per allowed type, their union when there are several. */
static int32_t compile_types(cctx *c, const pf_json *v, int types, int depth, const char *path) {
    static const char *const f_t[] = {"false", "true"}, *const null[] = {"null"};
    int32_t alts[7];
    int n = 0;
    for (int bit = 1; bit <= T_NULL; bit <<= 1) {
        if (!(types & bit)) continue;
        int32_t x = bit == T_OBJ   ? compile_object(c, v, depth, path)
                    : bit == T_ARR ? compile_array(c, v, depth, path)
                    : bit == T_STR ? compile_string(c, v, path)
                    : bit == T_NUM ? compile_number(c, v, PF_SN_NUMBER, path)
                    : bit == T_INT ? compile_number(c, v, PF_SN_INTEGER, path)
                    : bit == T_BOOL ? words_node(c, f_t, 2)
                                    : words_node(c, null, 1);
        if (x == FAIL) return FAIL;
        if (x != UNSAT) alts[n++] = x;
    }
    return union_node(c, alts, n);
}

/* ---- $ref: JSON pointers into the same document ---- */

/* A subschema below the root declares its own $id (or draft 4's id): a "#..." reference inside it
 * would then be relative to that subschema, not to the document. Looked for in every object of
 * the document but the values of enum, const, default and examples (data, not schemas); a string
 * id anywhere else counts, so a schema it cannot tell is refused, never resolved wrongly. */
static int has_inner_id(const pf_json *v, int is_root) {
    if (v->type == PF_JSON_ARRAY) {
        for (size_t i = 0; i < v->u.arr.n; i++)
            if (has_inner_id(&v->u.arr.items[i], 0)) return 1;
        return 0;
    }
    if (v->type != PF_JSON_OBJECT) return 0;
    static const char *const data[] = {"enum", "const", "default", "examples", "example"};
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const pf_json_member *m = &v->u.obj.members[i];
        int skip = 0;
        for (size_t k = 0; k < sizeof data / sizeof *data && !skip; k++) skip = !strcmp(m->key, data[k]);
        if (skip) continue;
        if (!is_root && (!strcmp(m->key, "$id") || !strcmp(m->key, "id")) && m->val.type == PF_JSON_STRING) return 1;
        if (has_inner_id(&m->val, 0)) return 1;
    }
    return 0;
}

static int hex_val(char h) {
    return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
}

/* The value the JSON pointer p[0..n) (RFC 6901, the fragment of a URI: percent-decoded first,
 * then each segment's ~1 and ~0) names in root; NULL with *why when none. */
static const pf_json *resolve_pointer(const pf_json *root, const char *p, size_t n, const char **why) {
    char *d = malloc(n + 1);
    if (!d) return *why = "out of memory", NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '%' && i + 2 < n && hex_val(p[i + 1]) >= 0 && hex_val(p[i + 2]) >= 0) {
            d[k++] = (char)(hex_val(p[i + 1]) * 16 + hex_val(p[i + 2]));
            i += 2;
        } else {
            d[k++] = p[i];
        }
    }
    const pf_json *v = root;
    size_t i = 0;
    *why = NULL;
    while (v && i < k) {
        if (d[i] != '/') {
            *why = "not a JSON pointer (an anchor or a relative reference)";
            v = NULL;
            break;
        }
        size_t j = ++i, m = 0;
        char *seg = d + j; /* decoded in place: never longer than its text */
        for (; j < k && d[j] != '/'; j++) {
            if (d[j] == '~') {
                if (j + 1 >= k || (d[j + 1] != '0' && d[j + 1] != '1')) {
                    *why = "a '~' not followed by 0 or 1";
                    v = NULL;
                    break;
                }
                seg[m++] = d[j + 1] == '0' ? '~' : '/';
                j++;
            } else {
                seg[m++] = d[j];
            }
        }
        if (!v) break;
        i = j;
        const pf_json *next = NULL;
        if (v->type == PF_JSON_OBJECT) {
            for (size_t x = 0; x < v->u.obj.n && !next; x++)
                if (v->u.obj.members[x].key_len == m && !memcmp(v->u.obj.members[x].key, seg, m))
                    next = &v->u.obj.members[x].val;
        } else if (v->type == PF_JSON_ARRAY && m > 0 && m < 10 && (seg[0] != '0' || m == 1)) {
            size_t idx = 0;
            int digits = 1;
            for (size_t x = 0; x < m; x++) {
                digits &= seg[x] >= '0' && seg[x] <= '9';
                idx = idx * 10 + (size_t)(seg[x] - '0');
            }
            if (digits && idx < v->u.arr.n) next = &v->u.arr.items[idx];
        }
        if (!next) *why = "names nothing in the document";
        v = next;
    }
    free(d);
    return v;
}

/* The node of target (compiled once however many references name it). */
static int32_t compile_target(cctx *c, const pf_json *target, int depth, const char *path) {
    for (size_t i = 0; i < c->n_refs; i++) {
        ref_entry *e = &c->refs[i];
        if (e->target != target) continue;
        if (e->done) return e->node;
        if (e->placeholder < 0) { /* a recursion: the node is filled in when target is done */
            int32_t id = new_node(c, PF_SN_UNION);
            if (id < 0) return FAIL;
            c->refs[i].placeholder = id;
        }
        return c->refs[i].placeholder;
    }
    ref_entry *r = pf_grow(c->refs, &c->cap_refs, c->n_refs + 1, sizeof *r, 16);
    if (!r) return fail_oom(c, path);
    c->refs = r;
    size_t k = c->n_refs++;
    r[k] = (ref_entry){target, FAIL, -1, 0};
    int32_t node = compile(c, target, depth, path);
    if (node == FAIL) return FAIL;
    int32_t ph = c->refs[k].placeholder;
    if (ph >= 0) {
        if (node != UNSAT) {
            int32_t *a = malloc(sizeof *a);
            if (!a) return fail_oom(c, path);
            a[0] = node;
            c->s->nodes[ph].alts = a;
            c->s->nodes[ph].n_alts = 1;
        }
        node = ph; /* a union of none when target admits no value */
    }
    c->refs[k].node = node;
    c->refs[k].done = 1;
    return node;
}

/* {"$ref": "#..."}: the schema the pointer names. Beside it only annotations: drafts 4 to 7 ignore
 * a $ref's siblings, 2019-09 on applies them as well, so a constraining sibling is refused. */
static const pf_json *ref_target(cctx *c, const pf_json *v, const char *path) {
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const pf_json_member *m = &v->u.obj.members[i];
        if (keyword_index(m) >= 0) return fail(c, path, "'%s' combined with $ref is not supported", m->key), NULL;
    }
    if (check_keywords(c, v, path) < 0) return NULL;
    const pf_json *r = pf_json_get(v, "$ref");
    if (r->type != PF_JSON_STRING) return fail(c, path, "$ref: not a string"), NULL;
    if (r->u.str.len == 0 || r->u.str.s[0] != '#')
        return fail(c, path, "$ref '%.80s' outside the document is not supported", r->u.str.s), NULL;
    if (c->inner_id < 0) c->inner_id = has_inner_id(c->root, 1);
    if (c->inner_id)
        return fail(c, path, "$ref in a schema whose subschemas declare their own $id or id is not supported"), NULL;
    const char *why;
    const pf_json *t = resolve_pointer(c->root, r->u.str.s + 1, r->u.str.len - 1, &why);
    if (!t && !strcmp(why, "out of memory")) return fail_oom(c, path), NULL;
    if (!t) return fail(c, path, "$ref '%.80s': %s", r->u.str.s, why), NULL;
    return t;
}

static int32_t compile_ref(cctx *c, const pf_json *v, int depth, const char *path) {
    const pf_json *t = ref_target(c, v, path), *r = pf_json_get(v, "$ref");
    if (!t) return FAIL;
    char sub[256];
    snprintf(sub, sizeof sub, "%.255s", r->u.str.s + 1);
    return compile_target(c, t, depth + 1, sub);
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
                    if ((n->required >> k & 1 || (n->min_props > __builtin_popcountll(n->required) &&
                                                  s->nodes[n->prop_node[k]].min_depth < PF_SCHEMA_NO_DOC)) &&
                        s->nodes[n->prop_node[k]].min_depth + 1 > d)
                        d = s->nodes[n->prop_node[k]].min_depth + 1;
                if (n->min_props > __builtin_popcountll(n->required) && other_depth(s, n) >= 0 &&
                    other_depth(s, n) + 1 > d)
                    d = other_depth(s, n) + 1;
                break;
            case PF_SN_ARRAY: d = n->min_items > 0 ? s->nodes[n->items].min_depth + 1 : 1; break;
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

/* After compiling: the depth bounds, and no union loop. 0 or FAIL. */
static int32_t finish(cctx *c) {
    pf_schema *s = c->s;
    uint8_t *mark = calloc((size_t)s->n_nodes, 1);
    if (!mark) return fail_oom(c, "");
    int loop = 0;
    for (int i = 0; i < s->n_nodes && !loop; i++) loop = union_loop(s, i, mark);
    free(mark);
    if (loop) return fail(c, "", "$ref: a reference loop with no object or array in it");
    min_depths(s);
    return 0;
}

/* ---- not: the forms whose complement is a schema of the subset ----
 * not false: nothing; not true / not {}: no value; not {"type": T}: the other types (not
 * "integer" alone takes every number away, never letting one through); not {"required": [k]}:
 * `"properties": {k: false}` (both hold for every non-object). Any other form is an error. */

/* The annotations-only schema s: it asserts nothing (only keywords neither compiled nor refused). */
static int asserts_nothing(const pf_json *s) {
    for (size_t i = 0; i < s->u.obj.n; i++)
        if (keyword_index(&s->u.obj.members[i]) >= 0 || unsupported(s, &s->u.obj.members[i]) ||
            !strcmp(s->u.obj.members[i].key, "$ref"))
            return 0;
    return 1;
}

/* The one keyword of s that asserts something, NULL when there is not exactly one. */
static const pf_json_member *sole_keyword(const pf_json *s) {
    const pf_json_member *k = NULL;
    for (size_t i = 0; i < s->u.obj.n; i++) {
        const pf_json_member *m = &s->u.obj.members[i];
        if (keyword_index(m) < 0 && !unsupported(s, m) && strcmp(m->key, "$ref")) continue;
        if (k) return NULL;
        k = m;
    }
    return k;
}

static pf_json *json_object1(cctx *c, const char *key, pf_json val) {
    pf_json *o = scratch(c, sizeof *o);
    pf_json_member *m = scratch(c, sizeof *m);
    if (!o || !m) return NULL;
    m->key = key;
    m->key_len = strlen(key);
    m->val = val;
    o->type = PF_JSON_OBJECT;
    o->u.obj.members = m;
    o->u.obj.n = 1;
    return o;
}

/* The schema `not` n stands for, as a schema of the subset; NULL after a failure. */
static const pf_json *complement(cctx *c, const pf_json *n, const char *path) {
    static const char *const names[] = {"object", "array", "string", "number", "integer", "boolean", "null"};
    static const pf_json k_true = {.type = PF_JSON_BOOL, .u.b = true}, k_false = {.type = PF_JSON_BOOL, .u.b = false};
    if (n->type == PF_JSON_BOOL) return n->u.b ? &k_false : &k_true;
    if (n->type != PF_JSON_OBJECT) return fail(c, path, "keyword 'not' is not supported in this form"), NULL;
    if (asserts_nothing(n)) return &k_false;
    const pf_json_member *k = sole_keyword(n);
    if (k && !strcmp(k->key, "type")) {
        cctx probe = *c; /* type_set only reads */
        int t = type_set(&probe, n, path);
        if (t < 0) return NULL;
        if (t & T_INT) t |= T_NUM; /* "not an integer" still holds for 0.5: all numbers go, never too many */
        int left = (T_OBJ | T_ARR | T_STR | T_NUM | T_BOOL | T_NULL) & ~t;
        if (!left) return &k_false;
        pf_json *list = scratch(c, 7 * sizeof *list);
        if (!list) return fail_oom(c, path), NULL;
        size_t m = 0;
        for (int i = 0; i < 7; i++)
            if (left & (1 << i)) list[m].type = PF_JSON_STRING, list[m].u.str.s = names[i], list[m++].u.str.len = strlen(names[i]);
        pf_json arr = {.type = PF_JSON_ARRAY, .u.arr = {list, m}};
        const pf_json *r = json_object1(c, "type", arr);
        return r ? r : (fail_oom(c, path), NULL);
    }
    if (k && !strcmp(k->key, "required") && k->val.type == PF_JSON_ARRAY && k->val.u.arr.n == 1 &&
        k->val.u.arr.items[0].type == PF_JSON_STRING) {
        const pf_json *key = &k->val.u.arr.items[0];
        pf_json *props = json_object1(c, key->u.str.s, k_false);
        if (props) props->u.obj.members[0].key_len = key->u.str.len;
        const pf_json *r = props ? json_object1(c, "properties", *props) : NULL;
        return r ? r : (fail_oom(c, path), NULL);
    }
    return fail(c, path, "keyword 'not' is not supported in this form (only {}, true, false, {type}, {required: [a key]})"), NULL;
}

/* v with its `not` replaced by the schema it stands for, merged in (allOf semantics). */
static const pf_json *fold_not(cctx *c, const pf_json *v, int depth, const char *path) {
    const pf_json *comp = complement(c, pf_json_get(v, "not"), path);
    const pf_json *rest = comp ? without(c, v, "not", path) : NULL;
    if (!rest) return NULL;
    if (comp->type == PF_JSON_BOOL) return comp->u.b ? rest : comp;
    return merge_schemas(c, rest, comp, depth + 1, path);
}

static int32_t compile(cctx *c, const pf_json *v, int depth, const char *path) {
    if (depth > PF_SCHEMA_MAX_DEPTH) return fail(c, path, "nested deeper than %d levels", PF_SCHEMA_MAX_DEPTH);
    if (v->type == PF_JSON_BOOL) return v->u.b ? PF_SN_ID_ANY : UNSAT;
    if (v->type != PF_JSON_OBJECT) return fail(c, path, "a schema must be an object or a boolean");
    if (pf_json_get(v, "not")) {
        const pf_json *f = fold_not(c, v, depth, path);
        return f ? compile(c, f, depth + 1, path) : FAIL;
    }
    if (check_keywords(c, v, path) < 0) return FAIL;
    if (pf_json_get(v, "$ref")) return compile_ref(c, v, depth, path);
    if (pf_json_get(v, "allOf")) {
        const pf_json *f = fold_all_of(c, v, depth, path);
        return f ? compile(c, f, depth + 1, path) : FAIL;
    }
    if (pf_json_get(v, "anyOf")) return compile_any_of(c, v, "anyOf", depth, path);
    if (pf_json_get(v, "oneOf")) return compile_any_of(c, v, "oneOf", depth, path);
    if (pf_json_get(v, "enum") || pf_json_get(v, "const")) return compile_literals(c, v, path);
    int types = type_set(c, v, path);
    if (types < 0) return FAIL;
    return types ? compile_types(c, v, types, depth, path) : PF_SN_ID_ANY;
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
    cctx c = {.src = text, .src_len = len, .root = pf_json_root(d), .inner_id = -1};
    pf_schema *s = start(&c, err);
    int32_t root = s ? compile_target(&c, c.root, 0, "") : FAIL;
    if (root >= 0 && finish(&c) < 0) root = FAIL;
    if (root >= 0 && s->nodes[root].min_depth >= PF_SCHEMA_NO_DOC) root = UNSAT; /* every document infinite */
    pf_json_free(d);
    free(c.refs);
    for (size_t i = 0; i < c.n_made; i++) free(c.made[i]);
    free(c.made);
    if (root == UNSAT) fail(&c, "", "the schema admits no value");
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
    if (!ws) return fail_oom(&c, ""), PF_SCHEMA_NO_MEMORY;
    s->wraps = ws;
    const char *text[2] = {prefix, suffix};
    int32_t *slot[2] = {&w.prefix, &w.suffix};
    for (int k = 0; k < 2; k++) {
        if (!text[k] || !*text[k]) continue;
        char *d = strdup(text[k]);
        uint32_t len = (uint32_t)strlen(text[k]);
        if (!d) return fail_oom(&c, ""), PF_SCHEMA_NO_MEMORY;
        int32_t id = literal_node(&c, &d, &len, 1);
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
        free(n->alts);
        free(n->key_vals);
        pf_regex_free(n->re);
    }
    free(s->nodes);
    free(s->wraps);
    free(s);
}
