/* bench --concurrency (bench_concurrency.h): one untimed one-sequence pass gives the reference
 * outputs (and warms the caches; sampled, one per strategy), then every repetition runs every
 * strategy at every level (level 1 twice: the one-sequence path and the batch scheduler with one
 * slot), in a rotating order. Each strategy keeps one speculation object for
 * the one-at-a-time runs and one for the batched runs through the whole measurement, so each
 * calibrates its cost model once, as a long-running process would. */
#include "eval/bench_concurrency.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "engine/chat_tokens.h"
#include "engine/clock.h"
#include "engine/generate_batch.h"
#include "include/pocketflash.h"
#include "draft/draft_open.h"
#include "verify/spec_batch.h"

typedef struct {
    int32_t *toks;
    int n, cap;
    double req_s; /* the request's time: prefill and decoding, or its time in the batch */
    pf_rc rc;
    char why[PF_ERR_LEN]; /* a failed request's message */
} conc_out;

/* A strategy measured: its plan, its one-at-a-time and its batched speculation (plain: none). */
typedef struct {
    char name[64];
    pf_strategy_plan plan;
    pf_drafter *d;
    pf_spec *solo;
    pf_spec_batch *batch;
} conc_arm;

typedef struct {
    const pf_conc_opts *o;
    pf_session *s;
    conc_arm arms[PF_BENCH_MAX_ARMS + 1]; /* [0] plain */
    int n_arms;
    pf_dflash *w;
    pf_dec *dec;
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

/* Every prompt decoded at `level` sequences at a time with arm a into out, through the batch
 * scheduler when `batched` (always past one sequence); the run's wall time, or -1 with err. */
static double run_level(conc_run *c, const conc_arm *a, int level, int batched, conc_out *out, char err[PF_ERR_LEN]) {
    for (int i = 0; i < c->n; i++) out[i].n = 0, out[i].rc = PF_RC_OK;
    c->out = out, c->next = 0;
    double t0 = pf_now_s();
    if (level == 1 && !batched) {
        for (int i = 0; i < c->n; i++) {
            pf_decode_params p = params(c, i);
            pf_decode_stats st;
            if (pf_engine_generate_tokens(&c->s->engine, c->ids[i], c->n_ids[i], &p,
                                          a->solo ? pf_spec_strategy(a->solo) : NULL, collect, &out[i], &st,
                                          err) != PF_RC_OK)
                return -1;
            out[i].req_s = st.ttft_s + st.decode_s;
        }
    } else {
        pf_seq_feed feed = {feed_next, feed_done, c};
        pf_rc rc = a->batch ? pf_spec_batch_generate(a->batch, level, &feed, err)
                            : pf_engine_generate_batch(&c->s->engine, level, &feed, err);
        if (rc != PF_RC_OK) return -1;
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

/* The levels measured into lv and bt (batched): the list's, with one sequence through the batch
 * scheduler right after one sequence alone. Returns how many. */
static int level_list(const pf_conc_opts *o, int *lv, int *bt) {
    int L = 0;
    for (int k = 0; k < o->n_levels; k++) {
        lv[L] = o->levels[k], bt[L++] = o->levels[k] > 1;
        if (o->levels[k] == 1) lv[L] = 1, bt[L++] = 1;
    }
    return L;
}

/* The runs of every strategy, level and repetition after the references (ref[a]: arm a's); -1 with
 * err. Row a * L + k is arm a at level k of level_list. */
static int measure(conc_run *c, conc_out *const *ref, conc_out *out, pf_conc_result *r, char err[PF_ERR_LEN]) {
    const pf_conc_opts *o = c->o;
    int lv[PF_BENCH_MAX + 1], bt[PF_BENCH_MAX + 1];
    int L = level_list(o, lv, bt), R = o->reps, A = c->n_arms, N = A * L;
    double *agg = calloc((size_t)N * R, sizeof(double)), *per = calloc((size_t)N * R, sizeof(double));
    double *req = calloc((size_t)c->n, sizeof(double));
    int rc = agg && per && req ? 0 : -1;
    if (rc) snprintf(err, PF_ERR_LEN, "out of memory");
    for (int a = 0; a < A; a++)
        for (int k = 0; k < L; k++) {
            r->rows[a * L + k] = (pf_conc_row){.n_seq = lv[k], .batched = bt[k], .identical = 1};
            snprintf(r->rows[a * L + k].strategy, sizeof r->rows[0].strategy, "%s", c->arms[a].name);
        }
    r->n_rows = N;
    for (int rep = 0; rc == 0 && rep < R; rep++)
        for (int j = 0; rc == 0 && j < N; j++) {
            int row = (j + rep) % N, a = row / L, k = row % L; /* a rotating order: none always runs first */
            double wall = run_level(c, &c->arms[a], lv[k], bt[k], out, err);
            if (wall < 0) {
                rc = -1;
                break;
            }
            int64_t toks = 0;
            for (int i = 0; i < c->n; i++) {
                const conc_out *want = &ref[a][i];
                toks += out[i].n;
                req[i] = out[i].req_s > 0 ? out[i].n / out[i].req_s : 0;
                if (out[i].n != want->n || memcmp(out[i].toks, want->toks, (size_t)want->n * sizeof(int32_t)))
                    r->rows[row].identical = 0;
            }
            qsort(req, (size_t)c->n, sizeof *req, cmp_double);
            agg[row * R + rep] = (double)toks / wall;
            per[row * R + rep] = req[c->n / 2];
            r->tokens = toks;
            if (o->progress) fprintf(stderr, "\rbench --concurrency: repetition %d/%d, %s, %d sequences   ", rep + 1, R,
                                     c->arms[a].name, lv[k]);
        }
    if (o->progress && rc == 0) fputc('\n', stderr);
    int one = -1; /* plain decoding, one at a time */
    for (int k = 0; k < L; k++)
        if (lv[k] == 1 && !bt[k]) one = k;
    r->has_one = one >= 0;
    for (int row = 0; rc == 0 && row < N; row++) {
        double spd[255];
        for (int rep = 0; rep < R; rep++) spd[rep] = one >= 0 ? agg[row * R + rep] / agg[one * R + rep] : 0;
        pf_stat_summarize(&agg[row * R], R, &r->rows[row].agg_tok_s);
        pf_stat_summarize(&per[row * R], R, &r->rows[row].per_req_tok_s);
        pf_stat_summarize(spd, R, &r->rows[row].speedup);
    }
    free(agg), free(per), free(req);
    return rc;
}

/* The strategies: plain decoding, then each arm's plan with its one-at-a-time and batched
 * speculation over one opened draft. */
static pf_rc make_arms(conc_run *c, char err[PF_ERR_LEN]) {
    const pf_conc_opts *o = c->o;
    pf_engine_session *s = &c->s->engine;
    snprintf(c->arms[0].name, sizeof c->arms[0].name, "plain");
    c->n_arms = 1;
    if (o->n_arms && pf_draft_at_hand(s, o->draft_path)) {
        pf_rc rc = pf_draft_open(s->model, o->draft_path, &c->w, &c->dec, err);
        if (rc != PF_RC_OK) return rc;
    }
    for (int i = 0; i < o->n_arms; i++) {
        const pf_bench_arm *arm = &o->arms[i];
        conc_arm *a = &c->arms[c->n_arms++];
        snprintf(a->name, sizeof a->name, "%s", arm->name);
        pf_strategy_desc desc = {.kind = arm->kind, .block = arm->block, .draft_head = o->draft_head,
                                 .ngram_n = o->ngram_n, .profile = arm->profile, .profile_fixed = arm->profile_fixed};
        pf_strategy_desc_draft(&desc, c->w, c->dec);
        if (pf_strategy_plan_make(&desc, &a->plan, err) < 0) return PF_RC_ARG;
        if (a->plan.kind == PF_KIND_PLAIN) {
            snprintf(err, PF_ERR_LEN, "%s: plain decoding is measured in every run", arm->name);
            return PF_RC_ARG;
        }
        const pf_dflash *w = a->plan.kind == PF_KIND_NGRAM ? NULL : c->w;
        pf_rc rc = pf_drafter_for(&a->plan, w, 0, s, &a->d, err);
        if (rc == PF_RC_OK) rc = pf_strategy_build(s, &a->plan, a->d, c->dec, &a->solo, err);
        if (rc == PF_RC_OK) rc = pf_spec_batch_new(s, &a->plan, w, c->dec, &a->batch, err);
        if (rc != PF_RC_OK) return rc;
    }
    return PF_RC_OK;
}

static void free_arms(conc_run *c) {
    for (int a = 0; a < c->n_arms; a++) {
        pf_spec_batch_free(c->arms[a].batch);
        pf_spec_free(c->arms[a].solo);
        pf_drafter_free(c->arms[a].d);
    }
    pf_dec_free(c->dec);
    pf_dflash_free(c->w);
}

/* n outputs of max_tokens each; NULL when out of memory. */
static conc_out *outs_new(int n, int max_tokens) {
    conc_out *o = calloc((size_t)n, sizeof *o);
    for (int i = 0; o && i < n; i++) {
        o[i].cap = max_tokens;
        if (!(o[i].toks = malloc((size_t)max_tokens * sizeof(int32_t)))) {
            for (int j = 0; j < i; j++) free(o[j].toks);
            free(o);
            return NULL;
        }
    }
    return o;
}

static void outs_free(conc_out *o, int n) {
    for (int i = 0; o && i < n; i++) free(o[i].toks);
    free(o);
}

int pf_bench_concurrency(const char *model_path, const pf_task_suite *suite, const pf_conc_opts *o, pf_conc_result *r,
                         char err[PF_ERR_LEN]) {
    memset(r, 0, sizeof *r);
    if (o->n_levels < 1 || o->reps < 1 || o->reps > 255 || o->n_arms < 0 || o->n_arms > PF_BENCH_MAX_ARMS) {
        snprintf(err, PF_ERR_LEN, "--concurrency needs at least one level, 1..255 repetitions and at most %d strategies",
                 PF_BENCH_MAX_ARMS);
        return -1;
    }
    pf_model *m = NULL;
    if (pf_load_model_with(model_path, &o->load, &m, err) != PF_OK) return -1;
    pf_session_params sp = {.n_threads = o->threads, .n_ctx = o->n_ctx, .kv_q8 = o->kv_q8};
    conc_run c = {.o = o};
    conc_out *refs[PF_BENCH_MAX_ARMS + 1] = {0}, *out = NULL;
    int rc = pf_session_new(m, &sp, &c.s, err) == PF_OK && tokenize(&c, m, suite, err) == 0 &&
                     make_arms(&c, err) == PF_RC_OK
                 ? 0
                 : -1;
    /* greedy: every strategy's output is plain decoding's; sampled: each its own one-at-a-time run's */
    int n_refs = o->temp > 0 ? c.n_arms : 1;
    for (int a = 0; rc == 0 && a <= n_refs; a++)
        if (!(a < n_refs ? (refs[a] = outs_new(c.n, o->max_tokens)) : (out = outs_new(c.n, o->max_tokens)))) {
            snprintf(err, PF_ERR_LEN, "out of memory");
            rc = -1;
        }
    for (int a = n_refs; a < c.n_arms; a++) refs[a] = refs[0];
    double la[1];
    r->load_start = getloadavg(la, 1) == 1 ? la[0] : -1;
    for (int a = 0; rc == 0 && a < n_refs; a++)
        if (run_level(&c, &c.arms[a], 1, 0, refs[a], err) < 0) rc = -1;
    if (rc == 0) rc = measure(&c, refs, out, r, err);
    r->load_end = getloadavg(la, 1) == 1 ? la[0] : -1;
    r->n_prompts = c.n;
    for (int a = 0; a < n_refs; a++) outs_free(refs[a], c.n);
    outs_free(out, c.n);
    for (int i = 0; i < c.n; i++) free(c.ids[i]);
    free(c.ids), free(c.n_ids);
    free_arms(&c);
    pf_session_free(c.s);
    pf_model_free(m);
    return rc;
}
