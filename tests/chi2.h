/* Chi-square checks shared by the sampling tests: the two-sample statistic over token counts and
 * the 0.999 critical value (Wilson-Hilferty), so every test applies the same rule. */
#ifndef PF_TEST_CHI2_H
#define PF_TEST_CHI2_H

/* Counts a[0..n) and b[0..n) of two samples of equal size: sum (a-b)^2/(a+b) over tokens with
 * a+b >= min_count, the rest pooled into one cell; *df = cells - 1, at least 1. */
double pf_chi2_two_sample(const int *a, const int *b, int n, int min_count, int *df);
/* The chi-square 0.999 quantile for df degrees of freedom (df < 1 counts as 1). */
double pf_chi2_crit999(int df);

#endif
