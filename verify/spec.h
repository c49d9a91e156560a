/* Speculative decoding as a generation strategy: each round drafts up to B-1 tokens, verifies
 * [bonus, d1..] in ONE target forward that also returns the tapped rows, accepts (greedy or
 * lossless sampled), truncates the target cache to start+a+1 and hands the a+1 committed rows to
 * the drafter. Statistics cover every round with all speculation work inside the clock. */
#ifndef PF_SPEC_H
#define PF_SPEC_H

#include <stdio.h>

#include "draft/dec.h"
#include "draft/drafter.h"
#include "engine/generate.h"

#define PF_MAX_BLOCK 64

typedef struct {
    int64_t rounds, tokens;          /* tokens committed by rounds (bonus included) */
    int64_t hist[PF_MAX_BLOCK + 1];  /* rounds that accepted a drafts, a = 0..B-1 */
    int64_t pos_tried[PF_MAX_BLOCK]; /* rounds whose draft had a token at position k */
    int64_t pos_accepted[PF_MAX_BLOCK];
    int64_t drafted;                 /* draft tokens proposed */
    double t_draft, t_ctx, t_verify, t_accept, t_other, t_total; /* seconds inside rounds */
    double t_prompt_ctx; /* seconds building the drafter's context from the prompt (before round 1) */
} pf_spec_stats;

typedef struct pf_spec pf_spec;

/* block: rows verified per round (2..PF_MAX_BLOCK); the drafter is borrowed. */
pf_spec *pf_spec_new(pf_session *s, pf_drafter *d, int block, char err[PF_ERR_LEN]);
void pf_spec_free(pf_spec *sp);
/* The strategy to put in pf_gen_params.strategy; stats reset at every generation start. */
pf_strategy *pf_spec_strategy(pf_spec *sp);
const pf_spec_stats *pf_spec_stats_get(const pf_spec *sp);
/* Mean tokens per round (bonus included). */
double pf_spec_tau(const pf_spec_stats *st);
/* Dec gating: each round, verify only as many drafts as maximise expected tokens per unit of
 * target cost (a plain step when none is worth it, then back off from drafting for 1, 2, 4.. 16
 * steps). cost[n] = c(n) for n = 0..n_cost-1 (NULL: measured once at the first generation).
 * Output is unchanged: only how much is verified changes. */
int pf_spec_set_dec(pf_spec *sp, const pf_dec *dec, const double *cost, int n_cost, char err[PF_ERR_LEN]);
/* Log every full round (features for training a Dec head): int32 {0x52434544, H, nd, a}, float32
 * h_target[H], float32 h_draft[(nd+1) * H] (row 0 = bonus row). */
int pf_spec_set_log(pf_spec *sp, FILE *log, char err[PF_ERR_LEN]);

/* Human-readable report (tau, histogram, per-position acceptance, time split) to f. */
void pf_spec_stats_print(const pf_spec_stats *st, int block, void *file);

#endif
