/* What `pocketflash bench` writes about a run: the comparison table on stdout, a JSON record of
 * every task (or strategy) and an SVG bar chart that names the files, CPU, kernel level and date. */
#ifndef PF_EVAL_BENCH_REPORT_H
#define PF_EVAL_BENCH_REPORT_H

#include <stdio.h>

#include "eval/bench.h"

void pf_bench_write_svg(FILE *f, const pf_bench_result *r, const pf_bench_opts *o);
void pf_bench_write_json(FILE *f, const pf_bench_result *r, const pf_bench_opts *o);
void pf_bench_write_compare_json(FILE *f, const pf_bench_result *r, const pf_bench_opts *o);
void pf_bench_print_compare(const pf_bench_result *r);
/* Every arm's speedup and tau by the prompts' length in tokens (the groups that hold prompts). */
void pf_bench_print_by_length(const pf_bench_result *r);
/* Structured output (bench --structured): per strategy and task type, free and under the schemas,
 * speedup, tau, the forced tokens' share and the documents that validate; then each strategy's
 * constrained speedup beside the free one on the same prompts. */
void pf_bench_print_structured(const pf_bench_result *r);

#endif
