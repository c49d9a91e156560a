/* Speculative decoding as a generation strategy: each round drafts up to B-1 tokens, verifies
 * [bonus, d1..] in ONE target forward that also returns the tapped rows, accepts (greedy or
 * lossless sampled), truncates the target cache to start+a+1 and hands the a+1 committed rows to
 * the drafter. Statistics cover every round with all speculation work inside the clock. */
#ifndef PF_SPEC_H
#define PF_SPEC_H

#include <stdio.h>

#include "draft/block.h"
#include "draft/dec.h"
#include "draft/drafter.h"
#include "engine/generate.h"
#include "verify/cost_model.h"


typedef struct {
    int64_t rounds, tokens;          /* tokens committed by rounds (bonus included) */
    int64_t hist[PF_MAX_BLOCK + 1];  /* rounds that accepted a drafts, a = 0..B-1 */
    int64_t pos_tried[PF_MAX_BLOCK]; /* rounds whose draft had a token at position k */
    int64_t pos_accepted[PF_MAX_BLOCK];
    int64_t drafted;                 /* draft tokens proposed */
    int64_t draft_rounds;            /* rounds that ran the drafter (Dec may then verify none of it) */
    int64_t forced;                  /* structured output: tokens appended because the schema forced them */
    int64_t verified_rows[PF_MAX_BLOCK + 2]; /* rounds that verified n rows (1 = a plain step) */
    double t_draft, t_ctx, t_verify, t_accept, t_other, t_total; /* seconds inside rounds */
    double t_prompt_ctx; /* seconds building the drafter's context from the prompt (before round 1) */
} pf_spec_stats;

typedef struct pf_spec pf_spec;

/* block: rows verified per round (2..PF_MAX_BLOCK); the drafter is borrowed. NULL (with err) only
 * when out of memory. */
pf_spec *pf_spec_new(pf_engine_session *s, pf_drafter *d, int block, char err[PF_ERR_LEN]);
void pf_spec_free(pf_spec *sp);
/* Hand the drafter and the head (either may be NULL) to the strategy: freed by pf_spec_free. */
void pf_spec_own(pf_spec *sp, pf_drafter *d, pf_dec *dec);
/* The strategy to put in pf_gen_params.strategy; stats reset at every generation start. */
pf_strategy *pf_spec_strategy(pf_spec *sp);
const pf_spec_stats *pf_spec_stats_get(const pf_spec *sp);
/* Mean tokens per round (bonus included). */
double pf_spec_tau(const pf_spec_stats *st);
/* Adaptive speculation: each round the planner (verify/adapt.h) picks a plain step or the rows to
 * draft and verify, up to the block given at pf_spec_new, maximising expected tokens per second
 * under a running cost model of this machine that every round refreshes. With a Dec head (dec, the
 * draft's decision head) its survival probabilities decide, and after drafting how many drafts
 * to verify; without one (NULL: the adaptive block) the running acceptance per block position does.
 * prior (NULL: measured when the first generation starts): relative costs c[n] = t(n)/t(1) and
 * draft[n] = draft(n)/t(1) for n < n (0 = unknown; a tuned profile's), and an acceptance prior
 * alpha[k-1] per position; t(1) and t(min(4, block)) are then measured alternately and the
 * prior's curve refitted through them (unless fixed). Output is unchanged: only how much is
 * drafted and verified changes. Dec and the head are borrowed. */
typedef struct {
    const double *c, *draft;
    int n;
    const double *alpha;
    int n_alpha;
    int fixed; /* 1: the costs stay the prior's, no running updates (decisions independent of the
                  machine's timing: tests) */
} pf_spec_prior;
/* PF_RC_OK, or PF_RC_ARG (a Dec head over a drafter without hidden rows) / PF_RC_OOM with err. */
pf_rc pf_spec_set_adaptive(pf_spec *sp, const pf_dec *dec, const pf_spec_prior *prior, char err[PF_ERR_LEN]);
/* Dec gating with cost[n] = c(n) for n < n_cost as the prior (NULL: measured). */
pf_rc pf_spec_set_dec(pf_spec *sp, const pf_dec *dec, const double *cost, int n_cost, char err[PF_ERR_LEN]);
int pf_spec_block(const pf_spec *sp);
/* The adaptive planner's running cost model (NULL for a fixed block). */
const pf_cost_model *pf_spec_cost(const pf_spec *sp);
int pf_spec_is_adaptive(const pf_spec *sp);
/* Log every full round (features for training a Dec head): int32 {0x52434544, H, nd, a}, float32
 * h_target[H], float32 h_draft[(nd+1) * H] (row 0 = bonus row). PF_RC_OK, or PF_RC_ARG (a drafter
 * without hidden rows) / PF_RC_OOM with err. */
pf_rc pf_spec_set_log(pf_spec *sp, FILE *log, char err[PF_ERR_LEN]);

/* One round that verified nd drafts and accepted a: its counts (not its times). */
void pf_spec_stats_round(pf_spec_stats *st, int nd, int a);
/* a += b, every count and time (summing runs). */
void pf_spec_stats_add(pf_spec_stats *a, const pf_spec_stats *b);
/* Human-readable report (tau, histogram, per-position acceptance, time split) to f. */
void pf_spec_stats_print(const pf_spec_stats *st, int block, void *file);

#endif
