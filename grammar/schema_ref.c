/* $ref (grammar/schema_cc.h): JSON pointers into the same document, each target compiled once,
 * recursion through a placeholder union. */
#include "grammar/schema_cc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/grow.h"

/* ---- $ref: JSON pointers into the same document ---- */

/* Which key sets a subschema's base URI: draft 3 and 4 read `id`, draft 6 on `$id`. A document
 * whose $schema names neither is read as the current drafts read it (`$id`), and a reference must
 * then resolve alike where `id` counts too (as an older reader would take it). */
enum { ID_OLD = 1, ID_NEW = 2, ID_ANY = 4 };

static int id_readings(const pf_json *root) {
    const pf_json *d = root->type == PF_JSON_OBJECT ? pf_json_get(root, "$schema") : NULL;
    const char *s = d && d->type == PF_JSON_STRING ? d->u.str.s : "";
    if (strstr(s, "draft-03") || strstr(s, "draft-04")) return ID_OLD;
    if (strstr(s, "draft-06") || strstr(s, "draft-07") || strstr(s, "2019-09") || strstr(s, "2020-12")) return ID_NEW;
    return ID_NEW | ID_ANY;
}

/* Object v's id key k: 1 when it sets a new base URI (a URI, not a fragment alone: `#a` is an
 * anchor), 0 when it has none or an anchor, -1 for an empty one (no reader agrees on it). */
static int key_sets_base(const pf_json *v, const char *k) {
    const pf_json *id = pf_json_get(v, k);
    if (!id || id->type != PF_JSON_STRING || id->u.str.s[0] == '#') return 0;
    return id->u.str.len ? 1 : -1;
}

/* The same under reading r. */
static int sets_base(const pf_json *v, int r) {
    int a = r & (ID_OLD | ID_ANY) ? key_sets_base(v, "id") : 0, b = r & (ID_NEW | ID_ANY) ? key_sets_base(v, "$id") : 0;
    return a < 0 || b < 0 ? -1 : a || b;
}

/* The schema resource a "#..." reference at source offset `at` is relative to, under reading r:
 * the innermost object around it (the one holding the $ref included) whose id sets a new base,
 * else the document. The path down is found by offsets (the values of a container in source
 * order), so a $ref copied into a merged schema keeps its place. NULL with *why where the base
 * cannot be told: an empty id, or an id beside the $ref in a draft that ignores $ref's siblings
 * (readers disagree there). */
static const pf_json *resource_at(const pf_json *root, size_t at, int r, int siblings_ignored, const char **why) {
    const pf_json *res = root, *v = root;
    while (v && (v->type == PF_JSON_OBJECT || v->type == PF_JSON_ARRAY) && v->offset < at) {
        const pf_json *next = NULL;
        int holds_ref = 0;
        if (v->type == PF_JSON_OBJECT) {
            for (size_t i = 0; i < v->u.obj.n && v->u.obj.members[i].val.offset <= at; i++) {
                next = &v->u.obj.members[i].val;
                holds_ref = next->offset == at && !strcmp(v->u.obj.members[i].key, "$ref");
            }
            int b = v == root ? 0 : sets_base(v, r);
            if (b < 0) return *why = "an empty id on the way to it", NULL;
            if (b && holds_ref && siblings_ignored) return *why = "an id beside it, in a draft that ignores what stands beside a $ref", NULL;
            if (b) res = v;
        } else {
            for (size_t i = 0; i < v->u.arr.n && v->u.arr.items[i].offset <= at; i++) next = &v->u.arr.items[i];
        }
        v = next;
    }
    return res;
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
    /* relative to the subschema whose $id / id sets the base around it (the document when none);
     * where the draft leaves the id key open, both readings must name the same schema */
    const char *why = NULL;
    const pf_json *t = NULL;
    int readings = id_readings(c->root), ignored = sc_ref_siblings_ignored(c);
    for (int rd = ID_OLD; rd <= ID_ANY; rd <<= 1) {
        if (!(readings & rd)) continue;
        const pf_json *res = resource_at(c->root, r->offset, rd, ignored, &why);
        if (!res) return sc_fail(c, path, "$ref '%.80s': the base URI is unclear: %s", r->u.str.s, why), NULL;
        const pf_json *x = resolve_pointer(res, r->u.str.s + 1, r->u.str.len - 1, &why);
        if (!x && !strcmp(why, "out of memory")) return sc_fail_oom(c, path), NULL;
        if (!x)
            return sc_fail(c, path, "$ref '%.80s': %s%s", r->u.str.s, why,
                           res != c->root && !strcmp(why, "names nothing in the document")
                               ? " (its base: the subschema whose id sets it)"
                               : ""),
                   NULL;
        if (t && x != t)
            return sc_fail(c, path, "$ref '%.80s': names another schema where 'id' sets the base URI "
                                    "than where only '$id' does (no $schema says which)", r->u.str.s), NULL;
        t = x;
    }
    return t;
}

int32_t sc_compile_ref(cctx *c, const pf_json *v, int depth, const char *path) {
    const pf_json *t = sc_ref_target(c, v, path), *r = pf_json_get(v, "$ref");
    if (!t) return FAIL;
    char sub[256];
    snprintf(sub, sizeof sub, "%.255s", r->u.str.s + 1);
    return sc_compile_target(c, t, depth + 1, sub);
}
