/* Block-size tuner: measures this device's c(B) for the target, each drafter's cost per block,
 * and acceptance by block position per task type, predicts the speedup of every (strategy, B),
 * picks the best per task type, then measures the chosen settings against plain decoding. */
#ifndef PF_TUNE_H
#define PF_TUNE_H

#include "draft/block.h"
#include "eval/bench.h"
#include "eval/bench_model.h" /* PF_BENCH_MAX */

typedef struct {
    pf_bench_opts bench; /* threads, context, tokens, reps (for the final measurement), draft path */
    int blocks[PF_BENCH_MAX], n_blocks; /* candidate block sizes */
    int depth;                          /* context depth of the c(B) and draft-cost measurements */
} pf_tune_opts;

typedef struct {
    char type[64];
    double alpha[2][PF_MAX_BLOCK]; /* per strategy: P(position k kept | position k-1 kept) */
    double predicted[2][PF_BENCH_MAX];
    int best_s, best_b; /* indices into strategies / blocks */
    double measured;
} pf_tune_task;

typedef struct {
    const char *strategies[2];
    int n_strategies;
    double c[PF_BENCH_MAX];             /* by candidate block */
    double draft_cost[2][PF_BENCH_MAX]; /* by strategy, block: draft time / 1-row target forward */
    double t1_ms;
    pf_tune_task *tasks;
    int n;
    pf_profile profile;
    double measured_geomean, predicted_geomean;
} pf_tune_result;

/* PF_RC_OK, or with err the kind of what failed, as for pf_bench_run. */
pf_rc pf_tune_run(const char *model_path, const pf_task_suite *suite, const pf_tune_opts *o, pf_tune_result *r,
                  char err[PF_ERR_LEN]);
void pf_tune_result_free(pf_tune_result *r);

#endif
