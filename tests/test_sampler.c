/* Sampler: greedy, temperature, top-k, top-p, reproducible RNG, and draws that follow the
 * distribution pf_sampling_probs reports (the one speculative acceptance relies on). */
#include <math.h>
#include <stdlib.h>

#include "engine/sampler.h"
#include "test.h"

TEST(sampler_rng_reproducible_and_uniform) {
    pf_rng a, b;
    pf_rng_seed(&a, 42);
    pf_rng_seed(&b, 42);
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        double u = pf_rng_uniform(&a);
        CHECK(u == pf_rng_uniform(&b) && u >= 0 && u < 1);
        sum += u;
    }
    CHECK(fabs(sum / 100000 - 0.5) < 0.01);
    pf_rng_seed(&b, 43);
    CHECK(pf_rng_next(&a) != pf_rng_next(&b));
}

TEST(sampler_greedy_and_ties) {
    float l[6] = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f, 0.0f};
    CHECK(pf_argmax(l, 6) == 1);
    pf_dist d;
    CHECK(pf_dist_init(&d, 6) == 0);
    pf_rng r;
    pf_rng_seed(&r, 1);
    pf_sampling g = {0, 0, 1};
    CHECK(pf_sample(&g, l, 6, &d, &r) == 1 && d.n == 1 && d.p[0] == 1.0f);
    pf_sampling k1 = {1.0f, 1, 1};
    CHECK(pf_sample(&k1, l, 6, &d, &r) == 1);
    pf_dist_free(&d);
}

TEST(sampler_probs_temperature_topk_topp) {
    enum { N = 50 };
    float l[N];
    for (int i = 0; i < N; i++) l[i] = (float)((i * 37) % 50) / 10.0f;
    pf_dist d;
    CHECK(pf_dist_init(&d, N) == 0);
    pf_sampling s = {0.7f, 0, 1};
    pf_sampling_probs(&s, l, N, &d);
    CHECK(d.n == N);
    double sum = 0;
    for (int i = 0; i < d.n; i++) sum += d.p[i];
    CHECK(fabs(sum - 1) < 1e-5);
    /* ratio of two probabilities follows exp(dl / T) */
    float p0 = pf_dist_prob(&d, 0), p1 = pf_dist_prob(&d, 1);
    CHECK(fabs(p1 / p0 - exp((l[1] - l[0]) / 0.7)) < 1e-3 * exp((l[1] - l[0]) / 0.7));
    for (int i = 1; i < d.n; i++) CHECK(l[d.ids[i - 1]] >= l[d.ids[i]]);
    s.top_k = 5;
    pf_sampling_probs(&s, l, N, &d);
    CHECK(d.n == 5);
    for (int i = 0; i < 5; i++) CHECK(l[d.ids[i]] >= 4.5f);
    s.top_k = 0;
    s.top_p = 0.5f;
    pf_sampling_probs(&s, l, N, &d);
    pf_dist full;
    pf_dist_init(&full, N);
    pf_sampling s2 = {0.7f, 0, 1};
    pf_sampling_probs(&s2, l, N, &full);
    double cum = 0;
    for (int i = 0; i < d.n - 1; i++) cum += full.p[i];
    CHECK(cum < 0.5 && cum + full.p[d.n - 1] >= 0.5 - 1e-6); /* the smallest prefix reaching top_p */
    sum = 0;
    for (int i = 0; i < d.n; i++) sum += d.p[i];
    CHECK(fabs(sum - 1) < 1e-5);
    pf_dist_free(&full);
    pf_dist_free(&d);
}

/* 200k draws: chi-square against the reported distribution, 9 degrees of freedom; the 0.999
 * quantile is 27.9. */
TEST(sampler_draws_follow_distribution) {
    enum { N = 10, DRAWS = 200000 };
    float l[N] = {1.0f, 0.2f, -0.5f, 1.5f, 0.0f, 0.9f, -1.0f, 0.3f, 1.1f, 0.4f};
    pf_dist d;
    CHECK(pf_dist_init(&d, N) == 0);
    pf_sampling s = {1.3f, 0, 1};
    pf_rng r;
    pf_rng_seed(&r, 7);
    int count[N] = {0};
    for (int i = 0; i < DRAWS; i++) count[pf_sample(&s, l, N, &d, &r)]++;
    pf_sampling_probs(&s, l, N, &d);
    double chi = 0;
    for (int i = 0; i < N; i++) {
        double e = DRAWS * pf_dist_prob(&d, i);
        chi += (count[i] - e) * (count[i] - e) / e;
    }
    CHECKF(chi < 27.9, "chi-square %.2f", chi);
    pf_dist_free(&d);
}
