/* Per-task speedup benchmark: plain and speculative decoding measured interleaved in one process
 * over the task suites, repeated; speedup, tau, acceptance by position, time split, prefill and time
 * to first token, and a check that greedy speculative output equals plain output. */
#ifndef PF_BENCH_H
#define PF_BENCH_H

#include "eval/bench_model.h"
#include "eval/profile.h"
#include "eval/tasks.h"
#include "verify/spec.h"

typedef struct {
    int threads;
    int64_t n_ctx;
    int kv_q8;        /* 8-bit KV cache (pf_session_params.kv_q8) */
    int max_tokens;   /* generated tokens per prompt */
    int reps;         /* interleaved repetitions */
    float temp;       /* 0 = greedy */
    int top_k;
    float top_p;
    uint64_t seed;
    const char *spec; /* "dflash" or "ngram" */
    const char *draft_path;
    int block;        /* 0 = the draft's default */
    int ngram_n;
    int draft_head;   /* 0 the draft's default head vocabulary, -1 the whole vocabulary, N the N most frequent */
    int progress;
    int no_special;   /* special-token texts inside the prompts are plain text (pf_chat_tokenize) */
    const pf_profile *profile; /* per-task strategy and block (overrides spec/block) */
} pf_bench_opts;

typedef struct {
    char type[64];
    char spec[16];
    int block;
    int n_prompts;
    int64_t ar_tokens, spec_tokens; /* decode tokens per repetition (first excluded) */
    pf_stat ar_tok_s, spec_tok_s, speedup;
    pf_spec_stats st; /* rounds of the first repetition */
    double prefill_tok_s, ttft_ar_ms, ttft_spec_ms;
    int identical; /* 1 yes, 0 no, -1 not checked (sampling) */
} pf_bench_task;

typedef struct {
    pf_bench_task *tasks;
    int n;
    int block;
    double speedup_geomean, tau;
    int identical;
    char model[256], draft[256];
    double compute_start, compute_end; /* pf_probe_compute before and after the run (G fp32 FMA/s) */
} pf_bench_result;

int pf_bench_run(const char *model_path, const pf_task_suite *suite, const pf_bench_opts *o, pf_bench_result *r,
                 char err[PF_ERR_LEN]);
void pf_bench_result_free(pf_bench_result *r);

#endif
