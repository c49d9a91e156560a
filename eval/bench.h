/* Per-task speedup benchmark: plain and speculative decoding measured interleaved in one process
 * over the task suites, repeated; speedup, tau, acceptance by position, time split, prefill and time
 * to first token, and a check that greedy speculative output equals plain output. */
#ifndef PF_BENCH_H
#define PF_BENCH_H

#include <stdio.h>

#include "eval/bench_model.h"
#include "include/pocketflash.h"
#include "kernels/cpu.h"
#include "verify/profile.h"
#include "eval/tasks.h"
#include "verify/spec.h"
#include "verify/strategies.h"

#define PF_BENCH_MAX_ARMS 8

/* One strategy of a comparison (`bench --compare`), all measured interleaved per prompt: a
 * description for the strategy factory (verify/strategies.h). */
typedef struct {
    char name[64];             /* as written: fixed:4, dec, dec:8, adaptive, default, ngram:8, profile:FILE */
    pf_kind kind;              /* fixed:B is dflash; with a profile PF_KIND_DEFAULT */
    int block;                 /* 0 = the default for the kind */
    const pf_profile *profile; /* a tuned profile's choice per task: the adaptive prior, or fixed */
    int profile_fixed;         /* the profile's choices as fixed settings (what tune measures) */
} pf_bench_arm;

/* "fixed:B", "ngram[:B]", "hybrid:B", "dec[:B]", "adaptive[:B]", "default"; "profile:FILE" loads FILE into
 * *prof (the caller frees it with pf_profile_free). */
int pf_bench_arm_parse(const char *text, pf_bench_arm *arm, pf_profile *prof, char err[PF_ERR_LEN]);

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

/* PF_RC_OK, or with err the kind of what failed: the model's or the draft's opening (PF_RC_IO,
 * PF_RC_FORMAT, PF_RC_OOM), PF_RC_ARG for arms the resolver refuses, generation's own code. */
pf_rc pf_bench_run(const char *model_path, const pf_task_suite *suite, const pf_bench_opts *o, pf_bench_result *r,
                   char err[PF_ERR_LEN]);
/* --print-plan: every arm's plan (the profile's default entry for a profile) as one line on f,
 * "plan: ..." for the one arm, "plan NAME: ..." for each --compare arm; nothing is measured.
 * PF_RC_OK, or with err the kind of what failed, as for pf_bench_run. */
pf_rc pf_bench_plans(const char *model_path, const pf_bench_opts *o, FILE *f, char err[PF_ERR_LEN]);
void pf_bench_result_free(pf_bench_result *r);

#endif
