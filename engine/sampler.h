/* Token selection: greedy, temperature, top-k, top-p with a seeded, reproducible RNG (engine/rng.h).
 * pf_sampling_probs exposes the exact distribution a sample is drawn from, which the lossless
 * speculative acceptance needs. */
#ifndef PF_SAMPLER_H
#define PF_SAMPLER_H

#include <stdint.h>

#include "engine/rng.h"

typedef struct {
    float temp;  /* <= 0: greedy */
    int top_k;   /* <= 0: off */
    float top_p; /* >= 1: off */
} pf_sampling;

/* Lowest id among the maxima. */
int32_t pf_argmax(const float *logits, int n);

/* Sparse distribution: ids[i] has probability p[i] (sum 1), sorted by decreasing logit.
 * Capacity is n (vocabulary size). Greedy gives one entry with p = 1. */
typedef struct {
    int32_t *ids;
    float *p;
    int n;
    int cap;
} pf_dist;

int pf_dist_init(pf_dist *d, int cap);
void pf_dist_free(pf_dist *d);
/* The distribution a sample is drawn from after temperature, top-k and top-p. */
void pf_sampling_probs(const pf_sampling *s, const float *logits, int n, pf_dist *out);
/* Draw from a distribution with one uniform number (inverse CDF in list order). */
int32_t pf_dist_sample(const pf_dist *d, pf_rng *r);
/* Probability of a token under d (0 if absent). */
float pf_dist_prob(const pf_dist *d, int32_t id);
/* Convenience: sampling_probs + dist_sample (greedy draws no random number). */
int32_t pf_sample(const pf_sampling *s, const float *logits, int n, pf_dist *scratch, pf_rng *r);

#endif
