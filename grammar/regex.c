/* Patterns to a byte DFA (grammar/regex.h): the syntax tree (grammar/regex_parse.h) becomes a
 * Thompson NFA over UTF-8 bytes (a code point range as the byte ranges of its encodings), each
 * pattern wrapped as `[any]*(pattern)[any]*` since JSON Schema's patterns are unanchored; the
 * subset construction gives the DFA, with `^` followed only at the start and `$` only at the end. */
#include "grammar/regex.h"
#include "grammar/regex_parse.h"
#include "formats/errf.h"
#include "formats/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

enum { N_EPS, N_BYTE, N_BOL, N_EOL };
#define MAX_NFA 200000 /* NFA states of one automaton */

typedef struct {
    uint8_t type, lo, hi;
    uint8_t comp;
    int32_t out1, out2;
} nstate;

typedef struct {
    nstate *s;
    size_t n, cap;
    int comp, oom, too_big;
} nfa;

struct pf_regex {
    int n_comp;
    int n_states, n_classes;
    uint8_t class_of[256];
    uint8_t class_weight[256]; /* 1 when the class's bytes start a character */
    uint8_t same[256];         /* per class: the first class whose column of next is the same */
    int32_t *next;             /* n_states x n_classes, -1 dead */
    uint32_t *mask;            /* per state */
    uint32_t *masks;           /* distinct masks */
    int n_masks;
    uint8_t *final;            /* after pf_regex_accept */
    int32_t start;
    /* lengths: bounded (max_chars finite): ok bits [state][0..L]; unbounded: longest[state] (the
     * most characters to an accepting state, capped at min_chars + 1) */
    int64_t min_chars, max_chars, L;
    int64_t flat_from, flat_to; /* bounded: pf_regex_flat's lengths (flat_to < flat_from: none) */
    uint64_t *ok_bits;
    int64_t *longest;
};

/* ---- NFA ---- */

static int32_t nadd(nfa *a, int type, int lo, int hi, int32_t out1, int32_t out2) {
    if (a->n >= MAX_NFA) return a->too_big = 1, -1;
    nstate *s = pf_grow(a->s, &a->cap, a->n + 1, sizeof *s, 256);
    if (!s) return a->oom = 1, -1;
    a->s = s;
    a->s[a->n] = (nstate){(uint8_t)type, (uint8_t)lo, (uint8_t)hi, (uint8_t)a->comp, out1, out2};
    return (int32_t)a->n++;
}

typedef struct {
    int32_t start, end; /* end: an N_EPS whose out1 is to be set */
} frag;

static int enc_utf8(uint32_t c, uint8_t *b) {
    if (c < 0x80) return b[0] = (uint8_t)c, 1;
    if (c < 0x800) return b[0] = (uint8_t)(0xC0 | c >> 6), b[1] = (uint8_t)(0x80 | (c & 0x3F)), 2;
    if (c < 0x10000)
        return b[0] = (uint8_t)(0xE0 | c >> 12), b[1] = (uint8_t)(0x80 | (c >> 6 & 0x3F)), b[2] = (uint8_t)(0x80 | (c & 0x3F)), 3;
    b[0] = (uint8_t)(0xF0 | c >> 18), b[1] = (uint8_t)(0x80 | (c >> 12 & 0x3F));
    b[2] = (uint8_t)(0x80 | (c >> 6 & 0x3F)), b[3] = (uint8_t)(0x80 | (c & 0x3F));
    return 4;
}

/* The branch for the code points lo..hi of one encoded length, every byte a range: a chain from a
 * new split state before *alt (the alternatives so far) to end. */
static void utf8_seq(nfa *a, uint32_t lo, uint32_t hi, int32_t end, int32_t *alt) {
    int n = lo < 0x80 ? 1 : lo < 0x800 ? 2 : lo < 0x10000 ? 3 : 4;
    for (int i = 1; i < n; i++) { /* split until each byte's range is independent of the others */
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) == (hi & ~m)) continue;
        if (lo & m) {
            utf8_seq(a, lo, lo | m, end, alt);
            utf8_seq(a, (lo | m) + 1, hi, end, alt);
            return;
        }
        if ((hi & m) != m) {
            utf8_seq(a, lo, (hi & ~m) - 1, end, alt);
            utf8_seq(a, hi & ~m, hi, end, alt);
            return;
        }
    }
    uint8_t bl[4], bh[4];
    enc_utf8(lo, bl);
    enc_utf8(hi, bh);
    int32_t next = end;
    for (int k = n - 1; k >= 0 && next >= 0; k--) next = nadd(a, N_BYTE, bl[k], bh[k], next, -1);
    if (next >= 0) *alt = *alt < 0 ? next : nadd(a, N_EPS, 0, 0, next, *alt);
}

static frag gen_set(nfa *a, const rx_range *r, int n) {
    frag f = {-1, nadd(a, N_EPS, 0, 0, -1, -1)};
    int32_t alt = -1;
    static const uint32_t bound[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
    for (int i = 0; i < n && f.end >= 0; i++)
        for (uint32_t lo = r[i].lo, b = 0; b < 4 && lo <= r[i].hi; b++) {
            if (lo > bound[b]) continue;
            uint32_t hi = r[i].hi < bound[b] ? r[i].hi : bound[b];
            utf8_seq(a, lo, hi, f.end, &alt);
            lo = hi + 1;
        }
    f.start = alt >= 0 ? alt : nadd(a, N_EPS, 0, 0, -1, -1); /* an empty set: a state going nowhere */
    return f;
}

static frag gen(nfa *a, const rx_tree *t, int32_t id);

/* x{min,max}: min copies, then max - min optional ones (or a loop when unbounded). */
static frag gen_rep(nfa *a, const rx_tree *t, const rx_node *nd) {
    frag f = {nadd(a, N_EPS, 0, 0, -1, -1), -1};
    f.end = f.start;
    for (int32_t i = 0; i < nd->min && f.end >= 0; i++) {
        frag x = gen(a, t, nd->child);
        if (x.start < 0) return x;
        a->s[f.end].out1 = x.start;
        f.end = x.end;
    }
    if (f.end < 0) return f;
    if (nd->max < 0) {
        frag x = gen(a, t, nd->child);
        int32_t out = nadd(a, N_EPS, 0, 0, -1, -1), loop = nadd(a, N_EPS, 0, 0, x.start, out);
        if (x.start < 0 || loop < 0) return (frag){-1, -1};
        a->s[x.end].out1 = loop;
        a->s[f.end].out1 = loop;
        f.end = out;
        return f;
    }
    int32_t out = nadd(a, N_EPS, 0, 0, -1, -1);
    for (int32_t i = nd->min; i < nd->max && out >= 0; i++) {
        frag x = gen(a, t, nd->child);
        int32_t split = nadd(a, N_EPS, 0, 0, x.start, out);
        if (x.start < 0 || split < 0) return (frag){-1, -1};
        a->s[f.end].out1 = split;
        f.end = x.end;
    }
    if (out >= 0 && f.end >= 0) a->s[f.end].out1 = out;
    f.end = out;
    return f;
}

static frag gen(nfa *a, const rx_tree *t, int32_t id) {
    const rx_node *nd = &t->nodes[id];
    frag f = {-1, -1};
    switch (nd->kind) {
    case RX_SET: return gen_set(a, t->ranges + nd->set_off, nd->set_n);
    case RX_BOL:
    case RX_EOL:
        f.end = nadd(a, N_EPS, 0, 0, -1, -1);
        f.start = f.end < 0 ? -1 : nadd(a, nd->kind == RX_BOL ? N_BOL : N_EOL, 0, 0, f.end, -1);
        return f;
    case RX_REP: return gen_rep(a, t, nd);
    case RX_CAT:
        f.start = f.end = nadd(a, N_EPS, 0, 0, -1, -1);
        for (int32_t c = nd->child; c >= 0 && f.end >= 0; c = t->nodes[c].next) {
            frag x = gen(a, t, c);
            if (x.start < 0) return x;
            a->s[f.end].out1 = x.start;
            f.end = x.end;
        }
        return f;
    default: /* RX_ALT */
        f.end = nadd(a, N_EPS, 0, 0, -1, -1);
        for (int32_t c = nd->child; c >= 0 && f.end >= 0; c = t->nodes[c].next) {
            frag x = gen(a, t, c);
            if (x.start < 0) return x;
            a->s[x.end].out1 = f.end;
            f.start = f.start < 0 ? x.start : nadd(a, N_EPS, 0, 0, x.start, f.start);
        }
        return f;
    }
}

/* One component: any*, the pattern, then a final state with its own any* loop (once there, every
 * longer string matches too). Its start and final state. */
static int gen_component(nfa *a, const rx_tree *t, int32_t root, int32_t *start, int32_t *final) {
    static const rx_range any[] = {{0, 0xD7FF}, {0xE000, 0x10FFFF}};
    frag pre = gen_set(a, any, 2), p = gen(a, t, root), post = gen_set(a, any, 2);
    if (pre.start < 0 || p.start < 0 || post.start < 0) return -1;
    int32_t s0 = nadd(a, N_EPS, 0, 0, pre.start, p.start), f = nadd(a, N_EPS, 0, 0, post.start, -1);
    if (s0 < 0 || f < 0) return -1;
    a->s[pre.end].out1 = s0;
    a->s[p.end].out1 = f;
    a->s[post.end].out1 = f;
    *start = s0;
    *final = f;
    return 0;
}

/* ---- subset construction ---- */

typedef struct {
    const nfa *a;
    int n_comp;
    int32_t start[PF_REGEX_MAX_PATTERNS], final[PF_REGEX_MAX_PATTERNS];
    int32_t *fclos[PF_REGEX_MAX_PATTERNS]; /* each final state's closure */
    int n_fclos[PF_REGEX_MAX_PATTERNS];
    uint32_t *mark, stamp;
    int32_t *stack, *buf, *tmp;
    /* the DFA states' sets */
    int32_t *pool;
    size_t n_pool, cap_pool;
    size_t *set_off;
    int32_t *set_n;
    size_t cap_sets;
    int32_t *table; /* open addressing: state index + 1, 0 empty */
    size_t cap_table;
    int oom;
} builder;

/* The states reached from seeds[0..n) through empty moves (`^` ones when bol, `$` ones when eol),
 * into b->buf: the byte states, `$` states and final states (what a set needs). Returns the count. */
static int closure(builder *b, const int32_t *seeds, int n, int bol, int eol) {
    const nstate *s = b->a->s;
    int top = 0, out = 0;
    b->stamp++;
    for (int i = 0; i < n; i++) b->stack[top++] = seeds[i];
    while (top) {
        int32_t x = b->stack[--top];
        if (x < 0 || b->mark[x] == b->stamp) continue;
        b->mark[x] = b->stamp;
        const nstate *st = &s[x];
        int keep = st->type == N_BYTE || st->type == N_EOL || x == b->final[st->comp];
        if (keep) b->buf[out++] = x;
        if (st->type == N_EPS) b->stack[top++] = st->out1, b->stack[top++] = st->out2;
        else if ((st->type == N_BOL && bol) || (st->type == N_EOL && eol)) b->stack[top++] = st->out1;
    }
    return out;
}

/* Sorts the state ids x[0..n) (non-negative), tmp[0..n) as room: insertion for a few, else a
 * radix sort a byte at a time up to the largest id's (a closure is sorted for every state and
 * byte class, so this is most of a large automaton's construction). */
static void sort_ids(int32_t *x, int n, int32_t *tmp) {
    if (n <= 24) {
        for (int i = 1; i < n; i++) {
            int32_t v = x[i];
            int j = i;
            for (; j > 0 && x[j - 1] > v; j--) x[j] = x[j - 1];
            x[j] = v;
        }
        return;
    }
    uint32_t most = 0;
    for (int i = 0; i < n; i++) most |= (uint32_t)x[i];
    for (int shift = 0; shift < 32 && most >> shift; shift += 8) {
        uint32_t count[257] = {0};
        for (int i = 0; i < n; i++) count[((uint32_t)x[i] >> shift & 0xFF) + 1]++;
        for (int k = 1; k <= 256; k++) count[k] += count[k - 1];
        for (int i = 0; i < n; i++) tmp[count[(uint32_t)x[i] >> shift & 0xFF]++] = x[i];
        memcpy(x, tmp, (size_t)n * sizeof *x);
    }
}

/* A component whose final state is in the set matches every longer string: its part of the set
 * becomes the final state's closure alone, so such sets coincide. */
static int collapse(builder *b, int n) {
    uint32_t done = 0;
    for (int i = 0; i < n; i++) {
        const nstate *st = &b->a->s[b->buf[i]];
        if (b->buf[i] == b->final[st->comp]) done |= 1u << st->comp;
    }
    if (!done) return n;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!(done >> b->a->s[b->buf[i]].comp & 1)) b->buf[m++] = b->buf[i];
    for (int c = 0; c < b->n_comp; c++)
        if (done >> c & 1)
            for (int k = 0; k < b->n_fclos[c]; k++) b->buf[m++] = b->fclos[c][k];
    return m;
}

static uint64_t hash_set(const int32_t *s, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) h = (h ^ (uint32_t)s[i]) * 1099511628211ull;
    return h ^ (uint64_t)n;
}

/* Mask of the components whose final state the set reaches at the end of the string. */
static uint32_t set_mask(builder *b, const int32_t *set, int n, int initial) {
    int32_t *seeds = malloc((size_t)(n ? n : 1) * sizeof *seeds);
    if (!seeds) return b->oom = 1, 0;
    memcpy(seeds, set, (size_t)n * sizeof *seeds);
    int m = closure(b, seeds, n, initial, 1);
    free(seeds);
    uint32_t mask = 0;
    for (int i = 0; i < m; i++) {
        const nstate *st = &b->a->s[b->buf[i]];
        if (b->buf[i] == b->final[st->comp]) mask |= 1u << st->comp;
    }
    return mask;
}

/* The state of the set in b->buf[0..n) (sorted), added when new; -1 past the cap. */
static int32_t intern(builder *b, pf_regex *re, int n, int initial) {
    uint64_t h = hash_set(b->buf, n);
    size_t slot = h & (b->cap_table - 1);
    for (; !initial && b->table[slot]; slot = (slot + 1) & (b->cap_table - 1)) {
        int32_t q = b->table[slot] - 1;
        if (b->set_n[q] == n && !memcmp(b->pool + b->set_off[q], b->buf, (size_t)n * sizeof *b->buf)) return q;
    }
    if (re->n_states >= PF_REGEX_MAX_STATES) return -1;
    int32_t q = re->n_states;
    int32_t *pool = pf_grow(b->pool, &b->cap_pool, b->n_pool + (size_t)n, sizeof *pool, 1024);
    size_t cap = b->cap_sets;
    size_t *off = pf_grow(b->set_off, &cap, (size_t)q + 1, sizeof *off, 64);
    if (off) b->set_off = off;
    cap = b->cap_sets;
    int32_t *sn = pf_grow(b->set_n, &cap, (size_t)q + 1, sizeof *sn, 64);
    if (sn) b->set_n = sn;
    size_t cap_m = b->cap_sets;
    uint32_t *mk = pf_grow(re->mask, &cap_m, (size_t)q + 1, sizeof *mk, 64);
    if (mk) re->mask = mk;
    size_t cap_x = b->cap_sets * (size_t)re->n_classes;
    int32_t *nx = pf_grow(re->next, &cap_x, ((size_t)q + 1) * (size_t)re->n_classes, sizeof *nx, 64 * (size_t)re->n_classes);
    if (nx) re->next = nx;
    if (!pool || !off || !sn || !mk || !nx) return b->oom = 1, -1;
    b->cap_sets = cap;
    b->pool = pool;
    memcpy(pool + b->n_pool, b->buf, (size_t)n * sizeof *pool);
    b->set_off[q] = b->n_pool;
    b->set_n[q] = n;
    b->n_pool += (size_t)n;
    re->mask[q] = 0; /* set when the state is expanded */
    re->n_states++;
    if (!initial) b->table[slot] = q + 1;
    if ((size_t)re->n_states * 2 > b->cap_table) { /* rehash */
        int32_t *t = calloc(b->cap_table * 2, sizeof *t);
        if (!t) return b->oom = 1, -1;
        for (int32_t s = 1; s < re->n_states; s++) {
            size_t k = hash_set(b->pool + b->set_off[s], b->set_n[s]) & (b->cap_table * 2 - 1);
            while (t[k]) k = (k + 1) & (b->cap_table * 2 - 1);
            t[k] = s + 1;
        }
        free(b->table);
        b->table = t;
        b->cap_table *= 2;
    }
    return q;
}

/* Byte classes: bytes no range of the NFA tells apart. */
static void byte_classes(const nfa *a, pf_regex *re) {
    uint8_t cut[257] = {0};
    cut[0] = cut[0x80] = cut[0xC0] = 1;
    for (size_t i = 0; i < a->n; i++)
        if (a->s[i].type == N_BYTE) cut[a->s[i].lo] = 1, cut[a->s[i].hi + 1] = 1;
    int c = -1;
    for (int x = 0; x < 256; x++) {
        if (cut[x]) c++;
        re->class_of[x] = (uint8_t)c;
        re->class_weight[c] = (x & 0xC0) != 0x80;
        re->same[c] = (uint8_t)c;
    }
    re->n_classes = c + 1;
}

static int build_dfa(builder *b, pf_regex *re, char *err) {
    const nfa *a = b->a;
    b->mark = calloc(a->n, sizeof *b->mark);
    b->stack = malloc(2 * a->n * sizeof *b->stack + 16);
    b->buf = malloc(a->n * sizeof *b->buf + 16);
    b->tmp = malloc(a->n * sizeof *b->tmp + 16);
    b->cap_table = 1024;
    b->table = calloc(b->cap_table, sizeof *b->table);
    int32_t *seeds = malloc(a->n * sizeof *seeds + 16);
    if (!b->mark || !b->stack || !b->buf || !b->tmp || !b->table || !seeds) {
        free(seeds);
        return b->oom = 1, pf_errf(err, "pattern: out of memory");
    }
    for (int c = 0; c < b->n_comp; c++) {
        int n = closure(b, &b->final[c], 1, 0, 0);
        b->fclos[c] = malloc((size_t)n * sizeof **b->fclos + 4);
        if (!b->fclos[c]) {
            free(seeds);
            return b->oom = 1, pf_errf(err, "pattern: out of memory");
        }
        memcpy(b->fclos[c], b->buf, (size_t)n * sizeof *b->buf);
        b->n_fclos[c] = n;
    }
    int n = closure(b, b->start, b->n_comp, 1, 0);
    n = collapse(b, n);
    sort_ids(b->buf, n, b->tmp);
    if (intern(b, re, n, 1) < 0) {
        free(seeds);
        return pf_errf(err, "pattern: out of memory");
    }
    int rc = 0;
    for (int32_t q = 0; q < re->n_states && !rc; q++) {
        re->mask[q] = set_mask(b, b->pool + b->set_off[q], b->set_n[q], q == 0);
        for (int cls = 0; cls < re->n_classes && !rc; cls++) {
            int byte = 0;
            while (re->class_of[byte] != cls) byte++;
            int k = 0;
            const int32_t *set = b->pool + b->set_off[q];
            for (int32_t i = 0; i < b->set_n[q]; i++) {
                const nstate *st = &a->s[set[i]];
                if (st->type == N_BYTE && byte >= st->lo && byte <= st->hi) seeds[k++] = st->out1;
            }
            int m = k ? closure(b, seeds, k, 0, 0) : 0;
            m = collapse(b, m);
            sort_ids(b->buf, m, b->tmp);
            int32_t t = m ? intern(b, re, m, 0) : -1;
            if (m && t < 0) rc = b->oom ? pf_errf(err, "pattern: out of memory")
                                        : pf_errf(err, "pattern: more than %d automaton states", PF_REGEX_MAX_STATES);
            re->next[(size_t)q * (size_t)re->n_classes + (size_t)cls] = t;
        }
        if (b->oom && !rc) rc = pf_errf(err, "pattern: out of memory");
    }
    free(seeds);
    return rc;
}

static void builder_free(builder *b) {
    free(b->mark);
    free(b->stack);
    free(b->buf);
    free(b->tmp);
    free(b->pool);
    free(b->set_off);
    free(b->set_n);
    free(b->table);
    for (int c = 0; c < b->n_comp; c++) free(b->fclos[c]);
}

static int mask_cmp(const void *x, const void *y) {
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

static int distinct_masks(pf_regex *re) {
    re->masks = malloc((size_t)re->n_states * sizeof *re->masks);
    if (!re->masks) return -1;
    memcpy(re->masks, re->mask, (size_t)re->n_states * sizeof *re->masks);
    qsort(re->masks, (size_t)re->n_states, sizeof *re->masks, mask_cmp);
    int m = 0;
    for (int i = 0; i < re->n_states; i++)
        if (!m || re->masks[m - 1] != re->masks[i]) re->masks[m++] = re->masks[i];
    re->n_masks = m;
    return 0;
}

pf_regex *pf_regex_compile(const char *const *pats, const size_t *lens, int n, char err[PF_ERR_LEN], int *oom) {
    int dummy;
    if (!oom) oom = &dummy;
    *oom = 0;
    if (n < 1 || n > PF_REGEX_MAX_PATTERNS) return pf_errf(err, "pattern: %d patterns in one automaton", n), NULL;
    nfa a = {0};
    builder b = {.a = &a, .n_comp = n};
    rx_tree t = {0};
    pf_regex *re = calloc(1, sizeof *re);
    int rc = re ? 0 : pf_errf(err, "pattern: out of memory");
    for (int i = 0; i < n && !rc; i++) {
        memset(&t, 0, sizeof t);
        int32_t root = rx_parse(&t, pats[i], lens[i], err);
        a.comp = i;
        if (root < 0) rc = -1, *oom = t.oom;
        else if (gen_component(&a, &t, root, &b.start[i], &b.final[i]) < 0)
            rc = a.oom ? pf_errf(err, "pattern: out of memory") : pf_errf(err, "pattern: more than %d automaton parts", MAX_NFA);
        rx_tree_free(&t);
    }
    if (!rc) {
        re->n_comp = n;
        byte_classes(&a, re);
        rc = build_dfa(&b, re, err);
        if (!rc && distinct_masks(re) < 0) b.oom = 1, rc = pf_errf(err, "pattern: out of memory");
    }
    *oom |= a.oom || b.oom;
    builder_free(&b);
    free(a.s);
    if (rc) {
        pf_regex_free(re);
        return NULL;
    }
    return re;
}

void pf_regex_free(pf_regex *re) {
    if (!re) return;
    free(re->next);
    free(re->mask);
    free(re->masks);
    free(re->final);
    free(re->ok_bits);
    free(re->longest);
    free(re);
}

int pf_regex_masks(const pf_regex *re, const uint32_t **masks) {
    *masks = re->masks;
    return re->n_masks;
}

uint32_t pf_regex_match_mask(const pf_regex *re, const uint8_t *p, size_t n) {
    int32_t q = 0;
    for (size_t i = 0; i < n && q >= 0; i++) q = re->next[(size_t)q * (size_t)re->n_classes + re->class_of[p[i]]];
    return q >= 0 ? re->mask[q] : 0;
}

int32_t pf_regex_start(const pf_regex *re) { return re->start; }

int32_t pf_regex_step(const pf_regex *re, int32_t state, uint8_t c) {
    return state < 0 ? -1 : re->next[(size_t)state * (size_t)re->n_classes + re->class_of[c]];
}

int pf_regex_class(const pf_regex *re, uint8_t c) { return re->same[re->class_of[c]]; }

/* Classes whose columns of the final table are equal move every state alike: same[] maps each to
 * the first such (columns hashed, equal hashes compared). */
static void same_classes(pf_regex *re) {
    int S = re->n_states, C = re->n_classes;
    uint64_t h[256];
    for (int c = 0; c < C; c++) {
        h[c] = 0x9E3779B97F4A7C15ull;
        for (int32_t q = 0; q < S; q++) h[c] = (h[c] ^ (uint64_t)(uint32_t)re->next[(size_t)q * (size_t)C + (size_t)c]) * 0x100000001B3ull;
        re->same[c] = (uint8_t)c;
        for (int d = 0; d < c && re->same[c] == c; d++) {
            if (re->same[d] != d || h[d] != h[c]) continue;
            int32_t q = 0;
            while (q < S && re->next[(size_t)q * (size_t)C + (size_t)c] == re->next[(size_t)q * (size_t)C + (size_t)d]) q++;
            if (q == S) re->same[c] = (uint8_t)d;
        }
    }
}

int pf_regex_final(const pf_regex *re, int32_t state) { return state >= 0 && re->final && re->final[state]; }
uint32_t pf_regex_state_mask(const pf_regex *re, int32_t state) { return re->mask[state]; }
int pf_regex_states(const pf_regex *re) { return re->n_states; }

/* ---- accepting states, and the lengths each state can still reach ---- */

/* Edges reversed, one per (from, to, weight): into[t] lists them from off[t] to off[t + 1]. The
 * weight is 1 for a byte that starts a character, 0 for a continuation byte. */
typedef struct {
    int32_t *off, *from;
    uint8_t *w;
} redges;

static int reverse_edges(const pf_regex *re, redges *r) {
    int S = re->n_states, C = re->n_classes;
    int32_t *seen = malloc((size_t)S * 2 * sizeof *seen), *fill = calloc((size_t)S + 1, sizeof *fill);
    r->off = calloc((size_t)S + 1, sizeof *r->off);
    if (!seen || !fill || !r->off) {
        free(seen);
        free(fill);
        return -1;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < 2 * S; i++) seen[i] = -1;
        for (int32_t q = 0; q < S; q++)
            for (int c = 0; c < C; c++) {
                int32_t t = re->next[(size_t)q * (size_t)C + (size_t)c];
                int w = re->class_weight[c];
                if (t < 0 || seen[t * 2 + w] == q) continue;
                seen[t * 2 + w] = q;
                if (pass == 0) r->off[t + 1]++;
                else {
                    int32_t k = r->off[t] + fill[t]++;
                    r->from[k] = q;
                    r->w[k] = (uint8_t)w;
                }
            }
        if (pass == 0) {
            for (int i = 0; i < S; i++) r->off[i + 1] += r->off[i];
            r->from = malloc((size_t)r->off[S] * sizeof *r->from + 4);
            r->w = malloc((size_t)r->off[S] + 1);
            if (!r->from || !r->w) break;
        }
    }
    free(seen);
    free(fill);
    return r->from && r->w ? 0 : -1;
}

static void redges_free(redges *r) {
    free(r->off);
    free(r->from);
    free(r->w);
}

/* States that reach a final one; edges into the others removed. */
static int prune_dead(pf_regex *re, const redges *r) {
    int S = re->n_states;
    uint8_t *live = calloc((size_t)S, 1);
    int32_t *stack = malloc((size_t)S * sizeof *stack + 4);
    if (!live || !stack) {
        free(live);
        free(stack);
        return -1;
    }
    int top = 0;
    for (int32_t q = 0; q < S; q++)
        if (re->final[q]) live[q] = 1, stack[top++] = q;
    while (top) {
        int32_t t = stack[--top];
        for (int32_t k = r->off[t]; k < r->off[t + 1]; k++)
            if (!live[r->from[k]]) live[r->from[k]] = 1, stack[top++] = r->from[k];
    }
    for (size_t i = 0; i < (size_t)S * (size_t)re->n_classes; i++)
        if (re->next[i] >= 0 && !live[re->next[i]]) re->next[i] = -1;
    re->start = live[0] ? 0 : -1;
    free(live);
    free(stack);
    return 0;
}

static void set_bit64(uint64_t *b, size_t i) { b[i >> 6] |= 1ull << (i & 63); }
static int get_bit64(const uint64_t *b, size_t i) { return (int)(b[i >> 6] >> (i & 63) & 1); }

/* Bounded lengths: F_k (the states with a way to a final state of exactly k more characters) for
 * k = 0..L, then ok[q][u] = some k with min <= u + k <= max. */
static int bounded_lengths(pf_regex *re, const redges *r, char *err) {
    size_t S = (size_t)re->n_states, L = (size_t)re->L, W = (S + 63) / 64;
    if ((L + 1) * S > (1u << 24) || (L + 1) * (size_t)(r->off[S] + (int32_t)S) > 200000000u)
        return pf_errf(err, "pattern with maxLength %zu: too large a table of lengths", L);
    uint64_t *F = calloc((L + 1) * W, sizeof *F);
    int32_t *work = malloc(S * sizeof *work + 4), *cnt = malloc((L + 2) * sizeof *cnt);
    re->ok_bits = calloc(((L + 1) * S + 63) / 64, sizeof *re->ok_bits);
    if (!F || !work || !cnt || !re->ok_bits) {
        free(F), free(work), free(cnt);
        return pf_errf(err, "pattern: out of memory");
    }
    for (size_t k = 0; k <= L; k++) {
        uint64_t *fk = F + k * W;
        int top = 0;
        for (size_t q = 0; q < S; q++) {
            if (k == 0 && re->final[q]) set_bit64(fk, q), work[top++] = (int32_t)q;
        }
        if (k > 0) {
            const uint64_t *prev = F + (k - 1) * W;
            for (size_t t = 0; t < S; t++) {
                if (!get_bit64(prev, t)) continue;
                for (int32_t e = r->off[t]; e < r->off[t + 1]; e++)
                    if (r->w[e] == 1 && !get_bit64(fk, (size_t)r->from[e])) set_bit64(fk, (size_t)r->from[e]), work[top++] = r->from[e];
            }
        }
        while (top) { /* continuation bytes: the same count */
            int32_t t = work[--top];
            for (int32_t e = r->off[t]; e < r->off[t + 1]; e++)
                if (r->w[e] == 0 && !get_bit64(fk, (size_t)r->from[e])) set_bit64(fk, (size_t)r->from[e]), work[top++] = r->from[e];
        }
    }
    int64_t lo = re->min_chars;
    for (size_t q = 0; q < S; q++) {
        cnt[0] = 0;
        for (size_t k = 0; k <= L; k++) cnt[k + 1] = cnt[k] + get_bit64(F + k * W, q);
        for (size_t u = 0; u <= L; u++) {
            int64_t a = lo - (int64_t)u < 0 ? 0 : lo - (int64_t)u, b = (int64_t)(L - u);
            if (a <= b && cnt[b + 1] - cnt[a] > 0) set_bit64(re->ok_bits, q * (L + 1) + u);
        }
    }
    free(F), free(work), free(cnt);
    return 0;
}

/* Bounded: from max(min_chars, 1) on, the longest run of lengths where every state's ok bit stays
 * what it is at the first. */
static void flat_lengths(pf_regex *re) {
    size_t S = (size_t)re->n_states, L = (size_t)re->L;
    int64_t from = re->min_chars > 1 ? re->min_chars : 1, to = from;
    re->flat_from = from, re->flat_to = from - 1;
    if (from > re->L) return;
    for (; to < re->L; to++) {
        size_t q = 0;
        while (q < S && get_bit64(re->ok_bits, q * (L + 1) + (size_t)to + 1) == get_bit64(re->ok_bits, q * (L + 1) + (size_t)from))
            q++;
        if (q < S) break;
    }
    re->flat_to = to;
}

/* Unbounded: the most characters from each state to a final one, capped at min + 1 (a state that
 * reaches a loop gets the cap), by peeling states whose successors are all done. */
static int longest_lengths(pf_regex *re, const redges *r) {
    int S = re->n_states, C = re->n_classes;
    int64_t cap = re->min_chars + 1;
    int32_t *left = calloc((size_t)S, sizeof *left), *queue = malloc((size_t)S * sizeof *queue + 4);
    re->longest = malloc((size_t)S * sizeof *re->longest + 8);
    if (!left || !queue || !re->longest) {
        free(left), free(queue);
        return -1;
    }
    for (int32_t t = 0; t < S; t++)
        for (int32_t e = r->off[t]; e < r->off[t + 1]; e++) left[r->from[e]]++;
    int head = 0, tail = 0;
    for (int32_t q = 0; q < S; q++) {
        re->longest[q] = cap;
        if (!left[q]) queue[tail++] = q;
    }
    while (head < tail) {
        int32_t q = queue[head++];
        int64_t best = re->final[q] ? 0 : -1;
        for (int c = 0; c < C; c++) {
            int32_t t = re->next[(size_t)q * (size_t)C + (size_t)c];
            if (t >= 0 && re->longest[t] >= 0 && re->longest[t] + re->class_weight[c] > best)
                best = re->longest[t] + re->class_weight[c];
        }
        re->longest[q] = best > cap ? cap : best;
        for (int32_t e = r->off[q]; e < r->off[q + 1]; e++)
            if (--left[r->from[e]] == 0) queue[tail++] = r->from[e];
    }
    free(left), free(queue);
    return 0;
}

int pf_regex_accept(pf_regex *re, const uint8_t *ok, int64_t min_chars, int64_t max_chars, char err[PF_ERR_LEN]) {
    re->final = calloc((size_t)re->n_states, 1);
    if (!re->final) return pf_errf(err, "pattern: out of memory");
    for (int32_t q = 0; q < re->n_states; q++)
        for (int i = 0; i < re->n_masks; i++)
            if (re->masks[i] == re->mask[q]) re->final[q] = ok[i];
    re->min_chars = min_chars;
    re->max_chars = max_chars;
    re->L = max_chars == INT64_MAX ? min_chars : max_chars;
    redges r = {0};
    if (reverse_edges(re, &r) < 0 || prune_dead(re, &r) < 0) {
        redges_free(&r);
        return pf_errf(err, "pattern: out of memory");
    }
    redges_free(&r);
    if (reverse_edges(re, &r) < 0) { /* again, without the dead edges */
        redges_free(&r);
        return pf_errf(err, "pattern: out of memory");
    }
    same_classes(re);
    int rc = max_chars == INT64_MAX ? (longest_lengths(re, &r) < 0 ? pf_errf(err, "pattern: out of memory") : 0)
                                    : bounded_lengths(re, &r, err);
    redges_free(&r);
    re->flat_from = 1, re->flat_to = 0;
    if (rc == 0 && max_chars != INT64_MAX) flat_lengths(re);
    return rc;
}

int64_t pf_regex_flat(const pf_regex *re, int64_t *from) {
    *from = re->flat_from;
    return re->flat_to;
}

int pf_regex_ok(const pf_regex *re, int32_t state, int64_t used) {
    if (state < 0) return 0;
    if (re->max_chars == INT64_MAX) return re->longest[state] >= 0 && re->longest[state] + used >= re->min_chars;
    if (used < 0 || used > re->L) return 0;
    return get_bit64(re->ok_bits, (size_t)state * (size_t)(re->L + 1) + (size_t)used);
}

uint64_t pf_regex_hash(const pf_regex *re) {
    size_t cells = (size_t)re->n_states * (size_t)re->n_classes;
    uint64_t h = XXH3_64bits_withSeed(re->class_of, sizeof re->class_of, (uint64_t)re->n_states);
    h = XXH3_64bits_withSeed(re->next, cells * sizeof *re->next, h);
    h = XXH3_64bits_withSeed(re->mask, (size_t)re->n_states * sizeof *re->mask, h);
    if (re->final) h = XXH3_64bits_withSeed(re->final, (size_t)re->n_states, h);
    int64_t lens[2] = {re->min_chars, re->max_chars};
    return XXH3_64bits_withSeed(lens, sizeof lens, h ^ (uint64_t)(uint32_t)re->start);
}

int pf_regex_same(const pf_regex *a, const pf_regex *b) {
    if (a->n_states != b->n_states || a->n_classes != b->n_classes || a->start != b->start ||
        a->min_chars != b->min_chars || a->max_chars != b->max_chars || !a->final != !b->final)
        return 0;
    size_t S = (size_t)a->n_states, cells = S * (size_t)a->n_classes;
    return !memcmp(a->class_of, b->class_of, sizeof a->class_of) &&
           !memcmp(a->class_weight, b->class_weight, sizeof a->class_weight) &&
           !memcmp(a->next, b->next, cells * sizeof *a->next) && !memcmp(a->mask, b->mask, S * sizeof *a->mask) &&
           (!a->final || !memcmp(a->final, b->final, S));
}
