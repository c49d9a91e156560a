#include "verify/adapt.h"

#include <assert.h>
#include <math.h>
#include <string.h>

static double sigmoid(double z) { return 1.0 / (1.0 + exp(-z)); }
static double clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

void pf_adapt_init(pf_adapt *a, int block, const pf_dec *dec, const double *prior, int n_prior) {
    memset(a, 0, sizeof *a);
    assert(block >= 2 && block <= PF_MAX_BLOCK); /* a plan's block (verify/plan.h) */
    a->block = block;
    a->dec = dec;
    pf_cost_init(&a->cost, a->block);
    for (int k = 0; k < PF_MAX_BLOCK; k++) a->prior[k] = prior && k < n_prior ? prior[k] : 0.7;
    a->backoff = 1;
    a->cal_slope = 1;
}

double pf_adapt_survival(const pf_adapt *a, int k) {
    if (k < 1 || k > PF_MAX_BLOCK) return 0;
    if (a->dec) { /* the head's running mean survival, moved by how this step's target half differs from its mean */
        if (!a->s_n[k - 1]) return sigmoid(a->cal_slope * (a->z_target + pf_dec_pos_bias(a->dec, k)) + a->cal[k - 1]);
        double m = clamp(a->s_mean[k - 1], 1e-6, 1 - 1e-6);
        return sigmoid(log(m / (1 - m)) + a->cal_slope * (a->z_target - a->zt_mean));
    }
    return (a->acc[k - 1] + PF_ADAPT_PRIOR_W * a->prior[k - 1]) / (a->tried[k - 1] + PF_ADAPT_PRIOR_W);
}

double pf_adapt_survival_kept(const pf_adapt *a, int k) {
    if (k < 1 || k > PF_MAX_BLOCK) return 0;
    double m = (a->acc[k - 1] + PF_ADAPT_PRIOR_W * a->prior[k - 1]) / (a->tried[k - 1] + PF_ADAPT_PRIOR_W);
    if (!a->dec || !a->zt_n) return m;
    m = clamp(m, 1e-6, 1 - 1e-6);
    return sigmoid(log(m / (1 - m)) + a->cal_slope * (a->z_target - a->zt_mean));
}

/* Seconds of a round that drafts `rows` and verifies n drafts (n = 0 and rows = 1: a plain step). */
static double round_s(const pf_adapt *a, int rows, int n) {
    if (rows <= 1) return pf_cost_verify(&a->cost, 1) + a->cost.over_plain + a->cost.flush_row;
    return pf_cost_draft(&a->cost, rows) + pf_cost_verify(&a->cost, n + 1) + a->cost.over_spec;
}

void pf_adapt_target(pf_adapt *a, const float *h_target) {
    if (!a->dec || !h_target) return;
    a->z_target = pf_dec_target_logit(a->dec, h_target);
    a->zt_n++;
    a->zt_mean += (a->zt_n < 10 ? 1.0 / (double)a->zt_n : 0.1) * (a->z_target - a->zt_mean);
}

int pf_adapt_plan(pf_adapt *a, const float *h_target, int cap) {
    int bmax = cap < a->block ? cap : a->block;
    if (bmax < 2) return 1;
    pf_adapt_target(a, h_target);
    if (!a->cost.have_t) return bmax; /* nothing measured yet: draft to learn (an unknown draft cost counts as 0) */
    /* best E/T over (rows, n <= rows-1) and the plain step */
    double s[PF_MAX_BLOCK + 1], e[PF_MAX_BLOCK + 1];
    e[0] = 1;
    double surv = 1;
    for (int k = 1; k < bmax; k++) {
        s[k] = pf_adapt_survival(a, k);
        surv *= s[k];
        e[k] = e[k - 1] + surv;
    }
    double best = 1.0 / round_s(a, 1, 0);
    int best_rows = 1;
    for (int rows = 2; rows <= bmax; rows++)
        for (int n = 1; n < rows; n++) {
            double v = e[n] / round_s(a, rows, n);
            if (v > best) {
                best = v;
                best_rows = rows;
            }
        }
    a->rate = best;
    if (best_rows > 1) {
        a->plain_run = 0;
        a->backoff = 1;
        return best_rows;
    }
    /* plain is best: a probe round after a while refreshes what the estimates cannot see without
     * drafting (acceptance, the head's draft half, draft and verify costs) */
    int probe_at = a->dec ? PF_ADAPT_PROBE : a->backoff;
    if (a->plain_run++ < probe_at) return 1;
    a->plain_run = 0;
    if (a->backoff < PF_ADAPT_PROBE) a->backoff *= 2;
    int probe = 1;
    double pv = 0;
    for (int rows = 2; rows <= bmax; rows++) {
        double v = e[rows - 1] / round_s(a, rows, rows - 1);
        if (v > pv) {
            pv = v;
            probe = rows;
        }
    }
    return probe;
}

int pf_adapt_choose(pf_adapt *a, const float *h_target, const float *h_draft, int nd) {
    if (!a->dec || !h_target || !h_draft || nd < 1) return nd;
    if (nd > PF_MAX_BLOCK - 1) nd = PF_MAX_BLOCK - 1;
    double z[PF_MAX_BLOCK];
    pf_dec_draft_logits(a->dec, h_draft, nd, z);
    double sk[PF_MAX_BLOCK];
    for (int k = 0; k < nd; k++) { /* running mean of the head's survival: the next plans' estimate */
        a->last_z[k] = a->z_target + z[k];
        sk[k] = a->last_sk[k] = a->forced[k] ? 1 : sigmoid(a->cal_slope * a->last_z[k] + a->cal[k]);
        if (a->forced[k]) continue;
        a->s_n[k]++;
        a->s_mean[k] += (a->s_n[k] < 10 ? 1.0 / (double)a->s_n[k] : 0.1) * (sk[k] - a->s_mean[k]);
    }
    a->last_nd = nd;
    if (!a->cost.have_t) return nd;
    double rate = a->rate > 0 ? a->rate : 1.0 / round_s(a, 1, 0);
    /* the draft is paid for: maximise E(n) - R * (seconds of verifying n) */
    double e = 1, surv = 1, best = 1 - rate * pf_cost_verify(&a->cost, 1);
    int best_n = 0;
    for (int n = 1; n <= nd; n++) {
        surv *= sk[n - 1];
        e += surv;
        double v = e - rate * pf_cost_verify(&a->cost, n + 1);
        if (v > best + 1e-9) { /* a row that adds nothing is not verified, even when it looks free */
            best = v;
            best_n = n;
        }
    }
    return best_n;
}

void pf_adapt_observe(pf_adapt *a, int n, int kept) {
    /* every round forgets a little of every position (one not tried for a while drifts back to
     * its prior and is tried again: a block never chosen would otherwise keep a stale low
     * estimate); position k was tried when drafts 1..k-1 were kept */
    for (int k = 1; k <= PF_MAX_BLOCK; k++) {
        a->acc[k - 1] *= PF_ADAPT_DECAY;
        a->tried[k - 1] *= PF_ADAPT_DECAY;
        if (k <= n && k <= kept + 1 && !a->forced[k - 1]) {
            a->acc[k - 1] += k <= kept;
            a->tried[k - 1] += 1;
        }
    }
    if (a->dec && n > 0) /* position k was predicted last_sk[k-1] and seen when drafts 1..k-1 were kept */
        for (int k = 1; k <= n && k <= a->last_nd && k <= kept + 1; k++) {
            if (a->forced[k - 1]) continue;
            double r = 1.0 / (PF_ADAPT_CAL_START + (double)a->cal_n[k - 1]++);
            double g = (k <= kept) - a->last_sk[k - 1];
            a->cal[k - 1] = clamp(a->cal[k - 1] + (r > PF_ADAPT_CAL_RATE ? r : PF_ADAPT_CAL_RATE) * g, -PF_ADAPT_CAL_MAX, PF_ADAPT_CAL_MAX);
            a->cal_slope = clamp(a->cal_slope + PF_ADAPT_SLOPE_RATE * g * a->last_z[k - 1], PF_ADAPT_SLOPE_MIN, PF_ADAPT_SLOPE_MAX);
        }
    a->last_nd = 0;
    memset(a->forced, 0, sizeof a->forced);
    if (n == 0) a->n_plain++;
    else a->n_rounds++;
    a->rows_hist[n + 1 <= PF_MAX_BLOCK ? n + 1 : PF_MAX_BLOCK]++;
}
