/* Strict JSON parser: recursive descent with a depth limit; container children are gathered on a
 * shared stack and copied into an arena when the container closes, so arrays and objects are
 * contiguous. */
#include "formats/json.h"
#include "formats/grow.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ---- */
typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    max_align_t data[];
} chunk;

struct pf_json_doc {
    chunk *chunks;
    pf_json root;
};

static void *arena_alloc(pf_json_doc *d, size_t n) {
    n = (n + 15) & ~(size_t)15;
    chunk *c = d->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > ((size_t)1 << 20) ? n : ((size_t)1 << 20);
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = d->chunks;
        d->chunks = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

void pf_json_free(pf_json_doc *d) {
    if (!d) return;
    for (chunk *c = d->chunks, *nx; c; c = nx) {
        nx = c->next;
        free(c);
    }
    free(d);
}

/* ---- parser ---- */
typedef struct {
    const unsigned char *p, *end, *start;
    pf_json_doc *doc;
    char *err;
    bool failed;
    bool oom; /* the failure was an allocation's */
    pf_json *vals; /* pending array items */
    size_t n_vals, cap_vals;
    pf_json_member *mems; /* pending object members */
    size_t n_mems, cap_mems;
} parser;

static void fail_at(parser *ps, const unsigned char *at, const char *fmt, ...) {
    if (ps->failed) return;
    ps->failed = true;
    if (!ps->err) return;
    int n = snprintf(ps->err, PF_ERR_LEN, "byte %zu: ", (size_t)(at - ps->start));
    if (n < 0 || n >= PF_ERR_LEN) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err + n, PF_ERR_LEN - (size_t)n, fmt, ap);
    va_end(ap);
}

static bool fail_oom(parser *ps) {
    if (!ps->failed) ps->oom = true;
    fail_at(ps, ps->p, "out of memory");
    return false;
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static void fail_unexpected(parser *ps, const char *expected) {
    if (ps->p >= ps->end) fail_at(ps, ps->p, "unexpected end of input, expected %s", expected);
    else if (*ps->p >= 0x20 && *ps->p < 0x7F)
        fail_at(ps, ps->p, "unexpected '%c', expected %s", *ps->p, expected);
    else fail_at(ps, ps->p, "unexpected byte 0x%02X, expected %s", *ps->p, expected);
}

static bool parse_value(parser *ps, pf_json *out, int depth);

static int hex4(const unsigned char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = p[i], h;
        if (c >= '0' && c <= '9') h = c - '0';
        else if (c >= 'a' && c <= 'f') h = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') h = c - 'A' + 10;
        else return -1;
        v = v * 16 + h;
    }
    return v;
}

/* Length of the well-formed UTF-8 sequence at p (table 3-7), 0 if ill-formed. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end) {
    unsigned char b = p[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) n = 2;
    else if (b >= 0xE0 && b <= 0xEF) n = 3;
    else if (b >= 0xF0 && b <= 0xF4) n = 4;
    else return 0;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
    if ((size_t)(end - p) < n) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return n;
}

static size_t put_utf8(unsigned char *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The \uXXXX escape whose backslash is at esc (*qp just after its 'u', e the closing quote): the
 * code point, a surrogate pair joined, written as UTF-8 at *op; both pointers advance. */
static bool unicode_escape(parser *ps, const unsigned char *esc, const unsigned char **qp, const unsigned char *e,
                           unsigned char **op) {
    const unsigned char *q = *qp;
    int h = (e - q >= 4) ? hex4(q) : -1;
    if (h < 0) {
        fail_at(ps, esc, "bad \\u escape (expected 4 hex digits)");
        return false;
    }
    q += 4;
    uint32_t cp = (uint32_t)h;
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
        fail_at(ps, esc, "lone low surrogate \\u%04X", cp);
        return false;
    }
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        int lo = (e - q >= 6 && q[0] == '\\' && q[1] == 'u') ? hex4(q + 2) : -1;
        if (lo < 0xDC00 || lo > 0xDFFF) {
            fail_at(ps, esc, "high surrogate \\u%04X not followed by a low surrogate", cp);
            return false;
        }
        q += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
    }
    *op += put_utf8(*op, cp);
    *qp = q;
    return true;
}

/* The escape whose backslash is at *qp, decoded at *op; both pointers advance. */
static bool escape(parser *ps, const unsigned char **qp, const unsigned char *e, unsigned char **op) {
    static const char k_plain[] = "\"\\/bfnrt", k_byte[] = "\"\\/\b\f\n\r\t";
    const unsigned char *esc = *qp;
    unsigned char c = esc[1]; /* esc < e: a backslash before the closing quote was skipped as an escape pair */
    *qp = esc + 2;
    if (c == 'u') return unicode_escape(ps, esc, qp, e, op);
    const char *at = c ? strchr(k_plain, c) : NULL;
    if (!at) {
        fail_at(ps, esc, "bad escape sequence");
        return false;
    }
    *(*op)++ = (unsigned char)k_byte[at - k_plain];
    return true;
}

/* At the opening quote. Decoded text never exceeds the raw text (every escape shrinks), so one
 * allocation of the raw length suffices. */
static bool parse_string(parser *ps, const char **s, size_t *len) {
    const unsigned char *q = ps->p + 1;
    /* Find the closing quote to size the allocation. */
    const unsigned char *e = q;
    while (e < ps->end && *e != '"') e += (*e == '\\' && e + 1 < ps->end) ? 2 : 1;
    if (e >= ps->end) {
        fail_at(ps, ps->p, "unterminated string");
        return false;
    }
    unsigned char *out = arena_alloc(ps->doc, (size_t)(e - q) + 1), *o = out;
    if (!out) {
        fail_oom(ps);
        return false;
    }
    while (q < e) {
        unsigned char c = *q;
        if (c < 0x20) {
            fail_at(ps, q, "control character 0x%02X in string (must be escaped)", c);
            return false;
        }
        if (c == '\\') {
            if (!escape(ps, &q, e, &o)) return false;
            continue;
        }
        size_t n = utf8_seq(q, e);
        if (!n) {
            fail_at(ps, q, "invalid UTF-8 in string");
            return false;
        }
        memcpy(o, q, n);
        o += n;
        q += n;
    }
    *o = '\0';
    *s = (const char *)out;
    *len = (size_t)(o - out);
    ps->p = e + 1;
    return true;
}

static bool parse_number(parser *ps, pf_json *v) {
    const unsigned char *b = ps->p, *p = b;
    bool integral = true;
    if (p < ps->end && *p == '-') p++;
    if (p < ps->end && *p == '0') p++;
    else if (p < ps->end && *p >= '1' && *p <= '9')
        while (p < ps->end && *p >= '0' && *p <= '9') p++;
    else {
        ps->p = p;
        fail_unexpected(ps, "a digit");
        return false;
    }
    if (p < ps->end && *p == '.') {
        integral = false;
        p++;
        if (p >= ps->end || *p < '0' || *p > '9') {
            ps->p = p;
            fail_unexpected(ps, "a digit after '.'");
            return false;
        }
        while (p < ps->end && *p >= '0' && *p <= '9') p++;
    }
    if (p < ps->end && (*p == 'e' || *p == 'E')) {
        integral = false;
        p++;
        if (p < ps->end && (*p == '+' || *p == '-')) p++;
        if (p >= ps->end || *p < '0' || *p > '9') {
            ps->p = p;
            fail_unexpected(ps, "a digit in the exponent");
            return false;
        }
        while (p < ps->end && *p >= '0' && *p <= '9') p++;
    }
    char buf[128];
    size_t n = (size_t)(p - b);
    if (n >= sizeof buf) {
        fail_at(ps, b, "number too long (%zu characters)", n);
        return false;
    }
    memcpy(buf, b, n);
    buf[n] = '\0';
    v->type = PF_JSON_NUMBER;
    v->u.num.d = strtod(buf, NULL);
    v->u.num.is_int = false;
    if (integral) {
        errno = 0;
        long long i = strtoll(buf, NULL, 10);
        if (errno == 0) {
            v->u.num.i = i;
            v->u.num.is_int = true;
        }
    }
    ps->p = p;
    return true;
}

static bool literal(parser *ps, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) {
        fail_unexpected(ps, "a value");
        return false;
    }
    ps->p += n;
    return true;
}

/* The parsed items and members wait on two stacks until their container closes (then they move to
 * the arena). push: item (size bytes) appended to the stack of *n entries; the stack, perhaps
 * moved, or NULL after fail_oom when it cannot grow. */
static void *push(parser *ps, void *stack, size_t *n, size_t *cap, const void *item, size_t size) {
    char *p = pf_grow(stack, cap, *n + 1, size, 256);
    if (!p) {
        fail_oom(ps);
        return NULL;
    }
    memcpy(p + (*n)++ * size, item, size);
    return p;
}

static bool push_val(parser *ps, const pf_json *v) {
    pf_json *p = push(ps, ps->vals, &ps->n_vals, &ps->cap_vals, v, sizeof *v);
    if (p) ps->vals = p;
    return p != NULL;
}

static bool push_mem(parser *ps, const pf_json_member *m) {
    pf_json_member *p = push(ps, ps->mems, &ps->n_mems, &ps->cap_mems, m, sizeof *m);
    if (p) ps->mems = p;
    return p != NULL;
}

/* At an opening bracket: consumes it, and `close` too when it follows at once (an empty
 * container); 1 when items follow, 0 when empty. */
static int open_container(parser *ps, char close) {
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    return 1;
}

/* After an array item or object member: 1 on ',' (another follows), 0 on `close` (done), -1
 * (failed, expecting `expect`) otherwise; the separator is consumed. */
static int next_item(parser *ps, char close, const char *expect) {
    skip_ws(ps);
    if (ps->p < ps->end && (*ps->p == ',' || *ps->p == close)) return *ps->p++ == ',';
    fail_unexpected(ps, expect);
    return -1;
}

/* A copy of the n bytes at src in the document's arena; NULL when n is 0, or (after fail_oom)
 * when out of memory. */
static void *arena_copy(parser *ps, const void *src, size_t n) {
    if (!n) return NULL;
    void *dst = arena_alloc(ps->doc, n);
    if (!dst) {
        fail_oom(ps);
        return NULL;
    }
    return memcpy(dst, src, n);
}

static bool parse_array(parser *ps, pf_json *v, int depth) {
    size_t base = ps->n_vals;
    int more = open_container(ps, ']');
    while (more > 0) {
        pf_json item;
        if (!parse_value(ps, &item, depth + 1) || !push_val(ps, &item)) return false;
        more = next_item(ps, ']', "',' or ']'");
    }
    if (more < 0) return false;
    size_t n = ps->n_vals - base;
    v->type = PF_JSON_ARRAY;
    v->u.arr.n = n;
    v->u.arr.items = n ? arena_copy(ps, ps->vals + base, n * sizeof(pf_json)) : NULL; /* vals may be NULL when n = 0 */
    if (n && !v->u.arr.items) return false;
    ps->n_vals = base;
    return true;
}

/* "key": value */
static bool parse_member(parser *ps, pf_json_member *m, int depth) {
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '"') {
        fail_unexpected(ps, "a string key");
        return false;
    }
    if (!parse_string(ps, &m->key, &m->key_len)) return false;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') {
        fail_unexpected(ps, "':'");
        return false;
    }
    ps->p++;
    return parse_value(ps, &m->val, depth + 1);
}

static bool parse_object(parser *ps, pf_json *v, int depth) {
    size_t base = ps->n_mems;
    int more = open_container(ps, '}');
    while (more > 0) {
        pf_json_member m;
        if (!parse_member(ps, &m, depth) || !push_mem(ps, &m)) return false;
        more = next_item(ps, '}', "',' or '}'");
    }
    if (more < 0) return false;
    size_t n = ps->n_mems - base;
    v->type = PF_JSON_OBJECT;
    v->u.obj.n = n;
    v->u.obj.members = n ? arena_copy(ps, ps->mems + base, n * sizeof(pf_json_member)) : NULL;
    if (n && !v->u.obj.members) return false;
    ps->n_mems = base;
    return true;
}

static bool parse_value(parser *ps, pf_json *v, int depth) {
    skip_ws(ps);
    memset(v, 0, sizeof *v);
    v->offset = (size_t)(ps->p - ps->start);
    if (ps->p >= ps->end) {
        fail_unexpected(ps, "a value");
        return false;
    }
    switch (*ps->p) {
    case '{':
    case '[':
        if (depth >= PF_JSON_MAX_DEPTH) {
            fail_at(ps, ps->p, "nesting deeper than %d", PF_JSON_MAX_DEPTH);
            return false;
        }
        return *ps->p == '{' ? parse_object(ps, v, depth) : parse_array(ps, v, depth);
    case '"':
        v->type = PF_JSON_STRING;
        return parse_string(ps, &v->u.str.s, &v->u.str.len);
    case 't':
        v->type = PF_JSON_BOOL;
        v->u.b = true;
        return literal(ps, "true");
    case 'f':
        v->type = PF_JSON_BOOL;
        return literal(ps, "false");
    case 'n':
        v->type = PF_JSON_NULL;
        return literal(ps, "null");
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) return parse_number(ps, v);
        fail_unexpected(ps, "a value");
        return false;
    }
}

pf_rc pf_json_read(const char *buf, size_t len, pf_json_doc **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    pf_json_doc *d = calloc(1, sizeof *d);
    if (!d) {
        if (err) snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    parser ps = {.p = (const unsigned char *)buf, .end = (const unsigned char *)buf + len,
                 .start = (const unsigned char *)buf, .doc = d, .err = err};
    bool ok = parse_value(&ps, &d->root, 0);
    if (ok) {
        skip_ws(&ps);
        if (ps.p != ps.end) {
            fail_at(&ps, ps.p, "unexpected data after the JSON value");
            ok = false;
        }
    }
    free(ps.vals);
    free(ps.mems);
    if (!ok) {
        pf_json_free(d);
        return ps.oom ? PF_RC_OOM : PF_RC_FORMAT;
    }
    *out = d;
    return PF_RC_OK;
}

pf_json_doc *pf_json_parse(const char *buf, size_t len, char err[PF_ERR_LEN]) {
    pf_json_doc *d;
    pf_json_read(buf, len, &d, err);
    return d;
}

pf_json_doc *pf_json_parse_file(const char *path, char err[PF_ERR_LEN]) {
    pf_json_doc *d;
    pf_json_load(path, &d, err);
    return d;
}

pf_rc pf_json_load(const char *path, pf_json_doc **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    pf_rc rc = PF_RC_IO;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(err, PF_ERR_LEN, "%s: %s", path, strerror(errno));
        return PF_RC_IO;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 65536) {
            size_t nc = cap ? cap * 2 : 1 << 20;
            if (nc > ((size_t)1 << 31)) {
                snprintf(err, PF_ERR_LEN, "%s: file larger than 2 GiB", path);
                rc = PF_RC_FORMAT;
                goto fail;
            }
            char *nb = realloc(buf, nc);
            if (!nb) {
                snprintf(err, PF_ERR_LEN, "%s: out of memory", path);
                rc = PF_RC_OOM;
                goto fail;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len, fp);
        len += got;
        if (got == 0) break;
    }
    if (ferror(fp)) {
        snprintf(err, PF_ERR_LEN, "%s: read error", path);
        goto fail;
    }
    fclose(fp);
    char msg[PF_ERR_LEN];
    rc = pf_json_read(buf, len, out, msg);
    free(buf);
    if (rc != PF_RC_OK) {
        int n = snprintf(err, PF_ERR_LEN, "%s: ", path);
        if (n < 0 || n >= PF_ERR_LEN) n = 0;
        snprintf(err + n, PF_ERR_LEN - (size_t)n, "%s", msg);
    }
    return rc;
fail:
    free(buf);
    fclose(fp);
    return rc;
}

const pf_json *pf_json_root(const pf_json_doc *d) { return &d->root; }

const pf_json *pf_json_get(const pf_json *v, const char *key) {
    if (!v || v->type != PF_JSON_OBJECT) return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const pf_json_member *m = &v->u.obj.members[i];
        if (m->key_len == n && memcmp(m->key, key, n) == 0) return &m->val;
    }
    return NULL;
}

bool pf_json_str_eq(const pf_json *v, const char *s) {
    if (!v || v->type != PF_JSON_STRING) return false;
    size_t n = strlen(s);
    return v->u.str.len == n && memcmp(v->u.str.s, s, n) == 0;
}

const char *pf_json_type_name(pf_json_type t) {
    static const char *names[] = {"null", "boolean", "number", "string", "array", "object"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}
