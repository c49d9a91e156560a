#include "formats/json_write.h"

#include <stdio.h>
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
