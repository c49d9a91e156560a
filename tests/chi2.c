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

/* One position: sum (O - E)^2 / E with E = runs * p; cells of E < 5 pooled, and the pool, when its
 * own E is under 5, merged into the kept cell of least E. -1 (token in *bad) when a token of
 * probability 0 was drawn. */
static double chi2_fit(const int *cnt, const double *p, int n, int runs, int *df, int *bad) {
    double chi = 0, pool_e = 0, least_e = 0;
    int cells = 0, pool_o = 0, least_o = 0;
    for (int t = 0; t < n; t++) {
        double e = runs * p[t];
        if (p[t] <= 0 && cnt[t] > 0) {
            *bad = t;
            return -1;
        }
        if (e < 5) {
            pool_e += e;
            pool_o += cnt[t];
            continue;
        }
        chi += (cnt[t] - e) * (cnt[t] - e) / e;
        cells++;
        if (!least_e || e < least_e) least_e = e, least_o = cnt[t];
    }
    if (pool_e >= 5 || (pool_e > 0 && !cells)) {
        chi += (pool_o - pool_e) * (pool_o - pool_e) / pool_e;
        cells++;
    } else if (pool_e > 0) { /* the least kept cell with the pool, in place of the cell alone */
        chi -= (least_o - least_e) * (least_o - least_e) / least_e;
        double e = least_e + pool_e, o = least_o + pool_o;
        chi += (o - e) * (o - e) / e;
    }
    *df = cells - 1 < 1 ? 1 : cells - 1;
    return chi;
}

int pf_chi2_positions_fit(const int *cnt, const double *p, int n_pos, int n, int runs, char *why, size_t why_n) {
    for (int q = 0; q < n_pos; q++) {
        int df = 1, bad = -1;
        double chi = chi2_fit(cnt + (size_t)q * n, p + (size_t)q * n, n, runs, &df, &bad);
        if (bad >= 0) {
            snprintf(why, why_n, "position %d: token %d drawn %d times, probability 0", q + 1, bad, cnt[(size_t)q * n + bad]);
            return q;
        }
        double crit = pf_chi2_crit999(df);
        if (!(chi < crit)) {
            snprintf(why, why_n, "position %d: chi-square %.1f >= %.1f (df %d)", q + 1, chi, crit, df);
            return q;
        }
    }
    return -1;
}
