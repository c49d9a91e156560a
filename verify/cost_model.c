#include "verify/cost_model.h"

#include <math.h>
#include <string.h>

void pf_cost_init(pf_cost_model *cm, int n_max) {
    memset(cm, 0, sizeof *cm);
    cm->n_max = n_max < 1 ? 1 : n_max > PF_MAX_BLOCK ? PF_MAX_BLOCK : n_max;
}

/* Fill v[1..n_max] from the known (> 0) entries of src[1..n-1]: linear between known points, the
 * last known slope beyond them (a B-row forward's cost grows about linearly past a few rows). */
static void fill(double *logv, int n_max, const double *src, int n, double scale) {
    double v[PF_MAX_BLOCK + 1] = {0};
    int known[PF_MAX_BLOCK + 1], nk = 0;
    for (int i = 1; i < n && i <= n_max; i++)
        if (src[i] > 0) {
            v[i] = src[i] * scale;
            known[nk++] = i;
        }
    for (int i = 1; i <= n_max; i++) {
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
    for (int i = 1; i <= n_max; i++)
        if (v[i] > 0) logv[i] = log(v[i]);
}

void pf_cost_set_prior(pf_cost_model *cm, const double *c, const double *draft, int n, double t1) {
    if (t1 <= 0) return;
    if (c) {
        double cc[PF_MAX_BLOCK + 1] = {0};
        for (int i = 1; i < n && i <= PF_MAX_BLOCK; i++) cc[i] = c[i];
        cc[1] = 1;
        fill(cm->log_t, cm->n_max, cc, n > 2 ? n : 2, t1);
        cm->have_t = 1;
    }
    if (draft) {
        int any = 0;
        for (int i = 1; i < n; i++) any |= draft[i] > 0;
        if (any) {
            fill(cm->log_d, cm->n_max, draft, n, t1);
            cm->have_d = 1;
        }
    }
}

void pf_cost_refit(pf_cost_model *cm, int nref, double c_meas) {
    if (!cm->have_t || nref < 2 || nref > cm->n_max) return;
    double t1 = pf_cost_verify(cm, 1), cp = pf_cost_verify(cm, nref) / t1;
    if (cp <= 1.01 || c_meas < 1) return;
    double k = (c_meas - 1) / (cp - 1), c[PF_MAX_BLOCK + 1];
    k = k < 0.1 ? 0.1 : k > 10 ? 10 : k; /* a wild measurement cannot flatten or blow up the curve */
    for (int n = 1; n <= cm->n_max; n++) c[n] = 1 + k * (pf_cost_verify(cm, n) / t1 - 1);
    for (int n = 1; n <= cm->n_max; n++) cm->log_t[n] = log(c[n] * t1);
}

/* Move the estimate at row count n toward log(seconds), and its neighbours by the same log ratio
 * (the machine's drift moves nearby row counts alike), half as far per row of distance. */
static void observe(double *logv, int *have, int n_max, int n, double seconds) {
    if (seconds <= 0 || n < 1 || n > n_max) return;
    double x = log(seconds);
    if (!*have) { /* first measurement: flat until the neighbours are seen */
        for (int i = 1; i <= n_max; i++) logv[i] = x;
        *have = 1;
        return;
    }
    double r = x - logv[n];
    if (r > PF_COST_CLAMP) r = PF_COST_CLAMP;
    if (r < -PF_COST_CLAMP) r = -PF_COST_CLAMP;
    for (int i = 1; i <= n_max; i++) {
        int dist = i > n ? i - n : n - i;
        if (dist <= 8) logv[i] += PF_COST_RATE * ldexp(r, -dist);
    }
}

void pf_cost_observe_verify(pf_cost_model *cm, int n, double seconds) {
    if (cm->frozen) return;
    observe(cm->log_t, &cm->have_t, cm->n_max, n, seconds);
    if (n >= 1 && n <= cm->n_max) cm->n_obs_t[n]++;
}

void pf_cost_observe_draft(pf_cost_model *cm, int rows, double seconds) {
    if (cm->frozen) return;
    observe(cm->log_d, &cm->have_d, cm->n_max, rows, seconds);
    if (rows >= 1 && rows <= cm->n_max) cm->n_obs_d[rows]++;
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
static double non_decreasing(const double *logv, int n_max, int n) {
    double m = logv[1];
    for (int i = 2; i <= n && i <= n_max; i++)
        if (logv[i] > m) m = logv[i];
    return exp(m);
}

double pf_cost_verify(const pf_cost_model *cm, int n) { return cm->have_t && n >= 1 ? non_decreasing(cm->log_t, cm->n_max, n) : 0; }

double pf_cost_draft(const pf_cost_model *cm, int rows) {
    return cm->have_d && rows >= 1 ? non_decreasing(cm->log_d, cm->n_max, rows) : 0;
}
