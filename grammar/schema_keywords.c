/* Which keywords a schema may hold (grammar/schema_cc.h): those compiled, those refused, and the
 * types a schema allows, from `type` or from the keywords beside it. */
#include "grammar/schema_cc.h"

#include <string.h>

#include "grammar/string_format.h"

/* The keywords compiled here. */
const char *const sc_keywords[] = {"type", "properties", "required", "additionalProperties", "items",
                                         "minItems", "maxItems", "enum", "const", "anyOf", "minLength", "maxLength",
                                         "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                         "minProperties", "maxProperties", "allOf", "oneOf", "pattern", "format",
                                         "patternProperties", "dependencies", "dependentRequired", "multipleOf",
                                         "uniqueItems", "contains", "minContains"};

/* The validation keywords of JSON Schema (drafts 3 to 2020-12, and the applicators) that are not
 * compiled here: a schema with one is refused, never compiled looser than it reads. Every other
 * keyword is an annotation (title, description, default, examples, readOnly, deprecated, ...), a
 * container (definitions, $defs) or unknown (x-..., id, self, name, ...): ignored, as the spec
 * says an implementation treats a keyword it does not know (2020-12 core, 4.3.1). */
static const char *const k_unsupported[] = {
    "maxContains", "prefixItems",
    "additionalItems", "unevaluatedItems",
    "dependentSchemas", "propertyNames", "unevaluatedProperties",
    "not", "if", "then", "else", "$dynamicRef", "$recursiveRef", "divisibleBy",
    "disallow", "extends"};

static int in_list(const pf_json_member *m, const char *const *list, int n) {
    if (strlen(m->key) != m->key_len) return -1; /* a NUL inside: no keyword */
    for (int i = 0; i < n; i++)
        if (!strcmp(m->key, list[i])) return i;
    return -1;
}

/* Index of a keyword compiled here, -1 for any other. */
int sc_keyword_index(const pf_json_member *m) {
    return in_list(m, sc_keywords, (int)(sizeof sc_keywords / sizeof *sc_keywords));
}

/* A keyword that asserts something: compiled here or refused. */
int sc_validation_keyword(const pf_json_member *m) {
    return sc_keyword_index(m) >= 0 || in_list(m, k_unsupported, (int)(sizeof k_unsupported / sizeof *k_unsupported)) >= 0;
}

/* A validation keyword that is not compiled here (then and else count only beside if, and
 * additionalItems only beside items in the tuple form: otherwise every draft ignores them). */
int sc_unsupported(const pf_json *v, const pf_json_member *m) {
    if (in_list(m, k_unsupported, (int)(sizeof k_unsupported / sizeof *k_unsupported)) < 0) return 0;
    if (!strcmp(m->key, "additionalItems")) {
        const pf_json *it = pf_json_get(v, "items");
        return it && it->type == PF_JSON_ARRAY;
    }
    return strcmp(m->key, "then") && strcmp(m->key, "else") ? 1 : pf_json_get(v, "if") != NULL;
}

int sc_check_keywords(cctx *c, const pf_json *v, const char *path) {
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const pf_json_member *m = &v->u.obj.members[i];
        int known = sc_keyword_index(m) >= 0;
        if (sc_unsupported(v, m) && !(!strcmp(m->key, "not") && sc_not_pattern_string(c, v)))
            return sc_fail(c, path, "keyword '%s' is not supported", m->key);
        /* draft 3's `"required": true` in a property would be a constraint ignored */
        if (known && !strcmp(m->key, "required") && m->val.type != PF_JSON_ARRAY)
            return sc_fail(c, path, "required: not an array of strings");
        if (known && !strcmp(m->key, "uniqueItems") && m->val.type != PF_JSON_BOOL)
            return sc_fail(c, path, "uniqueItems: not a boolean");
        for (size_t j = 0; known && j < i; j++)
            if (!strcmp(v->u.obj.members[j].key, m->key) && v->u.obj.members[j].key_len == m->key_len)
                return sc_fail(c, path, "keyword '%s' given twice", m->key);
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

/* `"uniqueItems": true`, which holds for every value that is not an array. */
static int asserts_unique(const pf_json *v) {
    const pf_json *u = pf_json_get(v, "uniqueItems");
    return u && u->type == PF_JSON_BOOL && u->u.b;
}

int sc_not_pattern_string(cctx *c, const pf_json *v) {
    const char *pats[1];
    size_t lens[1];
    int n;
    if (!sc_not_patterns(v, pats, lens, &n, 1)) return 0;
    cctx probe = *c; /* type_set only reads */
    char err[PF_ERR_LEN];
    probe.err = err;
    return sc_type_set(&probe, v, "") == T_STR;
}

/* The types the schema allows: `type`, else what its keywords imply (any value when none). */
int sc_type_set(cctx *c, const pf_json *v, const char *path) {
    const pf_json *t = pf_json_get(v, "type");
    int set = 0;
    if (t && t->type == PF_JSON_ARRAY) {
        for (size_t i = 0; i < t->u.arr.n; i++) {
            int b = type_bit(&t->u.arr.items[i]);
            if (!b) return sc_fail(c, path, "type: unknown type in the list (object, array, string, number, integer, boolean, null)");
            set |= b;
        }
        if (!set) return sc_fail(c, path, "type: an empty list");
    } else if (t) {
        set = type_bit(t);
        if (!set) return sc_fail(c, path, "type: not one of object, array, string, number, integer, boolean, null");
    } else {
        if (asserts(v, "properties") || asserts(v, "required") || asserts(v, "additionalProperties") ||
            asserts(v, "minProperties") || pf_json_get(v, "maxProperties") || asserts(v, "patternProperties") ||
            asserts(v, "dependencies") || asserts(v, "dependentRequired"))
            set |= T_OBJ;
        if (asserts(v, "items") || asserts(v, "minItems") || pf_json_get(v, "maxItems") || asserts_unique(v) ||
            pf_json_get(v, "contains"))
            set |= T_ARR;
        if (asserts(v, "minLength") || pf_json_get(v, "maxLength") || pf_json_get(v, "pattern") ||
            format_asserts(pf_json_get(v, "format")))
            set |= T_STR;
        for (int i = 0; i < 4; i++)
            if (pf_json_get(v, sc_keywords[K_MINIMUM + i])) set |= T_NUM;
        if (pf_json_get(v, "multipleOf")) set |= T_NUM;
    }
    if ((set & T_NUM) && (set & T_INT)) set &= ~T_INT;
    return set;
}
