#include "verify/row_share.h"

/* Seconds of an R-row forward; past the table the slope of its last two entries. */
static double verify_at(const double *v, int R) {
    if (R <= PF_MAX_BLOCK) return v[R < 1 ? 1 : R];
    return v[PF_MAX_BLOCK] + (v[PF_MAX_BLOCK] - v[PF_MAX_BLOCK - 1]) * (R - PF_MAX_BLOCK);
}

/* Expected tokens of a sequence's B rows: its own token plus each draft kept with the ones before. */
static double tokens(const pf_share_seq *q, int B) {
    double e = 1, surv = 1;
    for (int k = 1; k < B; k++) {
        surv *= q->s[k - 1];
        e += surv;
    }
    return e;
}

static double own_s(const pf_share_seq *q, int B) { return B <= 1 ? q->over_plain : q->draft_s[B] + q->over_spec; }

double pf_share_rows(const pf_share_seq *q, int n, const double *verify_s, int max_rows, int *rows) {
    int R = 0;
    double E = 0, own = 0;
    for (int i = 0; i < n; i++) {
        rows[i] = q[i].fixed ? q[i].bmax : 1;
        R += rows[i];
        E += tokens(&q[i], rows[i]);
        own += own_s(&q[i], rows[i]);
    }
    double best = E / (verify_at(verify_s, R) + own);
    for (;;) {
        int bi = -1, bB = 0;
        double bv = best * (1 + 1e-9); /* a change that gains nothing is not made */
        for (int i = 0; i < n; i++) {
            if (q[i].fixed) continue;
            double e0 = E - tokens(&q[i], rows[i]), o0 = own - own_s(&q[i], rows[i]);
            for (int B = rows[i] + 1; B <= q[i].bmax && R - rows[i] + B <= max_rows; B++) {
                double v = (e0 + tokens(&q[i], B)) / (verify_at(verify_s, R - rows[i] + B) + o0 + own_s(&q[i], B));
                if (v > bv) bv = v, bi = i, bB = B;
            }
        }
        if (bi < 0) return best;
        E += tokens(&q[bi], bB) - tokens(&q[bi], rows[bi]);
        own += own_s(&q[bi], bB) - own_s(&q[bi], rows[bi]);
        R += bB - rows[bi];
        rows[bi] = bB;
        best = bv;
    }
}
