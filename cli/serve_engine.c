/* pocketflash serve: the session pool (see serve_engine.h). Sessions follow the library's
 * threading rules: the model and draft are shared read-only, each session is used by its own
 * worker thread only. A multi-turn chat returns to the session whose KV cache holds its history
 * (dispatch), where the library prefills only the new turn. */
#include "cli/serve_engine.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    sv_engine *e;
    int index;
    pthread_t thread;
    bool started;
    pf_session *s;
    pthread_cond_t cv; /* a job was assigned, or the engine stops */
    sv_job *job;
    sv_buf history;    /* the key of its last conversation, reply included */
    uint64_t last_used; /* e->clock when it last got a job */
} sv_worker;

/* With batching on, the requests run as rows of one batch on one session with every thread
 * (pf_generate_batch: plain, speculating and structured rows in each forward): the batch's thread
 * takes them from `pending` between steps. */
typedef struct {
    pf_session *s;
    pthread_t thread;
    bool started;
    pthread_cond_t cv;       /* a job is pending, or the engine stops */
    sv_job *pending, *last;  /* handed to the batch, not yet taken */
    sv_job **running;        /* cfg.n_sessions places: the jobs in the batch (NULL: free) */
    int n_in;                /* pending + running, at most cfg.n_sessions */
} sv_batch;

struct sv_engine {
    const pf_model *model;
    const pf_draft *draft;
    sv_engine_config cfg;
    pthread_mutex_t mu;
    sv_worker *w;
    sv_batch batch;
    sv_job *head, *tail;
    int n_queued, n_busy;
    long n_dropped; /* jobs stopped because their client went away */
    uint64_t clock;
    bool stopping;
};

double sv_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- jobs ---- */
static void job_key(sv_job *j) {
    const sv_request *r = &j->req;
    if (r->kind == SV_COMPLETION) {
        sv_put(&j->key, "\x02", 1);
        sv_put(&j->key, r->prompt, r->prompt_len);
        return;
    }
    for (int i = 0; i < r->n_messages; i++) {
        sv_puts(&j->key, r->messages[i].role);
        sv_put(&j->key, "\x1f", 1);
        sv_puts(&j->key, r->messages[i].content);
        sv_put(&j->key, "\x1e", 1);
    }
}

sv_job *sv_job_new(sv_request *req, int client_fd, double now, double timeout_s) {
    sv_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->req = *req;
    j->streamed = req->stream;
    memset(req, 0, sizeof *req);
    j->client_fd = client_fd;
    j->t_arrive = now;
    j->deadline = now + timeout_s;
    if (j->req.has_seed) {
        j->seed = j->req.seed;
    } else { /* OpenAI's requests without a seed differ from each other */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        static _Atomic uint64_t counter;
        j->seed = ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^ (++counter * 0x9e3779b97f4a7c15ull);
    }
    pthread_mutex_init(&j->mu, NULL);
    pthread_condattr_t ca; /* timed waits against the monotonic deadline */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    j->refs = 1;
    j->session = -1;
    job_key(j);
    return j;
}

void sv_job_release(sv_job *j) {
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left) return;
    sv_request_free(&j->req);
    sv_buf_free(&j->text);
    free(j->tokens);
    sv_buf_free(&j->key);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}


void sv_job_cancel(sv_job *j) {
    pthread_mutex_lock(&j->mu);
    j->cancel = true;
    pthread_mutex_unlock(&j->mu);
}

/* Under j->mu. */
static void job_finish(sv_job *j) {
    j->ready = j->text.n;
    j->state = SV_DONE;
    j->t_end = sv_now();
    pthread_cond_broadcast(&j->cv);
}

/* ---- generation ---- */
static bool client_gone(int fd) {
    if (fd < 0) return false;
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* After text grew from `old` bytes: cut it at the first stop sequence (true), else move `ready` up
 * to where no stop sequence can start. Under j->mu. */
static bool scan_stops(sv_job *j, size_t old) {
    const sv_request *r = &j->req;
    size_t n = j->text.n, cut = n, hold = 0;
    for (int k = 0; k < r->n_stop; k++) {
        size_t len = r->stop_len[k], from = old >= len ? old - len + 1 : 0;
        const char *hit = from < n ? memmem(j->text.s + from, n - from, r->stop[k], len) : NULL;
        if (hit && (size_t)(hit - j->text.s) < cut) cut = (size_t)(hit - j->text.s);
        for (size_t h = len - 1 < n ? len - 1 : n; h > hold; h--) /* longest suffix that starts the stop */
            if (!memcmp(j->text.s + n - h, r->stop[k], h)) {
                hold = h;
                break;
            }
    }
    if (cut < n) {
        j->text.n = cut;
        j->text.s[cut] = 0;
        if (j->ready > cut) j->ready = cut;
        j->stop_hit = true;
        return true;
    }
    if (n - hold > j->ready) j->ready = n - hold;
    return false;
}

static void on_token_source(void *user, int32_t token, bool drafted) {
    (void)token;
    sv_job *j = user;
    pthread_mutex_lock(&j->mu);
    if (j->n_tokens == j->cap_tokens) {
        int cap = j->cap_tokens ? 2 * j->cap_tokens : 256;
        sv_token *t = realloc(j->tokens, (size_t)cap * sizeof *t);
        if (t) j->tokens = t, j->cap_tokens = cap;
        else j->text.oom = true; /* ends the generation at its next text */
    }
    if (j->n_tokens < j->cap_tokens) j->tokens[j->n_tokens++] = (sv_token){j->text.n, drafted};
    pthread_mutex_unlock(&j->mu);
}

static int on_text(void *user, const char *text, size_t len) {
    sv_job *j = user;
    pthread_mutex_lock(&j->mu);
    size_t old = j->text.n;
    sv_put(&j->text, text, len);
    bool cancel = j->cancel, stop = j->text.oom || scan_stops(j, old);
    if (j->streamed) pthread_cond_broadcast(&j->cv); /* a waiter for the end only is not woken per token */
    pthread_mutex_unlock(&j->mu);
    if (cancel) return -1; /* nobody reads the rest: the library returns PF_ERR_CANCELLED */
    if (stop) return 1;
    /* the socket every 20 ms, not every token: a syscall per token is measurable on a small model */
    double now = sv_now();
    bool gone = false, late = now > j->deadline;
    if (now - j->t_polled > 0.02) {
        j->t_polled = now;
        gone = client_gone(j->client_fd);
    }
    if (gone || late) {
        pthread_mutex_lock(&j->mu);
        j->gone = gone;
        j->timed_out = late;
        pthread_mutex_unlock(&j->mu);
        return gone ? -1 : 1; /* a client gone cancels; past the time limit the text so far is the answer */
    }
    return 0;
}

/* The library's parameters for the job's request. */
static void job_params(const sv_engine *e, sv_job *j, pf_gen_params *gp) {
    const sv_request *r = &j->req;
    pf_gen_params_default(gp);
    gp->max_tokens = r->max_tokens ? r->max_tokens : e->cfg.default_max_tokens ? e->cfg.default_max_tokens : INT_MAX / 2;
    gp->temp = (float)r->temp;
    gp->top_p = (float)r->top_p;
    gp->top_k = r->top_k;
    gp->seed = j->seed;
    sv_gen_strategy(r, e->draft, gp);
    gp->stop_at_eot = !r->ignore_eos;
    gp->json_schema = r->json_schema;
    gp->json_object = r->json_object;
    gp->tools = r->tools;
    gp->tool_choice = r->tool_choice;
    gp->tool_name = r->tool_name;
    gp->on_token_source = on_token_source;
    gp->token_source_user = j;
}

/* The job's output is held to a document (a schema, JSON mode, a required or named tool call). */
static bool job_structured(const sv_job *j) {
    const sv_request *r = &j->req;
    return r->json_schema || r->json_object ||
           (r->tools && (r->tool_choice == PF_TOOL_REQUIRED || r->tool_choice == PF_TOOL_NAMED));
}

/* Whether the job can run as a row of the batch: plain, speculating (its own strategy and block)
 * and structured requests all can, once their plan resolves. */
static bool job_batchable(const sv_engine *e, sv_job *j) {
    if (!e->cfg.batch) return false;
    pf_gen_params gp;
    job_params(e, j, &gp);
    char plan[96], err[PF_ERR_LEN];
    return pf_gen_plan(&gp, plan, sizeof plan, err) == PF_OK; /* a refused plan gets its error from a session */
}

/* A session (index: the pool's, n_sessions for the batch) takes the job: true when it is to be
 * skipped (cancelled, its client gone, out of time). */
static bool job_begin(sv_job *j, int index) {
    pthread_mutex_lock(&j->mu);
    j->state = SV_RUNNING;
    pthread_cond_broadcast(&j->cv); /* a waiter for the queue's deadline now waits for the end */
    j->t_start = sv_now();
    j->session = index;
    bool skip = j->cancel || (j->gone = client_gone(j->client_fd)) || (j->timed_out = j->t_start > j->deadline);
    j->never_ran = skip;
    pthread_mutex_unlock(&j->mu);
    return skip;
}

/* The generation's outcome into the job. Under j->mu. */
static void job_outcome(sv_job *j, pf_status st, const pf_gen_stats *stats, const char *err) {
    if (stats) j->stats = *stats;
    else memset(&j->stats, 0, sizeof j->stats);
    j->status = j->text.oom ? PF_ERR_OOM : st;
    if (st == PF_ERR_CANCELLED) /* the callback's words are no message for an HTTP client */
        snprintf(j->err, sizeof j->err, "request cancelled%s", j->gone ? ": the client went away" : "");
    else
        snprintf(j->err, sizeof j->err, "%s", j->text.oom ? "out of memory" : err);
}

static void run_job(sv_worker *w, sv_job *j) {
    sv_engine *e = w->e;
    const sv_request *r = &j->req;
    bool skip = job_begin(j, w->index);
    pf_status st = PF_OK;
    char err[PF_ERR_LEN] = "";
    pf_gen_stats stats;
    memset(&stats, 0, sizeof stats);
    if (!skip) {
        pf_gen_params gp;
        job_params(e, j, &gp);
        /* the schema compiled when the request was read, so its check fails only for the budget */
        if ((gp.json_schema || gp.json_object) && (st = pf_gen_check_max_tokens(w->s, &gp, err)) == PF_ERR_ARG)
            j->budget_short = true;
        if (st != PF_OK) {
        } else if (r->kind == SV_CHAT)
            st = pf_generate_chat(w->s, r->messages, r->n_messages, &gp, on_text, j, &stats, err);
        else
            st = pf_generate(w->s, r->prompt, r->prompt_len, &gp, on_text, j, &stats, err);
    }
    pthread_mutex_lock(&j->mu);
    job_outcome(j, st, &stats, err);
    /* what this session's cache now holds, for the next request's choice of session */
    sv_buf_free(&w->history);
    if (!skip && st == PF_OK && !j->text.oom) {
        sv_put(&w->history, j->key.s, j->key.n);
        if (r->kind == SV_CHAT) sv_puts(&w->history, "assistant\x1f");
        sv_put(&w->history, j->text.s ? j->text.s : "", j->text.n);
    }
    pthread_mutex_unlock(&j->mu); /* the worker finishes the job once its session counts as free */
}

/* ---- the pool ---- */
static size_t shared_prefix(const sv_buf *a, const sv_buf *b) {
    size_t n = a->n < b->n ? a->n : b->n, i = 0;
    while (i < n && a->s[i] == b->s[i]) i++;
    return i;
}

/* The free session for job j: the one whose last conversation the request continues or repeats
 * (the longest such), else the least recently used one, so that the caches of recent
 * conversations stay for their next turns. -1: none is free. */
static int pick_session(const sv_engine *e, const sv_job *j) {
    int best = -1, lru = -1;
    size_t best_len = 0;
    for (int i = 0; i < e->cfg.n_sessions; i++) {
        const sv_worker *w = &e->w[i];
        if (w->job) continue;
        size_t len = shared_prefix(&w->history, &j->key);
        bool whole = w->history.n && len == (w->history.n < j->key.n ? w->history.n : j->key.n);
        if (whole && (best < 0 || len > best_len)) best = i, best_len = len;
        if (lru < 0 || w->last_used < e->w[lru].last_used) lru = i;
    }
    return best >= 0 ? best : lru;
}

/* Hand queued jobs, oldest first, to the batch (those it can run, while it has room) or
 * to free sessions; a job that has to wait does not hold up the ones behind it. Under e->mu. */
static void dispatch(sv_engine *e) {
    sv_job **p = &e->head, *prev = NULL;
    while (*p) {
        sv_job *j = *p;
        int to = -1; /* a session, or n_sessions for the batch */
        if (j->batchable) {
            if (e->batch.n_in < e->cfg.n_sessions) to = e->cfg.n_sessions;
        } else {
            to = pick_session(e, j);
        }
        if (to < 0) {
            prev = j;
            p = &j->next;
            continue;
        }
        *p = j->next;
        if (e->tail == j) e->tail = prev;
        j->next = NULL;
        e->n_queued--;
        e->n_busy++;
        if (to == e->cfg.n_sessions) {
            sv_batch *b = &e->batch;
            if (b->last) b->last->next = j;
            else b->pending = j;
            b->last = j;
            b->n_in++;
            pthread_cond_signal(&b->cv);
        } else {
            e->w[to].last_used = ++e->clock;
            e->w[to].job = j;
            pthread_cond_signal(&e->w[to].cv);
        }
    }
}

/* The job ran (or was skipped) in the place *slot (a session's or the batch's): the place is
 * free, then the job is done and the queue moves on. */
static void job_complete(sv_engine *e, sv_job *j, sv_job **slot) {
    /* before job_finish, so a cancel here came from a client that left mid-generation */
    pthread_mutex_lock(&j->mu);
    bool dropped = j->gone || j->cancel;
    pthread_mutex_unlock(&j->mu);
    pthread_mutex_lock(&e->mu);
    *slot = NULL;
    if (j->batchable) e->batch.n_in--;
    e->n_busy--;
    e->n_dropped += dropped && !e->stopping;
    /* the session is free before its client hears the end: a /health asked right after an
     * answer shows it free, whatever the threads' timing */
    pthread_mutex_lock(&j->mu);
    job_finish(j);
    pthread_mutex_unlock(&j->mu);
    dispatch(e);
    pthread_mutex_unlock(&e->mu);
    sv_job_release(j);
}

static void *worker_main(void *arg) {
    sv_worker *w = arg;
    sv_engine *e = w->e;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!w->job && !e->stopping) pthread_cond_wait(&w->cv, &e->mu);
        if (!w->job) break;
        sv_job *j = w->job;
        pthread_mutex_unlock(&e->mu);
        run_job(w, j);
        job_complete(e, j, &w->job);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* ---- the batch ---- */
static int batch_place(const sv_engine *e, const sv_job *j) {
    for (int i = 0; i < e->cfg.n_sessions; i++)
        if (e->batch.running[i] == j) return i;
    return -1;
}

/* pf_batch_feed.next: the next pending job as a request; waits while the batch is idle. */
static int batch_next(void *feed, pf_batch_request *r, bool idle) {
    sv_engine *e = feed;
    sv_batch *b = &e->batch;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!b->pending && !e->stopping && idle) pthread_cond_wait(&b->cv, &e->mu);
        sv_job *j = b->pending;
        if (!j) {
            bool stop = e->stopping;
            pthread_mutex_unlock(&e->mu);
            return stop ? 0 : 2;
        }
        b->pending = j->next;
        if (!b->pending) b->last = NULL;
        j->next = NULL;
        int place = batch_place(e, NULL);
        b->running[place] = j;
        pthread_mutex_unlock(&e->mu);
        if (job_begin(j, e->cfg.n_sessions)) {
            pthread_mutex_lock(&j->mu);
            job_outcome(j, PF_OK, NULL, "");
            pthread_mutex_unlock(&j->mu);
            job_complete(e, j, &b->running[place]);
            continue;
        }
        const sv_request *q = &j->req;
        if (q->kind == SV_CHAT) r->messages = q->messages, r->n_messages = q->n_messages;
        else r->prompt = q->prompt, r->len = q->prompt_len;
        job_params(e, j, &r->params);
        r->on_text = on_text;
        r->user = j;
        return 1;
    }
}

/* pf_batch_feed.done: the job's outcome, and its place in the batch free. */
static void batch_done(void *feed, const pf_batch_request *r, pf_status st, const pf_gen_stats *stats, const char *err) {
    sv_engine *e = feed;
    sv_job *j = r->user;
    pthread_mutex_lock(&j->mu);
    /* the schema compiled when the request was read and its plan resolved before it joined, so
     * the batch refuses a structured request only for its budget (as run_job's check) */
    j->budget_short = st == PF_ERR_ARG && job_structured(j);
    job_outcome(j, st, stats, err);
    pthread_mutex_unlock(&j->mu);
    pthread_mutex_lock(&e->mu);
    int place = batch_place(e, j);
    pthread_mutex_unlock(&e->mu);
    job_complete(e, j, &e->batch.running[place]);
}

static void *batch_main(void *arg) {
    sv_engine *e = arg;
    pf_batch_feed feed = {.next = batch_next, .done = batch_done, .feed = e};
    char err[PF_ERR_LEN];
    if (pf_generate_batch(e->batch.s, e->cfg.n_sessions, &feed, err) == PF_OK) return NULL;
    /* out of memory for the batch: its jobs end with that message, later ones are refused */
    fprintf(stderr, "pocketflash serve: the batch stopped: %s\n", err);
    for (int i = 0; i < e->cfg.n_sessions; i++) {
        pthread_mutex_lock(&e->mu);
        sv_job *j = e->batch.running[i];
        pthread_mutex_unlock(&e->mu);
        if (!j) continue;
        pthread_mutex_lock(&j->mu);
        job_outcome(j, PF_ERR_OOM, NULL, err);
        pthread_mutex_unlock(&j->mu);
        job_complete(e, j, &e->batch.running[i]);
    }
    sv_engine_stop(e);
    return NULL;
}

bool sv_engine_submit(sv_engine *e, sv_job *j) {
    j->batchable = job_batchable(e, j);
    pthread_mutex_lock(&e->mu);
    bool ok = !e->stopping && e->n_queued < e->cfg.queue_max;
    if (ok) {
        pthread_mutex_lock(&j->mu);
        j->refs++;
        pthread_mutex_unlock(&j->mu);
        if (e->tail) e->tail->next = j;
        else e->head = j;
        e->tail = j;
        e->n_queued++;
        dispatch(e);
    }
    pthread_mutex_unlock(&e->mu);
    return ok;
}

/* Take j out of the queue if it is still there (its reference goes with it). */
static bool withdraw(sv_engine *e, sv_job *j) {
    pthread_mutex_lock(&e->mu);
    sv_job **p = &e->head, *prev = NULL;
    while (*p && *p != j) prev = *p, p = &(*p)->next;
    bool found = *p == j;
    if (found) {
        *p = j->next;
        if (e->tail == j) e->tail = prev;
        j->next = NULL;
        e->n_queued--;
    }
    pthread_mutex_unlock(&e->mu);
    if (found) sv_job_release(j);
    return found;
}

bool sv_engine_wait(sv_engine *e, sv_job *j, bool first_text) {
    pthread_mutex_lock(&j->mu);
    while (j->state != SV_DONE && !(first_text && j->ready)) {
        if (j->state != SV_QUEUED) {
            pthread_cond_wait(&j->cv, &j->mu);
            continue;
        }
        if (sv_now() >= j->deadline) {
            pthread_mutex_unlock(&j->mu);
            if (withdraw(e, j)) return false;
            pthread_mutex_lock(&j->mu); /* a session took it meanwhile */
            if (j->state == SV_QUEUED) pthread_cond_wait(&j->cv, &j->mu);
            continue;
        }
        struct timespec ts;
        double t = j->deadline;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&j->cv, &j->mu, &ts);
    }
    pthread_mutex_unlock(&j->mu);
    return true;
}

void sv_engine_load(sv_engine *e, int *busy, int *queued, long *dropped) {
    pthread_mutex_lock(&e->mu);
    *busy = e->n_busy;
    *queued = e->n_queued;
    *dropped = e->n_dropped;
    pthread_mutex_unlock(&e->mu);
}

/* A job that never started, at shutdown: done as cancelled, the queue's reference dropped. */
static void cancel_unstarted(sv_job *j) {
    pthread_mutex_lock(&j->mu);
    j->never_ran = true;
    j->status = PF_ERR_CANCELLED;
    snprintf(j->err, sizeof j->err, "request cancelled: the server is shutting down");
    job_finish(j);
    pthread_mutex_unlock(&j->mu);
    sv_job_release(j);
}

void sv_engine_stop(sv_engine *e) {
    pthread_mutex_lock(&e->mu);
    e->stopping = true;
    while (e->head) { /* queued: done without running */
        sv_job *j = e->head;
        e->head = j->next;
        cancel_unstarted(j);
    }
    e->tail = NULL;
    e->n_queued = 0;
    sv_batch *b = &e->batch;
    while (b->pending) { /* handed to the batch, not yet started: the same */
        sv_job *j = b->pending;
        b->pending = j->next;
        b->n_in--;
        e->n_busy--;
        cancel_unstarted(j);
    }
    b->last = NULL;
    for (int i = 0; b->running && i < e->cfg.n_sessions; i++)
        if (b->running[i]) sv_job_cancel(b->running[i]);
    pthread_cond_signal(&b->cv);
    for (int i = 0; i < e->cfg.n_sessions; i++) {
        if (e->w[i].job) sv_job_cancel(e->w[i].job);
        pthread_cond_signal(&e->w[i].cv);
    }
    pthread_mutex_unlock(&e->mu);
}

/* A thread that did not start: out of memory when the system lacked the resources (EAGAIN). */
static pf_status thread_failed(int e, const char *what, char err[PF_ERR_LEN]) {
    snprintf(err, PF_ERR_LEN, "serve: cannot start %s: %s", what, strerror(e));
    return e == EAGAIN ? PF_ERR_OOM : PF_ERR_INTERNAL;
}

/* The batch's session and its thread. */
static pf_status start_batch(sv_engine *e, char err[PF_ERR_LEN]) {
    pf_session_params bp = e->cfg.session;
    bp.n_threads = e->cfg.batch_threads;
    if (!(e->batch.running = calloc((size_t)e->cfg.n_sessions, sizeof *e->batch.running))) {
        snprintf(err, PF_ERR_LEN, "serve: out of memory");
        return PF_ERR_OOM;
    }
    pf_status st = pf_session_new(e->model, &bp, &e->batch.s, err);
    if (st != PF_OK) return st;
    int t = pthread_create(&e->batch.thread, NULL, batch_main, e);
    if (t) return thread_failed(t, "the batch's thread", err);
    e->batch.started = true;
    return PF_OK;
}

/* Each worker's session, then the batch, then the workers' threads. */
static pf_status start_workers(sv_engine *e, char err[PF_ERR_LEN]) {
    pf_status st;
    for (int i = 0; i < e->cfg.n_sessions; i++) {
        sv_worker *w = &e->w[i];
        w->e = e;
        w->index = i;
        pthread_cond_init(&w->cv, NULL);
        if ((st = pf_session_new(e->model, &e->cfg.session, &w->s, err)) != PF_OK) return st;
    }
    if (e->cfg.batch && (st = start_batch(e, err)) != PF_OK) return st;
    for (int i = 0; i < e->cfg.n_sessions; i++) {
        int t = pthread_create(&e->w[i].thread, NULL, worker_main, &e->w[i]);
        if (t) return thread_failed(t, "a worker thread", err);
        e->w[i].started = true;
    }
    return PF_OK;
}

pf_status sv_engine_new(const pf_model *m, const pf_draft *d, const sv_engine_config *cfg, sv_engine **out,
                        char err[PF_ERR_LEN]) {
    *out = NULL;
    sv_engine *e = calloc(1, sizeof *e);
    if (!e || !(e->w = calloc((size_t)cfg->n_sessions, sizeof *e->w))) {
        free(e);
        snprintf(err, PF_ERR_LEN, "serve: out of memory");
        return PF_ERR_OOM;
    }
    e->model = m;
    e->draft = d;
    e->cfg = *cfg;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->batch.cv, NULL);
    pf_status st = start_workers(e, err);
    if (st != PF_OK) {
        sv_engine_free(e);
        return st;
    }
    *out = e;
    return PF_OK;
}

void sv_engine_free(sv_engine *e) {
    if (!e) return;
    sv_engine_stop(e);
    if (e->batch.started) pthread_join(e->batch.thread, NULL);
    pf_session_free(e->batch.s);
    free(e->batch.running);
    pthread_cond_destroy(&e->batch.cv);
    for (int i = 0; i < e->cfg.n_sessions; i++) {
        if (e->w[i].started) pthread_join(e->w[i].thread, NULL);
        pf_session_free(e->w[i].s);
        pthread_cond_destroy(&e->w[i].cv);
        sv_buf_free(&e->w[i].history);
    }
    pthread_mutex_destroy(&e->mu);
    free(e->w);
    free(e);
}
