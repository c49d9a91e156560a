/* Per prompt figures of a bench run, and what is read from them: the prompts grouped by input length,
 * and the structured bench's split of "constrained against free on the same prompts": the prompts whose
 * plain output under the schema is the free plain output token for token (the schema left the text
 * alone, so a gap there is the constraint's cost) and those whose text the schema changed (a gap
 * there is also the draft's: it predicts the model's free text). Per (task type, prompt, run) the
 * decode seconds and tokens summed over the repetitions, and the first repetition's plain output. */
#ifndef PF_BENCH_SPLIT_H
#define PF_BENCH_SPLIT_H

#include <stdint.h>

#include "eval/bench_result.h"
#include "eval/tasks.h"

typedef struct {
    double s;              /* decode seconds */
    int64_t toks;          /* decode tokens (the first excluded, as the speedups count them) */
    int64_t rounds, round_toks; /* speculative runs: rounds and the tokens they committed */
} pf_bench_prompt_sum;

typedef struct {
    pf_bench_prompt_sum *sum; /* [type][prompt][run]: run 0 plain decoding, then each arm */
    int32_t *plain;           /* [type][prompt][max_tokens]: the first repetition's plain output
                               * (max_tokens 0, nothing kept, in a suite without constrained types) */
    int *n_plain;             /* [type][prompt] */
    int max_prompts, runs, max_tokens;
} pf_bench_record;

/* 0, or -1 out of memory. */
int pf_bench_record_init(pf_bench_record *rec, const pf_task_suite *suite, int n_arms, int max_tokens);
void pf_bench_record_free(pf_bench_record *rec);
/* Run j (0 plain, 1.. the arms) of prompt i of type t: one repetition's figures. */
void pf_bench_record_add(pf_bench_record *rec, int t, int i, int j, double s, int64_t toks, int64_t rounds,
                         int64_t round_toks);
void pf_bench_record_plain(pf_bench_record *rec, int t, int i, const int32_t *toks, int n);
/* Arm k's split for every constrained type of the suite against its free twin: tasks[c].split[0]
 * the prompts the schema left unchanged, [1] the ones it changed. */
void pf_bench_record_split(const pf_bench_record *rec, const pf_task_suite *suite, int k, pf_bench_task *tasks);
/* Arm k's figures over every prompt of the suite, grouped by its length in tokens (np[type][prompt]). */
void pf_bench_record_by_length(const pf_bench_record *rec, const pf_task_suite *suite, int *const *np, int k,
                               pf_bench_len_group *groups);

#endif
