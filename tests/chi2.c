#include "chi2.h"

#include <math.h>
#include <stdio.h>

double pf_chi2_two_sample(const int *a, const int *b, int n, int min_count, int *df) {
    double chi = 0;
    int cells = -1, pool_a = 0, pool_b = 0;
    for (int t = 0; t < n; t++) {
        if (a[t] + b[t] < min_count) {
            pool_a += a[t];
            pool_b += b[t];
            continue;
        }
        chi += (double)(a[t] - b[t]) * (a[t] - b[t]) / (a[t] + b[t]);
        cells++;
    }
    if (pool_a + pool_b > 0) {
        chi += (double)(pool_a - pool_b) * (pool_a - pool_b) / (pool_a + pool_b);
        cells++;
    }
    *df = cells < 1 ? 1 : cells;
    return chi;
}

double pf_chi2_crit999(int df) {
    if (df < 1) df = 1;
    double z = 3.09, h = 2.0 / (9.0 * df);
    return df * pow(1 - h + z * sqrt(h), 3);
}

int pf_chi2_positions_differ(const int *cnt, int n_pos, int n, char *why, size_t why_n) {
    for (int p = 0; p < n_pos; p++) {
        int df;
        double chi = pf_chi2_two_sample(cnt + (size_t)p * n, cnt + ((size_t)n_pos + p) * n, n, 20, &df);
        double crit = pf_chi2_crit999(df);
        if (!(chi < crit)) {
            snprintf(why, why_n, "position %d: chi-square %.1f >= %.1f (df %d)", p + 1, chi, crit, df);
            return p;
        }
    }
    return -1;
}
