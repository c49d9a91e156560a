/* pocketflash serve: the HTTP side on libmicrohttpd (one thread per connection): routes, the API
 * key, body and time limits, OpenAI-style JSON errors, and server-sent-event streaming of a job's
 * text as it grows. */
#ifndef PF_CLI_SERVE_HTTP_H
#define PF_CLI_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/serve_engine.h"

typedef struct {
    const char *host;    /* numeric address or name to bind */
    int port;            /* 0: any free port */
    const char *api_key; /* NULL: no key */
    size_t max_body;     /* bytes */
    double timeout_s;    /* request time limit (reading the body, waiting, generating) */
    int max_connections;
    const char *model_id; /* what /v1/models lists and responses name */
    const char *page;     /* the HTML GET / serves (NULL: none) */
    size_t page_len;
    bool verbose;         /* one line per request on stderr */
    bool fixed_seed;      /* serve --seed: a request without a "seed" samples with `seed` (else each
                           * draws its own, as OpenAI's do) */
    uint64_t seed;
} sv_http_config;

typedef struct sv_http sv_http;

/* The request handler, without sockets: libmicrohttpd's callbacks call it, and so does
 * tests/fuzz/fuzz_serve.c. sv_http_head first (before any body is read); when it returns false the
 * route takes a body, and sv_http_body answers with the whole of it. */
typedef struct {
    const char *method, *url;
    const char *authorization, *content_length; /* header values; NULL: absent */
    const char *body;                           /* sv_http_body: the whole body */
    size_t body_n;
    bool too_big, body_oom; /* the body was cut off at max_body / could not be stored */
    int client_fd;          /* polled for hang-up while generating (-1: none) */
    double t0;              /* arrival (sv_now) */
} sv_http_request;

typedef struct sv_stream sv_stream;

typedef struct {
    unsigned status;
    sv_buf body;       /* JSON (an OpenAI error object for 4xx and 5xx); oom: answer 500 */
    const char *content_type; /* NULL: application/json */
    sv_stream *stream; /* or 200 with server-sent events: read it to the end, then free it */
} sv_reply;

/* The handler's state for an engine, without a listening socket (sv_http_stop frees it). */
sv_http *sv_http_new(sv_engine *e, const sv_http_config *cfg);
/* True when r holds the whole answer (an error, /health, /v1/models). */
bool sv_http_head(sv_http *h, const sv_http_request *q, sv_reply *r);
void sv_http_body(sv_http *h, const sv_http_request *q, sv_reply *r);
/* The next bytes of the stream (blocking until the job has more): >0 bytes, 0 at its end, -1 on
 * error. Freeing it before the end cancels its job (the client went away). */
ssize_t sv_stream_read(sv_stream *s, char *buf, size_t max);
void sv_stream_free(sv_stream *s);
void sv_reply_free(sv_reply *r);

/* Binds and starts serving into *out; *port receives the bound port. PF_OK, or with err (one line):
 * PF_ERR_ARG (a --host that does not resolve; a build without the server), PF_ERR_IO (the address
 * cannot be bound: the port is in use, an address this machine lacks, a port it may not take),
 * PF_ERR_OOM (memory or the threads the server needs). */
pf_status sv_http_start(sv_engine *e, const sv_http_config *cfg, sv_http **out, int *port, char err[PF_ERR_LEN]);
/* Stops accepting connections (the engine is stopped next, then sv_http_stop ends the rest). */
void sv_http_quiesce(sv_http *h);
/* After the engine stopped: up to max_s seconds for the connections still open to send their
 * replies (a cancelled generation's 503) and close, so that sv_http_stop cuts none mid-reply. */
void sv_http_drain(sv_http *h, double max_s);
void sv_http_stop(sv_http *h);

#endif
