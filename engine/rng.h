/* The seeded, reproducible random numbers of sampling, speculative acceptance and the synthetic
 * models' weights: xoshiro256** seeded through splitmix64. */
#ifndef PF_RNG_H
#define PF_RNG_H

#include <stdint.h>

typedef struct { uint64_t s[4]; } pf_rng;

void pf_rng_seed(pf_rng *r, uint64_t seed);
uint64_t pf_rng_next(pf_rng *r);
/* Uniform double in [0, 1) with 53 random bits. */
double pf_rng_uniform(pf_rng *r);

#endif
