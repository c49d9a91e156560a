/* Numbers and integers (grammar/schema_cc.h): minimum, maximum and the exclusive bounds, and
 * multipleOf, read exactly from the schema's text. */
#include "grammar/schema_cc.h"

#include "grammar/matcher_frames.h"
#include "grammar/num_multiple.h"

/* A JSON number's exact decimal value as a point of the 1e-16 grid numbers are written on, read
 * from its source text, so no rounding to a double decides a bound: its floor on the grid, whole +
 * frac / PF_SCHEMA_FRAC_ONE (whole saturated at +-BOUND_BIG, far past any number the matcher
 * writes), and whether the value lies above that point (digits past the 16th fraction digit). */
#define BOUND_BIG 100000000000000000LL  /* 1e17 */
#define BOUND_WRITTEN 9999999999999999LL /* the largest integer part of 16 digits (PF_MATCHER_MAX_DIGITS) */
#define ONE PF_SCHEMA_FRAC_ONE
typedef struct {
    int64_t whole, frac;
    int above;
} decimal;

/* x plus one grid step. */
static decimal grid_next(decimal x) {
    if (++x.frac == ONE) x.frac = 0, x.whole++;
    return x;
}

static decimal decimal_of(const char *p, size_t n) {
    int neg = 0;
    size_t i = 0;
    if (i < n && p[i] == '-') neg = 1, i++;
    char dig[64];
    int nd = 0, point = 0, extra = 0, rest = 0; /* extra: integer digits past dig's room; rest: a nonzero one past it */
    for (int seen_point = 0; i < n && ((p[i] >= '0' && p[i] <= '9') || p[i] == '.'); i++) {
        if (p[i] == '.') seen_point = 1;
        else if (nd < (int)sizeof dig) dig[nd++] = p[i], point += !seen_point;
        else if (!seen_point) extra++;
        else rest |= p[i] != '0';
    }
    long e = 0;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        int eneg = ++i < n && p[i] == '-';
        if (i < n && (p[i] == '-' || p[i] == '+')) i++;
        for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) e = e < 100000 ? e * 10 + (p[i] - '0') : e;
        e = eneg ? -e : e;
    }
    long whole_digits = point + extra + e; /* digit k of dig is 10^(whole_digits - 1 - k) */
    decimal d = {0, 0, 0};
    for (int k = 0; k < nd; k++) {
        long place = whole_digits - 1 - k; /* 0: units, -1: the first fraction digit */
        if (place >= 0) d.whole = d.whole < BOUND_BIG ? d.whole * 10 + (dig[k] - '0') : BOUND_BIG;
        else if (place >= -16) {
            int64_t w = 1;
            for (long q = 16 + place; q > 0; q--) w *= 10;
            d.frac += (dig[k] - '0') * w;
        } else rest |= dig[k] != '0';
    }
    for (long k = nd; k < whole_digits && d.whole && d.whole < BOUND_BIG; k++) d.whole *= 10;
    if (d.whole >= BOUND_BIG) d.whole = BOUND_BIG, d.frac = 0, rest = 0; /* past anything written */
    if (!neg) return d.above = rest, d;
    if (rest) d = grid_next(d); /* -(x + a little) lies between -(x + one step) and -x */
    d.above = rest;
    if (d.frac) d.whole = -d.whole - 1, d.frac = ONE - d.frac;
    else d.whole = -d.whole;
    return d;
}

static int grid_cmp(int64_t a, int64_t af, int64_t b, int64_t bf) {
    return a != b ? (a < b ? -1 : 1) : af != bf ? (af < bf ? -1 : 1) : 0;
}

/* One bound (lower or upper, open or closed) tightened into node nd: an integer's becomes a closed
 * integer; a number's is rounded inward to the grid numbers are written on (exact for them, as
 * they have at most 16 fraction digits). 0, or FAIL. */
static int add_bound(cctx *c, pf_schema_node *nd, const pf_json *x, int upper, int open, const char *key, const char *path) {
    if (x->type != PF_JSON_NUMBER) return sc_fail(c, path, "%s: not a number", key);
    decimal d = decimal_of(c->src + x->offset, c->src_len - x->offset);
    int exact = !d.above && !d.frac;
    if (nd->kind == PF_SN_INTEGER) {
        if (!upper && !exact) d.whole++; /* floor for an upper bound, ceil for a lower */
        else if (exact && open) d.whole += upper ? -1 : 1;
        d.frac = 0, open = 0;
    } else if (d.above) {
        if (!upper) d = grid_next(d); /* the least point above a lower bound off the grid */
        open = 0;
    }
    if (upper && (grid_cmp(d.whole, d.frac, nd->num_hi, nd->hi_frac) < 0 ||
                  (grid_cmp(d.whole, d.frac, nd->num_hi, nd->hi_frac) == 0 && open)))
        nd->num_hi = d.whole, nd->hi_frac = d.frac, nd->hi_open = (uint8_t)open;
    if (!upper && (grid_cmp(d.whole, d.frac, nd->num_lo, nd->lo_frac) > 0 ||
                   (grid_cmp(d.whole, d.frac, nd->num_lo, nd->lo_frac) == 0 && open)))
        nd->num_lo = d.whole, nd->lo_frac = d.frac, nd->lo_open = (uint8_t)open;
    return 0;
}

/* No point of the grid lies within the node's bounds. */
static int bounds_empty(const pf_schema_node *nd) {
    decimal lo = {nd->num_lo, nd->lo_frac, 0};
    if (nd->lo_open) lo = grid_next(lo);
    if (nd->hi_open) lo = grid_next(lo); /* lo + step > hi  <=>  lo > hi - step */
    return grid_cmp(lo.whole, lo.frac, nd->num_hi, nd->hi_frac) > 0;
}

/* multipleOf from its decimal text: digits d times 10^-k, at most 17 digits and 16 fraction
 * digits (numbers are written with no more); on an integer, the integers it divides: those divisible
 * by d / gcd(d, 10^k). 0, or FAIL. */
static int add_multiple(cctx *c, pf_schema_node *nd, const pf_json *x, const char *path) {
    if (x->type != PF_JSON_NUMBER || !(x->u.num.d > 0)) return sc_fail(c, path, "multipleOf: not a positive number");
    const char *p = c->src + x->offset, *end = c->src + c->src_len;
    uint64_t d = 0;
    int digits = 0;
    long exp10 = 0;
    for (int point = 0; p < end && ((*p >= '0' && *p <= '9') || *p == '.'); p++) {
        if (*p == '.') point = 1;
        else if (d || *p != '0') {
            if (++digits > 17) return sc_fail(c, path, "multipleOf: more than 17 digits is not supported");
            d = d * 10 + (uint64_t)(*p - '0'), exp10 -= point;
        } else exp10 -= point;
    }
    long e = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        int eneg = ++p < end && *p == '-';
        if (p < end && (*p == '-' || *p == '+')) p++;
        for (; p < end && *p >= '0' && *p <= '9'; p++) e = e < 100000 ? e * 10 + (*p - '0') : e;
        exp10 += eneg ? -e : e;
    }
    for (; d % 10 == 0; d /= 10) exp10++;
    for (; exp10 > 0; exp10--) {
        if (d > BOUND_BIG / 10) return sc_fail(c, path, "multipleOf: above 10^17 is not supported");
        d *= 10;
    }
    if (exp10 < -16) return sc_fail(c, path, "multipleOf: more than 16 fraction digits is not supported");
    int k = (int)-exp10;
    if (nd->kind == PF_SN_INTEGER) { /* gcd(d, 10^k) = 2^min(twos, k) 5^min(fives, k) */
        for (int i = 0; i < k && d % 2 == 0; i++) d /= 2;
        for (int i = 0; i < k && d % 5 == 0; i++) d /= 5;
        k = 0;
        if (d == 1) return 0; /* every integer */
    }
    nd->mult = d, nd->mult_k = (uint8_t)k;
    return 0;
}

/* minimum / maximum with draft 4's boolean exclusiveMinimum / exclusiveMaximum, or draft 6's
 * numeric ones, on a number or an integer node. */
int32_t sc_compile_number(cctx *c, const pf_json *v, pf_schema_kind kind, const char *path) {
    int32_t id = sc_new_node(c, kind);
    if (id < 0) return FAIL;
    for (int upper = 0; upper < 2; upper++) {
        const char *kb = sc_keywords[K_MINIMUM + upper], *ke = sc_keywords[K_MINIMUM + 2 + upper];
        const pf_json *b = pf_json_get(v, kb), *e = pf_json_get(v, ke);
        if (e && e->type == PF_JSON_BOOL) {
            if (b && add_bound(c, &c->s->nodes[id], b, upper, e->u.b, kb, path) < 0) return FAIL;
            continue;
        }
        if (b && add_bound(c, &c->s->nodes[id], b, upper, 0, kb, path) < 0) return FAIL;
        if (e && add_bound(c, &c->s->nodes[id], e, upper, 1, ke, path) < 0) return FAIL;
    }
    const pf_json *m = pf_json_get(v, "multipleOf");
    if (m && add_multiple(c, &c->s->nodes[id], m, path) < 0) return FAIL;
    const pf_schema_node *nd = &c->s->nodes[id];
    if (bounds_empty(nd)) return UNSAT;
    if (nd->num_lo > BOUND_WRITTEN || nd->num_hi < -BOUND_WRITTEN) return UNSAT; /* past any number written */
    if (nd->mult && pf_num_mult_frame_rest(nd, &(pf_frame){.kind = K_NUM, .phase = N_START, .node = id}) == INT64_MAX)
        return UNSAT; /* no multiple within the bounds */
    if (kind == PF_SN_NUMBER && !nd->mult && nd->num_lo == INT64_MIN && nd->num_hi == INT64_MAX) return PF_SN_ID_ANY_NUMBER;
    return id;
}
