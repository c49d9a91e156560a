/* multipleOf (grammar/num_multiple.h): every completion of a number's digits is one of a few
 * arithmetic runs of scaled values, and a run holds a multiple of m within the bounds when the
 * least multiple of its step at or above its start is within its end. */
#include "grammar/num_multiple.h"

#include "grammar/matcher_frames.h"
#include "grammar/num_range.h"

typedef __int128 i128;

#define INF128 (((i128)1) << 120)

static i128 pow10_128(int n) {
    i128 p = 1;
    while (n-- > 0) p *= 10;
    return p;
}

static i128 gcd(i128 a, i128 b) {
    while (b) {
        i128 t = a % b;
        a = b, b = t;
    }
    return a;
}

/* A bound's magnitude times 10^k, rounded to the integers inside the range. */
static i128 scaled(pf_mag g, int k, int lower, int open) {
    i128 q = pow10_128(16 - k), base = (i128)g.i * pow10_128(k) + g.f / q;
    int exact = g.f % q == 0;
    if (lower) return base + (open || !exact);
    return base - (open && exact);
}

typedef struct {
    i128 lo, hi, m; /* scaled magnitudes lo..hi; m the multiple's scaled value */
} run_ctx;

/* Some multiple of m and of `step` lies in [a, b] and in the bounds. */
static int hits(const run_ctx *c, i128 a, i128 b, i128 step) {
    if (a < c->lo) a = c->lo;
    if (b > c->hi) b = c->hi;
    if (a > b) return 0;
    i128 l = c->m / gcd(c->m, step) * step, first = (a + l - 1) / l * l;
    return first <= b;
}

/* The fewest bytes after digits x of a fraction of n digits (n <= k): f more digits, each run
 * [x * 10^(k-n), + 10^(k-n) - 10^(k-n-f)] in steps of 10^(k-n-f). least: 1 where a digit must come. */
static int64_t frac_rest(const run_ctx *c, i128 x, int n, int k, int least) {
    i128 base = x * pow10_128(k - n);
    for (int f = least; f <= k - n; f++) {
        i128 step = pow10_128(k - n - f);
        if (hits(c, base, base + pow10_128(k - n) - step, step)) return f;
    }
    return INT64_MAX;
}

/* After an integer part x of n digits (more may follow unless zero): j more digits, then no
 * fraction or '.' and f digits. */
static int64_t int_rest(const run_ctx *c, i128 x, int n, int k, int more) {
    int64_t best = INT64_MAX;
    for (int j = 0; j <= (more ? PF_MATCHER_MAX_DIGITS - n : 0) && j + n + k <= PF_NUM_MULT_DIGITS && j < best; j++) {
        i128 p = pow10_128(j), lo = x * p;
        for (int f = 0; f <= k && j + (f ? f + 1 : 0) < best; f++) {
            i128 step = pow10_128(k - f), a = lo * pow10_128(k);
            if (hits(c, a, a + p * pow10_128(k) - step, step)) best = j + (f ? f + 1 : 0);
        }
    }
    return best;
}

int64_t pf_num_mult_rest(const pf_mag_range *r, uint64_t m, int k, int phase, uint64_t x, int n) {
    if (r->b.i < 0) return INT64_MAX;
    run_ctx c = {scaled(r->a, k, 1, r->a_open), r->b.i == INT64_MAX ? INF128 : scaled(r->b, k, 0, r->b_open), m};
    switch (phase) {
    case N_ZERO: return int_rest(&c, 0, 1, k, 0);
    case N_INT: return int_rest(&c, x, n, k, 1);
    case N_FRAC0: return k ? frac_rest(&c, x, 0, k, 1) : hits(&c, x, x, 1) ? 1 : INT64_MAX;
    case N_FRAC: return n >= k ? (hits(&c, x, x, 1) ? 0 : INT64_MAX) : frac_rest(&c, x, n, k, 0);
    default: { /* a fresh magnitude: "0" or a digit 1-9 first */
        int64_t best = int_rest(&c, 0, 1, k, 0);
        for (uint64_t d = 1; d <= 9; d++) {
            int64_t e = int_rest(&c, d, 1, k, 1);
            best = e < best ? e : best;
        }
        return best == INT64_MAX ? best : best + 1;
    }
    }
}

int64_t pf_num_mult_frame_rest(const pf_schema_node *nd, const pf_frame *t) {
    if (t->phase == N_START) {
        pf_mag_range pos = pf_num_range(nd, 0), neg = pf_num_range(nd, 1);
        int64_t a = pf_num_mult_rest(&pos, nd->mult, nd->mult_k, N_MINUS, 0, 0),
                b = pf_num_mult_rest(&neg, nd->mult, nd->mult_k, N_MINUS, 0, 0);
        return a <= b ? a : b == INT64_MAX ? b : b + 1;
    }
    pf_mag_range r = pf_num_range(nd, t->lo);
    return pf_num_mult_rest(&r, nd->mult, nd->mult_k, t->phase, t->used, t->off);
}
