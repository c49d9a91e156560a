/* A number node's bounds as magnitudes of one sign (grammar/num_exp.h's pf_mag_range), the form
 * the matcher, the multipleOf search and the schema compiler test digits against. Private to
 * grammar/. */
#ifndef PF_NUM_RANGE_H
#define PF_NUM_RANGE_H

#include "grammar/num_exp.h"
#include "grammar/schema.h"

static inline int pf_mag_cmp(pf_mag x, pf_mag y) {
    return x.i != y.i ? (x.i < y.i ? -1 : 1) : x.f != y.f ? (x.f < y.f ? -1 : 1) : 0;
}

/* The magnitudes M = |value| that node nd's bounds allow among the positive numbers (neg 0) or the
 * negative ones (neg 1); b.i < 0 when none. */
pf_mag_range pf_num_range(const pf_schema_node *nd, int neg);

#endif
