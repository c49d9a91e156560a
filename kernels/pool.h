/* Persistent thread pool: threads are created once; each pf_pool_run opens a run that the caller
 * (ith 0) and whichever workers join in time work on together, and returns when every thread that
 * joined has left it.
 *
 * A run does not wait for a worker that has not joined: on a core shared with other work (a phone's
 * background tasks, a niced job beside a desktop app) a worker may be off its core for a whole
 * time slice, and waiting for it would stall every run. So fn must take its work by claiming
 * parts dynamically (an atomic counter in arg), such that the caller's call alone, or any subset of
 * the threads together, does all of it; ith (0..nth-1, unique among the threads in the run) may
 * pick a preferred part or a per-thread slot, never a share that only that thread does. */
#ifndef PF_POOL_H
#define PF_POOL_H

typedef struct pf_pool pf_pool;
typedef void (*pf_pool_fn)(void *arg, int ith, int nth);

/* n_threads total, including the calling thread; n_threads <= 1 runs everything inline. */
pf_pool *pf_pool_create(int n_threads);
int pf_pool_size(const pf_pool *p);
/* Runs fn(arg, 0, n) on the caller and fn(arg, ith, n) on each worker that joins before the
 * caller's call returns; no call of this run is still going when it returns. */
void pf_pool_run(pf_pool *p, pf_pool_fn fn, void *arg);
void pf_pool_destroy(pf_pool *p);

#endif
