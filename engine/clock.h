/* Monotonic wall clock for timings (stats, benchmarks, per-operation profiles). */
#ifndef PF_CLOCK_H
#define PF_CLOCK_H

/* Seconds on CLOCK_MONOTONIC. */
double pf_now_s(void);

#endif
