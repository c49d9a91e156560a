#include "grammar/plain_walk.h"

#include <stdlib.h>
#include <string.h>

#include "grammar/close_budget.h"
#include "grammar/regex.h"

enum {
    LOOP_MEMO = 8,
    CHAIN_MEMO = 16,
    ACC_MEMO = 64,
    SMALL_SUBTREE = 16, /* nodes: walked as fast as a shortcut is tried */
    UTF8_BITS = 0xFFFFFFFFu, /* pf_plain_below.lo's bits below 0x20: UTF-8 bytes */
};

/* The ASCII bytes that take state `state` back to itself, and which lead-byte pairs' characters
 * all do (the pairs of pf_plain_below, looked at when first asked). */
typedef struct {
    int32_t state;
    uint64_t lo, hi;
    uint32_t known, ok;
} loop_set;

/* The frames a string goes through from `base` taking one byte of class cls after another:
 * f[l] after l of them, valid for l <= n; dead: f[n + 1] refused; fixed: f[n] == f[n - 1], so every
 * longer run ends there too. dist[l] (with a budget) the closing distance after f[l], -1 unknown. */
typedef struct {
    pf_frame base;
    int cls, n, dead, fixed;
    uint8_t byte;
    pf_frame *f;
    int64_t *dist;
} chain;

/* The ASCII bytes pf_matcher_pattern_feed takes from frame f (bit b of lo for b < 64, of hi for
 * b - 64). */
typedef struct {
    pf_frame f;
    int known;
    uint64_t lo, hi;
} acc_set;

typedef struct {
    const pf_token_masker *tm;
    const pf_vocab_trie *t;
    const pf_matcher *m;
    const pf_regex *re;
    pf_walk_ctx *w;
    pf_plain_ends *ends;
    int saturated; /* the length no longer counts: a character looping the automaton leaves the frame as it is */
    loop_set loops[LOOP_MEMO];
    int next_loop;
    chain chains[CHAIN_MEMO];
    acc_set accs[ACC_MEMO];
    int next_chain, chain_cap;
    uint64_t class_lo[256], class_hi[256]; /* the ASCII bytes of each byte class */
    uint64_t seen[PF_REGEX_MAX_STATES / 64];  /* the states added to ends */
} walker;

static int frame_eq(const pf_frame *a, const pf_frame *b) { return !memcmp(a, b, sizeof *a); }

void pf_plain_ends_add(pf_plain_ends *e, uint64_t *seen, int32_t s) {
    if (!e || (seen[s >> 6] >> (s & 63) & 1)) return;
    seen[s >> 6] |= 1ull << (s & 63);
    if (e->n < PF_PLAIN_ENDS) e->s[e->n] = s;
    if (e->n <= PF_PLAIN_ENDS) e->n++;
}

/* Tokens leaving the string at frame f: whether they fit the walk's limit. d (may be NULL) keeps
 * what was found for f (-1: nothing yet), so tokens ending alike are looked at once. */
static int fits(walker *k, const pf_frame *f, int64_t *d) {
    pf_walk_ctx *w = k->w;
    if (d && *d >= 0) return !w->cl || *d <= w->limit;
    pf_plain_ends_add(k->ends, k->seen, f->hi);
    int64_t x = w->cl ? pf_close_dist_cursor(w->cl, k->m, f) : 0;
    if (d) *d = x;
    if (!w->cl) return 1;
    if (x > w->max_next) w->max_next = x;
    if (x < w->min_next) w->min_next = x;
    return x <= w->limit;
}


/* The plain tokens spelled by node c, the string at frame f after them. */
static void take_node(walker *k, int32_t c, const pf_frame *f) {
    const pf_trie_node *nd = &k->t->nodes[c];
    const int32_t *ids = k->t->ids + nd->tok_lo;
    const uint32_t *plain = k->tm->plain_bits;
    int32_t n = nd->tok_n, any = 0;
    for (int32_t j = 0; j < n && !any; j++) any = pf_token_vocab_has(plain, ids[j]);
    if (!any || !fits(k, f, NULL)) return;
    uint32_t *bits = k->w->bits;
    for (int32_t j = 0; j < n; j++)
        if (pf_token_vocab_has(plain, ids[j])) pf_token_vocab_set(bits, ids[j]);
}

/* Every character with lead byte b, from frame x (after b) on, leads back to frame home. */
static int conts_loop(walker *k, const pf_frame *x, const pf_frame *home) {
    uint64_t seen[4] = {0};
    for (int c = x->u8_lo; c <= x->u8_hi; c++) {
        int cls = pf_regex_class(k->re, (uint8_t)c);
        if (seen[cls >> 6] >> (cls & 63) & 1) continue; /* the same frame as a byte before */
        seen[cls >> 6] |= 1ull << (cls & 63);
        pf_frame y = *x;
        if (!pf_matcher_pattern_feed(k->m, &y, (uint8_t)c)) return 0;
        if (y.u8_need ? !conts_loop(k, &y, home) : !frame_eq(&y, home)) return 0;
    }
    return 1;
}

/* Every character whose lead byte is b leads frame f back to itself (b no lead: vacuous). */
static int lead_loops(walker *k, const pf_frame *f, int b) {
    if (b < 0xC2 || b > 0xF4) return 1;
    pf_frame x = *f;
    return pf_matcher_pattern_feed(k->m, &x, (uint8_t)b) && conts_loop(k, &x, f);
}

static loop_set *loops_of(walker *k, const pf_frame *f) {
    for (int i = 0; i < LOOP_MEMO; i++)
        if (k->loops[i].state == f->hi) return &k->loops[i];
    loop_set *l = &k->loops[k->next_loop];
    k->next_loop = (k->next_loop + 1) % LOOP_MEMO;
    *l = (loop_set){f->hi, 0, 0, 0, 0};
    for (int b = 0x20; b < 0x80; b++) {
        if (b == '"' || b == '\\' || pf_regex_step(k->re, f->hi, (uint8_t)b) != f->hi) continue;
        if (b < 64) l->lo |= 1ull << b;
        else l->hi |= 1ull << (b - 64);
    }
    return l;
}

/* Every plain token below, from frame f (between characters, the length no longer counting),
 * leaves it as it is. */
static int all_loop(walker *k, const pf_frame *f, const pf_plain_below *g) {
    loop_set *l = loops_of(k, f);
    if ((g->lo & ~(uint64_t)UTF8_BITS & ~l->lo) || (g->hi & ~l->hi)) return 0;
    for (uint32_t want = (uint32_t)g->lo & ~1u; want; want &= want - 1) {
        int p = __builtin_ctz(want);
        if (!(l->known >> p & 1)) {
            int ok = lead_loops(k, f, 0xC0 + 2 * p) && lead_loops(k, f, 0xC1 + 2 * p);
            l->known |= 1u << p;
            l->ok |= (uint32_t)ok << p;
        }
        if (!(l->ok >> p & 1)) return 0;
    }
    return 1;
}

/* The chain from frame f by bytes of b's class (NULL when memory is short). */
static chain *chain_of(walker *k, const pf_frame *f, uint8_t b) {
    int cls = pf_regex_class(k->re, b);
    for (int i = 0; i < CHAIN_MEMO; i++)
        if (k->chains[i].f && k->chains[i].cls == cls && frame_eq(&k->chains[i].base, f)) return &k->chains[i];
    chain *ch = &k->chains[k->next_chain];
    k->next_chain = (k->next_chain + 1) % CHAIN_MEMO;
    if (!ch->f) {
        ch->f = malloc((size_t)k->chain_cap * sizeof *ch->f);
        ch->dist = malloc((size_t)k->chain_cap * sizeof *ch->dist);
        if (!ch->f || !ch->dist) {
            free(ch->f), free(ch->dist);
            ch->f = NULL, ch->dist = NULL;
            return NULL;
        }
    }
    ch->base = *f, ch->cls = cls, ch->byte = b, ch->n = 0, ch->dead = 0, ch->fixed = 0;
    ch->f[0] = *f;
    ch->dist[0] = -1;
    return ch;
}

/* The frame after l bytes of the chain's class, NULL when refused (or past what is kept). */
static const pf_frame *chain_at(walker *k, chain *ch, int64_t l, int64_t **d) {
    while (ch->n < l && !ch->dead && !ch->fixed && ch->n + 1 < k->chain_cap) {
        pf_frame x = ch->f[ch->n];
        if (!pf_matcher_pattern_feed(k->m, &x, ch->byte)) {
            ch->dead = 1;
            break;
        }
        ch->f[++ch->n] = x;
        ch->dist[ch->n] = -1;
        ch->fixed = frame_eq(&x, &ch->f[ch->n - 1]);
    }
    if (l > ch->n && !ch->fixed) return NULL;
    int64_t at = l > ch->n ? ch->n : l;
    *d = &ch->dist[at];
    return &ch->f[at];
}

/* The ASCII bytes frame f takes (remembered by frame: a chain's runs meet the same frames again). */
static const acc_set *acc_of(walker *k, const pf_frame *f) {
    uint64_t h = ((uint64_t)(uint32_t)f->hi * 0x9E3779B97F4A7C15ull) ^ f->used;
    acc_set *a = &k->accs[(h ^ h >> 32) % ACC_MEMO];
    if (a->known && frame_eq(&a->f, f)) return a;
    *a = (acc_set){*f, 1, 0, 0};
    for (int x = 0x20; x < 0x80; x++) {
        pf_frame y = *f;
        if (!pf_matcher_pattern_feed(k->m, &y, (uint8_t)x)) continue;
        if (x < 64) a->lo |= 1ull << x;
        else a->hi |= 1ull << (x - 64);
    }
    return a;
}

/* Bytes p[depth..len) are all of the byte class whose ASCII bytes are lo, hi (pf_plain_below's
 * bits). */
static int one_class(const uint8_t *p, uint32_t len, int64_t depth, uint64_t lo, uint64_t hi) {
    for (uint32_t i = (uint32_t)depth; i < len; i++)
        if (!((p[i] < 64 ? lo >> p[i] : p[i] < 128 ? hi >> (p[i] - 64) : 0) & 1)) return 0;
    return 1;
}

/* The plain tokens strictly below node c (at depth bytes, frame f after it, between characters)
 * when they can be told without walking; 1 when done. */
static int take_below(walker *k, int32_t c, const pf_frame *f, int64_t depth) {
    const pf_plain_below *g = &k->tm->below[c];
    if (!g->lo && !g->hi) return 1;
    chain *ch = NULL;
    int cls = 0;
    uint64_t other_lo = 0, other_hi = 0;
    int loop = k->saturated && all_loop(k, f, g);
    if (!loop) {
        uint64_t ascii = g->lo & ~(uint64_t)UTF8_BITS;
        if (g->lo & UTF8_BITS) return 0;
        int b = -1;
        for (uint64_t lo = ascii, hi = g->hi; b < 0 && (lo || hi);) { /* a byte taken here names the class */
            int x = lo ? __builtin_ctzll(lo) : 64 + __builtin_ctzll(hi);
            pf_frame y = *f;
            if (pf_matcher_pattern_feed(k->m, &y, (uint8_t)x)) b = x;
            if (lo) lo &= lo - 1;
            else hi &= hi - 1;
        }
        if (b < 0) return 1; /* every token below starts with a refused byte */
        cls = pf_regex_class(k->re, (uint8_t)b);
        other_lo = ascii & ~k->class_lo[cls], other_hi = g->hi & ~k->class_hi[cls];
        if (!(ch = chain_of(k, f, (uint8_t)b))) return 0;
        /* a byte of another class must be refused wherever a run of this class can reach below c */
        int64_t most = k->tm->below_len[c] < 255 ? k->tm->below_len[c] : k->chain_cap - 2, *d;
        for (int64_t j = 0; j < most && (other_lo || other_hi); j++) {
            const pf_frame *fj = chain_at(k, ch, j, &d);
            if (!fj) break;
            const acc_set *a = acc_of(k, fj);
            if ((a->lo & other_lo) || (a->hi & other_hi)) return 0;
        }
    }
    int64_t d_loop = -1;
    int fit_loop = loop ? fits(k, f, &d_loop) : 0;
    /* the tables in locals (the mask's stores could alias them), the bytes read in the trie's
     * order: a subtree's tokens lie together */
    const int32_t *ids = k->t->ids;
    const uint32_t *plain = k->tm->plain_bits, *off = k->tm->ord_off;
    const uint8_t *spelling = k->tm->ord_spelling;
    uint32_t *bits = k->w->bits;
    int32_t lo = k->tm->first_tok[c + 1], hi = k->tm->first_tok[k->t->nodes[c].end];
    k->w->steps += hi - lo;
    if (loop) {
        for (int32_t j = lo; fit_loop && j < hi; j++)
            if (pf_token_vocab_has(plain, ids[j])) pf_token_vocab_set(bits, ids[j]);
        return 1;
    }
    int others = other_lo || other_hi;
    uint64_t in_lo = k->class_lo[cls], in_hi = k->class_hi[cls];
    for (int32_t j = lo; j < hi; j++) {
        int32_t id = ids[j];
        if (!pf_token_vocab_has(plain, id)) continue;
        uint32_t len = off[j + 1] - off[j];
        if (others && !one_class(spelling + off[j], len, depth, in_lo, in_hi)) continue; /* a byte of another class: refused */
        int64_t *d;
        const pf_frame *x = chain_at(k, ch, (int64_t)len - depth, &d);
        if (x && fits(k, x, d)) pf_token_vocab_set(bits, id);
    }
    return 1;
}

/* pf_matcher_pattern_feed where the length no longer counts, with the automaton's table alone.
 * Between characters the frame is the matcher's; inside one only the state and the bytes still
 * wanted are kept (no plain token ends there, and a path that is no valid UTF-8 has none below). */
static int step_saturated(const walker *k, pf_frame *x, uint8_t b) {
    int32_t r = pf_regex_step(k->re, x->hi, b);
    if (r < 0 || !pf_regex_ok(k->re, r, (int64_t)x->used)) return 0;
    x->hi = r;
    if (b >= 0xC0) x->u8_need = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : 1, x->u8_lo = 0x80, x->u8_hi = 0xBF;
    else if (b >= 0x80 && x->u8_need && !--x->u8_need) x->u8_lo = x->u8_hi = 0;
    return 1;
}

/* The plain tokens below node i (at depth bytes, the string at frame f). */
static void walk_node(walker *k, int32_t i, const pf_frame *f, int64_t depth) {
    const pf_trie_node *nodes = k->t->nodes;
    for (int32_t c = i + 1, end = nodes[i].end; c < end; c = nodes[c].end) {
        uint8_t b = nodes[c].byte;
        k->w->steps++;
        if (b == '"' || b == '\\' || b < 0x20) continue;
        pf_frame x = *f;
        if (!(k->saturated ? step_saturated(k, &x, b) : pf_matcher_pattern_feed(k->m, &x, b))) continue;
        take_node(k, c, &x);
        const pf_plain_below *g = &k->tm->below[c];
        if (!g->lo && !g->hi) continue;
        if (!x.u8_need && nodes[c].end - c > SMALL_SUBTREE && take_below(k, c, &x, depth + 1)) continue;
        walk_node(k, c, &x, depth + 1);
    }
}

void pf_plain_walk(const pf_token_masker *tm, const pf_matcher *m, const pf_frame *cur, pf_walk_ctx *w,
                   pf_plain_ends *ends) {
    walker k = {.tm = tm, .t = &tm->all, .m = m, .re = pf_matcher_schema(m)->nodes[cur->node].re, .w = w, .ends = ends};
    k.saturated = pf_matcher_pattern_unbounded(m, cur);
    k.chain_cap = (int)tm->plain_chars + 2; /* a token below a chain is ASCII: a byte a character */
    for (int i = 0; i < LOOP_MEMO; i++) k.loops[i].state = -1;
    for (int x = 0x20; x < 0x80; x++) {
        int cls = pf_regex_class(k.re, (uint8_t)x);
        if (x < 64) k.class_lo[cls] |= 1ull << x;
        else k.class_hi[cls] |= 1ull << (x - 64);
    }
    if (!take_below(&k, 0, cur, 0)) walk_node(&k, 0, cur, 0);
    for (int i = 0; i < CHAIN_MEMO; i++) free(k.chains[i].f), free(k.chains[i].dist);
}
