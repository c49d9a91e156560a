/* bench --concurrency (bench_concurrency.h): one untimed one-sequence pass gives the reference
 * outputs (and warms the caches), then every repetition runs every level, in a rotating order. */
#include "eval/bench_concurrency.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "engine/chat_tokens.h"
#include "engine/clock.h"
#include "engine/generate_batch.h"
#include "include/pocketflash.h"

typedef struct {
    int32_t *toks;
    int n, cap;
    double req_s; /* the request's time: prefill and decoding, or its time in the batch */
    pf_rc rc;
    char why[PF_ERR_LEN]; /* a failed request's message */
} conc_out;

typedef struct {
    const pf_conc_opts *o;
    pf_session *s;
    int32_t **ids;
    int *n_ids, n;
    conc_out *out; /* n outputs of the run in progress */
    int next;
} conc_run;

static int collect(void *u, int32_t t) {
    conc_out *c = u;
    if (c->n < c->cap) c->toks[c->n++] = t;
    return 0;
}

static pf_decode_params params(const conc_run *c, int i) {
    const pf_conc_opts *o = c->o;
    return (pf_decode_params){.max_tokens = o->max_tokens, .temp = o->temp, .top_k = o->top_k, .top_p = o->top_p,
                              .seed = o->seed + (uint64_t)i};
}

static int feed_next(void *u, pf_seq_request *r, char err[PF_ERR_LEN]) {
    (void)err;
    conc_run *c = u;
    if (c->next == c->n) return 0;
    int i = c->next++;
    *r = (pf_seq_request){.prompt = c->ids[i], .n_prompt = c->n_ids[i], .p = params(c, i), .on_token = collect,
                          .user = &c->out[i]};
    return 1;
}

static void feed_done(void *u, const pf_seq_request *r, pf_rc rc, const pf_decode_stats *st, const char *err) {
    (void)u;
    conc_out *o = r->user;
    o->rc = rc;
    o->req_s = st->ttft_s + st->decode_s;
    snprintf(o->why, sizeof o->why, "%.200s", err);
}

/* Every prompt decoded at `level` sequences at a time into out; the run's wall time, or -1 with err. */
static double run_level(conc_run *c, int level, conc_out *out, char err[PF_ERR_LEN]) {
    for (int i = 0; i < c->n; i++) out[i].n = 0, out[i].rc = PF_RC_OK;
    c->out = out, c->next = 0;
    double t0 = pf_now_s();
    if (level == 1) {
        for (int i = 0; i < c->n; i++) {
            pf_decode_params p = params(c, i);
            pf_session_reset(c->s); /* no prompt reuses the last one's rows: each prefills in full, as batched */
            pf_decode_stats st;
            if (pf_engine_generate_tokens(&c->s->engine, c->ids[i], c->n_ids[i], &p, NULL, collect, &out[i], &st,
                                          err) != PF_RC_OK)
                return -1;
            out[i].req_s = st.ttft_s + st.decode_s;
        }
    } else {
        pf_seq_feed feed = {feed_next, feed_done, c};
        if (pf_engine_generate_batch(&c->s->engine, level, &feed, err) != PF_RC_OK) return -1;
        for (int i = 0; i < c->n; i++)
            if (out[i].rc != PF_RC_OK) {
                snprintf(err, PF_ERR_LEN, "prompt %d: %.200s", i, out[i].why);
                return -1;
            }
    }
    return pf_now_s() - t0;
}

/* The suite's prompts, its types in turn, chat-wrapped into c->ids. */
static int tokenize(conc_run *c, const pf_model *m, const pf_task_suite *suite, char err[PF_ERR_LEN]) {
    int want = c->o->n_prompts, most = 0;
    for (int t = 0; t < suite->n; t++) most += suite->types[t].n;
    if (want > most) want = most;
    c->ids = calloc((size_t)(want ? want : 1), sizeof *c->ids);
    c->n_ids = calloc((size_t)(want ? want : 1), sizeof *c->n_ids);
    if (!c->ids || !c->n_ids) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return -1;
    }
    for (int k = 0; c->n < want; k++)
        for (int t = 0; t < suite->n && c->n < want; t++) {
            if (k >= suite->types[t].n) continue;
            size_t n = 0;
            if (pf_chat_tokenize(m->tok, NULL, suite->types[t].prompts[k].prompt, !c->o->no_special, &c->ids[c->n], &n,
                                 err) != PF_RC_OK)
                return -1;
            c->n_ids[c->n++] = (int)n;
        }
    if (!c->n) snprintf(err, PF_ERR_LEN, "the task folder has no prompts");
    return c->n ? 0 : -1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The runs of every level and repetition after the reference; -1 with err. agg[k][rep], spd, per. */
static int measure(conc_run *c, conc_out *ref, conc_out *out, pf_conc_result *r, char err[PF_ERR_LEN]) {
    const pf_conc_opts *o = c->o;
    int L = o->n_levels, R = o->reps;
    double *agg = calloc((size_t)L * R, sizeof(double)), *per = calloc((size_t)L * R, sizeof(double));
    double *req = calloc((size_t)c->n, sizeof(double));
    int rc = agg && per && req ? 0 : -1;
    if (rc) snprintf(err, PF_ERR_LEN, "out of memory");
    for (int k = 0; k < L; k++) r->rows[k] = (pf_conc_row){.n_seq = o->levels[k], .identical = 1};
    for (int rep = 0; rc == 0 && rep < R; rep++)
        for (int j = 0; rc == 0 && j < L; j++) {
            int k = (j + rep) % L; /* a rotating order: no level always runs first */
            double wall = run_level(c, o->levels[k], out, err);
            if (wall < 0) {
                rc = -1;
                break;
            }
            int64_t toks = 0;
            for (int i = 0; i < c->n; i++) {
                toks += out[i].n;
                req[i] = out[i].req_s > 0 ? out[i].n / out[i].req_s : 0;
                if (out[i].n != ref[i].n || memcmp(out[i].toks, ref[i].toks, (size_t)ref[i].n * sizeof(int32_t)))
                    r->rows[k].identical = 0;
            }
            qsort(req, (size_t)c->n, sizeof *req, cmp_double);
            agg[k * R + rep] = (double)toks / wall;
            per[k * R + rep] = req[c->n / 2];
            r->tokens = toks;
            if (o->progress) fprintf(stderr, "\rbench --concurrency: repetition %d/%d, %d sequences   ", rep + 1, R,
                                     o->levels[k]);
        }
    if (o->progress && rc == 0) fputc('\n', stderr);
    int one = -1;
    for (int k = 0; k < L; k++)
        if (o->levels[k] == 1) one = k;
    for (int k = 0; rc == 0 && k < L; k++) {
        double spd[255];
        for (int rep = 0; rep < R; rep++)
            spd[rep] = one >= 0 ? agg[k * R + rep] / agg[one * R + rep] : 0;
        pf_stat_summarize(&agg[k * R], R, &r->rows[k].agg_tok_s);
        pf_stat_summarize(&per[k * R], R, &r->rows[k].per_req_tok_s);
        pf_stat_summarize(spd, R, &r->rows[k].speedup);
    }
    free(agg), free(per), free(req);
    return rc;
}

int pf_bench_concurrency(const char *model_path, const pf_task_suite *suite, const pf_conc_opts *o, pf_conc_result *r,
                         char err[PF_ERR_LEN]) {
    memset(r, 0, sizeof *r);
    if (o->n_levels < 1 || o->reps < 1 || o->reps > 255) {
        snprintf(err, PF_ERR_LEN, "--concurrency needs at least one level and 1..255 repetitions");
        return -1;
    }
    pf_model *m = NULL;
    if (pf_load_model_with(model_path, &o->load, &m, err) != PF_OK) return -1;
    pf_session_params sp = {.n_threads = o->threads, .n_ctx = o->n_ctx, .kv_q8 = o->kv_q8};
    conc_run c = {.o = o};
    conc_out *ref = NULL, *out = NULL;
    int rc = pf_session_new(m, &sp, &c.s, err) == PF_OK && tokenize(&c, m, suite, err) == 0 ? 0 : -1;
    if (rc == 0) {
        ref = calloc((size_t)c.n, sizeof *ref), out = calloc((size_t)c.n, sizeof *out);
        for (int i = 0; ref && out && i < c.n; i++) {
            ref[i].cap = out[i].cap = o->max_tokens;
            ref[i].toks = malloc((size_t)o->max_tokens * sizeof(int32_t));
            out[i].toks = malloc((size_t)o->max_tokens * sizeof(int32_t));
            if (!ref[i].toks || !out[i].toks) rc = -1;
        }
        if (!ref || !out || rc) {
            snprintf(err, PF_ERR_LEN, "out of memory");
            rc = -1;
        }
    }
    double la[1];
    r->load_start = getloadavg(la, 1) == 1 ? la[0] : -1;
    if (rc == 0 && run_level(&c, 1, ref, err) < 0) rc = -1;
    if (rc == 0) rc = measure(&c, ref, out, r, err);
    r->load_end = getloadavg(la, 1) == 1 ? la[0] : -1;
    r->n_rows = o->n_levels;
    r->n_prompts = c.n;
    for (int i = 0; i < c.n; i++) {
        free(c.ids[i]);
        if (ref) free(ref[i].toks);
        if (out) free(out[i].toks);
    }
    free(c.ids), free(c.n_ids), free(ref), free(out);
    pf_session_free(c.s);
    pf_model_free(m);
    return rc;
}
