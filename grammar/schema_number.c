/* Numbers and integers (grammar/schema_cc.h): minimum, maximum and the exclusive bounds, read
 * exactly from the schema's text. */
#include "grammar/schema_cc.h"

/* A JSON number's exact decimal value split as sign, integer part (saturated at BOUND_BIG, far
 * past any number the matcher writes) and whether a fraction follows; read from its source text,
 * so no rounding to a double decides a bound. */
#define BOUND_BIG 100000000000000000LL  /* 1e17 */
#define BOUND_WRITTEN 9999999999999999LL /* the largest integer part of 16 digits (PF_MATCHER_MAX_DIGITS) */
typedef struct {
    int neg, frac;
    int64_t whole;
} decimal;

static decimal decimal_of(const char *p, size_t n) {
    decimal d = {0, 0, 0};
    size_t i = 0;
    if (i < n && p[i] == '-') d.neg = 1, i++;
    char dig[64];
    int nd = 0, point = 0, extra = 0; /* extra: digits dropped past dig's room (all integer digits) */
    for (int seen_point = 0; i < n && ((p[i] >= '0' && p[i] <= '9') || p[i] == '.'); i++) {
        if (p[i] == '.') seen_point = 1;
        else if (nd < (int)sizeof dig) dig[nd++] = p[i], point += !seen_point;
        else if (!seen_point) extra++;
        else d.frac |= p[i] != '0';
    }
    long e = 0;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        int eneg = ++i < n && p[i] == '-';
        if (i < n && (p[i] == '-' || p[i] == '+')) i++;
        for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) e = e < 100000 ? e * 10 + (p[i] - '0') : e;
        e = eneg ? -e : e;
    }
    long whole_digits = point + extra + e;
    for (int k = 0; k < nd; k++) {
        if (k < whole_digits) d.whole = d.whole < BOUND_BIG ? d.whole * 10 + (dig[k] - '0') : BOUND_BIG;
        else d.frac |= dig[k] != '0';
    }
    for (long k = nd; k < whole_digits && d.whole && d.whole < BOUND_BIG; k++) d.whole *= 10;
    if (d.whole > BOUND_BIG) d.whole = BOUND_BIG;
    return d;
}

/* One bound (lower or upper, open or closed) tightened into node nd; an integer's bounds become
 * closed integers, a number's must be integers themselves. 0, or FAIL. */
static int add_bound(cctx *c, pf_schema_node *nd, const pf_json *x, int upper, int open, const char *key, const char *path) {
    if (x->type != PF_JSON_NUMBER) return sc_fail(c, path, "%s: not a number", key);
    decimal d = decimal_of(c->src + x->offset, c->src_len - x->offset);
    int64_t v = d.neg ? -d.whole : d.whole;
    if (nd->kind == PF_SN_NUMBER && d.frac)
        return sc_fail(c, path, "%s: a bound with a fraction on a number is not supported (only on an integer)", key);
    if (nd->kind == PF_SN_INTEGER) {
        if (d.frac) v += upper ? -d.neg : !d.neg; /* floor for an upper bound, ceil for a lower */
        else if (open) v += upper ? -1 : 1;
        open = 0;
    }
    if (upper && (v < nd->num_hi || (v == nd->num_hi && open))) nd->num_hi = v, nd->hi_open = (uint8_t)open;
    if (!upper && (v > nd->num_lo || (v == nd->num_lo && open))) nd->num_lo = v, nd->lo_open = (uint8_t)open;
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
    const pf_schema_node *nd = &c->s->nodes[id];
    if (nd->num_lo > nd->num_hi || (nd->num_lo == nd->num_hi && (nd->lo_open || nd->hi_open))) return UNSAT;
    if (nd->num_lo > BOUND_WRITTEN || nd->num_hi < -BOUND_WRITTEN) return UNSAT; /* past any number written */
    if (kind == PF_SN_NUMBER && nd->num_lo == INT64_MIN && nd->num_hi == INT64_MAX) return PF_SN_ID_ANY_NUMBER;
    return id;
}
