/* Device cost model of a target: prefill, plain decode by depth, c(B), bandwidth ceiling. */
#ifndef PF_BENCH_MODEL_H
#define PF_BENCH_MODEL_H

#include "engine/model.h"
#include "engine/op_timing.h"
#include "eval/stat.h"

#define PF_BENCH_MAX 16

typedef struct {
    int threads;
    int reps;  /* interleaved repetitions */
    int inner; /* timed forwards per configuration per repetition (fastest kept) */
    int depths[PF_BENCH_MAX], n_depths;
    int blocks[PF_BENCH_MAX], n_blocks; /* must include 1 */
    int cb_depth;       /* context depth of the c(B) measurements */
    int prefill_tokens; /* prompt length of the prefill measurement (0 = skip) */
    int bandwidth_mib;  /* array size of the bandwidth measurement (0 = skip) */
    int progress;       /* print progress to stderr */
    int ops;            /* also time each operation of the forward per block size (op_ms) */
    int kv_q8;          /* 8-bit KV cache */
} pf_bench_model_opts;

typedef struct {
    pf_stat decode_tok_s[PF_BENCH_MAX]; /* by depth */
    pf_stat c[PF_BENCH_MAX];            /* by block */
    pf_stat block_ms[PF_BENCH_MAX];
    pf_stat prefill_tok_s;
    double bandwidth_gb_s, ceiling_tok_s, peak_rss_mb; /* bandwidth: median over repetitions */
    pf_stat bandwidth;       /* GB/s, one measurement per repetition */
    pf_stat compute;         /* G fp32 multiply-adds/s of the threads (pf_probe_compute), per repetition */
    pf_stat decode_fraction; /* decode (depth 0) / ceiling, per repetition (same repetition's bandwidth) */
    size_t bytes_per_token;
    double op_ms[PF_BENCH_MAX][PF_OP_COUNT]; /* by block, ms per operation of the fastest forward (opts.ops) */
} pf_bench_model_result;

/* PF_RC_OK, or with err the kind of what failed (PF_RC_OOM, PF_RC_ARG: an 8-bit cache this CPU
 * cannot run, the forward's own code). */
pf_rc pf_bench_model(const pf_model *m, const pf_bench_model_opts *o, pf_bench_model_result *r, char err[PF_ERR_LEN]);

#endif
