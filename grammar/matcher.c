/* The schema's pushdown automaton over bytes (grammar/matcher.h). A state is a set of parse
 * stacks stored one after another in an arena: each stack is a header frame (lo = its depth)
 * followed by its frames, bottom first. */
#include "grammar/matcher.h"
#include "formats/grow.h"
#include "grammar/matcher_frames.h"
#include "grammar/num_exp.h"
#include "grammar/num_multiple.h"
#include "grammar/num_range.h"
#include "grammar/regex.h"

#include <stdlib.h>
#include <string.h>

enum { CONSUMED, REJECT, AGAIN }; /* AGAIN: the stack changed, feed the byte to its new top */

typedef struct {
    size_t off;      /* first frame in the arena */
    uint32_t frames; /* frames in all, headers included */
    uint32_t threads;
} mstate;

struct pf_matcher {
    const pf_schema *s;
    pf_frame *arena;
    size_t n_arena, cap_arena;
    mstate *st;
    size_t n_st, cap_st;
    int oom;
};

static pf_frame frame(int kind, int phase, int32_t node) {
    pf_frame f;
    memset(&f, 0, sizeof f);
    f.kind = (uint8_t)kind;
    f.phase = (uint8_t)phase;
    f.node = node;
    return f;
}

static int grow_arena(pf_matcher *m, size_t need) {
    pf_frame *a = pf_grow(m->arena, &m->cap_arena, m->n_arena + need, sizeof *a, 1024);
    if (!a) return m->oom = 1, -1;
    m->arena = a;
    return 0;
}

/* Append stack f[0..n) to the state being built (from `start`), unless it is there already. */
static void emit(pf_matcher *m, size_t start, uint32_t *threads, const pf_frame *f, int n) {
    if (*threads >= PF_MATCHER_MAX_THREADS) return;
    for (size_t i = start; i < m->n_arena; i += 1 + (size_t)m->arena[i].lo)
        if (m->arena[i].lo == n && !memcmp(m->arena + i + 1, f, (size_t)n * sizeof *f)) return;
    if (grow_arena(m, (size_t)n + 1) < 0) return;
    pf_frame h = frame(K_HEAD, 0, 0);
    h.lo = n;
    m->arena[m->n_arena++] = h;
    memcpy(m->arena + m->n_arena, f, (size_t)n * sizeof *f);
    m->n_arena += (size_t)n;
    (*threads)++;
}

static const pf_schema_node *node_of(const pf_matcher *m, const pf_frame *f) { return &m->s->nodes[f->node]; }

/* A value of node id may start with n frames on its stack (its own the last): its shortest
 * document fits under PF_MATCHER_MAX_FRAMES (a container's child takes one frame more, and the
 * deepest needs room for a key or value frame above it). So a recursive schema's documents stop
 * nesting at the bound, and every prefix accepted can still be completed. */
static int fits(const pf_matcher *m, int32_t id, int n) {
    int32_t d = m->s->nodes[id].min_depth;
    return d == 0 || (d < PF_SCHEMA_NO_DOC && n + d <= PF_MATCHER_MAX_FRAMES - 2);
}

/* A value of the top frame's node starts with c: the frame becomes the value's own. */
static int start_value(const pf_matcher *m, pf_frame *t, int n, uint8_t c) {
    if (t->phase == V_SPACE && c == ' ') return t->phase = V_TIGHT, CONSUMED;
    const pf_schema_node *nd = node_of(m, t);
    int32_t id = t->node;
    if (nd->kind == PF_SN_ANY) {
        id = c == '{' ? PF_SN_ID_ANY_OBJECT
             : c == '[' ? PF_SN_ID_ANY_ARRAY
             : c == '"' ? PF_SN_ID_ANY_STRING
             : (c == '-' || (c >= '0' && c <= '9')) ? PF_SN_ID_ANY_NUMBER
             : (c == 't' || c == 'f' || c == 'n') ? PF_SN_ID_ANY_WORD
                                                  : -1;
        if (id < 0) return REJECT;
        nd = &m->s->nodes[id];
    }
    switch (nd->kind) {
    case PF_SN_OBJECT: *t = frame(K_OBJ, O_OPEN, id); break;
    case PF_SN_ARRAY: *t = frame(K_ARR, A_OPEN, id); break;
    case PF_SN_STRING: *t = frame(K_STR, S_OPEN, id); break;
    case PF_SN_NUMBER:
    case PF_SN_INTEGER: *t = frame(K_NUM, N_START, id); break;
    case PF_SN_LITERALS:
        *t = frame(K_LIT, 0, id);
        t->hi = nd->lits.n;
        break;
    default: return REJECT;
    }
    if (!fits(m, id, n)) return REJECT;
    return AGAIN;
}

static int utf8_lead(pf_frame *t, uint8_t c) {
    t->u8_lo = 0x80;
    t->u8_hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) t->u8_need = 1;
    else if (c == 0xE0) t->u8_need = 2, t->u8_lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) t->u8_need = 2;
    else if (c == 0xED) t->u8_need = 2, t->u8_hi = 0x9F;
    else if (c == 0xF0) t->u8_need = 3, t->u8_lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) t->u8_need = 3;
    else if (c == 0xF4) t->u8_need = 3, t->u8_hi = 0x8F;
    else return REJECT;
    return CONSUMED;
}

static int is_hex(uint8_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* A character starts (an ASCII byte, a UTF-8 lead, a backslash: an escape is the one character it
 * denotes, and a \u escape of a surrogate is never written): t->used counts them up to the most
 * that still matters (maxLength, or minLength when unbounded), so long strings repeat a state. */
static int count_char(const pf_schema_node *nd, pf_frame *t) {
    if ((int64_t)t->used >= nd->max_len) return REJECT;
    if ((int64_t)t->used < (nd->max_len == INT64_MAX ? nd->min_len : nd->max_len)) t->used++;
    return CONSUMED;
}

/* ---- strings with a pattern or format (grammar/regex.h): the automaton (its state in t->hi)
 * steps over the decoded characters. Such a string takes only the escapes JSON requires: the short
 * ones and \u00XX of a control character, so the first bytes of an escape tell the character. ---- */

/* Byte b keeps a string within the pattern and the lengths reachable. */
static int re_feed(const pf_schema_node *nd, pf_frame *t, uint8_t b) {
    int32_t q = pf_regex_step(nd->re, t->hi, b);
    if (q < 0 || !pf_regex_ok(nd->re, q, (int64_t)t->used)) return 0;
    t->hi = q;
    return 1;
}

/* Some ASCII character of lo..hi may come next. */
static int re_any(const pf_schema_node *nd, const pf_frame *t, int lo, int hi) {
    for (int ch = lo; ch <= hi; ch++) {
        pf_frame x = *t;
        if (re_feed(nd, &x, (uint8_t)ch)) return 1;
    }
    return 0;
}

static const char k_esc[] = "\"\\/bfnrt", k_esc_char[] = "\"\\/\b\f\n\r\t";

/* After a backslash, some escape can continue the string. */
static int re_escape_open(const pf_schema_node *nd, const pf_frame *t) {
    return re_any(nd, t, 0, 0x1F) || re_any(nd, t, '"', '"') || re_any(nd, t, '\\', '\\') || re_any(nd, t, '/', '/');
}

/* The escape's bytes (phase S_ESC or S_HEX; off hex digits read, their value in lo). */
static int step_pattern_escape(const pf_schema_node *nd, pf_frame *t, uint8_t c) {
    if (t->phase == S_ESC) {
        if (nd->no_escape && (c == 'u' || c == '/')) return REJECT; /* an other key: only the short escapes */
        const char *e = c ? strchr(k_esc, c) : NULL;
        t->phase = S_BODY;
        if (e) return re_feed(nd, t, (uint8_t)k_esc_char[e - k_esc]) ? CONSUMED : REJECT;
        if (c != 'u' || !re_any(nd, t, 0, 0x1F)) return REJECT;
        return t->phase = S_HEX, t->off = 0, t->lo = 0, CONSUMED;
    }
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0 || (t->off < 2 && d) || (t->off == 2 && d > 1)) return REJECT;
    t->lo = t->lo * 16 + d;
    if (++t->off == 3) return re_any(nd, t, t->lo * 16, t->lo * 16 + 15) ? CONSUMED : REJECT;
    if (t->off < 4) return CONSUMED;
    uint8_t ch = (uint8_t)t->lo;
    t->phase = S_BODY, t->off = 0, t->lo = 0;
    return re_feed(nd, t, ch) ? CONSUMED : REJECT;
}

/* Strings: RFC 8259 with valid UTF-8; \u escapes of surrogates are refused (a reader may reject a
 * lone one; the character itself can be written as UTF-8). minLength / maxLength in characters. */
static int step_string(const pf_matcher *m, pf_frame *t, int *n, uint8_t c) {
    const pf_schema_node *nd = node_of(m, t);
    if (nd->re && (t->phase == S_ESC || t->phase == S_HEX)) return step_pattern_escape(nd, t, c);
    switch (t->phase) {
    case S_OPEN:
        if (c != '"') return REJECT;
        t->phase = S_BODY;
        return CONSUMED;
    case S_BODY:
        if (t->u8_need) {
            if (c < t->u8_lo || c > t->u8_hi || (nd->re && !re_feed(nd, t, c))) return REJECT;
            t->u8_need--;
            t->u8_lo = 0x80;
            t->u8_hi = 0xBF;
            if (!t->u8_need) t->u8_lo = t->u8_hi = 0;
            return CONSUMED;
        }
        if (c == '"')
            return (int64_t)t->used < nd->min_len || (nd->re && !pf_regex_final(nd->re, t->hi)) ? REJECT : ((*n)--, CONSUMED);
        if (c < 0x20 || (c >= 0x80 && utf8_lead(t, c) == REJECT) || count_char(nd, t) == REJECT) return REJECT;
        if (c == '\\') t->phase = S_ESC;
        if (nd->re && (c == '\\' ? !re_escape_open(nd, t) : !re_feed(nd, t, c))) return REJECT;
        return CONSUMED;
    case S_ESC:
        if (nd->no_escape && (c == 'u' || c == '/')) return REJECT; /* only the short escapes */
        if (c == 'u') return t->phase = S_HEX, t->off = 0, t->lo = 0, CONSUMED;
        if (!strchr("\"\\/bfnrt", c) || !c) return REJECT;
        t->phase = S_BODY;
        return CONSUMED;
    default: /* S_HEX: off digits read; lo = 1 after a leading d */
        if (!is_hex(c)) return REJECT;
        if (t->off == 0) t->lo = c == 'd' || c == 'D';
        if (t->off == 1 && t->lo && !(c >= '0' && c <= '7')) return REJECT;
        if (++t->off == 4) t->phase = S_BODY, t->off = 0, t->lo = 0;
        return CONSUMED;
    }
}

static int num_accepting(int phase) { return phase == N_ZERO || phase == N_INT || phase == N_FRAC || phase == N_EXP; }

/* ---- bounded numbers: minimum / maximum ----
 * A bounded number's frame keeps the sign (lo), the integer part (used) and, in the fraction, how
 * the digits so far compare with the bounds' (hi, below). An exponent may follow a mantissa of one
 * digit 1-9 and its fraction digits, as writers put a float (1e-06, 2.5e+20): used then holds all
 * its digits, D, and each byte is allowed where the mantissa as it stands, with some exponent of
 * up to PF_NUM_EXP_DIGITS digits, lands in range (grammar/num_exp.c), or the number without
 * exponent still can. For a sign, the bounds are a range of the magnitude M = |value|: a <= M <= b, either end open, each
 * end a point of the grid of 16 fraction digits numbers are written with (grammar/schema.h). Every
 * test below is a comparison of integers, so every CPU gives the same masks. */
#define ONE PF_SCHEMA_FRAC_ONE
typedef pf_mag mag;
typedef pf_mag_range mag_range;

/* In the fraction (hi): the digits so far are the first ones of a's fraction (the integer part
 * being a's), or of b's; otherwise they are already above a, or below b, whatever follows.
 * F_NORM: the mantissa so far can take an exponent, D in used; F_NOPLAIN: only an exponent ends it
 * within the bounds. In the exponent hi holds F_NORM, the fraction digits fd, the exponent's sign
 * and its value so far. */
enum { EQ_A = 1, EQ_B = 2, F_NORM = 4, F_NOPLAIN = 8 };
#define EXP_MAX 999 /* PF_NUM_EXP_DIGITS digits */
#define EXP_FD(h) ((h) >> 4 & 31)
#define EXP_NEG(h) ((h) >> 9 & 1)
#define EXP_VAL(h) ((int64_t)(h) >> 10)

static int bounded(const pf_schema_node *nd) { return nd->num_lo != INT64_MIN || nd->num_hi != INT64_MAX; }

static mag mag_next(mag x) { return x.f == ONE - 1 ? (mag){x.i + 1, 0} : (mag){x.i, x.f + 1}; }
static mag mag_prev(mag x) { return x.f ? (mag){x.i, x.f - 1} : (mag){x.i - 1, ONE - 1}; }

/* The least and the greatest magnitude of the grid within r. */
static mag mag_least(mag_range r) { return r.a_open ? mag_next(r.a) : r.a; }
static mag mag_most(mag_range r) { return r.b_open ? mag_prev(r.b) : r.b; }

/* Some magnitude whose integer part lies in [lo, hi] fits r; frac: a fraction may follow it. */
static int mag_feasible(mag_range r, int64_t lo, int64_t hi, int frac) {
    if (!frac) {
        int64_t a = r.a.i + (r.a.f || r.a_open), b = r.b.i - (!r.b.f && r.b_open);
        return (lo > a ? lo : a) <= (hi < b ? hi : b);
    }
    mag l = mag_least(r), u = mag_most(r), x = {lo, 0}, y = {hi, ONE - 1};
    if (pf_mag_cmp(x, l) > 0) l = x;
    if (pf_mag_cmp(y, u) < 0) u = y;
    return pf_mag_cmp(l, u) <= 0;
}

static const int64_t k_pow10[17] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
                                    10000000000, 100000000000, 1000000000000, 10000000000000,
                                    100000000000000, 1000000000000000, 10000000000000000};

/* A bound's fraction digit n (1: the first), and its digits after n as a number. */
static int frac_digit(int64_t f, int n) { return (int)(f / k_pow10[16 - n] % 10); }
static int64_t frac_after(int64_t f, int n) { return f % k_pow10[16 - n]; }

/* Fraction digit c, the n-th, keeps a magnitude within r reachable (t->hi: EQ_A, EQ_B). A prefix
 * equal to a's so far reaches a's side while a's own digits do (some completion is at least a,
 * above it when open: not when a's digits after n are all 9); one equal to b's reaches b's side
 * while b's do (the prefix itself is at most b, below it when open: not when b's are all 0).
 * Where both hold, a <= b makes one completion meet both. */
static int frac_step(mag_range r, pf_frame *t, int n, int c) {
    if (t->hi & EQ_A) {
        int d = frac_digit(r.a.f, n);
        if (c < d) return 0;
        if (c > d) t->hi &= ~EQ_A;
        else if (r.a_open && frac_after(r.a.f, n) == k_pow10[16 - n] - 1) return 0;
    }
    if (t->hi & EQ_B) {
        int d = frac_digit(r.b.f, n);
        if (c > d) return 0;
        if (c < d) t->hi &= ~EQ_B;
        else if (r.b_open && frac_after(r.b.f, n) == 0) return 0;
    }
    return 1;
}

/* Mantissa d with fd fraction digits, as it stands, takes some exponent that lands in r. */
static int exp_any(const mag_range *r, uint64_t d, int fd) { return pf_num_exp_some(r, d, fd, -EXP_MAX, EXP_MAX); }

/* After the point of mantissa d: some first fraction digit takes an exponent. */
static int exp_after_point(const mag_range *r, uint64_t d) {
    for (uint64_t c = 0; c <= 9; c++)
        if (exp_any(r, d * 10 + c, 1)) return 1;
    return 0;
}

/* Some first digit 1-9 takes an exponent. */
static int exp_fresh(const mag_range *r) {
    for (uint64_t c = 1; c <= 9; c++)
        if (exp_any(r, c, 0)) return 1;
    return 0;
}

/* An integer part p of off digits (more may follow) keeps a value without exponent reachable. */
static int plain_int(mag_range r, int64_t p, int off, int frac) {
    for (int j = 0; j + off <= PF_MATCHER_MAX_DIGITS; j++)
        if (mag_feasible(r, p * k_pow10[j], p * k_pow10[j] + k_pow10[j] - 1, frac)) return 1;
    return 0;
}

/* The mantissa byte that moved frame t to `next` left no number without exponent reachable: it
 * stands where an exponent can still follow. */
static int only_exp(pf_frame *t, int ok) {
    if (!ok) return 0;
    t->hi = F_NORM | F_NOPLAIN;
    return 1;
}

/* The byte that moved frame t to phase `next` keeps a value within the bounds reachable. */
static int bound_step(const pf_schema_node *nd, pf_frame *t, int next, uint8_t c) {
    int frac = nd->kind == PF_SN_NUMBER, norm = t->hi & F_NORM;
    mag_range r = pf_num_range(nd, t->lo);
    switch (next) {
    case N_MINUS: t->lo = 1, r = pf_num_range(nd, 1); return mag_feasible(r, 0, k_pow10[16] - 1, frac) || (frac && exp_fresh(&r));
    case N_ZERO: return mag_feasible(r, 0, 0, frac);
    case N_INT: {
        if (t->hi & F_NOPLAIN) return 0; /* a second digit before the point: no exponent form */
        int64_t p = (int64_t)t->used * 10 + (c - '0');
        t->used = (uint64_t)p;
        t->hi = frac && t->off == 1 ? F_NORM : 0;
        if (plain_int(r, p, t->off, frac)) return 1;
        return only_exp(t, (t->hi & F_NORM) && exp_any(&r, (uint64_t)p, 0));
    }
    case N_FRAC0:
        if (!(t->hi & F_NOPLAIN)) {
            t->hi = norm | ((int64_t)t->used == r.a.i ? EQ_A : 0) | ((int64_t)t->used == r.b.i ? EQ_B : 0);
            if (mag_feasible(r, (int64_t)t->used, (int64_t)t->used, 1)) return 1;
        }
        return only_exp(t, norm && exp_after_point(&r, t->used));
    case N_FRAC: {
        int plain = !(t->hi & F_NOPLAIN) && frac_step(r, t, t->off, c - '0');
        if (norm) t->used = t->used * 10 + (c - '0');
        if (plain) return 1;
        return only_exp(t, norm && exp_any(&r, t->used, t->off));
    }
    case N_EXP0: {
        int fd = t->phase == N_FRAC ? t->off : 0;
        if (!norm || !exp_any(&r, t->used, fd)) return 0;
        t->hi = F_NORM | fd << 4;
        return 1;
    }
    case N_EXPS:
        t->hi |= (c == '-') << 9;
        return c == '-' ? pf_num_exp_some(&r, t->used, EXP_FD(t->hi), -EXP_MAX, 0)
                        : pf_num_exp_some(&r, t->used, EXP_FD(t->hi), 0, EXP_MAX);
    default: { /* N_EXP: t->off exponent digits */
        if (t->off > PF_NUM_EXP_DIGITS) return 0;
        int64_t e = EXP_VAL(t->hi) * 10 + (c - '0');
        t->hi = (t->hi & 1023) | (int32_t)(e << 10);
        return pf_num_exp_rest(&r, t->used, EXP_FD(t->hi), EXP_NEG(t->hi), e, t->off) != INT64_MAX;
    }
    }
}

/* ---- multipleOf: the digits so far scaled by 10^mult_k in used, written without exponent ---- */

/* The byte that moved frame t to `next` leaves some multiple within the bounds reachable: a
 * fraction digit past mult_k only a 0, no exponent. */
static int mult_step(const pf_schema_node *nd, pf_frame *t, int next, uint8_t c) {
    int k = nd->mult_k;
    switch (next) {
    case N_MINUS: t->lo = 1; break;
    case N_INT:
        if (t->off + k > PF_NUM_MULT_DIGITS) return 0;
        t->used = t->used * 10 + (c - '0');
        break;
    case N_FRAC:
        if (t->off <= k) t->used = t->used * 10 + (c - '0');
        else if (c != '0') return 0;
        break;
    case N_ZERO:
    case N_FRAC0: break;
    default: return 0; /* an exponent */
    }
    pf_frame after = *t;
    after.phase = (uint8_t)next;
    return pf_num_mult_frame_rest(nd, &after) != INT64_MAX;
}

/* A number may end here: accepting, and within its bounds. In the fraction, a prefix equal to a's
 * so far is a itself when a's other digits are 0 (below a otherwise); one equal to b's is b
 * itself when b's other digits are 0. */
static int num_can_end(const pf_schema_node *nd, const pf_frame *t) {
    if (!num_accepting(t->phase)) return 0;
    if (nd->mult) return pf_num_mult_frame_rest(nd, t) == 0;
    if (!bounded(nd)) return 1;
    mag_range r = pf_num_range(nd, t->lo);
    if (t->phase == N_EXP) return pf_num_exp_rest(&r, t->used, EXP_FD(t->hi), EXP_NEG(t->hi), EXP_VAL(t->hi), t->off) == 0;
    if (t->hi & F_NOPLAIN) return 0;
    int64_t i = (int64_t)t->used;
    if (t->phase != N_FRAC) return mag_feasible(r, i, i, 0);
    if ((t->hi & EQ_A) && (r.a_open || frac_after(r.a.f, t->off))) return 0;
    return !((t->hi & EQ_B) && r.b_open && !frac_after(r.b.f, t->off));
}

/* The fewest fraction digits k >= 1 after which some magnitude from l to u (one integer part)
 * ends: l rounded up to k digits is at most u. INT64_MAX when none. */
static int64_t frac_need(mag l, mag u, int written) {
    if (pf_mag_cmp(l, u) > 0) return INT64_MAX;
    for (int k = 1; k + written <= PF_MATCHER_MAX_DIGITS; k++) {
        int64_t q = k_pow10[16 - written - k];
        mag c = {l.i, (l.f + q - 1) / q * q};
        if (c.f == ONE) c.i++, c.f = 0;
        if (pf_mag_cmp(c, u) <= 0) return k;
    }
    return INT64_MAX;
}

/* The fewest fraction digits that end a magnitude within r with its integer part in [lo, hi]. */
static int64_t frac_fresh(mag_range r, int64_t lo, int64_t hi) {
    mag l = mag_least(r), u = mag_most(r), x = {lo, 0}, y = {hi, ONE - 1};
    if (pf_mag_cmp(x, l) > 0) l = x;
    if (pf_mag_cmp(y, u) < 0) u = y;
    return frac_need(l, u, 0);
}

/* In the fraction (n digits written, none of them ending it within r): the fewest more. The
 * digits so far equal a's or b's (otherwise it could end), which says what they are. */
static int64_t frac_more(mag_range r, const pf_frame *t) {
    int n = t->off;
    mag e = (t->hi & EQ_A) ? r.a : r.b, p = {e.i, e.f - frac_after(e.f, n)}; /* p: the digits written */
    mag l = (t->hi & EQ_A) ? mag_least(r) : p;
    mag u = (t->hi & EQ_B) ? mag_most(r) : (mag){p.i, p.f + k_pow10[16 - n] - 1};
    return frac_need(l, u, n);
}

/* The fewest bytes after an integer part p (off digits written; digits: more may follow) that end
 * a magnitude within r: j more digits, and where only a fraction fits, '.' and its fewest digits. */
static int64_t mag_rest(mag_range r, int64_t p, int off, int digits, int frac) {
    int64_t best = INT64_MAX;
    for (int j = 0; j + off <= PF_MATCHER_MAX_DIGITS && j < 17 && (j == 0 || digits) && j < best; j++) {
        if (p > (INT64_MAX - k_pow10[j]) / k_pow10[j] || p * k_pow10[j] > r.b.i) break;
        int64_t lo = p * k_pow10[j], hi = lo + k_pow10[j] - 1;
        if (mag_feasible(r, lo, hi, 0)) return j;
        int64_t k = frac ? frac_fresh(r, lo, hi) : INT64_MAX;
        if (k != INT64_MAX && j + 1 + k < best) best = j + 1 + k;
    }
    return best;
}

/* The fewest bytes of a magnitude within r written from nothing: "0", or a digit 1-9 and more. */
static int64_t mag_fresh(mag_range r, int frac) {
    int64_t best = mag_rest(r, 0, 1, 0, frac);
    best = best == INT64_MAX ? INT64_MAX : best + 1;
    for (int64_t d = 1; d <= 9; d++) {
        int64_t k = mag_rest(r, d, 1, 1, frac);
        if (k != INT64_MAX && k + 1 < best) best = k + 1;
    }
    return best;
}

static int64_t plus(int64_t k, int64_t n) { return k == INT64_MAX ? k : k + n; }

/* The fewest bytes that end a number whose only way into range is an exponent, or that is in one. */
static int64_t exp_rest(const mag_range *r, const pf_frame *t) {
    int64_t best = INT64_MAX;
    switch (t->phase) {
    case N_FRAC0:
        for (uint64_t c = 0; c <= 9; c++) {
            int64_t k = plus(pf_num_exp_rest(r, t->used * 10 + c, 1, 2, 0, 0), 2);
            best = k < best ? k : best;
        }
        return best;
    case N_INT: return plus(pf_num_exp_rest(r, t->used, 0, 2, 0, 0), 1);
    case N_FRAC: return plus(pf_num_exp_rest(r, t->used, t->off, 2, 0, 0), 1);
    case N_EXP0: return pf_num_exp_rest(r, t->used, EXP_FD(t->hi), 2, 0, 0);
    case N_EXPS: return pf_num_exp_rest(r, t->used, EXP_FD(t->hi), EXP_NEG(t->hi), 0, 0);
    default: return pf_num_exp_rest(r, t->used, EXP_FD(t->hi), EXP_NEG(t->hi), EXP_VAL(t->hi), t->off);
    }
}

/* A fresh mantissa's digit 1-9, 'e' and an exponent. */
static int64_t exp_fresh_rest(const mag_range *r) {
    int64_t best = INT64_MAX;
    for (uint64_t c = 1; c <= 9; c++) {
        int64_t k = plus(pf_num_exp_rest(r, c, 0, 2, 0, 0), 2);
        best = k < best ? k : best;
    }
    return best;
}

static int64_t plain_rest(const pf_schema_node *nd, const pf_frame *t);

int64_t pf_matcher_num_rest(const pf_schema_node *nd, const pf_frame *t) {
    static const uint8_t k_plain[N_EXP + 1] = {[N_START] = 1, [N_MINUS] = 1, [N_FRAC0] = 1, [N_EXP0] = 1, [N_EXPS] = 1};
    if (nd->mult) return pf_num_mult_frame_rest(nd, t);
    if (!bounded(nd)) return k_plain[t->phase];
    mag_range r = pf_num_range(nd, t->lo);
    if (t->phase >= N_EXP0 || (t->hi & F_NOPLAIN)) return exp_rest(&r, t);
    int64_t plain = plain_rest(nd, t), e = INT64_MAX;
    if (nd->kind != PF_SN_NUMBER) return plain;
    if (t->phase == N_START) {
        mag_range neg = pf_num_range(nd, 1);
        e = plus(exp_fresh_rest(&neg), 1);
        r = pf_num_range(nd, 0);
        int64_t pos = exp_fresh_rest(&r);
        e = pos < e ? pos : e;
    } else if (t->phase == N_MINUS) {
        e = exp_fresh_rest(&r);
    } else if (t->hi & F_NORM) {
        e = exp_rest(&r, t);
    }
    return e < plain ? e : plain;
}

/* The fewest bytes that end a number written without exponent. */
static int64_t plain_rest(const pf_schema_node *nd, const pf_frame *t) {
    int frac = nd->kind == PF_SN_NUMBER;
    mag_range r = pf_num_range(nd, t->lo);
    switch (t->phase) {
    case N_START: {
        int64_t pos = mag_fresh(pf_num_range(nd, 0), frac), neg = mag_fresh(pf_num_range(nd, 1), frac);
        int64_t neg1 = neg == INT64_MAX ? neg : neg + 1; /* the sign's byte; no value either way stays INT64_MAX */
        return pos < neg1 ? pos : neg1;
    }
    case N_MINUS: return mag_fresh(r, frac);
    case N_ZERO: return mag_rest(r, 0, 1, 0, frac);
    case N_INT: return mag_rest(r, (int64_t)t->used, t->off, 1, frac);
    case N_FRAC0: return frac_fresh(r, (int64_t)t->used, (int64_t)t->used);
    default: return num_can_end(nd, t) ? 0 : frac_more(r, t); /* N_FRAC */
    }
}

int64_t pf_matcher_min_stacks(const pf_matcher *m, int64_t (*fn)(const void *ctx, const pf_frame *f, int n),
                              const void *ctx) {
    const mstate cur = m->st[m->n_st - 1];
    int64_t best = INT64_MAX;
    for (size_t i = cur.off; i < cur.off + cur.frames; i += 1 + (size_t)m->arena[i].lo) {
        int64_t v = fn(ctx, m->arena + i + 1, m->arena[i].lo);
        if (v < best) best = v;
    }
    return best;
}

const pf_schema *pf_matcher_schema(const pf_matcher *m) { return m->s; }

/* Numbers: RFC 8259 with at most PF_MATCHER_MAX_DIGITS digits in each part; an integer has neither
 * fraction nor exponent. A byte that cannot continue the number ends it (when it may end) and goes
 * to the enclosing value. */
static int step_number(const pf_matcher *m, pf_frame *t, int *n, uint8_t c) {
    const pf_schema_node *nd = node_of(m, t);
    int digit = c >= '0' && c <= '9', integer = nd->kind == PF_SN_INTEGER;
    int next = -1;
    switch (t->phase) {
    case N_START: next = c == '-' ? N_MINUS : c == '0' ? N_ZERO : digit ? N_INT : -1; break;
    case N_MINUS: next = c == '0' ? N_ZERO : digit ? N_INT : -1; break;
    case N_ZERO:
    case N_INT:
        next = digit && t->phase == N_INT ? N_INT : c == '.' ? N_FRAC0 : (c == 'e' || c == 'E') ? N_EXP0 : -1;
        if (integer && next != N_INT) next = -1;
        break;
    case N_FRAC0: next = digit ? N_FRAC : -1; break;
    case N_FRAC: next = digit ? N_FRAC : (c == 'e' || c == 'E') ? N_EXP0 : -1; break;
    case N_EXP0: next = (c == '+' || c == '-') ? N_EXPS : digit ? N_EXP : -1; break;
    case N_EXPS:
    case N_EXP: next = digit ? N_EXP : -1; break;
    }
    if (next >= 0 && digit) { /* t->off: the digits of the current part (integer, fraction, exponent) */
        if (next != t->phase) t->off = 1;
        else if (t->off < PF_MATCHER_MAX_DIGITS) t->off++;
        else next = -1;
    }
    if (next >= 0 && (nd->mult ? !mult_step(nd, t, next, c) : bounded(nd) && !bound_step(nd, t, next, c))) return REJECT;
    if (next >= 0) return t->phase = (uint8_t)next, CONSUMED;
    if (!num_can_end(nd, t)) return REJECT;
    (*n)--;
    return AGAIN;
}

/* A literal frame's phase: where its text is (the candidates left share every byte so far). */
enum { L_IN_STRING = 1, L_ESCAPE = 2, L_SPACED = 4 };

/* enum / const texts and true/false/null: the candidates narrow byte by byte. An array or object
 * value may take one space after each ',' and ':' of its text outside strings, as documents are
 * written (`{"a": 1, "b": 2}`); the space is no byte of the text, so the texts stay compact. */
/* The frame of the array whose items must be unique that literal frame t (n frames with it) is an
 * item of; NULL when none. */
static pf_frame *unique_array(const pf_matcher *m, pf_frame *t, int n) {
    if (n < 2 || t[-1].kind != K_ARR) return NULL;
    const pf_schema_node *a = node_of(m, t - 1);
    return a->n_uniq && a->uniq_lit == t->node ? t - 1 : NULL;
}

/* Some text in [lo, hi) has a value the array has not taken yet. */
static int some_untaken(const pf_schema_node *a, const pf_frame *arr, int32_t lo, int32_t hi) {
    for (int32_t i = lo; i < hi; i++)
        if (!(arr->used >> a->uniq_class[i] & 1)) return 1;
    return 0;
}

/* Text i completes an item: its value not taken before, and taken now. */
static int take_value(const pf_matcher *m, pf_frame *arr, int32_t i) {
    if (!arr) return 1;
    uint64_t bit = 1ull << node_of(m, arr)->uniq_class[i];
    if (arr->used & bit) return 0;
    arr->used |= bit;
    return 1;
}

static int step_literal(const pf_matcher *m, pf_frame *t, int *n, uint8_t c) {
    const pf_lit_set *set = &node_of(m, t)->lits;
    int32_t lo = t->lo, hi = t->hi;
    pf_frame *arr = unique_array(m, t, *n);
    if (c == ' ' && !node_of(m, t)->raw && t->off > 0 && !(t->phase & (L_IN_STRING | L_SPACED)) &&
        (set->s[lo][t->off - 1] == ',' || set->s[lo][t->off - 1] == ':') && set->len[lo] > (uint32_t)t->off)
        return t->phase |= L_SPACED, CONSUMED;
    pf_lit_narrow(set, &lo, &hi, t->off, c);
    if (lo != hi) { /* c is the text's next byte */
        int p = t->phase & ~L_SPACED;
        if (p & L_ESCAPE) p &= ~L_ESCAPE;
        else if ((p & L_IN_STRING) && c == '\\') p |= L_ESCAPE;
        else if (c == '"') p ^= L_IN_STRING;
        t->phase = (uint8_t)p;
    }
    if (lo == hi) {
        if (set->len[t->lo] != (uint32_t)t->off || !take_value(m, arr, t->lo)) return REJECT;
        (*n)--; /* complete: c belongs to the enclosing value */
        return AGAIN;
    }
    if (arr && !some_untaken(node_of(m, arr), arr, lo, hi)) return REJECT;
    t->lo = lo, t->hi = hi, t->off++;
    if (hi - lo == 1 && set->len[lo] == (uint32_t)t->off) (*n)--, take_value(m, arr, lo);
    return CONSUMED;
}

/* Keys so far: the listed ones given (used) and the others (off, counted up to the most that
 * still matters: maxProperties, or minProperties when unbounded). */
static int64_t obj_keys(const pf_frame *o) { return pf_keys_count(pf_frame_keys(o)) + o->off; }

/* One more key (listed key i, or another when i < 0) fits under maxProperties and still leaves
 * room for the keys needed and not given yet (required, or required by those given). */
static int key_fits(const pf_schema_node *nd, const pf_frame *o, int32_t i) {
    if (nd->max_props == INT64_MAX) return 1;
    pf_keys used = i >= 0 ? pf_frame_keys(o) | pf_key_bit(i) : pf_frame_keys(o);
    return obj_keys(o) + 1 + pf_keys_count(pf_schema_keys_needed(nd, used) & ~used) <= nd->max_props;
}

/* Listed key i may be written now in object frame o (n frames with the key's; used: its keys). */
static int key_open_in(const pf_matcher *m, const pf_schema_node *nd, const pf_frame *o, pf_keys used, int32_t i, int n) {
    return !pf_keys_has(used, i) && key_fits(nd, o, i) && fits(m, nd->prop_node[i], n);
}

static int key_open(const pf_matcher *m, const pf_schema_node *nd, const pf_frame *o, int32_t i, int n) {
    return key_open_in(m, nd, o, pf_frame_keys(o), i, n);
}

/* The values of keys other than the listed ones fit with n frames (with patternProperties, every
 * one of their nodes does: the key does not tell yet which it takes). */
static int other_fits(const pf_matcher *m, const pf_schema_node *nd, int n) {
    if (nd->key_node < 0) return fits(m, nd->extra, n);
    const uint32_t *masks;
    int k = pf_regex_masks(m->s->nodes[nd->key_node].re, &masks);
    for (int i = 0; i < k; i++)
        if (nd->key_vals[i] >= 0 && !fits(m, nd->key_vals[i], n)) return 0;
    return 1;
}

/* A key other than the listed ones may be written now (free keys, additionalProperties, or
 * patternProperties). */
static int other_open(const pf_matcher *m, const pf_schema_node *nd, const pf_frame *o, int n) {
    return (nd->extra >= 0 || nd->key_node >= 0) && key_fits(nd, o, -1) && other_fits(m, nd, n);
}

/* The string node of the other keys. */
static int32_t other_key_node(const pf_schema_node *nd) { return nd->key_node >= 0 ? nd->key_node : PF_SN_ID_KEY_STRING; }

/* The other key's text so far (pre[0..len), from its opening quote) can go on: a string frame of
 * its node takes it. */
static int other_prefix_ok(const pf_matcher *m, const pf_schema_node *nd, const char *pre, int32_t len, int n) {
    pf_frame s = frame(K_STR, S_OPEN, other_key_node(nd));
    int k = n;
    for (int32_t i = 0; i < len; i++)
        if (step_string(m, &s, &k, (uint8_t)pre[i]) != CONSUMED || k != n) return 0;
    return 1;
}

/* The key being written left every listed key's text: it is one of the other keys. Its bytes so
 * far (a listed key's prefix) go through a string frame that takes only the short escapes (\",
 * \\, \n, ...: the one spelling a listed key's text has for those characters, so an other key
 * can never spell a listed key another way), then c does. */
static int other_key(const pf_matcher *m, pf_frame *f, int *n) {
    pf_frame *t = &f[*n - 1], *o = &f[*n - 2];
    const pf_schema_node *nd = node_of(m, o);
    if (!other_open(m, nd, o, *n)) return REJECT;
    const char *pre = nd->n_props ? nd->keys.s[t->lo] : "";
    pf_frame s = frame(K_STR, S_OPEN, other_key_node(nd));
    int k = *n;
    for (int32_t i = 0; i < t->off; i++)
        if (step_string(m, &s, &k, (uint8_t)pre[i]) != CONSUMED || k != *n) return REJECT;
    o->phase = O_COLON;
    *t = s;
    return AGAIN;
}

/* The key of an object with listed properties: the texts `"key":` of the keys not given yet; with
 * other keys allowed, any key whose text leaves them. */
static int step_key(const pf_matcher *m, pf_frame *f, int *n, uint8_t c) {
    pf_frame *t = &f[*n - 1], *o = &f[*n - 2];
    const pf_schema_node *nd = node_of(m, o);
    int32_t lo = t->lo, hi = t->hi, open = 0;
    pf_lit_narrow(&nd->keys, &lo, &hi, t->off, c);
    if (lo == hi && (nd->extra >= 0 || nd->key_node >= 0)) return other_key(m, f, n);
    pf_keys given = pf_frame_keys(o);
    for (int32_t i = lo; i < hi && !open; i++) open = key_open_in(m, nd, o, given, i, *n);
    /* else only a key that leaves the listed texts later: not closed yet; with patternProperties
     * its prefix must stay a key some pattern or additionalProperties takes */
    if (!open && (!other_open(m, nd, o, *n) || (c == '"' && t->off > 0) ||
                  (nd->key_node >= 0 && !other_prefix_ok(m, nd, nd->keys.s[lo], t->off + 1, *n))))
        return REJECT;
    t->lo = lo, t->hi = hi, t->off++;
    if (nd->keys.len[lo] != (uint32_t)t->off) return CONSUMED;
    if (!key_open(m, nd, o, lo, *n)) return REJECT; /* a listed key given twice */
    /* no key text is a prefix of another (each ends with the closing quote and a colon) */
    pf_frame_set_keys(o, pf_frame_keys(o) | pf_key_bit(lo));
    o->phase = O_NEXT;
    *t = frame(K_VALUE, V_SPACE, nd->prop_node[lo]);
    return CONSUMED;
}

static int start_key(const pf_schema_node *nd, pf_frame *f, int *n) {
    pf_frame *t = &f[*n - 1];
    if (nd->free_keys) {
        t->phase = O_COLON;
        f[(*n)++] = frame(K_STR, S_BODY, nd->key_node >= 0 ? nd->key_node : PF_SN_ID_ANY_STRING);
        return CONSUMED;
    }
    pf_frame k = frame(K_KEY, 0, t->node);
    k.hi = nd->n_props;
    f[(*n)++] = k;
    return AGAIN;
}

/* The node of the value of the other key just written (its automaton's state in o->hi, taken). */
static int32_t other_value(const pf_matcher *m, const pf_schema_node *nd, pf_frame *o) {
    if (nd->key_node < 0) return nd->extra;
    const pf_regex *re = m->s->nodes[nd->key_node].re;
    const uint32_t *masks;
    int k = pf_regex_masks(re, &masks);
    uint32_t mask = pf_regex_state_mask(re, o->hi);
    o->hi = 0;
    for (int i = 0; i < k; i++)
        if (masks[i] == mask) return nd->key_vals[i];
    return -1;
}

/* Object frame t may close now: its needed keys given, minProperties met. */
static int obj_can_close(const pf_schema_node *nd, const pf_frame *t) {
    pf_keys used = pf_frame_keys(t), need = nd->free_keys ? 0 : pf_schema_keys_needed(nd, used);
    return (used & need) == need && obj_keys(t) >= nd->min_props;
}

/* Object frame t (n frames on its stack) may take one more key. */
static int obj_can_key(const pf_matcher *m, const pf_schema_node *nd, const pf_frame *t, int n) {
    pf_keys used = pf_frame_keys(t);
    int can_key = other_open(m, nd, t, n + 1);
    for (int i = 0; i < nd->n_props && !can_key; i++) can_key = key_open_in(m, nd, t, used, i, n + 1);
    return can_key;
}

/* Whether the object may close or take a key is asked only of the byte that would do it: a mask
 * feeds every byte of the vocabulary's first level here. */
static int step_object(const pf_matcher *m, pf_frame *f, int *n, uint8_t c) {
    pf_frame *t = &f[*n - 1];
    const pf_schema_node *nd = node_of(m, t);
    switch (t->phase) {
    case O_OPEN:
        if (c != '{') return REJECT;
        t->phase = O_FIRST;
        return CONSUMED;
    case O_FIRST:
    case O_NEXT:
        if (c == '}') return obj_can_close(nd, t) ? ((*n)--, CONSUMED) : REJECT;
        if (t->phase == O_NEXT) {
            if (c != ',' || !obj_can_key(m, nd, t, *n)) return REJECT;
            t->phase = O_KEY;
            return CONSUMED;
        }
        return c == '"' && obj_can_key(m, nd, t, *n) ? start_key(nd, f, n) : REJECT;
    case O_KEY:
        if (c == ' ') return t->phase = O_KEY_SPACED, CONSUMED;
        return c == '"' ? start_key(nd, f, n) : REJECT;
    case O_KEY_SPACED: return c == '"' ? start_key(nd, f, n) : REJECT;
    default: /* O_COLON: after one of the other keys */
        if (c != ':') return REJECT;
        t->phase = O_NEXT;
        int32_t val = other_value(m, nd, t);
        if (val < 0) return REJECT;
        if (t->off < (nd->max_props == INT64_MAX ? nd->min_props : nd->max_props)) t->off++;
        f[(*n)++] = frame(K_VALUE, V_SPACE, val);
        return CONSUMED;
    }
}

/* The node each item of array node nd is a value of, and the one whose room a new item needs (with
 * contains, an item that counts: never shallower than the others, which it narrows). */
static int32_t item_node(const pf_schema_node *nd) { return nd->contains >= 0 ? nd->contains_items : nd->items; }
static int32_t item_room_node(const pf_schema_node *nd) { return nd->contains >= 0 ? nd->contains : nd->items; }

/* The item of array frame a just started takes the union's alternative alt (0: it counts for
 * contains, counted at once in a->off: the array cannot go on until it is complete; 1: it does
 * not, allowed only while the items left under maxItems can still hold the ones that count). */
static int contains_item(const pf_matcher *m, pf_frame *a, int alt) {
    const pf_schema_node *nd = node_of(m, a);
    if (alt == 0) {
        if (a->off < nd->min_contains) a->off++;
        return 1;
    }
    return nd->max_items - a->lo >= nd->min_contains - a->off;
}

static int step_array(const pf_matcher *m, pf_frame *f, int *n, uint8_t c) {
    pf_frame *t = &f[*n - 1];
    const pf_schema_node *nd = node_of(m, t);
    int counted = nd->contains < 0 || t->off >= nd->min_contains;
    switch (t->phase) {
    case A_OPEN:
        if (c != '[') return REJECT;
        t->phase = A_FIRST;
        return CONSUMED;
    case A_FIRST:
        if (c == ']' && nd->min_items == 0 && counted) return (*n)--, CONSUMED;
        if (nd->max_items == 0 || !fits(m, item_room_node(nd), *n + 1)) return REJECT;
        t->lo = 1;
        break;
    case A_NEXT:
        if (c == ',' && t->lo < nd->max_items && t->lo < INT32_MAX && fits(m, item_room_node(nd), *n + 1) &&
            (!nd->n_uniq || __builtin_popcountll(t->used) < nd->n_uniq))
            return t->phase = A_ITEM, CONSUMED;
        if (c == ']' && t->lo >= nd->min_items && counted) return (*n)--, CONSUMED;
        return REJECT;
    default: /* A_ITEM */
        t->lo++;
        break;
    }
    int after_comma = t->phase == A_ITEM;
    t->phase = A_NEXT;
    f[(*n)++] = frame(K_VALUE, after_comma ? V_SPACE : V_TIGHT, item_node(nd));
    return AGAIN;
}

/* Feed c to stack f[0..n), emitting every stack that accepts it (a union forks one per
 * alternative). */
static void feed(pf_matcher *m, size_t start, uint32_t *threads, pf_frame *f, int n, uint8_t c) {
    for (int guard = 0; guard < 4 * PF_MATCHER_MAX_FRAMES && n > 0; guard++) {
        pf_frame *t = &f[n - 1];
        const pf_schema_node *nd = node_of(m, t);
        if (t->kind == K_VALUE && nd->kind == PF_SN_UNION) {
            int item = n >= 2 && f[n - 2].kind == K_ARR && node_of(m, &f[n - 2])->contains_items == t->node;
            for (int i = 0; i < nd->n_alts; i++) {
                pf_frame g[PF_MATCHER_MAX_FRAMES];
                memcpy(g, f, (size_t)n * sizeof *f);
                g[n - 1].node = nd->alts[i];
                if (!item || contains_item(m, &g[n - 2], i)) feed(m, start, threads, g, n, c);
            }
            return;
        }
        int r;
        switch (t->kind) {
        case K_VALUE: r = start_value(m, t, n, c); break;
        case K_OBJ: r = step_object(m, f, &n, c); break;
        case K_KEY: r = step_key(m, f, &n, c); break;
        case K_ARR: r = step_array(m, f, &n, c); break;
        case K_STR:
            r = step_string(m, t, &n, c);
            if (r == CONSUMED && t == &f[n] && n > 0 && f[n - 1].kind == K_OBJ && f[n - 1].phase == O_COLON)
                f[n - 1].hi = t->hi; /* a key closed: its automaton's state chooses the value's node */
            break;
        case K_NUM: r = step_number(m, t, &n, c); break;
        case K_LIT: r = step_literal(m, t, &n, c); break;
        default: r = REJECT;
        }
        if (r == REJECT) return;
        if (r == CONSUMED) {
            emit(m, start, threads, f, n);
            return;
        }
    }
}

/* The first state: one stack, a value of root; with wraps one stack per wrap, bottom first its
 * suffix, its value, its prefix. */
void pf_matcher_reset(pf_matcher *m) {
    const pf_schema *s = m->s;
    pf_schema_wrap plain = {0, s->root, 0};
    const pf_schema_wrap *w = s->n_wraps ? s->wraps : &plain;
    int n_w = s->n_wraps ? s->n_wraps : 1;
    m->n_arena = 0;
    m->n_st = 0;
    for (int i = 0; i < n_w; i++) {
        pf_frame h = frame(K_HEAD, 0, 0), *f = m->arena + m->n_arena + 1;
        int n = 0;
        if (w[i].suffix) f[n++] = frame(K_VALUE, V_TIGHT, w[i].suffix);
        f[n++] = frame(K_VALUE, V_TIGHT, w[i].node);
        if (w[i].prefix) f[n++] = frame(K_VALUE, V_TIGHT, w[i].prefix);
        h.lo = n;
        m->arena[m->n_arena] = h;
        m->n_arena += (size_t)n + 1;
    }
    m->st[0] = (mstate){0, (uint32_t)m->n_arena, (uint32_t)n_w};
    m->n_st = 1;
}

pf_matcher *pf_matcher_new(const pf_schema *s) {
    pf_matcher *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->s = s;
    m->cap_st = 256;
    m->st = malloc(m->cap_st * sizeof *m->st);
    if (!m->st || grow_arena(m, 4 * (size_t)(s->n_wraps ? s->n_wraps : 1)) < 0) {
        pf_matcher_free(m);
        return NULL;
    }
    pf_matcher_reset(m);
    return m;
}

void pf_matcher_free(pf_matcher *m) {
    if (!m) return;
    free(m->arena);
    free(m->st);
    free(m);
}

int pf_matcher_push(pf_matcher *m, uint8_t c) {
    const mstate cur = m->st[m->n_st - 1];
    size_t start = m->n_arena;
    uint32_t threads = 0;
    for (size_t i = cur.off; i < cur.off + cur.frames && !m->oom;) {
        pf_frame f[PF_MATCHER_MAX_FRAMES];
        int n = m->arena[i].lo;
        memcpy(f, m->arena + i + 1, (size_t)n * sizeof *f);
        i += 1 + (size_t)n;
        feed(m, start, &threads, f, n, c);
    }
    if (!m->oom && threads && m->n_st == m->cap_st) {
        mstate *st = realloc(m->st, 2 * m->cap_st * sizeof *st);
        if (st) m->st = st, m->cap_st *= 2;
        else m->oom = 1;
    }
    if (m->oom || !threads) {
        m->n_arena = start;
        int oom = m->oom;
        m->oom = 0;
        return oom ? -1 : 0;
    }
    m->st[m->n_st++] = (mstate){start, (uint32_t)(m->n_arena - start), threads};
    return 1;
}

int pf_matcher_push_bytes(pf_matcher *m, const uint8_t *p, size_t n) {
    size_t pos = m->n_st;
    for (size_t i = 0; i < n; i++) {
        int r = pf_matcher_push(m, p[i]);
        if (r <= 0) {
            pf_matcher_rollback(m, pos);
            return r;
        }
    }
    return 1;
}

size_t pf_matcher_pos(const pf_matcher *m) { return m->n_st; }

void pf_matcher_rollback(pf_matcher *m, size_t pos) {
    if (pos < 1 || pos > m->n_st) return;
    m->n_st = pos;
    m->n_arena = m->st[pos - 1].off + m->st[pos - 1].frames;
}

/* Calls fn on each stack of the current state; stops at the first nonzero. */
static int any_stack(const pf_matcher *m, int (*fn)(const pf_matcher *, const pf_frame *, int)) {
    const mstate cur = m->st[m->n_st - 1];
    for (size_t i = cur.off; i < cur.off + cur.frames; i += 1 + (size_t)m->arena[i].lo)
        if (fn(m, m->arena + i + 1, m->arena[i].lo)) return 1;
    return 0;
}

static int stack_can_end(const pf_matcher *m, const pf_frame *f, int n) {
    if (n == 0) return 1;
    if (n > 1) return 0;
    if (f[0].kind == K_NUM) return num_can_end(node_of(m, f), f);
    return f[0].kind == K_LIT && node_of(m, f)->lits.len[f[0].lo] == (uint32_t)f[0].off;
}

static int stack_open(const pf_matcher *m, const pf_frame *f, int n) { return (void)m, (void)f, n > 0; }

/* The characters the string on top of stack f[0..n) may still take; -1 outside a string body. */
static int64_t string_room(const pf_matcher *m, const pf_frame *f, int n) {
    if (n == 0 || f[n - 1].kind != K_STR || f[n - 1].phase != S_BODY || f[n - 1].u8_need) return -1;
    const pf_schema_node *nd = node_of(m, f + n - 1);
    if (nd->re) return -1; /* every byte goes through the automaton */
    return nd->max_len == INT64_MAX ? INT64_MAX : nd->max_len - (int64_t)f[n - 1].used;
}

/* A listed key's text under way (top frame of f[0..n)) where other keys of any spelling are
 * allowed: every plain byte string either goes on with a listed key or leaves them for another
 * key, so the key takes it as a string without maxLength would. Not so between the bytes of a
 * character or of an escape (the text so far must leave a string between characters). */
static int64_t key_room(const pf_matcher *m, const pf_frame *f, int n) {
    if (n < 2) return -1;
    const pf_frame *t = &f[n - 1], *o = &f[n - 2];
    const pf_schema_node *nd = node_of(m, o);
    if (nd->key_node >= 0 || !nd->n_props || !other_open(m, nd, o, n)) return -1;
    pf_frame s = frame(K_STR, S_OPEN, PF_SN_ID_KEY_STRING);
    int k = n;
    for (int32_t i = 0; i < t->off; i++)
        if (step_string(m, &s, &k, (uint8_t)nd->keys.s[t->lo][i]) != CONSUMED || k != n) return -1;
    return s.phase == S_BODY && !s.u8_need ? INT64_MAX : -1;
}

static int stack_in_key(const pf_matcher *m, const pf_frame *f, int n) { return (void)m, n > 0 && f[n - 1].kind == K_KEY; }

int pf_matcher_can_end(const pf_matcher *m) { return any_stack(m, stack_can_end); }
int pf_matcher_in_key(const pf_matcher *m) { return any_stack(m, stack_in_key); }
int pf_matcher_closed(const pf_matcher *m) { return !any_stack(m, stack_open); }
static int64_t stack_string_room(const void *m, const pf_frame *f, int n) {
    return n > 0 && f[n - 1].kind == K_KEY ? key_room(m, f, n) : string_room(m, f, n);
}
int64_t pf_matcher_string_room(const pf_matcher *m) { return pf_matcher_min_stacks(m, stack_string_room, m); }
static int64_t stack_string_room_neg(const void *m, const pf_frame *f, int n) {
    int64_t r = stack_string_room(m, f, n);
    return r == INT64_MAX ? INT64_MIN : -r;
}
int64_t pf_matcher_string_room_most(const pf_matcher *m) {
    int64_t r = pf_matcher_min_stacks(m, stack_string_room_neg, m);
    return r == INT64_MIN ? INT64_MAX : -r;
}

int pf_matcher_pattern_cursor(const pf_matcher *m, pf_frame *cur) {
    const mstate st = m->st[m->n_st - 1];
    if (st.threads != 1) return 0;
    int n = m->arena[st.off].lo;
    const pf_frame *t = m->arena + st.off + n; /* the top: header at off, frames after it */
    if (n < 1 || t->kind != K_STR || t->phase != S_BODY || t->u8_need || !node_of(m, t)->re) return 0;
    *cur = *t;
    return 1;
}

/* Stack f[0..n) writes a listed key's text in an object whose other keys are those its
 * patternProperties match, and another key may be written now: *cur the other key's string frame
 * after the text so far, between characters (step_key's other_prefix_ok). */
static int stack_pattern_key(const pf_matcher *m, const pf_frame *f, int n, pf_frame *cur) {
    const pf_frame *t = f + n - 1;
    if (n < 2 || t->kind != K_KEY) return 0;
    const pf_schema_node *nd = node_of(m, t - 1);
    if (nd->key_node < 0 || !other_open(m, nd, t - 1, n)) return 0;
    pf_frame s = frame(K_STR, S_OPEN, nd->key_node);
    int k = n;
    const char *pre = nd->n_props ? nd->keys.s[t->lo] : "";
    for (int32_t i = 0; i < t->off; i++)
        if (step_string(m, &s, &k, (uint8_t)pre[i]) != CONSUMED || k != n) return 0;
    if (s.phase != S_BODY || s.u8_need) return 0;
    *cur = s;
    return 1;
}

int pf_matcher_n_stacks(const pf_matcher *m) { return (int)m->st[m->n_st - 1].threads; }

int pf_matcher_stack_plain(const pf_matcher *m, int i, pf_frame *cur, int64_t *room) {
    const mstate st = m->st[m->n_st - 1];
    size_t j = st.off;
    for (; i > 0 && j < st.off + st.frames; i--) j += 1 + (size_t)m->arena[j].lo;
    if (i || j >= st.off + st.frames) return 0;
    int n = m->arena[j].lo;
    const pf_frame *f = m->arena + j + 1, *t = f + n - 1;
    if (n < 1) return 0;
    if (t->kind == K_STR && t->phase == S_BODY && !t->u8_need && node_of(m, t)->re) return *cur = *t, PF_PLAIN_PATTERN;
    if ((*room = stack_string_room(m, f, n)) >= 0) return PF_PLAIN_ROOM;
    return stack_pattern_key(m, f, n, cur) ? PF_PLAIN_PATTERN_KEY : 0;
}

int pf_matcher_pattern_unbounded(const pf_matcher *m, const pf_frame *cur) {
    const pf_schema_node *nd = node_of(m, cur);
    return nd->max_len == INT64_MAX && (int64_t)cur->used >= nd->min_len;
}

int pf_matcher_pattern_far(const pf_matcher *m, const pf_frame *cur, int64_t chars) {
    const pf_schema_node *nd = node_of(m, cur);
    int64_t from, to = pf_regex_flat(nd->re, &from), used = (int64_t)cur->used;
    return nd->max_len != INT64_MAX && used + 1 >= from && chars <= to - used && chars <= nd->max_len - used;
}

int64_t pf_matcher_pattern_used(const pf_matcher *m, const pf_frame *cur) {
    return (int64_t)cur->used + !pf_matcher_pattern_unbounded(m, cur); /* count_char's count */
}

int pf_matcher_pattern_feed(const pf_matcher *m, pf_frame *cur, uint8_t c) {
    if (c == '"' || c == '\\' || c < 0x20) return 0;
    int n = 1; /* step_string pops only at a quote */
    return step_string(m, cur, &n, c) == CONSUMED;
}

const void *pf_matcher_state(const pf_matcher *m, size_t *len) {
    const mstate cur = m->st[m->n_st - 1];
    *len = cur.frames * sizeof(pf_frame);
    return m->arena + cur.off;
}
