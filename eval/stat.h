/* A measurement repeated n times, summarized: its median and its range. Every bench reports its
 * figures so (bench-model, bench, bench --concurrency). */
#ifndef PF_STAT_H
#define PF_STAT_H

typedef struct { double median, lo, hi; } pf_stat;

/* Median and range of n values (sorts v in place). */
void pf_stat_summarize(double *v, int n, pf_stat *out);

#endif
