/* Exponent forms of bounded numbers (grammar/num_exp.h): d * 10^s against the grid points that
 * bound a magnitude, compared as 128-bit integers (a side past 10^37 is above every bound). */
#include "grammar/num_exp.h"

#include "grammar/schema.h"

#define FRAC_DIGITS 16 /* PF_SCHEMA_FRAC_ONE = 10^16 */
/* Past these shifts a magnitude is below every nonzero grid point, or above every bound: each
 * side stands for all the shifts beyond it. */
#define S_TINY (-80)
#define S_HUGE 60

typedef __int128 i128;

static i128 cap(void) { return (i128)1000000000000000000LL * 10000000000000000000ULL; } /* 10^37 */

/* The sign of d * 10^s - g. */
static int cmp_scaled(uint64_t d, int64_t s, pf_mag g) {
    i128 x = d, y = (i128)g.i * PF_SCHEMA_FRAC_ONE + g.f, top = cap();
    for (int64_t t = s + FRAC_DIGITS; t > 0; t--)
        if ((x *= 10) > top) return 1;
    for (int64_t t = s + FRAC_DIGITS; t < 0 && y; t++)
        if ((y *= 10) > top) return -1;
    return x < y ? -1 : x > y;
}

/* d * 10^s is at least r's lower end (above it when open): false, then true as s grows. */
static int above_a(const pf_mag_range *r, uint64_t d, int64_t s) {
    int c = cmp_scaled(d, s, r->a);
    return c > 0 || (c == 0 && !r->a_open);
}

static int below_b(const pf_mag_range *r, uint64_t d, int64_t s) {
    if (r->b.i == INT64_MAX) return 1;
    int c = cmp_scaled(d, s, r->b);
    return c < 0 || (c == 0 && !r->b_open);
}

static int64_t clamp(int64_t x) { return x < S_TINY ? S_TINY : x > S_HUGE ? S_HUGE : x; }

/* The magnitudes grow with s, so the shifts in range are an interval: the least shift from lo
 * above a, if it is below b. */
int pf_num_exp_some(const pf_mag_range *r, uint64_t d, int fd, int64_t e_lo, int64_t e_hi) {
    if (r->b.i < 0) return 0;
    int64_t lo = clamp(e_lo - fd), hi = clamp(e_hi - fd);
    if (!above_a(r, d, hi)) return 0;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (above_a(r, d, mid)) hi = mid;
        else lo = mid + 1;
    }
    return below_b(r, d, lo);
}

/* Some exponent of k more digits after e (read with sign neg) fits. */
static int digits_fit(const pf_mag_range *r, uint64_t d, int fd, int neg, int64_t e, int k) {
    int64_t p = 1;
    for (int j = 0; j < k; j++) p *= 10;
    int64_t lo = e * p, hi = lo + p - 1;
    return neg ? pf_num_exp_some(r, d, fd, -hi, -lo) : pf_num_exp_some(r, d, fd, lo, hi);
}

int64_t pf_num_exp_rest(const pf_mag_range *r, uint64_t d, int fd, int sign_state, int64_t e, int written) {
    if (sign_state == 2) {
        int64_t plus = pf_num_exp_rest(r, d, fd, 0, 0, 0), minus = pf_num_exp_rest(r, d, fd, 1, 0, 0);
        return plus <= minus ? plus : minus == INT64_MAX ? minus : minus + 1;
    }
    if (written && pf_num_exp_some(r, d, fd, sign_state ? -e : e, sign_state ? -e : e)) return 0;
    for (int k = 1; k + written <= PF_NUM_EXP_DIGITS; k++)
        if (digits_fit(r, d, fd, sign_state, e, k)) return k;
    return INT64_MAX;
}
