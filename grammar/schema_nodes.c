/* The compiler's building blocks (grammar/schema_cc.h): the one-line error, new nodes (literal
 * sets, unions), scratch memory freed with the compile, and small readers of keyword values. */
#include "grammar/schema_cc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/grow.h"
#include "grammar/lit_set.h"

int32_t sc_fail(cctx *c, const char *path, const char *fmt, ...) {
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

int32_t sc_fail_oom(cctx *c, const char *path) {
    c->oom = 1;
    return sc_fail(c, path, "out of memory");
}

int32_t sc_new_node(cctx *c, pf_schema_kind kind) {
    pf_schema *s = c->s;
    pf_schema_node *n = pf_grow(s->nodes, &s->cap_nodes, (size_t)s->n_nodes + 1, sizeof *n, 16);
    if (!n) return sc_fail_oom(c, "");
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
    s->nodes[s->n_nodes].pattern_id = -1;
    s->nodes[s->n_nodes].contains = -1;
    s->nodes[s->n_nodes].contains_items = -1;
    return s->n_nodes++;
}

/* A literal node of the given texts (taken). */
int32_t sc_literal_node(cctx *c, char **s, uint32_t *len, int n) {
    int32_t id = sc_new_node(c, PF_SN_LITERALS);
    if (id < 0) {
        for (int i = 0; i < n; i++) free(s[i]);
        return FAIL;
    }
    if (pf_lit_set_take(&c->s->nodes[id].lits, s, len, n) < 0) return sc_fail_oom(c, "");
    return id;
}

int32_t sc_words_node(cctx *c, const char *const *w, int n) {
    char *s[3];
    uint32_t len[3];
    for (int i = 0; i < n; i++) {
        s[i] = strdup(w[i]);
        len[i] = (uint32_t)strlen(w[i]);
        if (!s[i]) {
            for (int j = 0; j < i; j++) free(s[j]);
            return sc_fail_oom(c, "");
        }
    }
    return sc_literal_node(c, s, len, n);
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
    int32_t id = oom ? FAIL : sc_literal_node(c, s, len, k);
    if (oom)
        for (int j = 0; j < k; j++) free(s[j]);
    free(s);
    free(len);
    if (id < 0) return oom ? sc_fail_oom(c, "") : FAIL;
    alts[first] = id;
    return m;
}

int32_t sc_union_node(cctx *c, const int32_t *alts_in, int n) {
    if (n == 0) return UNSAT;
    if (n == 1) return alts_in[0];
    int32_t alts[64], *heap = NULL, *a0 = alts;
    if (n > 64 && !(a0 = heap = malloc((size_t)n * sizeof *heap))) return sc_fail_oom(c, "");
    memcpy(a0, alts_in, (size_t)n * sizeof *a0);
    n = merge_literal_alts(c, a0, n);
    if (n < 0 || n == 1) {
        int32_t r = n < 0 ? FAIL : a0[0];
        free(heap);
        return r;
    }
    alts_in = a0;
    int32_t id = sc_new_node(c, PF_SN_UNION);
    int32_t *a = id < 0 ? NULL : malloc((size_t)n * sizeof *a);
    if (a) memcpy(a, alts_in, (size_t)n * sizeof *a);
    free(heap);
    if (id < 0) return FAIL;
    if (!a) return sc_fail_oom(c, "");
    c->s->nodes[id].alts = a;
    c->s->nodes[id].n_alts = n;
    return id;
}

/* Zeroed memory freed with the compile context (merged schemas point into it). */
void *sc_scratch(cctx *c, size_t n) {
    void **l = pf_grow(c->made, &c->cap_made, c->n_made + 1, sizeof *l, 16);
    void *p = l ? calloc(1, n ? n : 1) : NULL;
    if (l) c->made = l;
    if (p) c->made[c->n_made++] = p;
    return p;
}

int sc_read_count(cctx *c, const pf_json *v, const char *key, int64_t *out, const char *path) {
    const pf_json *x = pf_json_get(v, key);
    if (!x) return 0;
    if (x->type != PF_JSON_NUMBER || !x->u.num.is_int || x->u.num.i < 0)
        return sc_fail(c, path, "%s: not a non-negative integer", key);
    *out = x->u.num.i;
    return 0;
}

/* v without its member `key`. */
const pf_json *sc_without(cctx *c, const pf_json *v, const char *key, const char *path) {
    pf_json_member *m = sc_scratch(c, v->u.obj.n * sizeof *m);
    pf_json *out = sc_scratch(c, sizeof *out);
    if (!m || !out) return sc_fail_oom(c, path), NULL;
    size_t n = 0;
    for (size_t i = 0; i < v->u.obj.n; i++)
        if (strcmp(v->u.obj.members[i].key, key)) m[n++] = v->u.obj.members[i];
    *out = *v;
    out->u.obj.members = m;
    out->u.obj.n = n;
    return out;
}

pf_json *sc_count(cctx *c, int64_t n) {
    char num[24];
    int len = snprintf(num, sizeof num, " %lld", (long long)n);
    pf_json *v = sc_scratch(c, sizeof *v);
    if (!v) return NULL;
    if (!c->src_own || c->src_len + (size_t)len + 1 > c->src_cap) {
        /* the old text stays (pointers into it may be held), freed with the context */
        size_t cap = 2 * (c->src_len + (size_t)len) + 256;
        char *p = sc_scratch(c, cap);
        if (!p) return NULL;
        memcpy(p, c->src, c->src_len);
        c->src = c->src_own = p;
        c->src_cap = cap;
    }
    memcpy(c->src_own + c->src_len, num, (size_t)len + 1);
    *v = (pf_json){.type = PF_JSON_NUMBER, .offset = c->src_len + 1, .u.num = {(double)n, n, true}};
    c->src_len += (size_t)len;
    return v;
}
