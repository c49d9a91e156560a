/* pocketflash serve: routes and responses (see serve_http.h), then their glue to libmicrohttpd at
 * the end. In thread-per-connection mode a handler may block, so a non-streamed request waits for
 * its job in the connection's thread, and a stream's content reader waits for the next piece of
 * text. The handler itself knows no sockets: a request in, a status and a body or stream out. */
#include "cli/serve_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PF_NO_SERVE
pf_status sv_http_start(sv_engine *e, const sv_http_config *cfg, sv_http **out, int *port, char err[PF_ERR_LEN]) {
    (void)e, (void)cfg, (void)port;
    *out = NULL;
    snprintf(err, PF_ERR_LEN, "serve: this build has no HTTP server (built with SERVE=0, without libmicrohttpd)");
    return PF_ERR_ARG;
}
void sv_http_quiesce(sv_http *h) { (void)h; }
void sv_http_drain(sv_http *h, double max_s) { (void)h, (void)max_s; }
void sv_http_stop(sv_http *h) { (void)h; }
#else

#include <errno.h>
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

typedef enum { R_NONE, R_PAGE, R_HEALTH, R_MODELS, R_CHAT, R_COMPLETIONS } route;

/* ---- plain responses ---- */
/* The reply takes the buffer. */
static void reply_json(sv_reply *r, unsigned code, sv_buf *b) {
    r->status = code;
    r->body = *b;
    *b = (sv_buf){0};
}

static void reply_error(sv_reply *r, unsigned code, const char *msg, const char *param, const char *err_code) {
    sv_buf b = {0};
    sv_error_json(&b, msg, code >= 500 ? "server_error" : "invalid_request_error", param, err_code);
    reply_json(r, code, &b);
}

/* ---- routes ---- */
static route find_route(const sv_http *h, const char *url, bool *known_path, const char *method) {
    static const struct { const char *path, *method; route r; } routes[] = {
        {"/", "GET", R_PAGE},                   {"/health", "GET", R_HEALTH},
        {"/v1/health", "GET", R_HEALTH},        {"/v1/models", "GET", R_MODELS},
        {"/v1/chat/completions", "POST", R_CHAT}, {"/v1/completions", "POST", R_COMPLETIONS}};
    *known_path = false;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(url, routes[i].path) || (routes[i].r == R_PAGE && !h->cfg.page)) continue;
        *known_path = true;
        if (!strcmp(method, routes[i].method)) return routes[i].r;
    }
    return R_NONE;
}

/* "Authorization: Bearer KEY", compared in time independent of where it differs. */
static bool authorized(const sv_http *h, const char *a) {
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

/* pocketflash's own numbers, the members of its extension object: the strategy's work and the
 * speed of this request. */
static void put_stats(sv_buf *b, const sv_job *j) {
    const pf_gen_stats *s = &j->stats;
    sv_puts(b, "\"strategy\":");
    const char *name = s->drafter ? s->drafter : "plain", *spec = s->spec ? s->spec : "plain";
    sv_put_jstr(b, name, strlen(name));
    sv_puts(b, ",\"spec\":");
    sv_put_jstr(b, spec, strlen(spec));
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
    sv_printf(b, ",\"reused_tokens\":%d,\"session\":%d,\"timed_out\":%s", s->n_reused, j->session,
              j->timed_out ? "true" : "false");
}

static void put_extension(sv_buf *b, const sv_job *j) {
    sv_puts(b, "\"pocketflash\":{");
    put_stats(b, j);
    sv_puts(b, "}");
}

static const char *finish_reason(const sv_job *j) {
    if (j->stop_hit) return "stop";
    if (j->timed_out) return "length";
    return j->stats.stop == PF_STOP_LENGTH || j->stats.stop == PF_STOP_CONTEXT ? "length" : "stop";
}

/* The reply may hold tool calls to read back (tools offered, tool_choice not none). */
static bool tools_on(const sv_job *j) { return j->req.tools && j->req.tool_choice != PF_TOOL_NONE; }

/* A tool call's id: "call_" and 24 hex digits, distinct within the process. */
static void call_id(char id[32]) {
    static _Atomic uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ (++counter * 0x9e3779b97f4a7c15ull);
    uint64_t a = x, b = x ^ 0xd1b54a32d192ed03ull;
    for (int i = 0; i < 2; i++) { /* splitmix64's finaliser on each half */
        uint64_t *z = i ? &b : &a;
        *z = (*z ^ (*z >> 30)) * 0xbf58476d1ce4e5b9ull;
        *z = (*z ^ (*z >> 27)) * 0x94d049bb133111ebull;
        *z ^= *z >> 31;
    }
    snprintf(id, 32, "call_%016llx%08llx", (unsigned long long)a, (unsigned long long)(b >> 32));
}

/* One call's members: "id", "type", "function": {"name", "arguments"} (arguments a JSON string). */
static void put_call(sv_buf *b, const pf_tool_call *c, bool with_args) {
    char id[32];
    call_id(id);
    sv_printf(b, "\"id\":\"%s\",\"type\":\"function\",\"function\":{\"name\":", id);
    sv_put_jstr(b, c->name, strlen(c->name));
    sv_puts(b, ",\"arguments\":");
    sv_put_jstr(b, with_args ? c->arguments : "", with_args ? strlen(c->arguments) : 0);
    sv_puts(b, "}");
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
static bool job_error(sv_reply *r, const sv_job *j) {
    if (j->never_ran && j->status == PF_OK) {
        if (j->timed_out) reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "timed out waiting for a free session", NULL, "timeout");
        else reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "request cancelled", NULL, "cancelled");
        return true;
    }
    if (j->status == PF_OK) return false;
    const char *param = j->req.kind == SV_CHAT ? "messages" : "prompt";
    /* each kind as itself (docs/server.md#errors): the request's fault 400, a lack of memory or a
     * cancelled job 503 (worth retrying), the server's files or a bug 500 */
    switch (j->status) {
    case PF_ERR_CONTEXT: reply_error(r, MHD_HTTP_BAD_REQUEST, j->err, param, "context_length_exceeded"); break;
    case PF_ERR_UTF8: reply_error(r, MHD_HTTP_BAD_REQUEST, j->err, param, NULL); break;
    case PF_ERR_ARG: reply_error(r, MHD_HTTP_BAD_REQUEST, j->err, j->budget_short ? "max_tokens" : "spec", NULL); break;
    case PF_ERR_OOM: reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, j->err, NULL, "out_of_memory"); break;
    case PF_ERR_CANCELLED: reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, j->err, NULL, "cancelled"); break;
    default: /* io, format, internal */
        reply_error(r, j->never_ran ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_INTERNAL_SERVER_ERROR, j->err, NULL,
                    pf_status_name(j->status));
    }
    return true;
}

static void put_completion(const sv_http *h, sv_reply *r, sv_job *j) {
    if (job_error(r, j)) return;
    char id[64];
    make_id(id, sizeof id, j->req.kind);
    sv_buf b = {0};
    const char *text = j->text.s ? j->text.s : "";
    put_head(&b, h, id, (long)time(NULL), j->req.kind == SV_CHAT ? "chat.completion" : "text_completion");
    pf_tool_call *calls = NULL;
    int n_calls = 0;
    size_t content_len = j->text.n;
    char err[PF_ERR_LEN];
    if (tools_on(j) && pf_parse_tool_calls(text, j->text.n, &calls, &n_calls, &content_len, err) != PF_OK) b.oom = true;
    if (j->req.kind == SV_CHAT) {
        sv_puts(&b, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":");
        if (n_calls && !content_len) sv_puts(&b, "null");
        else sv_put_jstr(&b, text, content_len);
        if (n_calls) {
            sv_puts(&b, ",\"tool_calls\":[");
            for (int i = 0; i < n_calls; i++) {
                sv_puts(&b, i ? ",{" : "{");
                put_call(&b, &calls[i], true);
                sv_puts(&b, "}");
            }
            sv_puts(&b, "]");
        }
        sv_puts(&b, "},");
    } else {
        sv_puts(&b, ",\"choices\":[{\"index\":0,\"text\":");
        sv_put_jstr(&b, text, j->text.n);
        sv_puts(&b, ",");
    }
    sv_printf(&b, "\"logprobs\":null,\"finish_reason\":\"%s\"}],", n_calls ? "tool_calls" : finish_reason(j));
    pf_free_tool_calls(calls, n_calls);
    put_usage(&b, j);
    sv_puts(&b, ",");
    put_extension(&b, j);
    sv_puts(&b, "}\n");
    reply_json(r, MHD_HTTP_OK, &b);
}

/* ---- streaming ---- */
struct sv_stream {
    const sv_http *h;
    sv_job *j;
    size_t sent;     /* job text bytes already framed */
    size_t seen;     /* the job's ready count when the stream last looked (with tools, text may be held) */
    sv_buf out;      /* framed events not yet handed to MHD */
    size_t out_off;
    bool role_sent, finished;
    int next_token;     /* the job's first token not yet in a chunk's "tokens" */
    bool last_drafted;  /* the last token that was */
    char id[64];
    long created;
};
typedef sv_stream stream;

static void put_token(stream *s, bool *first, const char *text, size_t n, bool drafted, bool cont) {
    sv_puts(&s->out, *first ? "{\"text\":" : ",{\"text\":");
    *first = false;
    sv_put_jstr(&s->out, text, n);
    sv_printf(&s->out, ",\"drafted\":%s%s}", drafted ? "true" : "false", cont ? ",\"cont\":true" : "");
}

/* The "tokens" of the chunk that sends text[from, lim): the text split by the token it came from,
 * each token once; bytes of a token already listed in an earlier chunk come first as a "cont"
 * entry. A token shows when it has text to send, or when a later one does (its own bytes went with
 * that one's: a character split over tokens), or at the end. Under the job's lock, or once done. */
static void put_tokens(stream *s, size_t from, size_t lim, bool done) {
    const sv_job *j = s->j;
    const char *t = j->text.s ? j->text.s : "";
    int k = s->next_token, n = j->n_tokens;
    bool none = true;
    sv_puts(&s->out, "\"tokens\":[");
    size_t first = k < n && j->tokens[k].start < lim ? j->tokens[k].start : lim;
    if (first > from) put_token(s, &none, t + from, first - from, s->last_drafted, true);
    for (; k < n; k++) {
        size_t start = j->tokens[k].start, next = k + 1 < n ? j->tokens[k + 1].start : lim;
        if (!(start < lim || next <= lim || done)) break;
        if (done && j->stop_hit && start >= j->text.n) break; /* after the stop sequence: not sent */
        if (start > lim) start = lim;
        put_token(s, &none, t + start, (next < lim ? next : lim) - start, j->tokens[k].drafted, false);
        s->last_drafted = j->tokens[k].drafted;
    }
    s->next_token = k;
    sv_puts(&s->out, "]");
}

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
        sv_puts(&s->out, ",\"pocketflash\":{");
        put_tokens(s, s->sent, s->sent, true);
        sv_puts(&s->out, ",");
        put_stats(&s->out, s->j);
        sv_puts(&s->out, "}}\n\n");
    } else {
        sv_puts(&s->out, "null}],\"pocketflash\":{");
        put_tokens(s, s->sent, s->sent + n, s->j->state == SV_DONE);
        sv_puts(&s->out, "}}\n\n");
    }
}

static bool space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

/* With tools, how far the content may be streamed: up to the first <tool_call> (or a tail that may
 * start one), trailing white space held back, as the reply's content (pf_parse_tool_calls) ends
 * there. Under the job's lock. */
static size_t content_hold(const sv_job *j, size_t sent) {
    static const char open[] = "<tool_call>";
    const char *t = j->text.s;
    size_t n = j->ready, k = sizeof open - 1, lim = n;
    const char *hit = n > sent ? memmem(t + sent, n - sent, open, k) : NULL;
    if (hit) lim = (size_t)(hit - t);
    else
        for (size_t h = k - 1 < n ? k - 1 : n; h > 0; h--)
            if (!memcmp(t + n - h, open, h)) {
                lim = n - h;
                break;
            }
    while (lim > sent && space(t[lim - 1])) lim--;
    return lim > sent ? lim : sent;
}

/* The calls as OpenAI streams them: per call a delta with its index, id, type and name (empty
 * arguments), then its arguments in pieces of about 32 bytes (whole UTF-8 characters). */
static void put_tool_chunks(stream *s, const pf_tool_call *c, int n) {
    for (int i = 0; i < n; i++) {
        size_t len = strlen(c[i].arguments);
        for (size_t pos = 0, part = 0; part == 0 || pos < len; part++) {
            sv_puts(&s->out, "data: ");
            put_head(&s->out, s->h, s->id, s->created, "chat.completion.chunk");
            sv_puts(&s->out, ",\"choices\":[{\"index\":0,\"delta\":{");
            if (!s->role_sent) sv_puts(&s->out, "\"role\":\"assistant\",\"content\":null,");
            s->role_sent = true;
            sv_printf(&s->out, "\"tool_calls\":[{\"index\":%d,", i);
            if (part == 0) {
                put_call(&s->out, &c[i], false);
            } else {
                size_t step = 32;
                while (pos + step < len && ((unsigned char)c[i].arguments[pos + step] & 0xC0) == 0x80) step++;
                if (pos + step > len) step = len - pos;
                sv_puts(&s->out, "\"function\":{\"arguments\":");
                sv_put_jstr(&s->out, c[i].arguments + pos, step);
                sv_puts(&s->out, "}");
                pos += step;
            }
            sv_puts(&s->out, "}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
        }
    }
}

/* The end of a reply that may hold calls: the calls and "tool_calls", else the held text. Once done. */
static void finish_tools(stream *s) {
    const sv_job *j = s->j;
    pf_tool_call *calls = NULL;
    int n = 0;
    size_t content_len;
    char err[PF_ERR_LEN];
    if (pf_parse_tool_calls(j->text.s ? j->text.s : "", j->text.n, &calls, &n, &content_len, err) != PF_OK) {
        s->out.oom = true;
        return;
    }
    if (n) {
        put_tool_chunks(s, calls, n);
        put_chunk(s, "", 0, "tool_calls");
    } else {
        if (j->text.n > s->sent) put_chunk(s, j->text.s + s->sent, j->text.n - s->sent, NULL);
        s->sent = j->text.n;
        put_chunk(s, "", 0, finish_reason(j));
    }
    pf_free_tool_calls(calls, n);
}

ssize_t sv_stream_read(sv_stream *s, char *buf, size_t max) {
    /* a loop: with tools, new text may all be held back (a call being written), and 0 bytes would
     * end the response */
    while (s->out_off == s->out.n) {
        if (s->finished) return 0;
        s->out.n = s->out_off = 0;
        sv_job *j = s->j;
        pthread_mutex_lock(&j->mu);
        while (j->ready == s->seen && j->state != SV_DONE) pthread_cond_wait(&j->cv, &j->mu);
        bool done = j->state == SV_DONE;
        size_t lim = tools_on(j) ? content_hold(j, s->sent) : j->ready;
        if (lim > s->sent) put_chunk(s, j->text.s + s->sent, lim - s->sent, NULL);
        s->sent = lim;
        s->seen = j->ready;
        pthread_mutex_unlock(&j->mu);
        if (done) {
            if (j->status != PF_OK) {
                sv_puts(&s->out, "data: ");
                sv_error_json(&s->out, j->err, "server_error", NULL,
                              j->status == PF_ERR_OOM ? "out_of_memory" : pf_status_name(j->status));
                sv_puts(&s->out, "\n");
            } else if (tools_on(j)) {
                finish_tools(s);
            } else {
                put_chunk(s, "", 0, finish_reason(j));
            }
            sv_puts(&s->out, "data: [DONE]\n\n");
            s->finished = true;
        }
        if (s->out.oom) return -1;
    }
    size_t n = s->out.n - s->out_off < max ? s->out.n - s->out_off : max;
    memcpy(buf, s->out.s + s->out_off, n);
    s->out_off += n;
    return (ssize_t)n;
}

/* The response is gone (sent, or the client went away): a job still running stops. */
void sv_stream_free(sv_stream *s) {
    if (!s) return;
    sv_job_cancel(s->j);
    sv_job_release(s->j);
    sv_buf_free(&s->out);
    free(s);
}

/* Takes the job's reference. */
static void put_stream(const sv_http *h, sv_reply *r, sv_job *j) {
    if (j->state == SV_DONE && job_error(r, j)) {
        sv_job_release(j);
        return;
    }
    stream *s = calloc(1, sizeof *s);
    if (!s) {
        sv_job_cancel(j);
        sv_job_release(j);
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory", NULL, NULL);
        return;
    }
    s->h = h;
    s->j = j;
    s->created = (long)time(NULL);
    make_id(s->id, sizeof s->id, j->req.kind);
    r->status = MHD_HTTP_OK;
    r->stream = s;
}

/* ---- requests ---- */
static void generate(sv_http *h, const sv_http_request *q, route rt, sv_reply *r) {
    sv_request req;
    char err[PF_ERR_LEN];
    const char *param;
    sv_kind kind = rt == R_CHAT ? SV_CHAT : SV_COMPLETION;
    if (!sv_request_parse(q->body ? q->body : "", q->body_n, kind, &req, err, &param)) {
        reply_error(r, MHD_HTTP_BAD_REQUEST, err, param, NULL);
        return;
    }
    bool stream = req.stream;
    if (!req.has_seed && h->cfg.fixed_seed) {
        req.seed = h->cfg.seed;
        req.has_seed = true;
    }
    sv_job *j = sv_job_new(&req, q->client_fd, q->t0, h->cfg.timeout_s);
    if (!j) {
        sv_request_free(&req);
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory", NULL, NULL);
        return;
    }
    if (!sv_engine_submit(h->e, j)) {
        sv_job_release(j);
        reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "the server is busy (request queue full)", NULL, "server_busy");
        return;
    }
    /* a stream's headers wait for its first text (or the end), so a failing prompt still gets its 4xx */
    if (!sv_engine_wait(h->e, j, stream)) {
        sv_job_release(j);
        reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "timed out waiting for a free session", NULL, "timeout");
        return;
    }
    if (stream) {
        put_stream(h, r, j); /* takes the reference */
        return;
    }
    put_completion(h, r, j);
    sv_job_release(j);
}

static void put_models(const sv_http *h, sv_reply *r) {
    sv_buf b = {0};
    sv_puts(&b, "{\"object\":\"list\",\"data\":[{\"id\":");
    sv_put_jstr(&b, h->cfg.model_id, strlen(h->cfg.model_id));
    sv_printf(&b, ",\"object\":\"model\",\"created\":%ld,\"owned_by\":\"pocketflash\"}]}\n", (long)time(NULL));
    reply_json(r, MHD_HTTP_OK, &b);
}

static void put_page(const sv_http *h, sv_reply *r) {
    r->status = MHD_HTTP_OK;
    sv_put(&r->body, h->cfg.page, h->cfg.page_len);
    r->content_type = "text/html; charset=utf-8";
}

static void put_health(const sv_http *h, sv_reply *r) {
    int busy, queued;
    long dropped;
    sv_engine_load(h->e, &busy, &queued, &dropped);
    sv_buf b = {0};
    sv_printf(&b, "{\"status\":\"ok\",\"sessions_busy\":%d,\"queued\":%d,\"dropped\":%ld}\n", busy, queued, dropped);
    reply_json(r, MHD_HTTP_OK, &b);
}

/* Route, key and declared size are checked before any body is read. */
bool sv_http_head(sv_http *h, const sv_http_request *q, sv_reply *r) {
    bool known;
    route rt = find_route(h, q->url, &known, q->method);
    char msg[PF_ERR_LEN];
    /* the page is open, as /health: it holds no data, and asks for the key its requests send */
    if (rt != R_HEALTH && rt != R_PAGE && h->cfg.api_key && !authorized(h, q->authorization))
        reply_error(r, MHD_HTTP_UNAUTHORIZED, "missing or wrong API key (Authorization: Bearer KEY)", NULL, "invalid_api_key");
    else if (rt == R_NONE) {
        snprintf(msg, sizeof msg, "%s %.100s: %s", q->method, q->url, known ? "method not allowed" : "no such route");
        reply_error(r, known ? MHD_HTTP_METHOD_NOT_ALLOWED : MHD_HTTP_NOT_FOUND, msg, NULL,
                    known ? "method_not_allowed" : "not_found");
    } else if (q->content_length && strtoull(q->content_length, NULL, 10) > h->cfg.max_body) {
        snprintf(msg, sizeof msg, "the request body is over the limit of %zu bytes", h->cfg.max_body);
        reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE, msg, NULL, "request_too_large");
    } else if (rt == R_PAGE) put_page(h, r);
    else if (rt == R_HEALTH) put_health(h, r);
    else if (rt == R_MODELS) put_models(h, r);
    else return false;
    return true;
}

void sv_http_body(sv_http *h, const sv_http_request *q, sv_reply *r) {
    bool known;
    route rt = find_route(h, q->url, &known, q->method);
    if (rt != R_CHAT && rt != R_COMPLETIONS) {
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "no body expected on this route", NULL, NULL);
    } else if (q->too_big) {
        char msg[PF_ERR_LEN];
        snprintf(msg, sizeof msg, "the request body is over the limit of %zu bytes", h->cfg.max_body);
        reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE, msg, NULL, "request_too_large");
    } else if (q->body_oom) {
        reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory", NULL, NULL);
    } else if (sv_now() - q->t0 > h->cfg.timeout_s) {
        reply_error(r, MHD_HTTP_REQUEST_TIMEOUT, "the request body took longer than the time limit", NULL, "timeout");
    } else {
        generate(h, q, rt, r);
    }
}

void sv_reply_free(sv_reply *r) {
    sv_buf_free(&r->body);
    sv_stream_free(r->stream);
    *r = (sv_reply){0};
}

sv_http *sv_http_new(sv_engine *e, const sv_http_config *cfg) {
    sv_http *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->e = e;
    h->cfg = *cfg;
    return h;
}

/* ---- libmicrohttpd ---- */
/* One request's state across the handler's calls. */
typedef struct {
    bool responded; /* a response was queued before the body (error): ignore the rest */
    bool too_big;
    double t0;
    sv_buf body;
} req_ctx;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    ssize_t n = sv_stream_read(cls, buf, max);
    return n > 0 ? n : n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void stream_free(void *cls) { sv_stream_free(cls); }

/* Queues the reply (a stream is then MHD's to free). */
static enum MHD_Result queue_reply(struct MHD_Connection *c, sv_reply *rp) {
    static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n";
    struct MHD_Response *r;
    unsigned code = rp->status;
    if (rp->stream) {
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, rp->stream, stream_free);
        if (!r) {
            sv_reply_free(rp);
            return MHD_NO;
        }
        rp->stream = NULL;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    } else {
        bool ok = rp->body.s && !rp->body.oom;
        if (!ok) code = MHD_HTTP_INTERNAL_SERVER_ERROR;
        r = MHD_create_response_from_buffer(ok ? rp->body.n : sizeof oom - 1, ok ? rp->body.s : (char *)oom,
                                            MHD_RESPMEM_MUST_COPY);
        if (!r) {
            sv_reply_free(rp);
            return MHD_NO;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ok && rp->content_type ? rp->content_type : "application/json");
        if (code == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, POST");
        if (code == MHD_HTTP_UNAUTHORIZED) MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    }
    enum MHD_Result res = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    sv_reply_free(rp);
    return res;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **ctx) {
    (void)version;
    sv_http *h = cls;
    req_ctx *x = *ctx;
    sv_http_request q = {.method = method, .url = url, .client_fd = -1};
    sv_reply rp = {0};
    if (!x) {
        if (!(x = calloc(1, sizeof *x))) return MHD_NO;
        x->t0 = sv_now();
        *ctx = x;
        q.authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        q.content_length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (!sv_http_head(h, &q, &rp)) return MHD_YES;
        x->responded = true;
        return queue_reply(c, &rp);
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
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    q.body = x->body.s;
    q.body_n = x->body.n;
    q.too_big = x->too_big;
    q.body_oom = x->body.oom;
    q.client_fd = ci ? ci->connect_fd : -1;
    q.t0 = x->t0;
    double t = sv_now();
    sv_http_body(h, &q, &rp);
    if (h->cfg.verbose) fprintf(stderr, "serve: %s %s %.3f s\n", method, url, sv_now() - t);
    return queue_reply(c, &rp);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode code) {
    (void)cls, (void)c, (void)code;
    req_ctx *x = *ctx;
    if (!x) return;
    sv_buf_free(&x->body);
    free(x);
    *ctx = NULL;
}

/* --host resolved: a name or address that does not resolve is a bad argument; a resolver that
 * failed (no memory, the system's error, a name server to try again) is not. */
static pf_status resolve_host(const sv_http_config *cfg, struct addrinfo **ai, char err[PF_ERR_LEN]) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    char ps[16];
    snprintf(ps, sizeof ps, "%d", cfg->port);
    int gai = getaddrinfo(cfg->host, ps, &hints, ai);
    if (!gai) return PF_OK;
    snprintf(err, PF_ERR_LEN, "serve: cannot resolve --host '%.100s': %s", cfg->host, gai_strerror(gai));
    return gai == EAI_MEMORY ? PF_ERR_OOM : gai == EAI_AGAIN || gai == EAI_FAIL || gai == EAI_SYSTEM ? PF_ERR_IO : PF_ERR_ARG;
}

/* Why the daemon did not start: the address bound once more, so that a port in use or an address
 * this machine lacks is named with its reason (the socket cannot be opened: PF_ERR_IO); when that
 * bind succeeds the daemon's own start failed (its threads: PF_ERR_OOM). */
static pf_status listen_failed(const sv_http_config *cfg, const struct addrinfo *ai, char err[PF_ERR_LEN]) {
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol), one = 1, e = 0;
    if (fd < 0) e = errno;
    else if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0)
        e = errno;
    if (fd >= 0) close(fd);
    if (e) {
        snprintf(err, PF_ERR_LEN, "serve: cannot listen on %.100s:%d: %s", cfg->host, cfg->port,
                 e == EADDRINUSE ? "the port is in use" : e == EADDRNOTAVAIL ? "not an address of this machine" : strerror(e));
        return e == ENOMEM || e == ENOBUFS ? PF_ERR_OOM : PF_ERR_IO;
    }
    snprintf(err, PF_ERR_LEN, "serve: cannot start the HTTP server on %.100s:%d (its threads or sockets)", cfg->host,
             cfg->port);
    return PF_ERR_OOM;
}

pf_status sv_http_start(sv_engine *e, const sv_http_config *cfg, sv_http **out, int *port, char err[PF_ERR_LEN]) {
    struct addrinfo *ai = NULL;
    *out = NULL;
    pf_status st = resolve_host(cfg, &ai, err);
    if (st != PF_OK) return st;
    sv_http *h = sv_http_new(e, cfg);
    if (!h) {
        freeaddrinfo(ai);
        snprintf(err, PF_ERR_LEN, "serve: out of memory");
        return PF_ERR_OOM;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                     (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0) | (cfg->verbose ? MHD_USE_ERROR_LOG : 0);
    unsigned idle = cfg->timeout_s < 60 ? (unsigned)cfg->timeout_s + 1 : 60;
    h->d = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, on_request, h,
                            MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
                            MHD_OPTION_CONNECTION_TIMEOUT, idle,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_END);
    if (!h->d) st = listen_failed(cfg, ai, err);
    freeaddrinfo(ai);
    if (st != PF_OK) {
        free(h);
        return st;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = di ? di->port : cfg->port;
    *out = h;
    return PF_OK;
}

void sv_http_quiesce(sv_http *h) {
    if (!h) return;
    MHD_socket fd = MHD_quiesce_daemon(h->d); /* the listening socket is ours to close now */
    if (fd != MHD_INVALID_SOCKET) close(fd);
}

void sv_http_drain(sv_http *h, double max_s) {
    if (!h || !h->d) return;
    for (double waited = 0; waited < max_s; waited += 0.01) {
        const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        if (!i || i->num_connections == 0) return;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void sv_http_stop(sv_http *h) {
    if (!h) return;
    if (h->d) MHD_stop_daemon(h->d);
    free(h);
}
#endif
