/* The pattern parser (grammar/regex_parse.h): ECMA-262 syntax, the subset both ECMA-262 and
 * Python's `re` read the same way; where they differ the construct is refused or its set narrowed
 * to the characters both accept (grammar/regex.h). */
#include "grammar/regex_parse.h"
#include "formats/grow.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CP 0x10FFFFu

typedef struct {
    rx_tree *t;
    const uint8_t *p;
    size_t i, n;
    char *err;
    int depth;
} parser;

/* A set being built: ranges in any order, normalized when done. */
typedef struct {
    rx_range *r;
    size_t n, cap;
    int oom;
} cset;

static int perr(parser *ps, const char *fmt, ...) {
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ps->err[0] == 0) snprintf(ps->err, PF_ERR_LEN, "pattern: %s (at byte %zu)", msg, ps->i);
    return -1;
}

static void cs_add(cset *s, uint32_t lo, uint32_t hi) {
    rx_range *r = pf_grow(s->r, &s->cap, s->n + 1, sizeof *r, 8);
    if (!r) {
        s->oom = 1;
        return;
    }
    s->r = r;
    s->r[s->n++] = (rx_range){lo, hi};
}

static int range_cmp(const void *a, const void *b) {
    const rx_range *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Sorted, merged, surrogates removed. */
static void cs_normalize(cset *s) {
    qsort(s->r, s->n, sizeof *s->r, range_cmp);
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (m && s->r[i].lo <= s->r[m - 1].hi + 1) {
            if (s->r[i].hi > s->r[m - 1].hi) s->r[m - 1].hi = s->r[i].hi;
        } else {
            s->r[m++] = s->r[i];
        }
    }
    s->n = m;
    cset out = {0};
    for (size_t i = 0; i < s->n; i++) {
        uint32_t lo = s->r[i].lo, hi = s->r[i].hi;
        if (hi < 0xD800 || lo > 0xDFFF) cs_add(&out, lo, hi);
        else {
            if (lo < 0xD800) cs_add(&out, lo, 0xD7FF);
            if (hi > 0xDFFF) cs_add(&out, 0xE000, hi);
        }
    }
    free(s->r);
    *s = out;
}

/* The code points (of 0..MAX_CP) not in s (normalized). */
static void cs_complement(cset *s) {
    cs_normalize(s);
    cset out = {0};
    uint32_t next = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->r[i].lo > next) cs_add(&out, next, s->r[i].lo - 1);
        next = s->r[i].hi + 1;
    }
    if (next <= MAX_CP) cs_add(&out, next, MAX_CP);
    out.oom |= s->oom;
    free(s->r);
    *s = out;
    cs_normalize(s);
}

static void cs_add_list(cset *s, const uint32_t *pairs, int n) {
    for (int i = 0; i < n; i += 2) cs_add(s, pairs[i], pairs[i + 1]);
}

/* \d \w \s and their negations: the narrow set (both engines match each character of it) when
 * `wide` is 0, the wide set (either may) when 1. A positive class takes the narrow sets, a negated
 * class the complement of the wide ones. ECMA-262's \d \w are ASCII; Python's are Unicode (every
 * non-ASCII character counts as possibly one); the whitespace lists are the two engines'. */
static void cs_class_escape(cset *s, char e, int wide) {
    static const uint32_t digit[] = {'0', '9'}, word[] = {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'};
    static const uint32_t space_both[] = {0x09, 0x0D, 0x20, 0x20, 0xA0, 0xA0, 0x1680, 0x1680, 0x2000, 0x200A,
                                          0x2028, 0x2029, 0x202F, 0x202F, 0x205F, 0x205F, 0x3000, 0x3000};
    static const uint32_t space_either[] = {0x1C, 0x1F, 0x85, 0x85, 0xFEFF, 0xFEFF};
    cset x = {0};
    int neg = e == 'D' || e == 'W' || e == 'S';
    char k = (char)(e | 0x20);
    int w = neg ? !wide : wide; /* a negation's narrow set is the complement of the wide one */
    if (k == 'd') cs_add_list(&x, digit, 2);
    if (k == 'w') cs_add_list(&x, word, 8);
    if (k == 's') {
        cs_add_list(&x, space_both, 18);
        if (w) cs_add_list(&x, space_either, 6);
    }
    if (w && k != 's') cs_add(&x, 0x80, MAX_CP);
    if (neg) cs_complement(&x);
    for (size_t i = 0; i < x.n; i++) cs_add(s, x.r[i].lo, x.r[i].hi);
    s->oom |= x.oom;
    free(x.r);
}

static int32_t new_node(parser *ps, rx_kind kind) {
    rx_tree *t = ps->t;
    if (t->n_nodes >= RX_MAX_NODES) return perr(ps, "more than %d parts", RX_MAX_NODES);
    rx_node *n = pf_grow(t->nodes, &t->cap_nodes, t->n_nodes + 1, sizeof *n, 32);
    if (!n) {
        t->oom = 1;
        return perr(ps, "out of memory");
    }
    t->nodes = n;
    t->nodes[t->n_nodes] = (rx_node){kind, -1, -1, 0, 0, 0, 0};
    return (int32_t)t->n_nodes++;
}

/* A SET node of s (taken, normalized). */
static int32_t set_node(parser *ps, cset *s) {
    cs_normalize(s);
    int32_t id = s->oom ? perr(ps, "out of memory") : new_node(ps, RX_SET);
    rx_tree *t = ps->t;
    rx_range *r = id < 0 ? NULL : pf_grow(t->ranges, &t->cap_ranges, t->n_ranges + s->n, sizeof *r, 64);
    if (id >= 0 && !r) {
        t->oom = 1;
        id = perr(ps, "out of memory");
    }
    if (id >= 0) {
        t->ranges = r;
        memcpy(r + t->n_ranges, s->r, s->n * sizeof *r);
        t->nodes[id].set_off = (int32_t)t->n_ranges;
        t->nodes[id].set_n = (int32_t)s->n;
        t->n_ranges += s->n;
    }
    free(s->r);
    return id;
}

/* One UTF-8 character of the pattern text. */
static int read_char(parser *ps, uint32_t *cp) {
    const uint8_t *p = ps->p + ps->i;
    size_t left = ps->n - ps->i;
    uint32_t c = p[0];
    int k = c < 0x80 ? 0 : c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : -1;
    if (k < 0 || (size_t)k >= left) return perr(ps, "not UTF-8");
    c = k ? c & (0x3F >> k) : c;
    for (int j = 1; j <= k; j++) {
        if ((p[j] & 0xC0) != 0x80) return perr(ps, "not UTF-8");
        c = c << 6 | (p[j] & 0x3F);
    }
    static const uint32_t least[] = {0, 0x80, 0x800, 0x10000};
    if (c < least[k] || c > MAX_CP || (c >= 0xD800 && c <= 0xDFFF)) return perr(ps, "not UTF-8");
    ps->i += (size_t)k + 1;
    *cp = c;
    return 0;
}

static int hex_digits(parser *ps, int n, uint32_t *v) {
    *v = 0;
    for (int k = 0; k < n; k++) {
        if (ps->i >= ps->n) return perr(ps, "a \\x or \\u escape cut short");
        uint8_t h = ps->p[ps->i++];
        int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (d < 0) return perr(ps, "a \\x or \\u escape without hex digits");
        *v = *v * 16 + (uint32_t)d;
    }
    return 0;
}

/* The escape after a backslash (ps->i at the character after it): a single character into *cp
 * (returns 0) or a class escape (returns its letter: d D w W s S). in_class: inside [...], where
 * \b is a backspace. */
static int read_escape(parser *ps, uint32_t *cp, int in_class) {
    if (ps->i >= ps->n) return perr(ps, "a pattern ending in a backslash");
    uint8_t e = ps->p[ps->i];
    if (strchr("dDwWsS", e) && e) return ps->i++, e;
    if (e >= 0x80) return read_char(ps, cp);
    ps->i++;
    switch (e) {
    case 't': return *cp = 9, 0;
    case 'n': return *cp = 10, 0;
    case 'v': return *cp = 11, 0;
    case 'f': return *cp = 12, 0;
    case 'r': return *cp = 13, 0;
    case 'x': return hex_digits(ps, 2, cp);
    case 'u':
        if (ps->i < ps->n && ps->p[ps->i] == '{') return perr(ps, "\\u{...} is not supported");
        if (hex_digits(ps, 4, cp) < 0) return -1;
        if (*cp >= 0xD800 && *cp <= 0xDFFF) return perr(ps, "a \\u escape of a surrogate is not supported");
        return 0;
    case '0':
        if (ps->i < ps->n && ps->p[ps->i] >= '0' && ps->p[ps->i] <= '9') return perr(ps, "an octal escape is not supported");
        return *cp = 0, 0;
    case 'b':
        if (in_class) return *cp = 8, 0;
        return perr(ps, "\\b (a word boundary) is not supported");
    }
    if (e >= '1' && e <= '9') return perr(ps, "a backreference is not supported");
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z'))
        return perr(ps, "the escape \\%c is not supported", e);
    if (e < 0x20) return perr(ps, "a backslash before a control character");
    *cp = e; /* \. \/ \- \$ ...: the character itself */
    return 0;
}

/* [...] after the '['. */
static int32_t parse_class(parser *ps) {
    cset s = {0};
    int neg = 0, first = 1;
    if (ps->i < ps->n && ps->p[ps->i] == '^') neg = 1, ps->i++;
    for (;;) {
        if (ps->i >= ps->n) {
            free(s.r);
            return perr(ps, "a class without its ']'");
        }
        uint8_t c = ps->p[ps->i];
        if (c == ']' && first) {
            free(s.r);
            return perr(ps, "a class starting with ']' is not supported (ECMA-262 and Python read it differently)");
        }
        if (c == ']') {
            ps->i++;
            break;
        }
        first = 0;
        uint32_t lo;
        int k;
        if (c == '\\') {
            ps->i++;
            k = read_escape(ps, &lo, 1);
        } else {
            k = read_char(ps, &lo);
        }
        if (k < 0) {
            free(s.r);
            return -1;
        }
        int dash = ps->i + 1 < ps->n && ps->p[ps->i] == '-' && ps->p[ps->i + 1] != ']';
        if (k > 0) {
            if (dash) {
                free(s.r);
                return perr(ps, "a range with a class escape (\\%c) at an end is not supported", k);
            }
            cs_class_escape(&s, (char)k, neg);
            continue;
        }
        uint32_t hi = lo;
        if (dash) {
            ps->i++;
            int k2;
            if (ps->p[ps->i] == '\\') {
                ps->i++;
                k2 = read_escape(ps, &hi, 1);
            } else {
                k2 = read_char(ps, &hi);
            }
            if (k2 != 0 || hi < lo) {
                free(s.r);
                return k2 < 0 ? -1 : perr(ps, k2 ? "a range with a class escape at an end is not supported" : "a range out of order");
            }
        }
        cs_add(&s, lo, hi);
    }
    if (neg) cs_complement(&s);
    return set_node(ps, &s);
}

static int32_t parse_alt(parser *ps);

/* {n}, {n,}, {n,m} at ps->i: 1 with the bounds, 0 when the brace is a literal, -1 on error. */
static int parse_braces(parser *ps, int32_t *min, int32_t *max) {
    size_t i = ps->i + 1;
    long a = -1, b = -1;
    int comma = 0;
    for (; i < ps->n && ps->p[i] >= '0' && ps->p[i] <= '9'; i++) a = (a < 0 ? 0 : a) * 10 + (ps->p[i] - '0') > 100000 ? 100000 : (a < 0 ? 0 : a) * 10 + (ps->p[i] - '0');
    if (i < ps->n && ps->p[i] == ',') {
        comma = 1;
        for (i++; i < ps->n && ps->p[i] >= '0' && ps->p[i] <= '9'; i++) b = (b < 0 ? 0 : b) * 10 + (ps->p[i] - '0') > 100000 ? 100000 : (b < 0 ? 0 : b) * 10 + (ps->p[i] - '0');
    }
    if (i >= ps->n || ps->p[i] != '}') return 0;
    if (a < 0) return comma ? perr(ps, "{,n} is not supported (ECMA-262 and Python read it differently)") : 0;
    if (!comma) b = a;
    if (a > RX_MAX_REPEAT || b > RX_MAX_REPEAT) return perr(ps, "a repetition bound above %d", RX_MAX_REPEAT);
    if (comma && b >= 0 && b < a) return perr(ps, "a repetition {n,m} with m below n");
    *min = (int32_t)a;
    *max = comma && b < 0 ? -1 : (int32_t)b;
    ps->i = i + 1;
    return 1;
}

/* A quantifier after atom (or none): the REP node, or atom itself. */
static int32_t parse_quant(parser *ps, int32_t atom, int assertion) {
    if (ps->i >= ps->n) return atom;
    uint8_t c = ps->p[ps->i];
    int32_t min, max;
    if (c == '*') min = 0, max = -1, ps->i++;
    else if (c == '+') min = 1, max = -1, ps->i++;
    else if (c == '?') min = 0, max = 1, ps->i++;
    else if (c == '{') {
        int r = parse_braces(ps, &min, &max);
        if (r <= 0) return r < 0 ? -1 : atom;
    } else {
        return atom;
    }
    if (assertion) return perr(ps, "a quantifier on an anchor");
    if (ps->i < ps->n && ps->p[ps->i] == '?') ps->i++; /* lazy: the same language */
    if (ps->i < ps->n && strchr("*+?{", ps->p[ps->i]) && ps->p[ps->i]) {
        int32_t a, b;
        size_t at = ps->i;
        if (ps->p[at] != '{' || parse_braces(ps, &a, &b) != 0) return perr(ps, "a quantifier after a quantifier");
    }
    int32_t r = new_node(ps, RX_REP);
    if (r < 0) return -1;
    ps->t->nodes[r].child = atom;
    ps->t->nodes[r].min = min;
    ps->t->nodes[r].max = max;
    return r;
}

/* A group's body, at the '(' (a "(?:" group is the same); the node, or -1. */
static int32_t parse_group(parser *ps) {
    ps->i++;
    if (ps->i < ps->n && ps->p[ps->i] == '?') {
        if (ps->i + 1 < ps->n && ps->p[ps->i + 1] == ':') ps->i += 2;
        else return perr(ps, "lookaround and named groups are not supported");
    }
    if (++ps->depth > 200) return perr(ps, "groups nested too deep");
    int32_t atom = parse_alt(ps);
    ps->depth--;
    if (atom < 0) return -1;
    if (ps->i >= ps->n || ps->p[ps->i] != ')') return perr(ps, "a group without its ')'");
    ps->i++;
    return atom;
}

/* A set atom: '.', an escape (at the backslash) or one literal character; the node, or -1. */
static int32_t parse_set_atom(parser *ps, uint8_t c) {
    cset s = {0};
    uint32_t cp;
    if (c == '.') {
        ps->i++;
        cs_add(&s, '\n', '\n'), cs_add(&s, '\r', '\r'), cs_add(&s, 0x2028, 0x2029);
        cs_complement(&s);
    } else if (c == '\\') {
        ps->i++;
        int k = read_escape(ps, &cp, 0);
        if (k < 0) return -1;
        if (k) cs_class_escape(&s, (char)k, 0);
        else cs_add(&s, cp, cp);
    } else {
        if (c == '{') {
            int32_t a, b;
            int r = parse_braces(ps, &a, &b);
            if (r) return r < 0 ? -1 : perr(ps, "a quantifier with nothing to repeat");
        }
        if (read_char(ps, &cp) < 0) return -1;
        cs_add(&s, cp, cp);
    }
    return set_node(ps, &s);
}

/* One atom with its quantifier; -2 at the end of a sequence ('|', ')' or the end). */
static int32_t parse_term(parser *ps) {
    if (ps->i >= ps->n) return -2;
    uint8_t c = ps->p[ps->i];
    int32_t atom;
    switch (c) {
    case '|':
    case ')': return -2;
    case '*':
    case '+':
    case '?': return perr(ps, "a quantifier with nothing to repeat");
    case '^':
    case '$':
        ps->i++;
        atom = new_node(ps, c == '^' ? RX_BOL : RX_EOL);
        return atom < 0 ? -1 : parse_quant(ps, atom, 1);
    case '(': atom = parse_group(ps); break;
    case '[':
        ps->i++;
        atom = parse_class(ps);
        break;
    default: atom = parse_set_atom(ps, c);
    }
    return atom < 0 ? -1 : parse_quant(ps, atom, 0);
}

/* A sequence of terms: a CAT node (no children: the empty string). */
static int32_t parse_cat(parser *ps) {
    int32_t cat = new_node(ps, RX_CAT), last = -1;
    if (cat < 0) return -1;
    for (;;) {
        int32_t x = parse_term(ps);
        if (x == -2) return cat;
        if (x < 0) return -1;
        if (last < 0) ps->t->nodes[cat].child = x;
        else ps->t->nodes[last].next = x;
        last = x;
    }
}

static int32_t parse_alt(parser *ps) {
    int32_t alt = new_node(ps, RX_ALT), last = -1;
    if (alt < 0) return -1;
    for (;;) {
        int32_t x = parse_cat(ps);
        if (x < 0) return -1;
        if (last < 0) ps->t->nodes[alt].child = x;
        else ps->t->nodes[last].next = x;
        last = x;
        if (ps->i >= ps->n || ps->p[ps->i] != '|') return alt;
        ps->i++;
    }
}

int32_t rx_parse(rx_tree *t, const char *p, size_t n, char err[PF_ERR_LEN]) {
    parser ps = {t, (const uint8_t *)p, 0, n, err, 0};
    err[0] = 0;
    int32_t root = parse_alt(&ps);
    if (root >= 0 && ps.i < n) return perr(&ps, "a ')' without its '('");
    return root;
}

void rx_tree_free(rx_tree *t) {
    free(t->nodes);
    free(t->ranges);
    memset(t, 0, sizeof *t);
}
