/* multipleOf on numbers and integers (grammar/matcher.c): m * 10^-k divides a number written
 * without exponent exactly when its digits, scaled by 10^k, make a multiple of m; with the
 * bounds, tested as integers. Private to grammar/. */
#ifndef PF_NUM_MULTIPLE_H
#define PF_NUM_MULTIPLE_H

#include <stdint.h>

#include "grammar/matcher.h"
#include "grammar/num_exp.h"

/* The digits a number may have before and after its point together, so its digits scaled by 10^k
 * fit 64 bits. */
#define PF_NUM_MULT_DIGITS 18

/* The fewest bytes that end a magnitude within r that is a multiple of m * 10^-k, from matcher
 * phase `phase` (grammar/matcher_frames.h: N_MINUS for a fresh magnitude, N_ZERO, N_INT,
 * N_FRAC0, N_FRAC) with digits x so far (the integer part, then at most k fraction digits) and n
 * digits in the current part. 0: it may end here; INT64_MAX: no way on. */
int64_t pf_num_mult_rest(const pf_mag_range *r, uint64_t m, int k, int phase, uint64_t x, int n);
/* The same for number frame t of node nd (nd->mult set), its sign in t->lo; at N_START either sign
 * (a '-' one byte more). The schema compiler asks it of a fresh frame: INT64_MAX, no multiple
 * within the bounds. */
int64_t pf_num_mult_frame_rest(const pf_schema_node *nd, const pf_frame *t);

#endif
