/* uniqueItems (grammar/schema_cc.h) where it can be enforced exactly: an array of at most one
 * item, or items that are a few literals (enum, const, boolean), whose values the matcher marks
 * taken one by one (a class of equal values each: 1 and 1.0 are one). */
#include "grammar/schema_cc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXTS 1024 /* literal texts compared pairwise */
#define MAX_CLASSES 64 /* the bits of an array frame's used */

/* A number text's value as sign, digits without leading or trailing zeros and the power of ten of
 * the last: equal values give equal keys. */
static void number_key(const char *p, size_t n, char *out, size_t cap) {
    size_t i = 0;
    int neg = i < n && p[i] == '-';
    i += (size_t)neg;
    long frac = 0, exp10 = 0;
    char d[64];
    size_t nd = 0;
    for (int point = 0; i < n && ((p[i] >= '0' && p[i] <= '9') || p[i] == '.'); i++) {
        if (p[i] == '.') {
            point = 1;
            continue;
        }
        frac += point;
        if (nd == sizeof d) return (void)snprintf(out, cap, "big"); /* one class for all such: never two equal apart */
        if (nd || p[i] != '0') d[nd++] = p[i];
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) exp10 = strtol(p + i + 1, NULL, 10);
    while (nd && d[nd - 1] == '0') nd--, exp10++;
    snprintf(out, cap, "%s%.*se%ld", neg && nd ? "-" : "", (int)nd, d, exp10 - frac);
}

static int json_same(const pf_json *a, const char *as, const pf_json *b, const char *bs);

static int number_same(const pf_json *a, const char *as, const pf_json *b, const char *bs) {
    char x[96], y[96];
    number_key(as + a->offset, strcspn(as + a->offset, ",]} :"), x, sizeof x);
    number_key(bs + b->offset, strcspn(bs + b->offset, ",]} :"), y, sizeof y);
    return !strcmp(x, y);
}

/* JSON values equal as JSON Schema compares them: numbers by value, objects by their keys. */
static int json_same(const pf_json *a, const char *as, const pf_json *b, const char *bs) {
    if (a->type != b->type) return 0;
    switch (a->type) {
    case PF_JSON_NULL: return 1;
    case PF_JSON_BOOL: return a->u.b == b->u.b;
    case PF_JSON_NUMBER: return number_same(a, as, b, bs);
    case PF_JSON_STRING: return a->u.str.len == b->u.str.len && !memcmp(a->u.str.s, b->u.str.s, a->u.str.len);
    case PF_JSON_ARRAY:
        if (a->u.arr.n != b->u.arr.n) return 0;
        for (size_t i = 0; i < a->u.arr.n; i++)
            if (!json_same(&a->u.arr.items[i], as, &b->u.arr.items[i], bs)) return 0;
        return 1;
    default:
        if (a->u.obj.n != b->u.obj.n) return 0;
        for (size_t i = 0; i < a->u.obj.n; i++) {
            const pf_json *y = pf_json_get(b, a->u.obj.members[i].key);
            if (!y || !json_same(&a->u.obj.members[i].val, as, y, bs)) return 0;
        }
        return 1;
    }
}

/* Classes of equal values over the literal set's texts; the count, FAIL past MAX_CLASSES. */
static int classes_of(cctx *c, const pf_lit_set *set, uint8_t *cls, const char *path) {
    char err[PF_ERR_LEN];
    pf_json_doc **doc = calloc((size_t)set->n, sizeof *doc);
    char **txt = calloc((size_t)set->n, sizeof *txt);
    int n = 0, rc = 0;
    for (int i = 0; doc && txt && i < set->n && rc >= 0; i++) {
        txt[i] = malloc(set->len[i] + 1);
        if (txt[i]) memcpy(txt[i], set->s[i], set->len[i]), txt[i][set->len[i]] = 0;
        doc[i] = txt[i] ? pf_json_parse(txt[i], set->len[i], err) : NULL;
        if (!doc[i]) rc = sc_fail_oom(c, path);
        int k = -1;
        for (int j = 0; j < i && k < 0 && rc >= 0; j++)
            if (json_same(pf_json_root(doc[i]), txt[i], pf_json_root(doc[j]), txt[j])) k = cls[j];
        if (rc >= 0 && k < 0 && n == MAX_CLASSES)
            rc = sc_fail(c, path, "keyword 'uniqueItems' is not supported over more than %d values", MAX_CLASSES);
        if (rc >= 0) cls[i] = (uint8_t)(k >= 0 ? k : n++);
    }
    if (!doc || !txt) rc = sc_fail_oom(c, path);
    for (int i = 0; doc && txt && i < set->n; i++) pf_json_free(doc[i]), free(txt[i]);
    free(doc);
    free(txt);
    return rc < 0 ? FAIL : n;
}

int32_t sc_unique_items(cctx *c, int32_t id, const char *path) {
    pf_schema_node *nd = &c->s->nodes[id];
    if (nd->max_items <= 1) return id; /* one item is always unique */
    int32_t lit = nd->items;
    while (c->s->nodes[lit].kind == PF_SN_UNION && c->s->nodes[lit].n_alts == 1) lit = c->s->nodes[lit].alts[0];
    const pf_schema_node *ln = &c->s->nodes[lit];
    if (ln->kind != PF_SN_LITERALS || ln->raw || ln->lits.n > MAX_TEXTS)
        return sc_fail(c, path, "keyword 'uniqueItems' is not supported (only over items of a few literals: enum, "
                                "const, boolean; or maxItems 1)");
    uint8_t *cls = malloc((size_t)ln->lits.n), *order = malloc(MAX_CLASSES);
    uint32_t *len = malloc(MAX_CLASSES * sizeof *len);
    if (!cls || !order || !len) return free(cls), free(order), free(len), sc_fail_oom(c, path);
    int n = classes_of(c, &c->s->nodes[lit].lits, cls, path);
    if (n < 0) return free(cls), free(order), free(len), FAIL;
    uint32_t shortest[MAX_CLASSES];
    for (int k = 0; k < n; k++) shortest[k] = UINT32_MAX;
    for (int i = 0; i < ln->lits.n; i++)
        if (ln->lits.len[i] < shortest[cls[i]]) shortest[cls[i]] = ln->lits.len[i];
    for (int k = 0; k < n; k++) { /* insertion by length */
        int j = k;
        for (; j > 0 && shortest[order[j - 1]] > shortest[k]; j--) order[j] = order[j - 1];
        order[j] = (uint8_t)k;
    }
    for (int k = 0; k < n; k++) len[k] = shortest[order[k]];
    nd = &c->s->nodes[id];
    nd->uniq_lit = lit, nd->n_uniq = n, nd->uniq_class = cls, nd->uniq_order = order, nd->uniq_len = len;
    if (nd->min_items > n) return UNSAT;
    if (nd->max_items > n) nd->max_items = n;
    return id;
}

int64_t pf_schema_unique_least(const pf_schema_node *nd, uint64_t used, int64_t k) {
    int64_t total = 0;
    for (int i = 0; i < nd->n_uniq && k > 0; i++)
        if (!(used >> nd->uniq_order[i] & 1)) total += nd->uniq_len[i], k--;
    return k > 0 ? INT64_MAX : total;
}
