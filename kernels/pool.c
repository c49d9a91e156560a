/* Persistent thread pool. One 32-bit atomic word holds the pool's state: the run's generation,
 * whether the run is open, and how many workers are inside it. A run publishes (fn, arg), then
 * stores a new generation with the open bit; a worker joins by a compare-and-swap that adds one to
 * the count while the run is still open, runs fn, and leaves by subtracting one. When its own call
 * returns the caller clears the open bit (no one joins after that) and waits only for the workers
 * inside. Waiting, on either side, spins for a short while (a forward pass opens a run every few
 * microseconds), then sleeps on a futex on the state word.
 *
 * Ordering: fn/arg are plain fields written before the seq_cst store that opens a run and read
 * after the acquire compare-and-swap that joins it (the other workers' read-modify-writes
 * continue that release sequence); a worker's work happens-before the caller's return through its
 * leaving subtraction. Sleeping uses the Dekker pattern (announce, then re-check) so no wake-up is
 * lost: the futex only saves CPU, all happens-before edges come from the atomics (which keeps TSan
 * informed).
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
    pf_pool_fn fn; /* published by the store that opens a run */
    void *arg;
    _Atomic int stop; /* atomic: a worker that missed the last run may read it while destroy sets it */
    alignas(64) _Atomic uint32_t state; /* generation | OPEN | workers inside; the futex word */
    _Atomic int sleepers;               /* workers asleep waiting for a run */
    _Atomic int caller_waiting;         /* the caller asleep waiting for the workers inside */
    char pad[64 - sizeof(_Atomic uint32_t) - 2 * sizeof(_Atomic int)];
};

#define INSIDE_MASK 0x7fffu
#define OPEN 0x8000u
#define GEN_SHIFT 16
static inline uint32_t gen_of(uint32_t s) { return s >> GEN_SHIFT; }

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

/* Waits (spin, then sleep) until the state's generation differs from seen; returns the state. */
static uint32_t wait_for_run(pf_pool *p, uint32_t seen) {
    int64_t start = 0;
    uint32_t s;
    for (unsigned i = 1; gen_of(s = atomic_load_explicit(&p->state, memory_order_acquire)) == seen; i++) {
        if (spin_expired(i, &start)) break;
        cpu_relax();
    }
    if (gen_of(s) != seen) return s;
    atomic_fetch_add(&p->sleepers, 1);
    while (gen_of(s = atomic_load(&p->state)) == seen) futex_wait(&p->state, s);
    atomic_fetch_sub(&p->sleepers, 1);
    return s;
}

/* Adds this worker to the open run of generation g; false if that run is closed or gone. */
static int join_run(pf_pool *p, uint32_t s, uint32_t g) {
    while (gen_of(s) == g && (s & OPEN))
        if (atomic_compare_exchange_weak_explicit(&p->state, &s, s + 1, memory_order_acquire, memory_order_relaxed))
            return 1;
    return 0;
}

static void *worker_main(void *a) {
    worker_arg *wa = a;
    pf_pool *p = wa->pool;
    uint32_t seen = 0;
    for (;;) {
        uint32_t s = wait_for_run(p, seen);
        seen = gen_of(s);
        if (atomic_load_explicit(&p->stop, memory_order_relaxed)) break;
        if (!join_run(p, s, seen)) continue; /* the caller did this run without us */
        p->fn(p->arg, wa->ith, p->n);
        s = atomic_fetch_sub(&p->state, 1) - 1;
        if (!(s & INSIDE_MASK) && !(s & OPEN) && atomic_load(&p->caller_waiting)) futex_wake(&p->state, INT_MAX);
    }
    return NULL;
}

pf_pool *pf_pool_create(int n_threads) {
    pf_pool *p = aligned_alloc(64, sizeof(pf_pool));
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    atomic_init(&p->state, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_waiting, 0);
    atomic_init(&p->stop, 0);
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
    /* Workers read n only after joining a run, so shrinking it here is safe. */
    p->n = created;
    return p;
}

int pf_pool_size(const pf_pool *p) { return p ? p->n : 1; }

/* Opens the next run (no worker is inside: the last run's caller waited for them). */
static void open_run(pf_pool *p) {
    uint32_t g = gen_of(atomic_load_explicit(&p->state, memory_order_relaxed)) + 1;
    atomic_store(&p->state, (g << GEN_SHIFT) | OPEN); /* seq_cst: publishes fn, arg, stop */
    if (atomic_load(&p->sleepers) > 0) futex_wake(&p->state, INT_MAX);
}

void pf_pool_run(pf_pool *p, pf_pool_fn fn, void *arg) {
    if (!p || p->n <= 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    open_run(p);

    fn(arg, 0, p->n);

    uint32_t s = atomic_fetch_and(&p->state, ~OPEN) & ~OPEN;
    int64_t start = 0;
    for (unsigned i = 1; s & INSIDE_MASK; i++) {
        if (spin_expired(i, &start)) break;
        cpu_relax();
        s = atomic_load_explicit(&p->state, memory_order_acquire);
    }
    if (s & INSIDE_MASK) {
        atomic_store(&p->caller_waiting, 1);
        while ((s = atomic_load(&p->state)) & INSIDE_MASK) futex_wait(&p->state, s);
        atomic_store_explicit(&p->caller_waiting, 0, memory_order_relaxed);
    }
}

void pf_pool_destroy(pf_pool *p) {
    if (!p) return;
    if (p->n > 1) {
        atomic_store_explicit(&p->stop, 1, memory_order_relaxed);
        open_run(p);
        futex_wake(&p->state, INT_MAX);
        for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    }
    free(p->threads);
    free(p->args);
    free(p);
}
