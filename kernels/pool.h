/* Persistent thread pool: threads are created once; each pf_pool_run wakes them (spin first,
 * then sleep), runs fn(arg, ith, nth) on every thread including the caller (ith 0), and returns
 * when all are done. */
#ifndef PF_POOL_H
#define PF_POOL_H

typedef struct pf_pool pf_pool;
typedef void (*pf_pool_fn)(void *arg, int ith, int nth);

/* n_threads total, including the calling thread; n_threads <= 1 runs everything inline. */
pf_pool *pf_pool_create(int n_threads);
int pf_pool_size(const pf_pool *p);
void pf_pool_run(pf_pool *p, pf_pool_fn fn, void *arg);
void pf_pool_destroy(pf_pool *p);

#endif
