#include "verify/cost_model.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "engine/clock.h"
#include "engine/batch.h"

void pf_cost_init(pf_cost_model *cm, int block) {
    memset(cm, 0, sizeof *cm);
    assert(block >= 2 && block <= PF_MAX_BLOCK); /* a plan's block (verify/plan.h) */
    cm->block = block;
}

/* Fill v[1..block] from the known (> 0) entries of src[1..n-1]: linear between known points, the
 * last known slope beyond them (a B-row forward's cost grows about linearly past a few rows). */
static void fill(double *logv, int block, const double *src, int n, double scale) {
    double v[PF_MAX_BLOCK + 1] = {0};
    int known[PF_MAX_BLOCK + 1], nk = 0;
    for (int i = 1; i < n && i <= block; i++)
        if (src[i] > 0) {
            v[i] = src[i] * scale;
            known[nk++] = i;
        }
    for (int i = 1; i <= block; i++) {
        if (v[i] > 0) continue;
        int lo = -1, hi = -1;
        for (int k = 0; k < nk; k++) {
            if (known[k] < i) lo = known[k];
            if (known[k] > i && hi < 0) hi = known[k];
        }
        if (lo > 0 && hi > 0) {
            v[i] = v[lo] + (v[hi] - v[lo]) * (i - lo) / (double)(hi - lo);
        } else if (lo > 0) { /* past the last known point: its slope from the one before */
            int lo2 = -1;
            for (int k = 0; k < nk; k++)
                if (known[k] < lo) lo2 = known[k];
            double slope = lo2 > 0 ? (v[lo] - v[lo2]) / (lo - lo2) : 0;
            v[i] = v[lo] + (slope > 0 ? slope : 0) * (i - lo);
        } else if (hi > 0) {
            v[i] = v[hi];
        }
    }
    for (int i = 1; i <= block; i++)
        if (v[i] > 0) logv[i] = log(v[i]);
}

void pf_cost_set_prior(pf_cost_model *cm, const double *c, const double *draft, int n, double t1) {
    if (t1 <= 0) return;
    if (c) {
        double cc[PF_MAX_BLOCK + 1] = {0};
        for (int i = 1; i < n && i <= PF_MAX_BLOCK; i++) cc[i] = c[i];
        cc[1] = 1;
        fill(cm->log_t, cm->block, cc, n > 2 ? n : 2, t1);
        cm->have_t = 1;
    }
    if (draft) {
        int any = 0;
        for (int i = 1; i < n; i++) any |= draft[i] > 0;
        if (any) {
            fill(cm->log_d, cm->block, draft, n, t1);
            cm->have_d = 1;
        }
    }
}

void pf_cost_refit(pf_cost_model *cm, int nref, double c_meas) {
    if (!cm->have_t || nref < 2 || nref > cm->block) return;
    double t1 = pf_cost_verify(cm, 1), cp = pf_cost_verify(cm, nref) / t1;
    if (cp <= 1.01 || c_meas < 1) return;
    double k = (c_meas - 1) / (cp - 1), c[PF_MAX_BLOCK + 1];
    k = k < 0.1 ? 0.1 : k > 10 ? 10 : k; /* a wild measurement cannot flatten or blow up the curve */
    for (int n = 1; n <= cm->block; n++) c[n] = 1 + k * (pf_cost_verify(cm, n) / t1 - 1);
    for (int n = 1; n <= cm->block; n++) cm->log_t[n] = log(c[n] * t1);
}

/* Move the estimate at row count n toward log(seconds), and its neighbours by the same log ratio
 * (the machine's drift moves nearby row counts alike), half as far per row of distance. */
static void observe(double *logv, int *have, int block, int n, double seconds) {
    if (seconds <= 0 || n < 1 || n > block) return;
    double x = log(seconds);
    if (!*have) { /* first measurement: flat until the neighbours are seen */
        for (int i = 1; i <= block; i++) logv[i] = x;
        *have = 1;
        return;
    }
    double r = x - logv[n];
    if (r > PF_COST_CLAMP) r = PF_COST_CLAMP;
    if (r < -PF_COST_CLAMP) r = -PF_COST_CLAMP;
    for (int i = 1; i <= block; i++) {
        int dist = i > n ? i - n : n - i;
        if (dist <= 8) logv[i] += PF_COST_RATE * ldexp(r, -dist);
    }
}

void pf_cost_observe_verify(pf_cost_model *cm, int n, double seconds) {
    if (cm->frozen) return;
    observe(cm->log_t, &cm->have_t, cm->block, n, seconds);
    if (n >= 1 && n <= cm->block) cm->n_obs_t[n]++;
}

void pf_cost_observe_rows(pf_cost_model *cm, int n, double seconds) {
    if (cm->frozen || seconds <= 0 || n < 1 || n > cm->block) return;
    pf_cost_observe_verify(cm, n, seconds);
    double *v = cm->log_t;
    for (int i = n - 1; i >= 1; i--)
        if (v[i] > v[i + 1]) v[i] = v[i + 1];
    for (int i = n + 1; i <= cm->block; i++)
        if (v[i] < v[i - 1]) v[i] = v[i - 1];
}

void pf_cost_observe_draft(pf_cost_model *cm, int rows, double seconds) {
    if (cm->frozen) return;
    observe(cm->log_d, &cm->have_d, cm->block, rows, seconds);
    if (rows >= 1 && rows <= cm->block) cm->n_obs_d[rows]++;
}

/* Running mean of a bookkeeping cost; a sample over 3x the mean counts as 3x (a preempted round). */
static void follow(double *o, double seconds) {
    if (*o > 0 && seconds > 3 * *o) seconds = 3 * *o;
    *o = *o > 0 ? (1 - PF_COST_RATE) * *o + PF_COST_RATE * seconds : seconds;
}

void pf_cost_observe_overhead(pf_cost_model *cm, int plain, double seconds) {
    if (!cm->frozen) follow(plain ? &cm->over_plain : &cm->over_spec, seconds);
}

void pf_cost_observe_flush(pf_cost_model *cm, int rows, double seconds) {
    if (!cm->frozen && rows > 0 && seconds > 0) follow(&cm->flush_row, seconds / rows);
}

/* More rows never cost less: the largest estimate up to n (noise can invert two neighbours). */
static double non_decreasing(const double *logv, int block, int n) {
    double m = logv[1];
    for (int i = 2; i <= n && i <= block; i++)
        if (logv[i] > m) m = logv[i];
    return exp(m);
}

double pf_cost_verify(const pf_cost_model *cm, int n) { return cm->have_t && n >= 1 ? non_decreasing(cm->log_t, cm->block, n) : 0; }

double pf_cost_draft(const pf_cost_model *cm, int rows) {
    return cm->have_d && rows >= 1 ? non_decreasing(cm->log_d, cm->block, rows) : 0;
}

/* ---------------------------------------------------------------- calibration */

/* Seconds of an n-row forward at the current depth, the fastest of `reps`, into *secs; its rows
 * are then truncated away (the cache is unchanged). The forward's code. */
static pf_rc time_forward(const pf_cost_calib *k, const int32_t *rows, int n, int reps, double *secs,
                          char err[PF_ERR_LEN]) {
    pf_ctx *c = k->ctx;
    int64_t len = c->kv->len;
    double best = 1e9;
    for (int rep = 0; rep < reps; rep++) {
        pf_batch b = {.tokens = rows, .n = n, .logits_mode = PF_LOGITS_ALL, .logits = k->logits};
        double t0 = pf_now_s();
        pf_rc rc = pf_forward(c, &b, err);
        if (rc != PF_RC_OK) return rc;
        double dt = pf_now_s() - t0;
        pf_kv_truncate(c->kv, len);
        if (dt < best) best = dt;
    }
    *secs = best;
    return PF_RC_OK;
}

/* With a prior (a tuned profile's costs): only the one-row forward and, unless the prior is fixed,
 * one refit at min(block, 4) rows are measured. */
static pf_rc calibrate_from_prior(pf_cost_model *cm, const pf_cost_calib *k, const int32_t *rows, double t1,
                                  char err[PF_ERR_LEN]) {
    pf_ctx *c = k->ctx;
    int nref = k->block < 4 ? k->block : 4;
    if (c->kv->len + nref > c->kv->n_ctx) nref = 1;
    double tr = 1e9;
    for (int rep = 0; rep < 3 && nref > 1; rep++) {
        double a = 0, b = 0;
        pf_rc rc;
        if ((rc = time_forward(k, rows, nref, 1, &a, err)) != PF_RC_OK) return rc;
        if ((rc = time_forward(k, rows, 1, 1, &b, err)) != PF_RC_OK) return rc;
        if (a < tr) tr = a;
        if (b < t1) t1 = b;
    }
    pf_cost_set_prior(cm, k->prior_c, k->prior_d, k->block + 1, t1);
    if (!k->prior_fixed && nref > 1) pf_cost_refit(cm, nref, tr / t1);
    cm->frozen = k->prior_fixed;
    return PF_RC_OK;
}

/* The fastest of two proposals of n rows (the first one warms the draft up) into *secs; a proposal
 * leaves the drafter's context as it was. */
static pf_rc time_proposal(const pf_cost_calib *k, const int32_t *prompt, int n_prompt, int n, double *secs,
                           char err[PF_ERR_LEN]) {
    int32_t drafts[PF_MAX_BLOCK];
    double best = 1e9;
    for (int rep = 0; rep < 2; rep++) {
        double t0 = pf_now_s();
        int n_drafted = 0;
        pf_rc rc = k->d->propose(k->d->state, prompt[n_prompt - 1], k->ctx->kv->len, n, NULL, NULL, drafts, NULL,
                                 &n_drafted, err);
        if (rc != PF_RC_OK) return rc;
        double dt = pf_now_s() - t0;
        if (dt < best) best = dt;
    }
    *secs = best;
    return PF_RC_OK;
}

/* The row count measured after i: every count up to 8 (a B-row forward's cost is not smooth in B:
 * the kernels switch from one-row to blocked paths, and on this CPU c(3) ~ c(2) while c(4) jumps),
 * then 12, 16, 24, .. (*j walks that list), the block last; the rounds refine every estimate. */
static int next_count(int i, int *j, int block) {
    static const int big[] = {12, 16, 24, 32, 48, 64};
    if (i < 8) return i + 1;
    while (*j < 6 && big[*j] <= i) (*j)++;
    return *j < 6 && big[*j] < block ? big[*j] : block;
}

/* A forward's time at each measured row count into tn[n] and the drafter's at 4 rows and the block
 * into dr[n], as far as the context allows. */
static pf_rc measure_counts(const pf_cost_calib *k, const int32_t *rows, const int32_t *prompt, int n_prompt, double *tn,
                            double *dr, char err[PF_ERR_LEN]) {
    pf_ctx *c = k->ctx;
    pf_rc rc;
    for (int n = 2, j = 0; n <= k->block; n = next_count(n, &j, k->block)) {
        if (c->kv->len + n > c->kv->n_ctx) break;
        if ((rc = time_forward(k, rows, n, n <= 4 ? 2 : 1, &tn[n], err)) != PF_RC_OK) return rc;
        if ((n == 4 || n == k->block) && (rc = time_proposal(k, prompt, n_prompt, n, &dr[n], err)) != PF_RC_OK) return rc;
        if (n == k->block) break;
    }
    return PF_RC_OK;
}

pf_rc pf_cost_calibrate(pf_cost_model *cm, const pf_cost_calib *k, const int32_t *prompt, int n_prompt, int *started,
                        char err[PF_ERR_LEN]) {
    int32_t rows[PF_MAX_BLOCK];
    for (int i = 0; i < k->block; i++) rows[i] = prompt[(n_prompt - 1 + i) % n_prompt];
    double t1 = 0;
    pf_rc rc = time_forward(k, rows, 1, 2, &t1, err);
    if (rc != PF_RC_OK) return rc;
    *started = 1;
    if (k->prior_c) return calibrate_from_prior(cm, k, rows, t1, err);
    double tn[PF_MAX_BLOCK + 1] = {0}, cr[PF_MAX_BLOCK + 1] = {0}, dr[PF_MAX_BLOCK + 1] = {0};
    if ((rc = measure_counts(k, rows, prompt, n_prompt, tn, dr, err)) != PF_RC_OK) return rc;
    double t1b = 0;
    if ((rc = time_forward(k, rows, 1, 2, &t1b, err)) != PF_RC_OK) return rc;
    if (t1b < t1) t1 = t1b;
    cr[1] = 1;
    for (int n = 2; n <= k->block; n++) {
        if (tn[n] > 0) cr[n] = tn[n] / t1;
        if (dr[n] > 0) dr[n] /= t1;
    }
    pf_cost_set_prior(cm, cr, dr, k->block + 1, t1);
    return PF_RC_OK;
}
