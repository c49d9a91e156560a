#include "grammar/lit_set.h"
#include "grammar/bytes_order.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pf_json_quote(pf_sbuf *b, const char *s, size_t n) {
    pf_sbuf_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        const char *sh = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                         : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
        if (sh) { /* the short escapes, as JSON writers use them */
            pf_sbuf_put(b, sh, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            pf_sbuf_put(b, esc, 6);
        } else {
            pf_sbuf_put(b, s + i, 1);
        }
    }
    pf_sbuf_put(b, "\"", 1);
}

/* The number as the schema wrote it (the reader validated its syntax). */
static void number_text(pf_sbuf *b, const pf_json *v, const char *src, size_t src_len) {
    size_t i = v->offset;
    while (i < src_len && strchr("+-.eE0123456789", src[i]) && src[i]) i++;
    pf_sbuf_put(b, src + v->offset, i - v->offset);
}

static bool same_key(const pf_json_member *a, const pf_json_member *b) {
    return a->key_len == b->key_len && !memcmp(a->key, b->key, a->key_len);
}

/* Member i of object v as a dict spells it: NULL when its key came before, else the member whose
 * value it keeps (the last with the key). */
static const pf_json_member *dict_member(const pf_json *v, size_t i) {
    const pf_json_member *m = &v->u.obj.members[i], *last = m;
    for (size_t j = 0; j < i; j++)
        if (same_key(&v->u.obj.members[j], m)) return NULL;
    for (size_t j = i + 1; j < v->u.obj.n; j++)
        if (same_key(&v->u.obj.members[j], m)) last = &v->u.obj.members[j];
    return last;
}

void pf_json_write(pf_sbuf *b, const pf_json *v, const char *src, size_t src_len, const pf_json_style *st) {
    switch (v->type) {
    case PF_JSON_NULL: pf_sbuf_put(b, "null", 4); break;
    case PF_JSON_BOOL: v->u.b ? pf_sbuf_put(b, "true", 4) : pf_sbuf_put(b, "false", 5); break;
    case PF_JSON_NUMBER: (st->number ? st->number : number_text)(b, v, src, src_len); break;
    case PF_JSON_STRING: pf_json_quote(b, v->u.str.s, v->u.str.len); break;
    case PF_JSON_ARRAY:
        pf_sbuf_put(b, "[", 1);
        for (size_t i = 0; i < v->u.arr.n; i++) {
            if (i) pf_sbuf_put(b, st->comma, strlen(st->comma));
            pf_json_write(b, &v->u.arr.items[i], src, src_len, st);
        }
        pf_sbuf_put(b, "]", 1);
        break;
    case PF_JSON_OBJECT: {
        bool first = true;
        pf_sbuf_put(b, "{", 1);
        for (size_t i = 0; i < v->u.obj.n; i++) {
            const pf_json_member *m = &v->u.obj.members[i], *val = st->dict_keys ? dict_member(v, i) : m;
            if (!val) continue;
            if (!first) pf_sbuf_put(b, st->comma, strlen(st->comma));
            first = false;
            pf_json_quote(b, m->key, m->key_len);
            pf_sbuf_put(b, st->colon, strlen(st->colon));
            pf_json_write(b, &val->val, src, src_len, st);
        }
        pf_sbuf_put(b, "}", 1);
        break;
    }
    }
}

void pf_json_compact(pf_sbuf *b, const pf_json *v, const char *src, size_t src_len) {
    pf_json_write(b, v, src, src_len, &(pf_json_style){",", ":", NULL, false});
}

void pf_json_spaced(pf_sbuf *b, const pf_json *v, const char *src, size_t src_len) {
    pf_json_write(b, v, src, src_len, &(pf_json_style){", ", ": ", NULL, false});
}

typedef struct {
    char *s;
    uint32_t len;
} lit;

/* Byte order, a prefix before its extensions. */
static int lit_cmp(const void *a, const void *b) {
    const lit *x = a, *y = b;
    return pf_bytes_cmp(x->s, x->len, y->s, y->len);
}

int pf_lit_set_take(pf_lit_set *set, char **s, uint32_t *len, int n) {
    memset(set, 0, sizeof *set);
    lit *l = malloc((size_t)(n ? n : 1) * sizeof *l);
    set->s = malloc((size_t)(n ? n : 1) * sizeof *set->s);
    set->len = malloc((size_t)(n ? n : 1) * sizeof *set->len);
    if (!l || !set->s || !set->len) {
        for (int i = 0; i < n; i++) free(s[i]);
        free(l);
        pf_lit_set_free(set);
        return -1;
    }
    for (int i = 0; i < n; i++) l[i] = (lit){s[i], len[i]};
    qsort(l, (size_t)n, sizeof *l, lit_cmp);
    for (int i = 0; i < n; i++) {
        if (set->n && !lit_cmp(&l[i], &(lit){set->s[set->n - 1], set->len[set->n - 1]})) {
            free(l[i].s);
            continue;
        }
        set->s[set->n] = l[i].s;
        set->len[set->n++] = l[i].len;
    }
    free(l);
    return 0;
}

void pf_lit_set_free(pf_lit_set *set) {
    for (int i = 0; set->s && i < set->n; i++) free(set->s[i]);
    free(set->s);
    free(set->len);
    memset(set, 0, sizeof *set);
}

/* Entry i's byte at off, -1 when it ends there. */
static int byte_at(const pf_lit_set *set, int32_t i, int32_t off) {
    return set->len[i] > (uint32_t)off ? (unsigned char)set->s[i][off] : -1;
}

/* First index in [lo, hi) whose byte at off is >= c (the bytes are sorted there). */
static int32_t lower(const pf_lit_set *set, int32_t lo, int32_t hi, int32_t off, int c) {
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (byte_at(set, mid, off) < c) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

void pf_lit_narrow(const pf_lit_set *set, int32_t *lo, int32_t *hi, int32_t off, uint8_t c) {
    int32_t a = lower(set, *lo, *hi, off, c), b = lower(set, a, *hi, off, c + 1);
    *lo = a;
    *hi = b;
}
