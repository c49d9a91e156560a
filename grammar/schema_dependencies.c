/* dependencies' schema form and dependentSchemas (grammar/schema_cc.h): a key present asks the
 * object to meet a schema, folded in as an allOf branch `anyOf: [the key absent, the key present
 * and the schema]` (plus the other types where `type` names some: they meet it too). The array form
 * and a schema of `required` alone stay with the object's keys (grammar/schema_object.c). */
#include "grammar/schema_cc.h"

#include <string.h>

/* The dependency d asks more than keys: a schema with a keyword other than `required`. */
static int schema_form(const pf_json *d) {
    if (d->type != PF_JSON_OBJECT) return 0;
    for (size_t i = 0; i < d->u.obj.n; i++)
        if (sc_validation_keyword(&d->u.obj.members[i]) && strcmp(d->u.obj.members[i].key, "required")) return 1;
    return 0;
}

static int has_schema_form(const pf_json *v) {
    const pf_json *d = pf_json_get(v, "dependencies");
    for (size_t i = 0; d && d->type == PF_JSON_OBJECT && i < d->u.obj.n; i++)
        if (schema_form(&d->u.obj.members[i].val)) return 1;
    return pf_json_get(v, "dependentSchemas") != NULL;
}

/* {"anyOf": [others (when not NULL), {"type": "object", "properties": {key: false}}, {"required": [key], "allOf": [s]}]} */
static const pf_json *conditional(cctx *c, const pf_json_member *dep, const pf_json *others) {
    static const pf_json k_false = {.type = PF_JSON_BOOL, .u.b = false};
    static const pf_json k_object = {.type = PF_JSON_STRING, .u.str = {"object", 6}};
    pf_json *alts = sc_scratch(c, 3 * sizeof *alts), *key = sc_scratch(c, sizeof *key);
    pf_json_member *absent = sc_scratch(c, 2 * sizeof *absent), *present = sc_scratch(c, 2 * sizeof *present);
    pf_json *props = sc_object1(c, dep->key, k_false);
    if (!alts || !key || !absent || !present || !props) return NULL;
    props->u.obj.members[0].key_len = dep->key_len;
    *key = (pf_json){.type = PF_JSON_STRING, .u.str = {dep->key, dep->key_len}};
    absent[0] = (pf_json_member){"type", 4, k_object};
    absent[1] = (pf_json_member){"properties", 10, *props};
    present[0] = (pf_json_member){"required", 8, {.type = PF_JSON_ARRAY, .u.arr = {key, 1}}};
    present[1] = (pf_json_member){"allOf", 5, {.type = PF_JSON_ARRAY, .u.arr = {(pf_json *)&dep->val, 1}}};
    size_t n = 0;
    if (others) alts[n++] = *others;
    alts[n++] = (pf_json){.type = PF_JSON_OBJECT, .u.obj = {absent, 2}};
    alts[n++] = (pf_json){.type = PF_JSON_OBJECT, .u.obj = {present, 2}};
    return sc_object1(c, "anyOf", (pf_json){.type = PF_JSON_ARRAY, .u.arr = {alts, n}});
}

const pf_json *sc_fold_dependencies(cctx *c, const pf_json *v, const char *path) {
    if (!has_schema_form(v)) return v;
    const pf_json *deps = pf_json_get(v, "dependencies"), *ds = pf_json_get(v, "dependentSchemas"), *all = pf_json_get(v, "allOf");
    if ((deps && deps->type != PF_JSON_OBJECT) || (ds && ds->type != PF_JSON_OBJECT))
        return sc_fail(c, path, "keyword '%s' is not supported in this form (not an object)",
                       ds && ds->type != PF_JSON_OBJECT ? "dependentSchemas" : "dependencies"), NULL;
    if (all && all->type != PF_JSON_ARRAY) return sc_fail(c, path, "allOf: not a non-empty array of schemas"), NULL;
    /* where `type` names other types than object, they meet every dependency */
    const pf_json *others = NULL;
    if (pf_json_get(v, "type")) {
        cctx probe = *c; /* type_set only reads */
        char err[PF_ERR_LEN];
        probe.err = err;
        int t = sc_type_set(&probe, v, path);
        if (t < 0) return sc_fail(c, path, "%s", err + (strncmp(err, "json schema: ", 13) ? 0 : 13)), NULL;
        if (t & ~T_OBJ) {
            static const char *const names[] = {"object", "array", "string", "number", "integer", "boolean", "null"};
            pf_json *list = sc_scratch(c, 7 * sizeof *list);
            if (!list) return sc_fail_oom(c, path), NULL;
            size_t m = 0;
            for (int i = 1; i < 7; i++)
                if (t & (1 << i)) list[m].type = PF_JSON_STRING, list[m].u.str.s = names[i], list[m++].u.str.len = strlen(names[i]);
            others = sc_object1(c, "type", (pf_json){.type = PF_JSON_ARRAY, .u.arr = {list, m}});
            if (!others) return sc_fail_oom(c, path), NULL;
        }
    }
    size_t n_all = all ? all->u.arr.n : 0, n_dep = (deps ? deps->u.obj.n : 0) + (ds ? ds->u.obj.n : 0);
    pf_json *branches = sc_scratch(c, (n_all + n_dep) * sizeof *branches);
    pf_json_member *kept = sc_scratch(c, (deps ? deps->u.obj.n : 0) * sizeof *kept + 1);
    pf_json_member *m = sc_scratch(c, (v->u.obj.n + 1) * sizeof *m);
    pf_json *out = sc_scratch(c, sizeof *out);
    if (!branches || !kept || !m || !out) return sc_fail_oom(c, path), NULL;
    size_t nb = 0, nk = 0, nm = 0;
    for (size_t i = 0; i < n_all; i++) branches[nb++] = all->u.arr.items[i];
    for (int pass = 0; pass < 2; pass++) {
        const pf_json *d = pass ? ds : deps;
        for (size_t i = 0; d && i < d->u.obj.n; i++) {
            const pf_json_member *e = &d->u.obj.members[i];
            if (!pass && !schema_form(&e->val)) {
                kept[nk++] = *e;
                continue;
            }
            const pf_json *b = conditional(c, e, others);
            if (!b) return sc_fail_oom(c, path), NULL;
            branches[nb++] = *b;
        }
    }
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const pf_json_member *e = &v->u.obj.members[i];
        if (!strcmp(e->key, "allOf") || !strcmp(e->key, "dependentSchemas")) continue;
        m[nm] = *e;
        if (!strcmp(e->key, "dependencies")) m[nm].val.u.obj.members = kept, m[nm].val.u.obj.n = nk;
        nm++;
    }
    m[nm++] = (pf_json_member){"allOf", 5, {.type = PF_JSON_ARRAY, .u.arr = {branches, nb}}};
    *out = *v;
    out->u.obj.members = m, out->u.obj.n = nm;
    return out;
}
