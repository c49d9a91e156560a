/* pocketflash serve: routes and responses on libmicrohttpd (see serve_http.h). In
 * thread-per-connection mode a handler may block, so a non-streamed request waits for its job in
 * the connection's thread, and a stream's content reader waits for the next piece of text. */
#include "cli/serve_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PF_NO_SERVE
sv_http *sv_http_start(sv_engine *e, const sv_http_config *cfg, int *port, char err[PF_ERR_LEN]) {
    (void)e, (void)cfg, (void)port;
    snprintf(err, PF_ERR_LEN, "serve: this build has no HTTP server (built with SERVE=0, without libmicrohttpd)");
    return NULL;
}
void sv_http_quiesce(sv_http *h) { (void)h; }
void sv_http_stop(sv_http *h) { (void)h; }
#else

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct sv_http {
    struct MHD_Daemon *d;
    sv_engine *e;
    sv_http_config cfg;
};

typedef enum { R_NONE, R_HEALTH, R_MODELS, R_CHAT, R_COMPLETIONS } route;

/* One request's state across the handler's calls. */
typedef struct {
    route r;
    bool responded; /* a response was queued before the body (error): ignore the rest */
    bool too_big;
    double t0;
    sv_buf body;
} req_ctx;

/* ---- plain responses ---- */
static enum MHD_Result send_json(struct MHD_Connection *c, unsigned code, const sv_buf *b) {
    static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n";
    bool ok = b->s && !b->oom;
    struct MHD_Response *r = MHD_create_response_from_buffer(ok ? b->n : sizeof oom - 1, ok ? b->s : (char *)oom,
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (code == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, POST");
    if (code == MHD_HTTP_UNAUTHORIZED) MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    enum MHD_Result res = MHD_queue_response(c, ok ? code : MHD_HTTP_INTERNAL_SERVER_ERROR, r);
    MHD_destroy_response(r);
    return res;
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned code, const char *msg, const char *param,
                                  const char *err_code) {
    sv_buf b = {0};
    sv_error_json(&b, msg, code >= 500 ? "server_error" : "invalid_request_error", param, err_code);
    enum MHD_Result res = send_json(c, code, &b);
    sv_buf_free(&b);
    return res;
}

/* ---- routes ---- */
static route find_route(const char *url, bool *known_path, const char *method) {
    static const struct { const char *path, *method; route r; } routes[] = {
        {"/health", "GET", R_HEALTH},           {"/v1/health", "GET", R_HEALTH},
        {"/v1/models", "GET", R_MODELS},        {"/v1/chat/completions", "POST", R_CHAT},
        {"/v1/completions", "POST", R_COMPLETIONS}};
    *known_path = false;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(url, routes[i].path)) continue;
        *known_path = true;
        if (!strcmp(method, routes[i].method)) return routes[i].r;
    }
    return R_NONE;
}

/* "Authorization: Bearer KEY", compared in time independent of where it differs. */
static bool authorized(const sv_http *h, struct MHD_Connection *c) {
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!a || strncmp(a, "Bearer ", 7)) return false;
    a += 7;
    size_t n = strlen(a), k = strlen(h->cfg.api_key);
    unsigned diff = n != k;
    for (size_t i = 0; i < n; i++) diff |= (unsigned char)a[i] ^ (unsigned char)h->cfg.api_key[i < k ? i : 0];
    return !diff;
}

static void put_usage(sv_buf *b, const sv_job *j) {
    int p = j->stats.n_prompt, g = j->stats.n_gen;
    sv_printf(b, "\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}", p, g, p + g);
}

/* pocketflash's own numbers: the strategy's work and the speed of this request. */
static void put_extension(sv_buf *b, const sv_job *j) {
    const pf_gen_stats *s = &j->stats;
    sv_puts(b, "\"pocketflash\":{\"strategy\":");
    const char *name = s->strategy ? s->strategy : "ar";
    sv_put_jstr(b, name, strlen(name));
    sv_printf(b, ",\"block\":%d,\"rounds\":%lld,\"tau\":", s->block, (long long)s->rounds);
    sv_put_num(b, s->tau);
    sv_puts(b, ",\"acceptance\":");
    sv_put_num(b, s->acceptance);
    sv_puts(b, ",\"decode_tok_s\":");
    sv_put_num(b, s->n_gen > 1 && s->decode_s > 0 ? (s->n_gen - 1) / s->decode_s : 0);
    sv_puts(b, ",\"prefill_s\":");
    sv_put_num(b, s->prefill_s);
    sv_puts(b, ",\"ttft_s\":");
    sv_put_num(b, s->ttft_s);
    sv_puts(b, ",\"decode_s\":");
    sv_put_num(b, s->decode_s);
    sv_puts(b, ",\"queue_s\":");
    sv_put_num(b, j->t_start > j->t_arrive ? j->t_start - j->t_arrive : 0);
    sv_printf(b, ",\"reused_tokens\":%d,\"session\":%d,\"timed_out\":%s}", s->n_reused, j->session,
              j->timed_out ? "true" : "false");
}

static const char *finish_reason(const sv_job *j) {
    if (j->stop_hit) return "stop";
    if (j->timed_out) return "length";
    return j->stats.stop == PF_STOP_LENGTH || j->stats.stop == PF_STOP_CONTEXT ? "length" : "stop";
}

static void make_id(char *id, size_t n, sv_kind kind) {
    static _Atomic unsigned long counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(id, n, "%s-%lx%05lx", kind == SV_CHAT ? "chatcmpl" : "cmpl", (unsigned long)ts.tv_sec,
             ++counter & 0xfffff);
}

/* The head every completion object and chunk starts with. */
static void put_head(sv_buf *b, const sv_http *h, const char *id, long created, const char *object) {
    sv_puts(b, "{\"id\":");
    sv_put_jstr(b, id, strlen(id));
    sv_printf(b, ",\"object\":\"%s\",\"created\":%ld,\"model\":", object, created);
    sv_put_jstr(b, h->cfg.model_id, strlen(h->cfg.model_id));
}

/* An unsuccessful job as an HTTP error; false if it succeeded. */
static bool job_error(struct MHD_Connection *c, const sv_job *j, enum MHD_Result *res) {
    if (j->never_ran && j->status == PF_OK) {
        *res = j->timed_out ? send_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "timed out waiting for a free session", NULL, "timeout")
                            : send_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "request cancelled", NULL, NULL);
        return true;
    }
    if (j->status == PF_OK) return false;
    const char *param = j->req.kind == SV_CHAT ? "messages" : "prompt";
    switch (j->status) {
    case PF_ERR_CONTEXT: *res = send_error(c, MHD_HTTP_BAD_REQUEST, j->err, param, "context_length_exceeded"); break;
    case PF_ERR_UTF8: *res = send_error(c, MHD_HTTP_BAD_REQUEST, j->err, param, NULL); break;
    case PF_ERR_ARG: *res = send_error(c, MHD_HTTP_BAD_REQUEST, j->err, "spec", NULL); break;
    default:
        *res = send_error(c, j->never_ran ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_INTERNAL_SERVER_ERROR, j->err,
                          NULL, NULL);
    }
    return true;
}

static enum MHD_Result send_completion(const sv_http *h, struct MHD_Connection *c, sv_job *j) {
    enum MHD_Result res;
    if (job_error(c, j, &res)) return res;
    char id[64];
    make_id(id, sizeof id, j->req.kind);
    sv_buf b = {0};
    const char *text = j->text.s ? j->text.s : "";
    put_head(&b, h, id, (long)time(NULL), j->req.kind == SV_CHAT ? "chat.completion" : "text_completion");
    if (j->req.kind == SV_CHAT) {
        sv_puts(&b, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":");
        sv_put_jstr(&b, text, j->text.n);
        sv_puts(&b, "},");
    } else {
        sv_puts(&b, ",\"choices\":[{\"index\":0,\"text\":");
        sv_put_jstr(&b, text, j->text.n);
        sv_puts(&b, ",");
    }
    sv_printf(&b, "\"logprobs\":null,\"finish_reason\":\"%s\"}],", finish_reason(j));
    put_usage(&b, j);
    sv_puts(&b, ",");
    put_extension(&b, j);
    sv_puts(&b, "}\n");
    res = send_json(c, MHD_HTTP_OK, &b);
    sv_buf_free(&b);
    return res;
}

/* ---- streaming ---- */
typedef struct {
    const sv_http *h;
    sv_job *j;
    size_t sent;     /* job text bytes already framed */
    sv_buf out;      /* framed events not yet handed to MHD */
    size_t out_off;
    bool role_sent, finished;
    char id[64];
    long created;
} stream;

static void put_chunk(stream *s, const char *text, size_t n, const char *finish) {
    bool chat = s->j->req.kind == SV_CHAT;
    sv_puts(&s->out, "data: ");
    put_head(&s->out, s->h, s->id, s->created, chat ? "chat.completion.chunk" : "text_completion");
    sv_puts(&s->out, ",\"choices\":[{\"index\":0,");
    if (chat) {
        sv_puts(&s->out, "\"delta\":{");
        if (!s->role_sent) sv_puts(&s->out, "\"role\":\"assistant\"");
        if (n) {
            if (!s->role_sent) sv_puts(&s->out, ",");
            sv_puts(&s->out, "\"content\":");
            sv_put_jstr(&s->out, text, n);
        }
        sv_puts(&s->out, "},");
        s->role_sent = true;
    } else {
        sv_puts(&s->out, "\"text\":");
        sv_put_jstr(&s->out, text, n);
        sv_puts(&s->out, ",");
    }
    sv_puts(&s->out, "\"logprobs\":null,\"finish_reason\":");
    if (finish) {
        sv_printf(&s->out, "\"%s\"}],", finish);
        put_usage(&s->out, s->j);
        sv_puts(&s->out, ",");
        put_extension(&s->out, s->j);
        sv_puts(&s->out, "}\n\n");
    } else {
        sv_puts(&s->out, "null}]}\n\n");
    }
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream *s = cls;
    if (s->out_off == s->out.n) {
        if (s->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        s->out.n = s->out_off = 0;
        sv_job *j = s->j;
        pthread_mutex_lock(&j->mu);
        while (j->ready == s->sent && j->state != SV_DONE) pthread_cond_wait(&j->cv, &j->mu);
        bool done = j->state == SV_DONE;
        if (j->ready > s->sent) put_chunk(s, j->text.s + s->sent, j->ready - s->sent, NULL);
        s->sent = j->ready;
        pthread_mutex_unlock(&j->mu);
        if (done) {
            if (j->status != PF_OK) {
                sv_puts(&s->out, "data: ");
                sv_error_json(&s->out, j->err, "server_error", NULL, NULL);
                sv_puts(&s->out, "\n");
            } else {
                put_chunk(s, "", 0, finish_reason(j));
            }
            sv_puts(&s->out, "data: [DONE]\n\n");
            s->finished = true;
        }
        if (s->out.oom) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = s->out.n - s->out_off < max ? s->out.n - s->out_off : max;
    memcpy(buf, s->out.s + s->out_off, n);
    s->out_off += n;
    return (ssize_t)n;
}

/* The response is gone (sent, or the client went away): a job still running stops. */
static void stream_free(void *cls) {
    stream *s = cls;
    sv_job_cancel(s->j);
    sv_job_release(s->j);
    sv_buf_free(&s->out);
    free(s);
}

static enum MHD_Result send_stream(const sv_http *h, struct MHD_Connection *c, sv_job *j) {
    enum MHD_Result res;
    if (j->state == SV_DONE && job_error(c, j, &res)) {
        sv_job_release(j);
        return res;
    }
    stream *s = calloc(1, sizeof *s);
    struct MHD_Response *r = s ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, s, stream_free) : NULL;
    if (!r) {
        free(s);
        sv_job_cancel(j);
        sv_job_release(j);
        return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory", NULL, NULL);
    }
    s->h = h;
    s->j = j;
    s->created = (long)time(NULL);
    make_id(s->id, sizeof s->id, j->req.kind);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    res = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return res;
}

/* ---- requests ---- */
static enum MHD_Result generate(sv_http *h, struct MHD_Connection *c, req_ctx *x) {
    sv_request req;
    char err[PF_ERR_LEN];
    const char *param;
    sv_kind kind = x->r == R_CHAT ? SV_CHAT : SV_COMPLETION;
    if (!sv_request_parse(x->body.s ? x->body.s : "", x->body.n, kind, &req, err, &param))
        return send_error(c, MHD_HTTP_BAD_REQUEST, err, param, NULL);
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    bool stream = req.stream;
    sv_job *j = sv_job_new(&req, ci ? ci->connect_fd : -1, x->t0, h->cfg.timeout_s);
    if (!j) {
        sv_request_free(&req);
        return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory", NULL, NULL);
    }
    if (!sv_engine_submit(h->e, j)) {
        sv_job_release(j);
        return send_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "the server is busy (request queue full)", NULL, "server_busy");
    }
    /* a stream's headers wait for its first text (or the end), so a failing prompt still gets its 4xx */
    if (!sv_engine_wait(h->e, j, stream)) {
        sv_job_release(j);
        return send_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "timed out waiting for a free session", NULL, "timeout");
    }
    if (stream) return send_stream(h, c, j); /* takes the reference */
    enum MHD_Result res = send_completion(h, c, j);
    sv_job_release(j);
    return res;
}

static enum MHD_Result send_models(const sv_http *h, struct MHD_Connection *c) {
    sv_buf b = {0};
    sv_puts(&b, "{\"object\":\"list\",\"data\":[{\"id\":");
    sv_put_jstr(&b, h->cfg.model_id, strlen(h->cfg.model_id));
    sv_printf(&b, ",\"object\":\"model\",\"created\":%ld,\"owned_by\":\"pocketflash\"}]}\n", (long)time(NULL));
    enum MHD_Result res = send_json(c, MHD_HTTP_OK, &b);
    sv_buf_free(&b);
    return res;
}

static enum MHD_Result send_health(const sv_http *h, struct MHD_Connection *c) {
    int busy, queued;
    sv_engine_load(h->e, &busy, &queued);
    sv_buf b = {0};
    sv_printf(&b, "{\"status\":\"ok\",\"sessions_busy\":%d,\"queued\":%d}\n", busy, queued);
    enum MHD_Result res = send_json(c, MHD_HTTP_OK, &b);
    sv_buf_free(&b);
    return res;
}

/* First call: route, key and declared size are checked before any body is read. */
static enum MHD_Result first_call(sv_http *h, struct MHD_Connection *c, req_ctx *x, const char *url, const char *method) {
    bool known;
    x->r = find_route(url, &known, method);
    char msg[PF_ERR_LEN];
    x->responded = true;
    if (x->r != R_HEALTH && h->cfg.api_key && !authorized(h, c))
        return send_error(c, MHD_HTTP_UNAUTHORIZED, "missing or wrong API key (Authorization: Bearer KEY)", NULL,
                          "invalid_api_key");
    if (x->r == R_NONE) {
        snprintf(msg, sizeof msg, "%s %.100s: %s", method, url, known ? "method not allowed" : "no such route");
        return send_error(c, known ? MHD_HTTP_METHOD_NOT_ALLOWED : MHD_HTTP_NOT_FOUND, msg, NULL,
                          known ? "method_not_allowed" : "not_found");
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > h->cfg.max_body) {
        snprintf(msg, sizeof msg, "the request body is over the limit of %zu bytes", h->cfg.max_body);
        return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE, msg, NULL, "request_too_large");
    }
    if (x->r == R_HEALTH) return send_health(h, c);
    if (x->r == R_MODELS) return send_models(h, c);
    x->responded = false;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **ctx) {
    (void)version;
    sv_http *h = cls;
    req_ctx *x = *ctx;
    if (!x) {
        if (!(x = calloc(1, sizeof *x))) return MHD_NO;
        x->t0 = sv_now();
        *ctx = x;
        return first_call(h, c, x, url, method);
    }
    if (*upload_size) {
        if (!x->responded && !x->too_big) {
            if (x->body.n + *upload_size > h->cfg.max_body) {
                x->too_big = true;
                sv_buf_free(&x->body);
            } else {
                sv_put(&x->body, upload, *upload_size);
            }
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (x->responded) return MHD_YES;
    x->responded = true;
    if (x->too_big) {
        char msg[PF_ERR_LEN];
        snprintf(msg, sizeof msg, "the request body is over the limit of %zu bytes", h->cfg.max_body);
        return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE, msg, NULL, "request_too_large");
    }
    if (x->body.oom) return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory", NULL, NULL);
    if (sv_now() - x->t0 > h->cfg.timeout_s)
        return send_error(c, MHD_HTTP_REQUEST_TIMEOUT, "the request body took longer than the time limit", NULL, "timeout");
    double t = sv_now();
    enum MHD_Result res = generate(h, c, x);
    if (h->cfg.verbose) fprintf(stderr, "serve: %s %s %.3f s\n", method, url, sv_now() - t);
    return res;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode code) {
    (void)cls, (void)c, (void)code;
    req_ctx *x = *ctx;
    if (!x) return;
    sv_buf_free(&x->body);
    free(x);
    *ctx = NULL;
}

sv_http *sv_http_start(sv_engine *e, const sv_http_config *cfg, int *port, char err[PF_ERR_LEN]) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", cfg->port);
    int gai = getaddrinfo(cfg->host, ps, &hints, &ai);
    if (gai) {
        snprintf(err, PF_ERR_LEN, "serve: cannot resolve --host '%.100s': %s", cfg->host, gai_strerror(gai));
        return NULL;
    }
    sv_http *h = calloc(1, sizeof *h);
    if (!h) {
        freeaddrinfo(ai);
        snprintf(err, PF_ERR_LEN, "out of memory");
        return NULL;
    }
    h->e = e;
    h->cfg = *cfg;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                     (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0) | (cfg->verbose ? MHD_USE_ERROR_LOG : 0);
    unsigned idle = cfg->timeout_s < 60 ? (unsigned)cfg->timeout_s + 1 : 60;
    h->d = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, on_request, h,
                            MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
                            MHD_OPTION_CONNECTION_TIMEOUT, idle,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!h->d) {
        snprintf(err, PF_ERR_LEN, "serve: cannot listen on %.100s:%d (in use, or not an address of this machine?)",
                 cfg->host, cfg->port);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = di ? di->port : cfg->port;
    return h;
}

void sv_http_quiesce(sv_http *h) {
    if (!h) return;
    MHD_socket fd = MHD_quiesce_daemon(h->d); /* the listening socket is ours to close now */
    if (fd != MHD_INVALID_SOCKET) close(fd);
}

void sv_http_stop(sv_http *h) {
    if (!h) return;
    MHD_stop_daemon(h->d);
    free(h);
}
#endif
