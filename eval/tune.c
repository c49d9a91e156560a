#include "eval/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "verify/strategies.h"
#include "engine/clock.h"
#include "include/pocketflash.h"
#include "engine/batch.h"

/* Draft time per round at each candidate block, relative to t1: the drafter sees a real context of
 * `depth` target rows (taps included) and proposes after it; the fastest of several calls. */
static pf_rc draft_costs(const pf_model *m, const char *spec, const pf_tune_opts *o, double t1_s, double *cost,
                         char err[PF_ERR_LEN]) {
    pf_session_params sp = {.n_threads = o->bench.threads, .n_ctx = o->depth + 80, .kv_q8 = o->bench.kv_q8};
    pf_session *s = NULL;
    pf_rc rc = (pf_rc)pf_session_new(m, &sp, &s, err);
    int block = 0;
    pf_drafter *d = NULL;
    if (rc == PF_RC_OK) rc = pf_drafter_open(spec, o->bench.draft_path, &s->engine, o->bench.ngram_n, &block, &d, err);
    int32_t *toks = malloc((size_t)(o->depth + 1) * sizeof *toks), *draft = malloc(PF_MAX_BLOCK * sizeof *draft);
    float *taps = NULL;
    if (rc != PF_RC_OK) goto done;
    rc = PF_RC_OOM;
    if (!toks || !draft) { snprintf(err, PF_ERR_LEN, "out of memory"); goto done; }
    if (!strcmp(spec, "dflash") && (rc = pf_drafter_set_head(d, o->bench.draft_head, err)) != PF_RC_OK) goto done;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i <= o->depth; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        toks[i] = (int32_t)(x % (uint64_t)(m->hp.n_vocab > 300 ? m->hp.n_vocab - 40 : m->hp.n_vocab));
    }
    if (d->n_taps) taps = malloc((size_t)o->depth * d->n_taps * m->hp.n_embd * sizeof(float));
    pf_batch b = {.tokens = toks, .n = o->depth, .tap_layers = d->tap_layers, .n_taps = d->n_taps, .taps = taps};
    if ((rc = pf_forward(s->engine.ctx, &b, err)) != PF_RC_OK) goto done;
    if (d->begin && (rc = d->begin(d->state, toks, o->depth, taps, err)) != PF_RC_OK) goto done;
    for (int i = 0; i < o->n_blocks; i++) {
        double best = 1e9;
        for (int k = 0; k < 5; k++) {
            double t0 = pf_now_s();
            int n_drafted = 0;
            rc = d->propose(d->state, toks[o->depth], o->depth, o->blocks[i], NULL, NULL, draft, NULL, &n_drafted, err);
            if (rc != PF_RC_OK) goto done;
            double t = pf_now_s() - t0;
            if (t < best) best = t;
        }
        cost[i] = best / t1_s;
    }
    rc = PF_RC_OK;
done:
    free(toks);
    free(draft);
    free(taps);
    pf_drafter_free(d);
    pf_session_free(s);
    return rc;
}

/* 1. c(B) at the working depth (B = 1 first: the time c is relative to). */
static pf_rc measure_cb(const pf_model *m, const pf_tune_opts *o, pf_tune_result *r, char *err) {
    pf_bench_model_opts bo = {.threads = o->bench.threads, .reps = 3, .inner = 3, .n_depths = 0, .cb_depth = o->depth,
                              .prefill_tokens = 0, .bandwidth_mib = 0, .progress = 0};
    bo.blocks[0] = 1;
    bo.n_blocks = 1;
    for (int i = 0; i < o->n_blocks && bo.n_blocks < PF_BENCH_MAX; i++)
        if (o->blocks[i] != 1) bo.blocks[bo.n_blocks++] = o->blocks[i];
    pf_bench_model_result br;
    if (o->bench.progress) fprintf(stderr, "tune: measuring c(B) at depth %d...\n", o->depth);
    pf_rc rc = pf_bench_model(m, &bo, &br, err);
    if (rc != PF_RC_OK) return rc;
    r->t1_ms = br.block_ms[0].median;
    for (int i = 0; i < o->n_blocks; i++)
        for (int j = 0; j < bo.n_blocks; j++)
            if (bo.blocks[j] == o->blocks[i]) r->c[i] = br.c[j].median;
    return PF_RC_OK;
}

/* 3. acceptance by position per task at the largest block bmax, for every strategy. */
static pf_rc measure_acceptance(const char *model_path, const pf_task_suite *suite, const pf_tune_opts *o, int bmax,
                              pf_tune_result *r, char *err) {
    for (int s = 0; s < r->n_strategies; s++) {
        if (o->bench.progress) fprintf(stderr, "tune: acceptance of %s at block %d per task...\n", r->strategies[s], bmax);
        pf_bench_opts bo = o->bench;
        bo.spec = r->strategies[s];
        bo.block = bmax;
        bo.reps = 1;
        bo.profile = NULL;
        pf_bench_result acc;
        pf_rc rc = pf_bench_run(model_path, suite, &bo, &acc, err);
        if (rc != PF_RC_OK) return rc;
        for (int t = 0; t < suite->n; t++) {
            pf_tune_task *tt = &r->tasks[t];
            snprintf(tt->type, sizeof tt->type, "%s", acc.tasks[t].type);
            const pf_spec_stats *st = &acc.tasks[t].st;
            /* P(position k kept | k-1 kept): counts rounds where the drafter proposed nothing at k
             * as misses, which matters for the lookup draft */
            for (int k = 0; k < bmax - 1; k++) {
                int64_t prev = k ? st->pos_accepted[k - 1] : st->rounds;
                tt->alpha[s][k] = prev ? (double)st->pos_accepted[k] / (double)prev : 0;
            }
        }
        pf_bench_result_free(&acc);
    }
    return PF_RC_OK;
}

/* 4. a task's predicted speedup for every strategy and block, tau(B) / (c(B) + draft(B)) with
 * tau(B) = 1 + sum_k prod_{j<=k} alpha_j; the best kept in best_s / best_b. The best's value. */
static double predict_task(const pf_tune_opts *o, const pf_tune_result *r, pf_tune_task *tt) {
    double best = -1;
    for (int s = 0; s < r->n_strategies; s++)
        for (int i = 0; i < o->n_blocks; i++) {
            double tau = 1, prod = 1;
            for (int k = 0; k < o->blocks[i] - 1; k++) {
                prod *= tt->alpha[s][k];
                tau += prod;
            }
            tt->predicted[s][i] = tau / (r->c[i] + r->draft_cost[s][i]);
            if (tt->predicted[s][i] > best) {
                best = tt->predicted[s][i];
                tt->best_s = s;
                tt->best_b = i;
            }
        }
    return best;
}

/* 4. the profile: per task its best prediction (with the chosen strategy's acceptance by position,
 * the prior an adaptive run starts from); for untyped prompts the choice most task types made. */
static int choose_profile(const pf_tune_opts *o, int n_tasks, int bmax, pf_tune_result *r, char *err) {
    r->profile.tasks = calloc((size_t)n_tasks, sizeof *r->profile.tasks);
    if (!r->profile.tasks) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return -1;
    }
    double log_pred = 0;
    int votes[2][PF_BENCH_MAX] = {{0}};
    for (int t = 0; t < n_tasks; t++) {
        pf_tune_task *tt = &r->tasks[t];
        double best = predict_task(o, r, tt);
        votes[tt->best_s][tt->best_b]++;
        log_pred += log(best > 0 ? best : 1e-9);
        pf_profile_task *pt = &r->profile.tasks[r->profile.n++];
        snprintf(pt->type, sizeof pt->type, "%s", tt->type);
        snprintf(pt->spec, sizeof pt->spec, "%s", r->strategies[tt->best_s]);
        pt->block = o->blocks[tt->best_b];
        pt->predicted = best;
        for (int k = 0; k < bmax - 1 && k < PF_MAX_BLOCK; k++) pt->alpha[pt->n_alpha++] = tt->alpha[tt->best_s][k];
    }
    r->predicted_geomean = n_tasks ? exp(log_pred / n_tasks) : 0;
    int bs = 0, bb = 0;
    for (int s = 0; s < r->n_strategies; s++)
        for (int i = 0; i < o->n_blocks; i++)
            if (votes[s][i] > votes[bs][bb]) { bs = s; bb = i; }
    snprintf(r->profile.spec, sizeof r->profile.spec, "%s", r->strategies[bs]);
    r->profile.block = o->blocks[bb];
    return 0;
}

/* 5. the chosen settings measured against plain decoding. */
static pf_rc measure_chosen(const char *model_path, const pf_task_suite *suite, const pf_tune_opts *o, pf_tune_result *r,
                          char *err) {
    if (o->bench.progress) fprintf(stderr, "tune: measuring the chosen settings...\n");
    pf_bench_opts bo = o->bench;
    bo.profile = &r->profile;
    bo.profile_fixed = 1; /* what was predicted: the choices themselves */
    pf_bench_result meas;
    pf_rc rc = pf_bench_run(model_path, suite, &bo, &meas, err);
    if (rc != PF_RC_OK) return rc;
    for (int t = 0; t < suite->n; t++) {
        r->tasks[t].measured = meas.tasks[t].speedup.median;
        r->profile.tasks[t].measured = meas.tasks[t].speedup.median;
    }
    r->measured_geomean = meas.speedup_geomean;
    pf_bench_result_free(&meas);
    return PF_RC_OK;
}

pf_rc pf_tune_run(const char *model_path, const pf_task_suite *suite, const pf_tune_opts *o, pf_tune_result *r,
                  char err[PF_ERR_LEN]) {
    memset(r, 0, sizeof *r);
    r->strategies[r->n_strategies++] = "ngram";
    if (o->bench.draft_path) r->strategies[r->n_strategies++] = "dflash";
    int bmax = 2;
    for (int i = 0; i < o->n_blocks; i++)
        if (o->blocks[i] > bmax) bmax = o->blocks[i];
    pf_model *m = NULL;
    pf_rc rc = (pf_rc)pf_load_model_with(model_path, &o->bench.load, &m, err);
    if (rc != PF_RC_OK) return rc;
    if ((rc = measure_cb(m, o, r, err)) != PF_RC_OK) goto done;
    /* 2. draft cost per block */
    for (int s = 0; s < r->n_strategies; s++) {
        if (o->bench.progress) fprintf(stderr, "tune: measuring %s draft cost...\n", r->strategies[s]);
        if ((rc = draft_costs(m, r->strategies[s], o, r->t1_ms / 1e3, r->draft_cost[s], err)) != PF_RC_OK) goto done;
    }
    r->n = suite->n;
    r->tasks = calloc((size_t)suite->n, sizeof *r->tasks);
    rc = PF_RC_OOM;
    if (!r->tasks) { snprintf(err, PF_ERR_LEN, "out of memory"); goto done; }
    if ((rc = measure_acceptance(model_path, suite, o, bmax, r, err)) != PF_RC_OK) goto done;
    rc = choose_profile(o, suite->n, bmax, r, err) < 0 ? PF_RC_OOM : PF_RC_OK; /* its one failure */
    if (rc == PF_RC_OK) rc = measure_chosen(model_path, suite, o, r, err);
done:
    pf_model_free(m);
    if (rc) pf_tune_result_free(r);
    return rc;
}

void pf_tune_result_free(pf_tune_result *r) {
    free(r->tasks);
    r->tasks = NULL;
    pf_profile_free(&r->profile);
}
