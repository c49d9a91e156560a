/* Machine probes for benchmark reports: how fast this machine reads memory and computes right
 * now. On a shared machine both drift (here the two move in opposite directions between runs), so a
 * report carries the readings its numbers were measured under. */
#ifndef PF_PROBE_H
#define PF_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* Best of `passes` reads of the n-word array a by the pool's threads, in GB/s. */
double pf_probe_bandwidth(pf_pool *pool, const uint64_t *a, size_t n, int passes);

/* fp32 multiply-adds per second (G) of the pool's threads in the attention kernel on a small
 * cache that stays in L2 (8 rows, Pocket's head layout, 512 keys): pure compute, the engine's
 * own code. Best of `passes` calls; a few milliseconds. Negative when out of memory. */
double pf_probe_compute(const pf_kernels *k, pf_pool *pool, int passes);

#endif
