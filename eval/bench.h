/* Per-task speedup benchmark: plain and speculative decoding measured interleaved in one process
 * over the task suites, repeated; speedup, tau, acceptance by position, time split, prefill and time
 * to first token, and a check that greedy speculative output equals plain output. */
#ifndef PF_BENCH_H
#define PF_BENCH_H

#include <stdio.h>

#include "eval/bench_arm.h"
#include "eval/bench_result.h"
#include "eval/tasks.h"
#include "include/pocketflash.h"
#include "verify/profile.h"

/* How to measure: the session, sampling and draft settings, and the strategy (one, a profile's,
 * or several arms). */
typedef struct {
    int threads;
    int64_t n_ctx;
    int kv_q8;        /* 8-bit KV cache (pf_session_params.kv_q8) */
    pf_load_params load; /* --kernels, --repack, --hugepages */
    int max_tokens;   /* generated tokens per prompt */
    int reps;         /* interleaved repetitions */
    float temp;       /* 0 = greedy */
    int top_k;
    float top_p;
    uint64_t seed;
    const char *spec; /* a strategy name (pf_kind_parse); NULL: the default, or dflash with a block */
    const char *draft_path;
    int block;        /* 0 = the draft's default */
    int ngram_n;
    int draft_head;   /* 0 the draft's default head vocabulary, -1 the whole vocabulary, N the N most frequent */
    int progress;
    int no_special;   /* special-token texts inside the prompts are plain text (pf_chat_tokenize) */
    const pf_profile *profile; /* per-task strategy and block as the adaptive prior (overrides spec/block) */
    int profile_fixed;         /* use the profile's choices as fixed settings instead */
    const pf_bench_arm *arms;  /* several strategies interleaved (overrides spec/block/profile) */
    int n_arms;
} pf_bench_opts;

/* PF_RC_OK, or with err the kind of what failed: the model's or the draft's opening (PF_RC_IO,
 * PF_RC_FORMAT, PF_RC_OOM), PF_RC_ARG for arms the resolver refuses, generation's own code. */
pf_rc pf_bench_run(const char *model_path, const pf_task_suite *suite, const pf_bench_opts *o, pf_bench_result *r,
                   char err[PF_ERR_LEN]);
/* --print-plan: every arm's plan (the profile's default entry for a profile) as one line on f,
 * "plan: ..." for the one arm, "plan NAME: ..." for each --compare arm; nothing is measured.
 * PF_RC_OK, or with err the kind of what failed, as for pf_bench_run. */
pf_rc pf_bench_plans(const char *model_path, const pf_bench_opts *o, FILE *f, char err[PF_ERR_LEN]);

#endif
