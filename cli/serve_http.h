/* pocketflash serve: the HTTP side on libmicrohttpd (one thread per connection): routes, the API
 * key, body and time limits, OpenAI-style JSON errors, and server-sent-event streaming of a job's
 * text as it grows. */
#ifndef PF_CLI_SERVE_HTTP_H
#define PF_CLI_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/serve_engine.h"

typedef struct {
    const char *host;    /* numeric address or name to bind */
    int port;            /* 0: any free port */
    const char *api_key; /* NULL: no key */
    size_t max_body;     /* bytes */
    double timeout_s;    /* request time limit (reading the body, waiting, generating) */
    int max_connections;
    const char *model_id; /* what /v1/models lists and responses name */
    bool verbose;         /* one line per request on stderr */
} sv_http_config;

typedef struct sv_http sv_http;

/* Binds and starts serving; *port receives the bound port. NULL with err on failure. */
sv_http *sv_http_start(sv_engine *e, const sv_http_config *cfg, int *port, char err[PF_ERR_LEN]);
/* Stops accepting connections (the engine is stopped next, then sv_http_stop ends the rest). */
void sv_http_quiesce(sv_http *h);
void sv_http_stop(sv_http *h);

#endif
