/* Chi-square checks shared by the sampling tests: the two-sample statistic over token counts and
 * the 0.999 critical value (Wilson-Hilferty), so every test applies the same rule. */
#ifndef PF_TEST_CHI2_H
#define PF_TEST_CHI2_H

#include <stddef.h>

/* Counts a[0..n) and b[0..n) of two samples of equal size: sum (a-b)^2/(a+b) over tokens with
 * a+b >= min_count, the rest pooled into one cell; *df = cells - 1, at least 1. */
double pf_chi2_two_sample(const int *a, const int *b, int n, int min_count, int *df);
/* The chi-square 0.999 quantile for df degrees of freedom (df < 1 counts as 1). */
double pf_chi2_crit999(int df);
/* Per position, the two samples' counts laid out [2][n_pos][n] (the first sample's positions, then
 * the second's), cells under 20 pooled: the first position (0-based) whose statistic reaches the
 * 0.999 critical value, described in why; -1 when none does. */
int pf_chi2_positions_differ(const int *cnt, int n_pos, int n, char *why, size_t why_n);
/* Per position, the counts cnt[n_pos][n] of `runs` draws against exact probabilities p[n_pos][n]:
 * the first position (0-based) where a token of probability 0 was drawn, or whose goodness-of-fit
 * statistic (cells of expected count under 5 pooled) reaches the 0.999 critical value, described
 * in why; -1 when none. Against the exact distribution, `runs` draws give the test the power of
 * the two-sample test with 2 * runs draws on each side (docs/testing.md). */
int pf_chi2_positions_fit(const int *cnt, const double *p, int n_pos, int n, int runs, char *why, size_t why_n);

#endif
