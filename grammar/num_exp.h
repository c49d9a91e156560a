/* Bounded numbers written with an exponent (grammar/matcher.c): a mantissa of one nonzero digit
 * and its fraction digits, D / 10^fd, times 10^E, tested exactly against a range of magnitudes.
 * Private to grammar/. */
#ifndef PF_NUM_EXP_H
#define PF_NUM_EXP_H

#include <stdint.h>

#define PF_NUM_EXP_DIGITS 3 /* an exponent's digits on a bounded number (doubles need 3) */

/* A magnitude i + f / PF_SCHEMA_FRAC_ONE, 0 <= f < PF_SCHEMA_FRAC_ONE. */
typedef struct {
    int64_t i, f;
} pf_mag;

/* Magnitudes M of one sign with a <= M <= b, either end open; b.i INT64_MAX: no upper end;
 * b.i < 0: no magnitude fits. */
typedef struct {
    pf_mag a, b;
    int a_open, b_open;
} pf_mag_range;

/* Some exponent E in [e_lo, e_hi] puts d * 10^(E - fd) (d >= 1) within r. */
int pf_num_exp_some(const pf_mag_range *r, uint64_t d, int fd, int64_t e_lo, int64_t e_hi);
/* The fewest bytes that end an exponent within r: sign_state 2 before a sign or digit, else the
 * sign (1: '-'); e the digits' value so far, written of them (E itself may end: 0). INT64_MAX when
 * none. */
int64_t pf_num_exp_rest(const pf_mag_range *r, uint64_t d, int fd, int sign_state, int64_t e, int written);

#endif
