/* A number node's bounds as magnitudes of one sign (grammar/num_range.h). */
#include "grammar/num_range.h"

static pf_mag mag_neg(pf_mag x) {
    return x.f ? (pf_mag){-x.i - 1, PF_SCHEMA_FRAC_ONE - x.f} : (pf_mag){-x.i, 0};
}

pf_mag_range pf_num_range(const pf_schema_node *nd, int neg) {
    pf_mag_range r = {{0, 0}, {INT64_MAX, 0}, 0, 0};
    int has_lo = nd->num_lo != INT64_MIN, has_hi = nd->num_hi != INT64_MAX;
    pf_mag lo = {nd->num_lo, nd->lo_frac}, hi = {nd->num_hi, nd->hi_frac}, zero = {0, 0};
    if (!neg) {
        if (has_lo && lo.i >= 0) r.a = lo, r.a_open = nd->lo_open;
        if (has_hi) r.b = hi, r.b_open = nd->hi_open;
    } else { /* M = -value: value >= lo is M <= -lo */
        if (has_hi && pf_mag_cmp(hi, zero) <= 0) r.a = mag_neg(hi), r.a_open = nd->hi_open;
        if (has_lo) r.b = mag_neg(lo), r.b_open = nd->lo_open;
    }
    if (r.b.i < 0) r.b = (pf_mag){-1, 0}, r.b_open = 0; /* no magnitude fits */
    return r;
}
