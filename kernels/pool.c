/* Persistent thread pool. A run publishes (fn, arg) and bumps an atomic generation counter; workers
 * spin on it for a short while (a forward pass issues a run every few microseconds), then sleep on
 * a futex. Completion is an atomic counter the caller spins on, then sleeps on.
 *
 * Ordering: fn/arg/stop are plain fields written before the seq_cst bump of `gen` and read after
 * an acquire load of it; a worker's work happens-before the caller's return through `done`.
 * Sleeping uses the Dekker pattern (announce, then re-check) so no wake-up is lost: the futex only
 * saves CPU, all happens-before edges come from the atomics (which keeps TSan informed).
 *
 * One run at a time: pf_pool_run must not be called concurrently or from inside fn. */
#include "kernels/pool.h"

#include <limits.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sched.h>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define SPIN_NS 100000 /* spin this long before sleeping (~100 us) */
#define YIELD_NS 20000 /* ... yielding the core after this long */

typedef struct {
    pf_pool *pool;
    int ith;
} worker_arg;

struct pf_pool {
    int n;
    pthread_t *threads;
    worker_arg *args;
    pf_pool_fn fn; /* published by the bump of gen */
    void *arg;
    int stop;
    alignas(64) _Atomic uint32_t gen; /* futex word the workers wait on */
    _Atomic int sleepers;
    alignas(64) _Atomic uint32_t done; /* workers finished in this run; futex word of the caller */
    _Atomic int caller_waiting;
    char pad[64 - sizeof(_Atomic uint32_t) - sizeof(_Atomic int)];
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t expected) {
#ifdef __linux__
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
#else
    (void)addr; (void)expected;
    sched_yield();
#endif
}

static void futex_wake(_Atomic uint32_t *addr, int n) {
#ifdef __linux__
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
#else
    (void)addr; (void)n;
#endif
}

/* Called every spin iteration; true once SPIN_NS has passed since the first check. After
 * YIELD_NS the spinner also yields, so that with more threads than free cores the thread being
 * waited for gets to run instead of losing its core to spinners for a whole time slice. */
static int spin_expired(unsigned i, int64_t *start) {
    if (i & 63) return 0;
    int64_t t = now_ns();
    if (!*start) *start = t;
    if (t - *start > YIELD_NS) sched_yield();
    return t - *start > SPIN_NS;
}

/* Spin until *w != seen or SPIN_NS passes; returns the value seen last. */
static uint32_t spin_while_equal(_Atomic uint32_t *w, uint32_t seen) {
    int64_t start = 0;
    for (unsigned i = 1;; i++) {
        uint32_t v = atomic_load_explicit(w, memory_order_acquire);
        if (v != seen || spin_expired(i, &start)) return v;
        cpu_relax();
    }
}

static uint32_t wait_for_run(pf_pool *p, uint32_t seen) {
    uint32_t g = spin_while_equal(&p->gen, seen);
    if (g != seen) return g;
    atomic_fetch_add(&p->sleepers, 1);
    while ((g = atomic_load(&p->gen)) == seen) futex_wait(&p->gen, seen);
    atomic_fetch_sub(&p->sleepers, 1);
    return g;
}

static void *worker_main(void *a) {
    worker_arg *wa = a;
    pf_pool *p = wa->pool;
    uint32_t seen = 0;
    for (;;) {
        seen = wait_for_run(p, seen);
        if (p->stop) break;
        p->fn(p->arg, wa->ith, p->n);
        uint32_t d = atomic_fetch_add(&p->done, 1) + 1;
        if (d == (uint32_t)(p->n - 1) && atomic_load(&p->caller_waiting)) futex_wake(&p->done, 1);
    }
    return NULL;
}

pf_pool *pf_pool_create(int n_threads) {
    pf_pool *p = aligned_alloc(64, sizeof(pf_pool));
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    atomic_init(&p->gen, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->caller_waiting, 0);
    p->n = n_threads < 1 ? 1 : n_threads;
    if (p->n == 1) return p;
    p->threads = calloc((size_t)p->n, sizeof *p->threads);
    p->args = calloc((size_t)p->n, sizeof *p->args);
    if (!p->threads || !p->args) {
        free(p->threads);
        free(p->args);
        p->threads = NULL;
        p->args = NULL;
        p->n = 1;
        return p;
    }
    int created = 1;
    for (int i = 1; i < p->n; i++) {
        p->args[i].pool = p;
        p->args[i].ith = i;
        if (pthread_create(&p->threads[i], NULL, worker_main, &p->args[i]) != 0) break;
        created++;
    }
    /* Workers read n only after the first bump of gen, so shrinking it here is safe. */
    p->n = created;
    return p;
}

int pf_pool_size(const pf_pool *p) { return p ? p->n : 1; }

void pf_pool_run(pf_pool *p, pf_pool_fn fn, void *arg) {
    if (!p || p->n <= 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_fetch_add(&p->gen, 1); /* seq_cst: publishes the fields above */
    if (atomic_load(&p->sleepers) > 0) futex_wake(&p->gen, INT_MAX);

    fn(arg, 0, p->n);

    uint32_t target = (uint32_t)(p->n - 1), v;
    int64_t start = 0;
    for (unsigned i = 1; (v = atomic_load_explicit(&p->done, memory_order_acquire)) != target; i++) {
        if (spin_expired(i, &start)) break;
        cpu_relax();
    }
    if (v != target) {
        atomic_store(&p->caller_waiting, 1);
        while ((v = atomic_load(&p->done)) != target) futex_wait(&p->done, v);
        atomic_store_explicit(&p->caller_waiting, 0, memory_order_relaxed);
    }
}

void pf_pool_destroy(pf_pool *p) {
    if (!p) return;
    if (p->n > 1) {
        p->stop = 1;
        atomic_fetch_add(&p->gen, 1);
        futex_wake(&p->gen, INT_MAX);
        for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    }
    free(p->threads);
    free(p->args);
    free(p);
}
