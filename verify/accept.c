#include "verify/accept.h"

int pf_accept_greedy_by(int32_t (*token)(void *ctx, int k), void *ctx, const int32_t *draft, int nd, int32_t *bonus) {
    int a = 0;
    int32_t t = token(ctx, 0);
    while (a < nd && draft[a] == t) {
        a++;
        t = token(ctx, a);
    }
    *bonus = t;
    return a;
}

typedef struct {
    const float *logits;
    int n_vocab;
} rows;

static int32_t row_argmax(void *ctx, int k) {
    const rows *r = ctx;
    return pf_argmax(r->logits + (int64_t)k * r->n_vocab, r->n_vocab);
}

int pf_accept_greedy(const float *logits, int n_vocab, const int32_t *draft, int nd, int32_t *bonus) {
    rows r = {logits, n_vocab};
    return pf_accept_greedy_by(row_argmax, &r, draft, nd, bonus);
}

/* normalize(max(p - q, 0)) into r; returns 0 if the residual is empty (p == q). */
static int residual(const pf_dist *p, const pf_dist *q, pf_dist *r) {
    double z = 0;
    r->n = 0;
    for (int i = 0; i < p->n; i++) {
        float v = p->p[i] - pf_dist_prob(q, p->ids[i]);
        if (v > 0) {
            r->ids[r->n] = p->ids[i];
            r->p[r->n++] = v;
            z += v;
        }
    }
    if (z <= 0) return 0;
    for (int i = 0; i < r->n; i++) r->p[i] = (float)(r->p[i] / z);
    return 1;
}

int pf_accept_sampled(const float *logits, int n_vocab, const int32_t *draft, const pf_dist *q, int nd,
                      int deterministic, const pf_sampling *samp, pf_rng *rng, pf_dist *p, pf_dist *resid,
                      int32_t *bonus) {
    for (int k = 0; k < nd; k++) {
        pf_sampling_probs(samp, logits + (int64_t)k * n_vocab, n_vocab, p);
        if (deterministic) {
            int32_t x = pf_dist_sample(p, rng);
            if (x != draft[k]) {
                *bonus = x;
                return k;
            }
            continue;
        }
        float pd = pf_dist_prob(p, draft[k]), qd = pf_dist_prob(&q[k], draft[k]);
        /* qd > 0 always holds for a drawn token; u < pd/qd without dividing */
        if (qd > 0 && pf_rng_uniform(rng) * qd < pd) continue;
        *bonus = residual(p, &q[k], resid) ? pf_dist_sample(resid, rng) : pf_dist_sample(p, rng);
        return k;
    }
    pf_sampling_probs(samp, logits + (int64_t)nd * n_vocab, n_vocab, p);
    *bonus = pf_dist_sample(p, rng);
    return nd;
}
