#include "eval/stat.h"

#include <stdlib.h>

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void pf_stat_summarize(double *v, int n, pf_stat *out) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    out->median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    out->lo = v[0];
    out->hi = v[n - 1];
}
