/* libFuzzer target for the HTTP server's request handler (cli/serve_http.c: sv_http_head, then
 * sv_http_body, as libmicrohttpd's callbacks call them) on a tiny synthetic model (synth's "tiny"
 * shape, 64-token context) with a DFlash2 draft carrying a Dec head, over two sessions and a batch
 * of two (the requests that decode plainly). The input
 * is up to MAX_REQUESTS HTTP requests as text, separated by a line "+++", run one after the other
 * (a repeated or continued conversation returns to its session and reuses its cache rows); each
 * is "METHOD PATH", header lines, a blank line, the body. The harness
 * reads Authorization and Content-Length as the server would, and two headers of its own:
 * "X-Fuzz-Key: 1" asks the handler that requires an API key ("sekrit"), "X-Fuzz-Drop: N" drops
 * a stream after N bytes, as a client that goes away. A body over the 8 KiB limit arrives cut off,
 * as libmicrohttpd hands it over. Checked for every input: a 4xx or 5xx body is an OpenAI error
 * object ({"error": {"message": string, "type": string, "param", "code"}}), a 200 is a JSON
 * object, the page (GET /), or an event stream of JSON "data:" events ending with "data: [DONE]"
 * whose pocketflash.tokens texts spell its text; an answer under response_format or json_schema
 * that ended by itself (finish_reason "stop", no stop strings) is JSON valid against its schema
 * (eval/schema_valid.c, written apart from the grammar that constrained it), under json_object a
 * JSON object; and afterwards no session is busy and nothing is queued. ASan and LSan catch
 * memory errors and leaks.
 *
 * An input's path depends on its bytes alone, so that libFuzzer's coverage means something and a
 * finding reproduces: every input starts on a fresh engine (no session history from earlier
 * inputs), a request without a seed samples with a fixed one (serve --seed), a stream is read once
 * its generation has ended (a read racing the generation would cut it into chunks by timing), and
 * the library's clock is a counter (below). A client that leaves mid-generation is the suite's
 * raw-socket and dropped-stream tests'. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli/serve_http.h"
#include "convert/dflash_synth.h"
#include "convert/synth.h"
#include "formats/ggml_types.h"
#include "engine/model.h"
#include "eval/schema_valid.h"
#include "formats/json.h"
#include "tests/fuzz/fz_check.h"
#include "tests/fuzz/fz_dec_head.h"

enum { MAX_BODY = 8192, MAX_REQUESTS = 3 };
static const char k_next[] = "\n+++\n"; /* between requests */

/* The library's clock (engine/clock.c, left out of the link by this definition): Dec and the
 * adaptive strategy choose blocks from measured times, which would make a path depend on the
 * machine's load. A step per call gives the same times to the same calls. */
static atomic_long g_ticks;
double pf_now_s(void) { return 1e-5 * (double)atomic_fetch_add(&g_ticks, 1); }

static const char k_page[] = "<!doctype html><title>page</title>\n";
static pf_model *g_model;
static pf_draft *g_draft;
static sv_engine *g_engine;
static sv_http *g_open, *g_keyed;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    /* The machine's best kernels, not the sanitized scalar ones of the other targets (mk/fuzz.mk):
     * what this target explores is the request handling, and the model's shapes are fixed here,
     * while the scalar matmuls under ASan took two thirds of every input's time. Every level
     * computes the scalar kernels' bits, so an input's outcome does not depend on the CPU. */
    char tpath[128], dpath[128], dec[128], err[PF_ERR_LEN];
    int pid = (int)getpid();
    snprintf(tpath, sizeof tpath, "/tmp/pf-fuzz-serve-%d-target.gguf", pid);
    snprintf(dpath, sizeof dpath, "/tmp/pf-fuzz-serve-%d-draft.gguf", pid);
    snprintf(dec, sizeof dec, "/tmp/pf-fuzz-serve-%d-dec.gguf", pid);
    fz_check(pf_synth_write(pf_synth_shape_find("tiny"), PF_TYPE_Q8_0, false, 3, tpath, err) == 0, "synth", err);
    pf_model *m = NULL;
    pf_load_model(tpath, &m, err);
    g_model = m;
    fz_check(!!m, "target", err);
    fz_check(pf_dflash_synth(tpath, 2, 1, 4, NULL, 0, 5, false, dpath, err) == 0, "synth-draft", err);
    fz_check(fz_attach_dec_head(dpath, m->hp.n_embd, dec, err) == 0, "dec-attach", err);
    pf_load_draft(m, dec, &g_draft, err);
    fz_check(!!g_draft, "draft", err);
    unlink(tpath); /* both stay mapped */
    unlink(dpath);
    unlink(dec);
    return 0;
}

/* A fresh engine and its two handlers (open, and keyed), for one input. */
static void engine_start(void) {
    char err[PF_ERR_LEN];
    atomic_store(&g_ticks, 0);
    /* with the batch: a request that asks for "spec": "ar" is a row of it, the others (the draft
     * speculates) use the sessions */
    sv_engine_config ec = {.n_sessions = 2, .queue_max = 2, .timeout_s = 1e6, .batch = true, .batch_threads = 1};
    ec.session.n_threads = 1;
    ec.session.n_ctx = 64;
    fz_check(sv_engine_new(g_model, g_draft, &ec, &g_engine, err) == PF_OK, "engine", err);
    /* no time limit can end a request, and no request draws its own seed */
    sv_http_config hc = {.max_body = MAX_BODY, .timeout_s = 1e6, .model_id = "fuzz-tiny", .page = k_page,
                         .page_len = sizeof k_page - 1, .fixed_seed = true, .seed = 1};
    g_open = sv_http_new(g_engine, &hc);
    hc.api_key = "sekrit";
    g_keyed = sv_http_new(g_engine, &hc);
    fz_check(g_open && g_keyed, "sv_http_new", "out of memory");
}

static void engine_stop(void) {
    sv_http_stop(g_open);
    sv_http_stop(g_keyed);
    sv_engine_free(g_engine);
    g_open = g_keyed = NULL;
    g_engine = NULL;
}

static const pf_json *member(const pf_json *o, const char *key) {
    return o && o->type == PF_JSON_OBJECT ? pf_json_get(o, key) : NULL;
}

static bool is_str_or_null(const pf_json *v) { return v && (v->type == PF_JSON_STRING || v->type == PF_JSON_NULL); }

static void check_error_body(unsigned status, const sv_buf *b) {
    char err[PF_ERR_LEN], what[64];
    snprintf(what, sizeof what, "status %u", status);
    fz_check(b->s && !b->oom, what, "no body");
    pf_json_doc *doc = pf_json_parse(b->s, b->n, err);
    fz_check(!!doc, what, b->s);
    const pf_json *e = member(pf_json_root(doc), "error");
    const pf_json *msg = member(e, "message"), *type = member(e, "type");
    bool ok = msg && msg->type == PF_JSON_STRING && msg->u.str.s[0] && !strchr(msg->u.str.s, '\n') && type &&
              type->type == PF_JSON_STRING && is_str_or_null(member(e, "param")) && is_str_or_null(member(e, "code"));
    fz_check(ok, what, b->s);
    pf_json_free(doc);
}

/* The JSON object s[0..n) (its document, to free), else the check fails. */
static pf_json_doc *json_object(const char *s, size_t n, const char *what) {
    char err[PF_ERR_LEN];
    pf_json_doc *doc = pf_json_parse(s, n, err);
    fz_check(doc && pf_json_root(doc)->type == PF_JSON_OBJECT, what, err);
    return doc;
}

/* What an answer (a completion object, or its stream's events) says of the generation. */
typedef struct {
    sv_buf text;
    bool chat, stopped; /* a chat answer; finish_reason "stop" */
} answer;

/* What a completion object or chunk says, noted in a: its kind, a finish_reason "stop", and its
 * first choice's text (a message's or delta's content, or a completion's text) appended to
 * a->text. Whether it had a text. */
static bool read_choice(const pf_json *o, answer *a) {
    const pf_json *ch = member(o, "choices"), *obj = member(o, "object");
    const pf_json *c0 = ch && ch->type == PF_JSON_ARRAY && ch->u.arr.n ? &ch->u.arr.items[0] : NULL;
    const pf_json *fr = member(c0, "finish_reason");
    if (obj && obj->type == PF_JSON_STRING) a->chat = !strncmp(obj->u.str.s, "chat.", 5);
    if (fr && pf_json_str_eq(fr, "stop")) a->stopped = true;
    const pf_json *t = member(member(c0, "delta"), "content");
    if (!t) t = member(member(c0, "message"), "content");
    if (!t) t = member(c0, "text");
    if (!t || t->type != PF_JSON_STRING) return false;
    sv_put(&a->text, t->u.str.s, t->u.str.len);
    return true;
}

/* An event's text, appended to the answer's, and the texts of its pocketflash.tokens to marked. */
static void event_texts(const pf_json *ev, answer *a, sv_buf *marked) {
    const pf_json *tokens = member(member(ev, "pocketflash"), "tokens");
    read_choice(ev, a);
    for (size_t i = 0; tokens && tokens->type == PF_JSON_ARRAY && i < tokens->u.arr.n; i++) {
        const pf_json *x = member(&tokens->u.arr.items[i], "text");
        if (x && x->type == PF_JSON_STRING) sv_put(marked, x->u.str.s, x->u.str.len);
    }
}

/* "data: JSON\n\n" events, the last "data: [DONE]\n\n" (complete: the stream was read to its end);
 * the texts of their pocketflash.tokens spell their text. */
static void check_events(const sv_buf *b, bool complete, answer *a) {
    const char *p = b->s ? b->s : "", *end = p + b->n;
    bool done = false;
    sv_buf marked = {0};
    sv_buf *content = &a->text;
    while (p < end) {
        fz_check(!done, "stream", "events after [DONE]");
        const char *sep = memmem(p, (size_t)(end - p), "\n\n", 2);
        if (!sep && !complete) break; /* cut off mid-event */
        fz_check(sep && !strncmp(p, "data: ", 6), "stream event", p);
        const char *data = p + 6;
        if (sep - data == 6 && !memcmp(data, "[DONE]", 6)) {
            done = true;
        } else {
            pf_json_doc *doc = json_object(data, (size_t)(sep - data), p);
            event_texts(pf_json_root(doc), a, &marked);
            pf_json_free(doc);
        }
        p = sep + 2;
    }
    fz_check(done || !complete, "stream", "no data: [DONE] at its end");
    fz_check(!content->oom && !marked.oom, "stream", "out of memory");
    fz_check(content->n == marked.n && (!content->n || !memcmp(content->s, marked.s, content->n)), "stream tokens",
          marked.s ? marked.s : "(none)");
    sv_buf_free(&marked);
}

/* A structured answer that ended by itself is JSON valid against the request's schema, or under
 * json_object a JSON object.
 * The request is read again with the server's own parser, so the harness and the server agree on
 * which schema it asked for (stop strings end a document anywhere, so none may be given). */
static void check_structured(const char *body, size_t body_n, const answer *a) {
    sv_request q;
    char err[PF_ERR_LEN];
    const char *param;
    if (!a->stopped || !body || !sv_request_parse(body, body_n, a->chat ? SV_CHAT : SV_COMPLETION, &q, err, &param))
        return;
    if (!q.n_stop && (q.json_schema || q.json_object)) {
        const char *text = a->text.s ? a->text.s : "";
        pf_json_doc *d = pf_json_parse(text, a->text.n, err);
        fz_check(d && (q.json_schema || pf_json_root(d)->type == PF_JSON_OBJECT), "structured answer not JSON", text);
        pf_json_free(d);
        if (q.json_schema) fz_check(pf_schema_valid_text(q.json_schema, text, a->text.n), "structured answer invalid", text);
    }
    sv_request_free(&q);
}

/* Every session free and nothing queued once the request's job has finished (a cancelled one
 * stops at its next token). */
static void wait_idle(void) {
    for (int i = 0; i < 60000; i++) {
        int busy, queued;
        long dropped;
        sv_engine_load(g_engine, &busy, &queued, &dropped);
        if (!busy && !queued) return;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    fz_check(0, "engine", "a session stayed busy (60 s)");
}

/* The value of header NAME in head[0..n) ("Name: value" lines), malloc'd; NULL when absent. */
static char *header(const char *head, size_t n, const char *name) {
    size_t k = strlen(name);
    for (const char *p = head, *end = head + n; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        if ((size_t)(eol - p) > k && !strncasecmp(p, name, k) && p[k] == ':') {
            const char *v = p + k + 1, *ve = eol;
            while (v < ve && *v == ' ') v++;
            if (ve > v && ve[-1] == '\r') ve--;
            return strndup(v, (size_t)(ve - v));
        }
        p = eol + 1;
    }
    return NULL;
}

/* One request, in[0..size). */
static void one_request(const char *in, size_t size) {
    const char *end = in + size;
    /* the request line */
    const char *eol = memchr(in, '\n', size);
    if (!eol) eol = end;
    const char *sp = memchr(in, ' ', (size_t)(eol - in));
    const char *path_end = sp ? memchr(sp + 1, ' ', (size_t)(eol - sp - 1)) : NULL;
    if (!path_end) path_end = eol > in && eol[-1] == '\r' ? eol - 1 : eol;
    char *method = strndup(in, (size_t)((sp ? sp : path_end) - in));
    char *url = sp && sp + 1 <= path_end ? strndup(sp + 1, (size_t)(path_end - sp - 1)) : strdup("");
    /* headers up to the blank line; the rest is the body */
    const char *head = eol < end ? eol + 1 : end, *body = end;
    size_t head_n = (size_t)(end - head);
    for (const char *p = head; p < end;) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e) break;
        if (e == p || (e == p + 1 && *p == '\r')) {
            head_n = (size_t)(p - head);
            body = e + 1;
            break;
        }
        p = e + 1;
    }
    char *auth = header(head, head_n, "Authorization"), *clen = header(head, head_n, "Content-Length");
    char *keyed = header(head, head_n, "X-Fuzz-Key"), *drop = header(head, head_n, "X-Fuzz-Drop");
    size_t body_n = (size_t)(end - body);
    sv_http *h = keyed ? g_keyed : g_open;
    sv_http_request q = {.method = method, .url = url, .authorization = auth, .content_length = clen,
                         .client_fd = -1, .t0 = sv_now()};
    sv_reply r = {0};
    char *copy = NULL;
    if (method && url && !sv_http_head(h, &q, &r)) {
        if (body_n > MAX_BODY) {
            q.too_big = true;
        } else {
            copy = malloc(body_n ? body_n : 1); /* exact size: a read past the body is past its end */
            if (copy) memcpy(copy, body, body_n);
            q.body = copy;
            q.body_n = body_n;
            q.body_oom = !copy;
        }
        sv_http_body(h, &q, &r);
    }
    if (r.stream) {
        fz_check(r.status == 200, "stream", "status not 200");
        wait_idle(); /* the whole generation first: the events then depend on the request alone */
        long limit = drop ? atol(drop) : -1;
        sv_buf got = {0};
        char buf[512];
        ssize_t n;
        while ((limit < 0 || (long)got.n < limit) && (n = sv_stream_read(r.stream, buf, sizeof buf)) > 0) sv_put(&got, buf, (size_t)n);
        fz_check(!got.oom, "stream", "out of memory");
        answer a = {0};
        check_events(&got, limit < 0, &a);
        if (limit < 0) check_structured(copy, body_n, &a);
        sv_buf_free(&a.text);
        sv_buf_free(&got);
    } else if (r.status) {
        if (r.status >= 400) {
            check_error_body(r.status, &r.body);
        } else if (r.content_type) {
            fz_check(r.body.n == sizeof k_page - 1 && !memcmp(r.body.s, k_page, r.body.n), "page", r.body.s);
        } else {
            pf_json_doc *d = json_object(r.body.s ? r.body.s : "", r.body.n, "200 body");
            answer a = {0};
            if (read_choice(pf_json_root(d), &a)) {
                fz_check(!a.text.oom, "answer", "out of memory");
                check_structured(copy, body_n, &a);
            }
            sv_buf_free(&a.text);
            pf_json_free(d);
        }
    }
    sv_reply_free(&r);
    wait_idle();
    free(copy);
    free(method);
    free(url);
    free(auth);
    free(clen);
    free(keyed);
    free(drop);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *in = (const char *)data, *end = in + size;
    engine_start();
    for (int k = 0; k < MAX_REQUESTS && in <= end; k++) {
        const char *next = k + 1 < MAX_REQUESTS ? memmem(in, (size_t)(end - in), k_next, sizeof k_next - 1) : NULL;
        one_request(in, (size_t)((next ? next : end) - in));
        if (!next) break;
        in = next + sizeof k_next - 1;
    }
    engine_stop();
    return 0;
}
