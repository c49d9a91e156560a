/* $ref (grammar/schema_cc.h): JSON pointers into the same document, each target compiled once,
 * recursion through a placeholder union. */
#include "grammar/schema_cc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/grow.h"

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
int32_t sc_compile_target(cctx *c, const pf_json *target, int depth, const char *path) {
    for (size_t i = 0; i < c->n_refs; i++) {
        ref_entry *e = &c->refs[i];
        if (e->target != target) continue;
        if (e->done) return e->node;
        if (e->placeholder < 0) { /* a recursion: the node is filled in when target is done */
            int32_t id = sc_new_node(c, PF_SN_UNION);
            if (id < 0) return FAIL;
            c->refs[i].placeholder = id;
        }
        return c->refs[i].placeholder;
    }
    ref_entry *r = pf_grow(c->refs, &c->cap_refs, c->n_refs + 1, sizeof *r, 16);
    if (!r) return sc_fail_oom(c, path);
    c->refs = r;
    size_t k = c->n_refs++;
    r[k] = (ref_entry){target, FAIL, -1, 0};
    int32_t node = sc_compile(c, target, depth, path);
    if (node == FAIL) return FAIL;
    int32_t ph = c->refs[k].placeholder;
    if (ph >= 0) {
        if (node != UNSAT) {
            int32_t *a = malloc(sizeof *a);
            if (!a) return sc_fail_oom(c, path);
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

/* The document names a draft before 2019-09 in its $schema (draft-03 to draft-07): those ignore
 * every keyword beside a $ref; later drafts apply them as well. */
int sc_ref_siblings_ignored(cctx *c) {
    if (c->ref_draft < 0) {
        const pf_json *d = c->root && c->root->type == PF_JSON_OBJECT ? pf_json_get(c->root, "$schema") : NULL;
        c->ref_draft = d && d->type == PF_JSON_STRING && strstr(d->u.str.s, "draft-0") != NULL;
    }
    return c->ref_draft;
}

int sc_ref_siblings(cctx *c, const pf_json *v) {
    if (sc_ref_siblings_ignored(c)) return 0;
    for (size_t i = 0; i < v->u.obj.n; i++)
        if (sc_keyword_index(&v->u.obj.members[i]) >= 0) return 1;
    return 0;
}

/* v's $ref and the keywords beside it as one schema (their allOf); NULL after a failure. */
const pf_json *sc_ref_with_siblings(cctx *c, const pf_json *v, int depth, const char *path) {
    const pf_json *rest = sc_without(c, v, "$ref", path);
    pf_json_member *m = rest ? sc_scratch(c, sizeof *m) : NULL;
    pf_json *ref = m ? sc_scratch(c, sizeof *ref) : NULL;
    if (!ref) return rest ? (sc_fail_oom(c, path), NULL) : NULL;
    *m = (pf_json_member){"$ref", 4, *pf_json_get(v, "$ref")};
    *ref = (pf_json){.type = PF_JSON_OBJECT, .offset = v->offset, .u.obj = {m, 1}};
    return sc_merge_schemas(c, ref, rest, depth + 1, path);
}

/* {"$ref": "#..."}: the schema the pointer names. Keywords beside it: see sc_ref_siblings (the
 * callers merge them in first); where the draft ignores them, they are ignored here too. */
const pf_json *sc_ref_target(cctx *c, const pf_json *v, const char *path) {
    for (size_t i = 0; i < v->u.obj.n && !sc_ref_siblings_ignored(c); i++) {
        const pf_json_member *m = &v->u.obj.members[i];
        if (sc_keyword_index(m) >= 0) return sc_fail(c, path, "'%s' combined with $ref is not supported", m->key), NULL;
    }
    if (sc_check_keywords(c, v, path) < 0) return NULL;
    return sc_ref_resolve(c, pf_json_get(v, "$ref"), path);
}

const pf_json *sc_ref_resolve(cctx *c, const pf_json *r, const char *path) {
    if (r->type != PF_JSON_STRING) return sc_fail(c, path, "$ref: not a string"), NULL;
    if (r->u.str.len == 0 || r->u.str.s[0] != '#')
        return sc_fail(c, path, "$ref '%.80s' outside the document is not supported", r->u.str.s), NULL;
    if (c->inner_id < 0) c->inner_id = has_inner_id(c->root, 1);
    if (c->inner_id)
        return sc_fail(c, path, "$ref in a schema whose subschemas declare their own $id or id is not supported"), NULL;
    const char *why;
    const pf_json *t = resolve_pointer(c->root, r->u.str.s + 1, r->u.str.len - 1, &why);
    if (!t && !strcmp(why, "out of memory")) return sc_fail_oom(c, path), NULL;
    if (!t) return sc_fail(c, path, "$ref '%.80s': %s", r->u.str.s, why), NULL;
    return t;
}

int32_t sc_compile_ref(cctx *c, const pf_json *v, int depth, const char *path) {
    const pf_json *t = sc_ref_target(c, v, path), *r = pf_json_get(v, "$ref");
    if (!t) return FAIL;
    char sub[256];
    snprintf(sub, sizeof sub, "%.255s", r->u.str.s + 1);
    return sc_compile_target(c, t, depth + 1, sub);
}
