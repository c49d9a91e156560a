/* pocketflash serve: N sessions over one loaded model (and draft), each driven by its own worker
 * thread, with batching one batch of N rows on its own session besides (every request, plain,
 * speculating or structured), and a FIFO of requests waiting for a free place. Knows nothing of
 * HTTP: a job is a parsed request plus its output text, which grows as the session generates (the
 * HTTP side streams or waits for it), and a cancel flag (client gone, server stopping). */
#ifndef PF_CLI_SERVE_ENGINE_H
#define PF_CLI_SERVE_ENGINE_H

#include <pthread.h>
#include <stdbool.h>

#include "cli/serve_json.h"
#include "include/pocketflash.h"

typedef struct sv_engine sv_engine;

typedef enum { SV_QUEUED, SV_RUNNING, SV_DONE } sv_state;

/* One generated token: where its text starts in the job's text (its bytes run to the next token's
 * start; a token that ends inside a UTF-8 character has none, the next one carries them) and
 * whether the target kept it from the strategy's proposals or produced it itself. */
typedef struct {
    size_t start;
    bool drafted;
} sv_token;

typedef struct sv_job {
    sv_request req;
    int client_fd;   /* the client's socket, polled for hang-up while generating (-1: none) */
    double t_arrive; /* monotonic seconds */
    double deadline; /* stop generating (or give up waiting) at this time */
    bool streamed;   /* someone waits for each piece of text (else only for the end) */
    double t_polled; /* when the client's socket was last polled */
    uint64_t seed;
    /* everything below under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    sv_state state;
    bool cancel;     /* stop as soon as possible: nobody reads the result */
    sv_buf text;     /* generated text (after a stop sequence matched: cut before it) */
    size_t ready;    /* text[0..ready) may be sent: complete UTF-8, no possible stop-sequence start */
    sv_token *tokens; /* every generated token, in order */
    int n_tokens, cap_tokens;
    bool stop_hit;   /* a stop sequence ended it */
    bool timed_out;  /* the request time limit ended it */
    bool gone;       /* the client hung up */
    pf_status status;
    char err[PF_ERR_LEN];
    pf_gen_stats stats;
    double t_start, t_end; /* when a session took it, when it finished */
    int session;           /* which session ran it */
    bool never_ran;        /* it left the queue without generating (cancelled or out of time) */
    bool batchable;        /* a row of the batch when batching is on (its plan resolves) */
    bool budget_short;     /* max_tokens cannot hold a document of the request's schema */
    /* the engine's */
    struct sv_job *next;   /* in the queue */
    sv_buf key;            /* the conversation as text, to find the session whose cache holds it */
} sv_job;

typedef struct {
    int n_sessions, queue_max;
    pf_session_params session;
    bool batch;             /* the requests run as the rows of one batch of
                               n_sessions (pf_generate_batch) on batch_threads threads */
    int batch_threads;
    int default_max_tokens; /* 0: until the context is full */
    double timeout_s;       /* request time limit */
} sv_engine_config;

/* The sessions and threads that serve requests into *out: PF_OK, or with err (one line) a session's
 * status, or PF_ERR_OOM (memory, or the system's resources for a thread) / PF_ERR_INTERNAL (a
 * thread that did not start for another reason). */
pf_status sv_engine_new(const pf_model *m, const pf_draft *d, const sv_engine_config *cfg, sv_engine **out,
                        char err[PF_ERR_LEN]);
/* Cancels the running jobs, fails the queued ones and joins the workers. */
void sv_engine_free(sv_engine *e);
/* Starts cancelling everything (jobs finish soon; new ones are refused). */
void sv_engine_stop(sv_engine *e);

/* A job for a checked request (it takes over req; the caller holds one reference). */
sv_job *sv_job_new(sv_request *req, int client_fd, double now, double timeout_s);
void sv_job_release(sv_job *j);
/* Queue the job; false (the job untouched) when the queue is full or the engine stopping. */
bool sv_engine_submit(sv_engine *e, sv_job *j);
/* Blocks until the job is done (first_text: or has text to send). False when its deadline passed
 * while it still waited in the queue: it was taken out (not run) and the engine's reference dropped. */
bool sv_engine_wait(sv_engine *e, sv_job *j, bool first_text);
void sv_job_cancel(sv_job *j);

/* Counts for /health; dropped: generations stopped early because their client went away. */
void sv_engine_load(sv_engine *e, int *busy, int *queued, long *dropped);

double sv_now(void);

#endif
