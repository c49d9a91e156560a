/* Soak: one process, four sessions on four threads sharing the committed target and drafts, many
 * generations through the public API with random strategies (plain, dflash with either draft, Dec,
 * ngram, hybrid, adaptive, the default), lengths, greedy and sampled decoding, multi-turn chats
 * with resets. Live heap memory after warm-up stays within 2 MB, the open descriptors do not
 * change, and every checkpoint generation (greedy) equals a cold run of the same conversation in a
 * session reset for it. Hybrid has no public spec kind: it is built as the CLI builds it.
 * PF_SOAK_GENS generations in all (default 48: the short version `make asan` runs; `make soak`
 * runs 2,000). Under a sanitizer the memory bound is not checked (its allocator is not glibc's).
 * The bound is on the bytes malloc has handed out and not taken back (glibc's mallinfo2), not on
 * resident memory: what the allocator's arenas keep after a free depends on how the threads were
 * scheduled, so RSS moved with the machine's load; live bytes move only with a leak. */
#include <dirent.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include "formats/grow.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"
#include "fuzz/utf8.h"
#include "include/pocketflash.h"
#include "test.h"
#include "util.h"
#include "verify/strategies.h"

#define SOAK_THREADS 4
#define SOAK_SAMPLES 100000

typedef struct {
    pf_model *m;
    pf_draft *d1, *d2; /* DFlash, DFlash2 with a Dec head */
    int per_thread, checkpoint_every;
    atomic_int done;
    atomic_int warmed; /* workers past their warm-up */
    atomic_int failed;
    char why[512];
    pthread_mutex_t lock;
    /* the workers meet after each generation, once every one is warm; the last to arrive takes
     * one sample of memory and descriptors while all sessions are between generations (what is
     * in use then does not depend on the scheduling), then lets the next round begin */
    pthread_cond_t next_round;
    int arrived, live, round;
    int n_s;
    int s_fds[SOAK_SAMPLES];
    long s_live[SOAK_SAMPLES]; /* kB in use: malloc's live bytes with glibc, else resident memory */
} soak_shared;

typedef struct {
    soak_shared *sh;
    int id;
} soak_arg;

typedef pf_sbuf text_buf;

static int on_text(void *user, const char *t, size_t len) {
    text_buf *b = user;
    pf_sbuf_put(b, t, len);
    return b->oom;
}

static uint64_t next_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void soak_fail(soak_shared *sh, const char *fmt, const char *a, const char *b) {
    pthread_mutex_lock(&sh->lock);
    if (!atomic_load(&sh->failed)) snprintf(sh->why, sizeof sh->why, fmt, a, b);
    atomic_store(&sh->failed, 1);
    pthread_mutex_unlock(&sh->lock);
}

static const char *const k_user[] = {
    "A shop sells 12 apples for 3 dollars each. How much do the apples cost?",
    "Write a Python function add(a, b) that returns the sum of a and b.",
    "What does serendipity mean?",
    "Translate into Chinese: Open the file",
    "List three colours.",
    "Summarise: the cat sat on the mat, then the cat sat on the mat again.",
};

enum { S_PLAIN, S_DFLASH1, S_DFLASH2, S_DEC, S_NGRAM, S_HYBRID, S_ADAPTIVE, S_DEFAULT, S_COUNT };
static const char *const k_sname[S_COUNT] = {"plain", "dflash", "dflash2", "dec", "ngram", "hybrid", "adaptive", "default"};

/* Conversations start over once the context passes this many tokens; the warm-up runs past it, so
 * every cache page a conversation can touch is resident before memory is measured. */
#define SOAK_CTX_CAP 256

static void set_strategy(pf_gen_params *gp, int strat, const soak_shared *sh, uint64_t *rng) {
    switch (strat) {
    case S_DFLASH1: gp->draft = sh->d1; gp->spec = PF_SPEC_DFLASH; break;
    case S_DFLASH2: gp->draft = sh->d2; gp->spec = PF_SPEC_DFLASH; gp->block = 2 + (int)(next_rand(rng) % 7); break;
    case S_DEC: gp->draft = sh->d2; gp->spec = PF_SPEC_DEC; break;
    case S_NGRAM: gp->spec = PF_SPEC_NGRAM; break;
    case S_HYBRID: gp->draft = sh->d1; gp->spec = PF_SPEC_HYBRID; break;
    case S_ADAPTIVE: gp->draft = sh->d1; gp->spec = PF_SPEC_ADAPTIVE; break;
    case S_DEFAULT: gp->draft = next_rand(rng) % 2 ? sh->d1 : sh->d2; break;
    default: gp->spec = PF_SPEC_PLAIN; break;
    }
}

/* Every strategy once, and the cold session, over a context longer than SOAK_CTX_CAP allows. */
static int warm_up(pf_session *s, pf_session *cold, const soak_shared *sh, uint64_t *rng,
                   text_buf *out, char *err) {
    char prompt[4096] = "";
    for (int i = 0; strlen(prompt) < 1500; i++) {
        strcat(prompt, k_user[i % (sizeof k_user / sizeof k_user[0])]);
        strcat(prompt, " ");
    }
    for (int st = 0; st <= S_COUNT; st++) {
        pf_gen_params gp = test_gen_fixed(128);
        if (st < S_COUNT) set_strategy(&gp, st, sh, rng);
        pf_session *on = st < S_COUNT ? s : cold;
        pf_session_reset(on);
        out->n = 0;
        if (pf_generate(on, prompt, strlen(prompt), &gp, on_text, out, NULL, err) != PF_OK) return -1;
    }
    pf_session_reset(s);
    return 0;
}

/* kB in use now: with glibc the bytes allocated and not freed, in every arena and in mmapped
 * chunks; elsewhere the resident set, the closest measure there is */
static long live_kb(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    struct mallinfo2 mi = mallinfo2();
    return (long)((mi.uordblks + mi.hblkhd) / 1024);
#else
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
#endif
}

static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d) return -1;
    while (readdir(d)) n++;
    closedir(d);
    return n - 3; /* ".", ".." and the directory's own descriptor */
}

/* under lock: the round is complete, take its sample and start the next */
static void end_round(soak_shared *sh) {
    if (sh->n_s < SOAK_SAMPLES) {
        sh->s_live[sh->n_s] = live_kb();
        sh->s_fds[sh->n_s] = open_fds();
        sh->n_s++;
    }
    sh->arrived = 0;
    sh->round++;
    pthread_cond_broadcast(&sh->next_round);
}

static void meet(soak_shared *sh) {
    pthread_mutex_lock(&sh->lock);
    if (++sh->arrived == sh->live) {
        end_round(sh);
    } else {
        for (int r = sh->round; r == sh->round;) pthread_cond_wait(&sh->next_round, &sh->lock);
    }
    pthread_mutex_unlock(&sh->lock);
}

/* a worker that stops (done, or failed) no longer holds the others' rounds */
static void leave(soak_shared *sh) {
    pthread_mutex_lock(&sh->lock);
    sh->live--;
    if (sh->arrived > 0 && sh->arrived == sh->live) end_round(sh);
    pthread_mutex_unlock(&sh->lock);
}

static void *soak_worker(void *p) {
    soak_arg *a = p;
    soak_shared *sh = a->sh;
    char err[PF_ERR_LEN];
    pf_session_params sp = {.n_threads = 1, .n_ctx = 1024};
    pf_session *s = NULL, *cold = NULL;
    pf_session_new(sh->m, &sp, &s, err);
    pf_session_new(sh->m, &sp, &cold, err);
    text_buf out = {0}, ref = {0};
    pf_message msgs[8];
    char *replies[4] = {0};
    int n_msgs = 0;
    uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(a->id + 1);
    if (!s || !cold) {
        soak_fail(sh, "%s%s", "session: ", err);
        goto done;
    }
    /* under a sanitizer memory is not measured: no warm-up needed */
    if (!pf_fault_sanitized() && warm_up(s, cold, sh, &rng, &out, err) < 0) {
        soak_fail(sh, "%s%s", "warm-up: ", err);
        goto done;
    }
    atomic_fetch_add(&sh->warmed, 1);
    /* every sample after every warm-up: wait for the others (a state, not a time) */
    while (atomic_load(&sh->warmed) < SOAK_THREADS && !atomic_load(&sh->failed)) sched_yield();
    int ctx_len = 0;
    for (int g = 0; g < sh->per_thread && !atomic_load(&sh->failed); g++) {
        int checkpoint = (g + 1) % sh->checkpoint_every == 0;
        int strat = (int)(next_rand(&rng) % S_COUNT);
        pf_gen_params gp;
        pf_gen_params_default(&gp);
        gp.max_tokens = 1 + (int)(next_rand(&rng) % 40);
        if (!checkpoint && next_rand(&rng) % 2) {
            gp.temp = 0.7f;
            gp.top_k = 40;
            gp.top_p = 0.95f;
            gp.seed = next_rand(&rng);
        }
        set_strategy(&gp, strat, sh, &rng);
        /* a conversation goes on (the reply joins the history), or starts over: reset or not */
        uint64_t r = next_rand(&rng);
        if (n_msgs == 0 || n_msgs >= 7 || ctx_len > SOAK_CTX_CAP || r % 3 == 0) {
            for (int i = 0; i < 4; i++) free(replies[i]), replies[i] = NULL;
            n_msgs = 0;
            if (r % 2) pf_session_reset(s);
            if (r % 5 == 0) msgs[n_msgs++] = (pf_message){"system", "Be brief."};
        }
        msgs[n_msgs++] = (pf_message){"user", k_user[next_rand(&rng) % (sizeof k_user / sizeof k_user[0])]};
        out.n = 0;
        if (out.p) out.p[0] = 0;
        pf_gen_stats st;
        if (pf_generate_chat(s, msgs, n_msgs, &gp, on_text, &out, &st, err) != PF_OK) {
            soak_fail(sh, "%s: %s", k_sname[strat], err);
            break;
        }
        ctx_len = st.n_prompt + st.n_gen;
        if (checkpoint) {
            pf_gen_params cp;
            pf_gen_params_default(&cp);
            cp.max_tokens = gp.max_tokens;
            cp.spec = PF_SPEC_PLAIN;
            ref.n = 0;
            if (ref.p) ref.p[0] = 0;
            pf_session_reset(cold);
            if (pf_generate_chat(cold, msgs, n_msgs, &cp, on_text, &ref, NULL, err) != PF_OK) {
                soak_fail(sh, "cold run: %s%s", err, "");
                break;
            }
            if (out.n != ref.n || (out.n && memcmp(out.p, ref.p, out.n) != 0)) {
                soak_fail(sh, "checkpoint differs from its cold run (%s strategy): '%s'", k_sname[strat],
                          out.p ? out.p : "");
                break;
            }
        }
        /* the reply joins the history; two slots per turn. A reply cut by max_tokens can end inside
         * a character (the API streams the bytes as they are) and is then no valid message: the
         * conversation starts over instead */
        if (!fz_utf8_valid((const uint8_t *)(out.p ? out.p : ""), out.n)) {
            n_msgs = 0;
            atomic_fetch_add(&sh->done, 1);
            meet(sh);
            continue;
        }
        int turn = n_msgs / 2;
        free(replies[turn % 4]);
        replies[turn % 4] = strdup(out.p ? out.p : "");
        msgs[n_msgs++] = (pf_message){"assistant", replies[turn % 4]};
        atomic_fetch_add(&sh->done, 1);
        meet(sh);
    }
done:
    leave(sh);
    for (int i = 0; i < 4; i++) free(replies[i]);
    free(out.p);
    free(ref.p);
    pf_session_free(cold);
    pf_session_free(s);
    return NULL;
}

TEST(soak_threads_memory_fds_flat_and_checkpoints_cold_equal) {
    const char *env = getenv("PF_SOAK_GENS");
    int total = env ? atoi(env) : 48;
    if (total < SOAK_THREADS * 4) total = SOAK_THREADS * 4;
    char err[PF_ERR_LEN];
    static soak_shared sh;
    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.lock, NULL);
    pthread_cond_init(&sh.next_round, NULL);
    sh.live = SOAK_THREADS;
    sh.per_thread = total / SOAK_THREADS;
    sh.checkpoint_every = sh.per_thread >= 100 ? 25 : 4;
    CHECKF(pf_load_model("models/pf-target-f16.gguf", &sh.m, err) == PF_OK, "%s", err);
    CHECKF(pf_load_draft(sh.m, "models/pf-draft-dflash.gguf", &sh.d1, err) == PF_OK, "%s", err);
    CHECKF(pf_load_draft(sh.m, "models/pf-draft-dflash2.gguf", &sh.d2, err) == PF_OK, "%s", err);
    CHECK(pf_draft_has_dec(sh.d2));
    pthread_t th[SOAK_THREADS];
    soak_arg args[SOAK_THREADS];
    for (int i = 0; i < SOAK_THREADS; i++) {
        args[i] = (soak_arg){&sh, i};
        CHECK(pthread_create(&th[i], NULL, soak_worker, &args[i]) == 0);
    }
    for (int i = 0; i < SOAK_THREADS; i++) pthread_join(th[i], NULL);
    CHECKF(!atomic_load(&sh.failed), "%s", sh.why);
    /* one sample per round (every worker between generations), all after every worker's warm-up
     * (every strategy over a context longer than any conversation): the peaks of the first and the
     * last tenth of them, at least one each */
    int all = sh.per_thread * SOAK_THREADS, n_s = sh.n_s, win = n_s / 10 > 0 ? n_s / 10 : 1, fds_max = -1,
        fds_min = 1 << 30, *s_fds = sh.s_fds;
    long peak_first = 0, peak_last = 0, *s_live = sh.s_live;
    CHECKF(n_s == sh.per_thread, "%d samples for %d rounds", n_s, sh.per_thread);
    for (int i = 0; i < n_s; i++) {
        if (i < win && s_live[i] > peak_first) peak_first = s_live[i];
        if (i >= n_s - win && s_live[i] > peak_last) peak_last = s_live[i];
        if (s_fds[i] > fds_max) fds_max = s_fds[i];
        if (s_fds[i] < fds_min) fds_min = s_fds[i];
    }
    printf("    soak: %d generations on %d threads, %d samples; memory in use peaks at %ld kB after warm-up, %ld kB at the end; "
           "descriptors %d..%d\n",
           all, SOAK_THREADS, n_s, peak_first, peak_last, fds_min, fds_max);
    CHECKF(fds_min == fds_max, "open descriptors changed after warm-up: %d..%d", fds_min, fds_max);
    if (!pf_fault_sanitized())
        CHECKF(peak_last - peak_first <= 2048, "memory in use grew by %ld kB after warm-up",
               peak_last - peak_first);
    pf_free_draft(sh.d2);
    pf_free_draft(sh.d1);
    pf_free_model(sh.m);
    pthread_cond_destroy(&sh.next_round);
    pthread_mutex_destroy(&sh.lock);
}
