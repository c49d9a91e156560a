/* Aggregate decoding at several concurrencies (`bench --concurrency`), plain and per speculative
 * strategy: the same prompts decoded one after another through the one-sequence path, and n at a
 * time in one forward (engine/generate_batch.h; with a strategy verify/spec_batch.h; level 1 also
 * through the batch scheduler with one slot, what a server's lone request runs), measured
 * interleaved in one process; tokens per second of the whole run (prefill included) and per
 * request, and a check that every output equals the one-at-a-time output (greedy: plain
 * decoding's; sampled: the strategy's own one-at-a-time run with the same seeds). */
#ifndef PF_BENCH_CONCURRENCY_H
#define PF_BENCH_CONCURRENCY_H

#include "eval/bench_arm.h"
#include "eval/bench_model.h" /* PF_BENCH_MAX */
#include "eval/stat.h"
#include "eval/tasks.h"
#include "include/pocketflash.h"

#define PF_CONC_MAX_ROWS ((PF_BENCH_MAX + 1) * (PF_BENCH_MAX_ARMS + 1))

typedef struct {
    int levels[PF_BENCH_MAX], n_levels; /* sequences at a time; 1 is the one-sequence path */
    int threads;
    int64_t n_ctx;
    int kv_q8;
    pf_load_params load; /* --kernels, --repack, --hugepages */
    int max_tokens; /* generated tokens per prompt (end of turn ignored, so every level does the same work) */
    int n_prompts;  /* prompts taken from the suite, its types in turn */
    int reps;       /* interleaved repetitions */
    float temp;
    int top_k;
    float top_p;
    uint64_t seed;  /* prompt i samples with seed + i */
    int no_special;
    int progress;
    /* speculative strategies measured beside plain decoding (none: plain alone), over draft_path
     * (NULL: the target's bundled draft, or none for ngram), its head and lookup settings */
    const pf_bench_arm *arms;
    int n_arms;
    const char *draft_path;
    int draft_head, ngram_n;
} pf_conc_opts;

typedef struct {
    char strategy[64]; /* "plain", or the arm's name */
    int n_seq;
    int batched;           /* through the batch scheduler (always past one sequence; at one, the row beside the one-sequence path's) */
    pf_stat agg_tok_s;     /* generated tokens of all prompts / wall time of the run */
    pf_stat per_req_tok_s; /* median over the prompts of generated tokens / the request's time in the run */
    pf_stat speedup;       /* agg_tok_s / the same repetition's plain one-sequence agg_tok_s (all 0 without has_one) */
    int identical;         /* every output the one-sequence path's (1), or not (0) */
} pf_conc_row;

typedef struct {
    pf_conc_row rows[PF_CONC_MAX_ROWS]; /* plain's levels, then each strategy's */
    int n_rows, n_prompts;
    int has_one;    /* the levels held 1, so plain one at a time was measured and speedup holds ratios */
    int64_t tokens; /* generated per run */
    double load_start, load_end;
} pf_conc_result;

/* 0, or -1 with err. */
int pf_bench_concurrency(const char *model_path, const pf_task_suite *suite, const pf_conc_opts *o, pf_conc_result *r,
                         char err[PF_ERR_LEN]);

#endif
