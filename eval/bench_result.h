/* What a `bench` run measured: per arm (strategy) and task type, the speedup, tau, acceptance,
 * time split, prefill and time to first token, the greedy identity check, and the sums by prompt
 * length and (`--structured`) by schema side. Filled by pf_bench_run (eval/bench.h), written by
 * eval/bench_report.h. */
#ifndef PF_BENCH_RESULT_H
#define PF_BENCH_RESULT_H

#include <stdint.h>

#include "eval/bench_arm.h"
#include "eval/stat.h"
#include "kernels/cpu.h"
#include "verify/spec.h"

/* Documents generated under a schema (the first repetition's): valid, not parsing or not valid, and
 * cut by the token limit before they were complete. */
typedef struct {
    int valid, invalid, cut;
} pf_bench_docs;

/* One side (under the schemas, or free) of a group of prompts: decode seconds and tokens summed
 * over the repetitions, plain and speculative, and the speculative rounds and their tokens. */
typedef struct {
    double plain_s, spec_s;
    int64_t plain_tok, spec_tok, rounds, round_toks;
} pf_bench_split_side;

/* A group of a constrained task's prompts (eval/bench_split.h): how many, and both sides. */
typedef struct {
    int n;
    pf_bench_split_side con, free;
} pf_bench_split;

typedef struct {
    char type[64];
    char spec[16];
    int block;
    int n_prompts;
    int64_t plain_tokens, spec_tokens; /* decode tokens per repetition (first excluded) */
    pf_stat plain_tok_s, spec_tok_s, speedup;
    pf_spec_stats st; /* rounds of the first repetition */
    double prefill_tok_s, ttft_plain_ms, ttft_spec_ms;
    int identical; /* 1 yes, 0 no, -1 not checked (sampling) */
    int constrained; /* decoded under each prompt's schema, plain and speculative */
    pf_bench_docs plain_docs, spec_docs;
    /* against its free twin (the task of index twin): [0] the prompts whose plain output the schema
     * left as the free one, [1] the rest */
    pf_bench_split split[2];
    int twin;
} pf_bench_task;

/* Prompts grouped by their length in tokens (every task type together): group g holds the prompts
 * of pf_bench_len_lo[g] to pf_bench_len_lo[g + 1] - 1 tokens. Long inputs make the verify forward's
 * attention dearer and give the draft more context: the speedup may move with them. */
#define PF_BENCH_LEN_GROUPS 4
extern const int pf_bench_len_lo[PF_BENCH_LEN_GROUPS + 1];

typedef struct {
    int n;                    /* prompts */
    pf_bench_split_side side; /* plain and speculative decode times and tokens, summed */
} pf_bench_len_group;

typedef struct {
    char name[64];
    pf_bench_task *tasks; /* one per task type */
    pf_bench_len_group by_len[PF_BENCH_LEN_GROUPS];
    int block;            /* the largest block of its tasks */
    double speedup_geomean, tau;
    int identical;
} pf_bench_arm_result;

typedef struct {
    pf_bench_task *tasks; /* = arms[0].tasks, and the fields below arms[0]'s (one-strategy runs) */
    int n;
    int block;
    double speedup_geomean, tau;
    int identical;
    pf_bench_arm_result arms[PF_BENCH_MAX_ARMS];
    int n_arms;
    char model[256], draft[256];
    pf_level level;                    /* the kernels the model ran on */
    double compute_start, compute_end; /* pf_probe_compute before and after the run (G fp32 FMA/s) */
    double load_start, load_end;       /* 1-minute load average before and after (a shared machine) */
} pf_bench_result;

/* Defined in eval/bench.c. */
void pf_bench_result_free(pf_bench_result *r);

#endif
