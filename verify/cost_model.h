/* Running cost model of speculative rounds on this machine: seconds of an n-row target forward
 * t(n), of drafting a B-row block d(B), and of a round's bookkeeping (acceptance + context
 * injection), each a running estimate refreshed by every round's own wall-clock measurements.
 * This machine's memory bandwidth and compute rate drift by up to 2x within a run, and they move
 * t(1) (memory-bound) and t(16) (compute-bound) in opposite directions, so a calibration trusted
 * for a whole run picks the wrong block: the estimates here follow the last few dozen rounds.
 *
 * Each estimate is kept in the log domain; an observation moves the estimate of its own row count
 * by a fixed fraction of the (clamped) log ratio, and its neighbours by geometrically less, so row
 * counts that are rarely used still follow the machine's drift. Pure arithmetic on the measured
 * times: given the same measurements, the same estimates (and so the same decisions). The
 * calibration at the start of a generation (pf_cost_calibrate) runs the forwards it measures. */
#ifndef PF_COST_MODEL_H
#define PF_COST_MODEL_H

#include <stdint.h>

#include "draft/block.h"
#include "draft/drafter.h"
#include "engine/forward.h"


typedef struct {
    int block;                             /* row counts 1..block are modelled */
    double log_t[PF_MAX_BLOCK + 1];    /* log seconds of an n-row verify forward; index 0 unused */
    double log_d[PF_MAX_BLOCK + 1];    /* log seconds of drafting a B-row block */
    int have_t, have_d;                    /* any estimate at all */
    int64_t n_obs_t[PF_MAX_BLOCK + 1]; /* observations per row count (reporting) */
    int64_t n_obs_d[PF_MAX_BLOCK + 1];
    double over_spec, over_plain; /* seconds of bookkeeping per speculative round / per plain step */
    double flush_row; /* seconds per plain-step row of handing it to the drafter, paid by the next
                       * drafting round (a plain step's deferred cost) */
    int frozen;                   /* observations are ignored: the estimates stay the prior's */
} pf_cost_model;

/* Fraction of the log ratio an observation moves its own estimate by (neighbours: halved per
 * row of distance); the largest log ratio one observation counts with (a preempted forward on a
 * shared machine must not rewrite the model). */
#define PF_COST_RATE 0.15
#define PF_COST_CLAMP 0.4

void pf_cost_init(pf_cost_model *cm, int block);
/* Prior from relative costs: c[n] = t(n)/t(1) and draft[n] = d(n)/t(1) for n = 1..n-1 of the
 * arrays (0 = unknown; gaps are interpolated), scaled by t1 seconds. Either array may be NULL. */
void pf_cost_set_prior(pf_cost_model *cm, const double *c, const double *draft, int n, double t1);
/* Refit the curve's slope through one measurement: every c(n) - 1 = t(n)/t(1) - 1 scaled by the
 * same factor (bounded to 0.1-10x) so that c(nref) becomes c_meas, t(1) and the draft costs kept
 * (a profile's shape from another regime, this minute's slope). No change where the curve is flat
 * up to nref or c_meas < 1. */
void pf_cost_refit(pf_cost_model *cm, int nref, double c_meas);
void pf_cost_observe_verify(pf_cost_model *cm, int n, double seconds);
/* pf_cost_observe_verify for a curve whose row counts are seen unevenly (a batch's forwards: the
 * counts its sequences use, seldom the ones below), which is then stored non-decreasing from n
 * out: the counts below n lowered to the count after them, the counts above raised to the one
 * before. So a count no forward uses keeps no stale high value that the non-decreasing read
 * would carry up to n and past it (a plateau on which the rows after n look free), and the
 * stored curve is the one read. */
void pf_cost_observe_rows(pf_cost_model *cm, int n, double seconds);
void pf_cost_observe_draft(pf_cost_model *cm, int rows, double seconds);
void pf_cost_observe_overhead(pf_cost_model *cm, int plain, double seconds);
/* A drafting round first handed the drafter `rows` rows of plain steps in `seconds`. */
void pf_cost_observe_flush(pf_cost_model *cm, int rows, double seconds);
/* Current estimates in seconds (0 when nothing is known yet), read non-decreasing in rows. */
double pf_cost_verify(const pf_cost_model *cm, int n);
double pf_cost_draft(const pf_cost_model *cm, int rows);

/* What calibration measures with: the target's context at the prompt's depth, the drafter (its
 * context built), the most rows a round verifies, a logits buffer of that many rows, and a tuned
 * profile's relative costs c[n], draft[n] (NULL: none) and whether they stay fixed. */
typedef struct {
    pf_ctx *ctx;
    pf_drafter *d;
    int block;
    float *logits;
    const double *prior_c, *prior_d;
    int prior_fixed;
} pf_cost_calib;

/* The cost model's starting point, once per speculation object (later generations keep the
 * running estimates): t(n) at a few row counts and the draft's cost at a few block sizes, measured
 * at the prompt's depth after the drafter has its context. t(1) is measured before and after the
 * others and the faster kept (the first forwards after a prefill run on cold caches; a noisy t(1)
 * skews every plain-or-draft decision, and the rounds seldom refresh it). With a profile's relative
 * costs, t(1) and t(nref) are measured alternately and the profile's curve is refitted through
 * them: its shape is the prior, its slope this minute's (the bandwidth/compute regime that sets
 * the slope drifts between the tune run and now). Later rounds refine every estimate.
 * *started is set once t(1) was measured. PF_RC_OK, or the failing forward's or proposal's code with
 * err. */
pf_rc pf_cost_calibrate(pf_cost_model *cm, const pf_cost_calib *k, const int32_t *prompt, int n_prompt, int *started,
                      char err[PF_ERR_LEN]);

#endif
