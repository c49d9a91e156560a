/* The adaptive round planner: each round it chooses a plain one-token step or how many rows to
 * draft and to verify, to maximise expected tokens per SECOND under the running cost model
 * (verify/cost_model.h). Survival probabilities s_k (P(draft k kept | drafts 1..k-1 kept)) come
 * from the draft's Dec head when it has one (Dec gating), else from the running acceptance at each
 * block position (the adaptive block). It only decides how much is drafted and verified, so the
 * output is plain decoding's whatever it decides.
 *
 * The criterion is the average-reward one: with R the best expected rate (tokens/s) of any choice
 * under the current estimates, an option of expected tokens E and seconds T is worth E - R*T; before
 * drafting that picks the option of best E/T, after drafting (the draft already paid for) it picks
 * how many of the drafts to verify with the head's survival of THIS draft. */
#ifndef PF_ADAPT_H
#define PF_ADAPT_H

#include "draft/block.h"
#include "draft/dec.h"
#include "verify/cost_model.h"


typedef struct {
    int block;    /* most rows a round verifies */
    const pf_dec *dec; /* NULL: adaptive block (survival from running acceptance) */
    pf_cost_model cost;
    /* running acceptance per position (decayed counts) and its prior */
    double acc[PF_MAX_BLOCK], tried[PF_MAX_BLOCK], prior[PF_MAX_BLOCK];
    /* with a head: running mean of its survival at position k over the rounds that drafted it, and
     * of the target half of its logit over the steps */
    double s_mean[PF_MAX_BLOCK], zt_mean;
    int64_t s_n[PF_MAX_BLOCK], zt_n;
    double z_target; /* w_t . h_target + bias of the current step */
    /* online calibration of the head: a logit offset per position, moved after every verified
     * round by (kept - predicted) (a log-loss gradient step on a bias), so a head fitted on other
     * text or another machine's drafts follows what this run's drafts actually keep */
    double cal[PF_MAX_BLOCK], last_sk[PF_MAX_BLOCK];
    /* and one slope on the head's logit, moved by (kept - predicted) x logit: a head fitted on
     * pooled text is overconfident on one task's drafts (survival 0.85 predicted, 0.73 kept), and
     * an offset alone cannot shrink both ends toward the middle */
    double cal_slope, last_z[PF_MAX_BLOCK];
    /* observations behind each position's offset: its step starts at 1/(PF_ADAPT_CAL_START + n)
     * and falls to PF_ADAPT_CAL_RATE, so a task's first rounds calibrate the head (a task may
     * see only a few dozen positions, e.g. a short translation) and later ones follow drift */
    int64_t cal_n[PF_MAX_BLOCK];
    int last_nd;
    /* structured output: this round's draft positions whose token the constraint forces (the only
     * one allowed). They survive surely once reached, so the head's choice counts them as kept and
     * the acceptance and calibration statistics leave them out (they say nothing of the draft);
     * cleared by pf_adapt_observe */
    unsigned char forced[PF_MAX_BLOCK];
    double rate;     /* R of the last plan (tokens / s) */
    int plain_run;     /* consecutive plain steps decided (a probe round drafts after enough of them) */
    int backoff;       /* without a head: plain steps before the next probe (1, 2, 4 .. PF_ADAPT_PROBE) */
    int64_t n_plain, n_rounds, rows_hist[PF_MAX_BLOCK + 1]; /* decisions (reporting) */
} pf_adapt;

/* Decay of the acceptance counts per observation (a window of ~20 rounds), the prior's weight in
 * rounds, and the most plain steps in a row before a probe round refreshes what drafting costs
 * and gains. */
#define PF_ADAPT_DECAY 0.95
#define PF_ADAPT_PRIOR_W 2.0
#define PF_ADAPT_PROBE 16
#define PF_ADAPT_CAL_RATE 0.05 /* logit step per observed position, once it has been seen ~16 times */
#define PF_ADAPT_CAL_START 4.0 /* the first observation steps 1/4 */
#define PF_ADAPT_CAL_MAX 4.0   /* |offset| bound */
#define PF_ADAPT_SLOPE_RATE 0.04 /* slope step per observed position and unit of logit */
#define PF_ADAPT_SLOPE_MIN 0.25
#define PF_ADAPT_SLOPE_MAX 2.0

/* prior[k-1] = the acceptance prior of position k (NULL: 0.7 for all). */
void pf_adapt_init(pf_adapt *a, int block, const pf_dec *dec, const double *prior, int n_prior);
/* Before drafting: h_target is the target's final row of the last committed position (with a
 * head; else NULL), cap the most rows this round may verify. Returns the rows to draft (>= 2), or
 * 1 for a plain step. */
int pf_adapt_plan(pf_adapt *a, const float *h_target, int cap);
/* The head's target half of this step from h_target (the target's final row of the last committed
 * position; nothing without a head): pf_adapt_plan's first part, for a planner that decides the
 * rows itself (verify/spec_batch.c) and then reads pf_adapt_survival. */
void pf_adapt_target(pf_adapt *a, const float *h_target);
/* After drafting nd tokens of a planned block: how many to verify (0 = plain step). h_draft: the
 * draft's rows (row 0 = bonus row) with a head, else NULL. */
int pf_adapt_choose(pf_adapt *a, const float *h_target, const float *h_draft, int nd);
/* The round verified n drafts and kept k of them. */
void pf_adapt_observe(pf_adapt *a, int n, int kept);
/* Current survival estimate of position k before drafting (1-based). */
double pf_adapt_survival(const pf_adapt *a, int k);
/* Position k's survival as the verified rounds kept it (the running acceptance), moved by how this
 * step's target half differs from its mean when there is a head: what a planner that verifies
 * every draft it makes can expect (the head's own mean reads its predictions, which on a draft
 * it was not fitted to can sit far above what is kept). */
double pf_adapt_survival_kept(const pf_adapt *a, int k);

#endif
