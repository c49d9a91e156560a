#include "eval/bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/chat_tokens.h"
#include "engine/generate.h"
#include "engine/tokenizer.h"
#include "eval/probe.h"
#include "verify/strategies.h"

typedef struct {
    int32_t *toks;
    int n, cap;
} tokbuf;

static int collect(void *u, int32_t t) {
    tokbuf *b = u;
    if (b->n < b->cap) b->toks[b->n++] = t;
    return 0;
}

static void add_stats(pf_spec_stats *a, const pf_spec_stats *b) {
    a->rounds += b->rounds;
    a->tokens += b->tokens;
    a->drafted += b->drafted;
    for (int i = 0; i <= PF_MAX_BLOCK; i++) a->hist[i] += b->hist[i];
    for (int i = 0; i < PF_MAX_BLOCK; i++) {
        a->pos_tried[i] += b->pos_tried[i];
        a->pos_accepted[i] += b->pos_accepted[i];
    }
    a->t_draft += b->t_draft;
    a->t_ctx += b->t_ctx;
    a->t_prompt_ctx += b->t_prompt_ctx;
    a->t_verify += b->t_verify;
    a->t_accept += b->t_accept;
    a->t_other += b->t_other;
    a->t_total += b->t_total;
}

static void progress(const pf_bench_opts *o, int done, int total, const char *what) {
    if (!o->progress) return;
    int w = 30, fill = total ? done * w / total : w;
    fprintf(stderr, "\r[");
    for (int i = 0; i < w; i++) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %d/%d %-12s", done, total, what);
    if (done == total) fputc('\n', stderr);
}

int pf_bench_run(const char *model_path, const pf_task_suite *suite, const pf_bench_opts *o, pf_bench_result *r,
                 char err[PF_ERR_LEN]) {
    memset(r, 0, sizeof *r);
    snprintf(r->model, sizeof r->model, "%s", model_path);
    snprintf(r->draft, sizeof r->draft, "%s", o->draft_path ? o->draft_path : "");
    pf_model *m = pf_model_load(model_path, err);
    if (!m) return -1;
    pf_session_params sp = {.n_threads = o->threads, .n_ctx = o->n_ctx, .kv_q8 = o->kv_q8};
    pf_session *s = pf_session_new(m, &sp, err);
    pf_drafter *drafters[3] = {NULL, NULL, NULL}; /* dflash, ngram, hybrid: opened when a task needs them */
    int dblock[3] = {0, 0, 0};
    pf_dec *dec = NULL; /* with --spec dec: the draft's decision head */
    pf_spec **specs = NULL;
    int rc = -1;
    int32_t ***prompts = NULL;
    int **np = NULL;
    tokbuf a = {0}, b = {0};
    double *ar_t = NULL, *sp_t = NULL;
    if (!s) goto done;
    r->compute_start = pf_probe_compute(s->ctx->k, s->ctx->pool, 3);
    r->n = suite->n;
    r->tasks = calloc((size_t)suite->n, sizeof *r->tasks);
    specs = calloc((size_t)suite->n, sizeof *specs);
    if (!r->tasks || !specs) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        goto done;
    }
    /* the strategy and block of every task: the profile's entry, else the options */
    for (int t = 0; t < suite->n; t++) {
        const pf_profile_task *pt = pf_profile_find(o->profile, suite->types[t].type);
        const char *name = pt ? pt->spec : o->profile ? o->profile->spec : o->spec;
        int want = pt ? pt->block : o->profile ? o->profile->block : o->block;
        static const char *const opened[3] = {"dflash", "ngram", "hybrid"};
        int which = !strcmp(name, "ngram") ? 1 : !strcmp(name, "hybrid") ? 2 : 0, use_dec = !strcmp(name, "dec");
        if (!drafters[which]) {
            dblock[which] = 0;
            if (!(drafters[which] = pf_drafter_open(opened[which], o->draft_path, s, o->ngram_n, &dblock[which], err)))
                goto done;
            if (which != 1 && pf_drafter_apply_head(drafters[which], o->draft_head, err) < 0) goto done;
        }
        int block = want > 0 ? want : pf_default_block(name, dblock[which]);
        if (!(specs[t] = pf_spec_new(s, drafters[which], block, err))) goto done;
        if (use_dec) {
            if (!dec && !(dec = pf_dec_load_path(o->draft_path, m->hp.n_embd, err))) goto done;
            if (pf_spec_set_dec(specs[t], dec, NULL, 0, err) < 0) goto done;
        }
        snprintf(r->tasks[t].spec, sizeof r->tasks[t].spec, "%s", name);
        r->tasks[t].block = block;
        if (t == 0 || block > r->block) r->block = block;
    }
    prompts = calloc((size_t)suite->n, sizeof *prompts);
    np = calloc((size_t)suite->n, sizeof *np);
    a.cap = b.cap = o->max_tokens;
    a.toks = malloc((size_t)a.cap * sizeof(int32_t));
    b.toks = malloc((size_t)b.cap * sizeof(int32_t));
    /* per type, per repetition: decode seconds and tokens of each method */
    ar_t = calloc((size_t)suite->n * o->reps * 2, sizeof(double));
    sp_t = calloc((size_t)suite->n * o->reps * 2, sizeof(double));
    if (!prompts || !np || !a.toks || !b.toks || !ar_t || !sp_t) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        goto done;
    }
    int total = 0;
    for (int t = 0; t < suite->n; t++) {
        const pf_task_type *tt = &suite->types[t];
        prompts[t] = calloc((size_t)tt->n, sizeof **prompts);
        np[t] = calloc((size_t)tt->n, sizeof **np);
        if (!prompts[t] || !np[t]) { snprintf(err, PF_ERR_LEN, "out of memory"); goto done; }
        for (int i = 0; i < tt->n; i++) {
            size_t n = 0;
            if (pf_chat_tokenize(m->tok, NULL, tt->prompts[i].prompt, !o->no_special, &prompts[t][i], &n, err) < 0)
                goto done;
            np[t][i] = (int)n;
        }
        snprintf(r->tasks[t].type, sizeof r->tasks[t].type, "%s", tt->type);
        r->tasks[t].n_prompts = tt->n;
        r->tasks[t].identical = o->temp > 0 ? -1 : 1;
        total += tt->n;
    }
    total *= o->reps;
    int done_n = 0;
    for (int rep = 0; rep < o->reps; rep++)
        for (int t = 0; t < suite->n; t++) {
            pf_bench_task *bt = &r->tasks[t];
            double prefill_s = 0, ttft_a = 0, ttft_s = 0;
            int64_t prefill_tok = 0;
            for (int i = 0; i < suite->types[t].n; i++) {
                pf_gen_params gp;
                pf_gen_params_default(&gp);
                gp.max_tokens = o->max_tokens;
                gp.temp = o->temp;
                gp.top_k = o->top_k;
                gp.top_p = o->top_p;
                gp.seed = o->seed + (uint64_t)i;
                pf_gen_stats sa, ss;
                /* alternate the order so neither method always runs on a warmer cache */
                for (int k = 0; k < 2; k++) {
                    int use_spec = (k + rep + i) % 2;
                    gp.strategy = use_spec ? pf_spec_strategy(specs[t]) : NULL;
                    tokbuf *out = use_spec ? &b : &a;
                    out->n = 0;
                    pf_session_reset(s); /* every run prefills its whole prompt (no reuse between runs) */
                    if (pf_engine_generate_tokens(s, prompts[t][i], np[t][i], &gp, collect, out, use_spec ? &ss : &sa, err) != PF_OK)
                        goto done;
                    if (use_spec && rep == 0) add_stats(&bt->st, pf_spec_stats_get(specs[t]));
                }
                if (o->temp <= 0 && (a.n != b.n || memcmp(a.toks, b.toks, (size_t)a.n * sizeof(int32_t))))
                    bt->identical = 0;
                size_t idx = ((size_t)t * o->reps + rep) * 2;
                ar_t[idx] += sa.decode_s;
                ar_t[idx + 1] += sa.n_gen > 1 ? sa.n_gen - 1 : 0;
                sp_t[idx] += ss.decode_s;
                sp_t[idx + 1] += ss.n_gen > 1 ? ss.n_gen - 1 : 0;
                prefill_s += sa.prefill_s + ss.prefill_s;
                prefill_tok += 2 * sa.n_prompt;
                ttft_a += sa.ttft_s;
                ttft_s += ss.ttft_s;
                progress(o, ++done_n, total, bt->type);
            }
            if (rep == 0) {
                int n = suite->types[t].n ? suite->types[t].n : 1;
                bt->prefill_tok_s = prefill_s > 0 ? (double)prefill_tok / prefill_s : 0;
                bt->ttft_ar_ms = 1e3 * ttft_a / n;
                bt->ttft_spec_ms = 1e3 * ttft_s / n;
            }
        }
    double logsum = 0;
    int64_t rounds = 0, toks = 0;
    r->identical = 1;
    for (int t = 0; t < suite->n; t++) {
        pf_bench_task *bt = &r->tasks[t];
        double va[256], vs[256], vr[256];
        int n = o->reps < 256 ? o->reps : 256;
        for (int rep = 0; rep < n; rep++) {
            size_t idx = ((size_t)t * o->reps + rep) * 2;
            va[rep] = ar_t[idx] > 0 ? ar_t[idx + 1] / ar_t[idx] : 0;
            vs[rep] = sp_t[idx] > 0 ? sp_t[idx + 1] / sp_t[idx] : 0;
            vr[rep] = va[rep] > 0 ? vs[rep] / va[rep] : 0;
        }
        bt->ar_tokens = (int64_t)ar_t[((size_t)t * o->reps) * 2 + 1];
        bt->spec_tokens = (int64_t)sp_t[((size_t)t * o->reps) * 2 + 1];
        pf_stat_summarize(va, n, &bt->ar_tok_s);
        pf_stat_summarize(vs, n, &bt->spec_tok_s);
        pf_stat_summarize(vr, n, &bt->speedup);
        logsum += log(bt->speedup.median > 0 ? bt->speedup.median : 1e-9);
        rounds += bt->st.rounds;
        toks += bt->st.tokens;
        if (bt->identical == 0) r->identical = 0;
        if (bt->identical < 0 && r->identical == 1) r->identical = -1;
    }
    r->speedup_geomean = suite->n ? exp(logsum / suite->n) : 0;
    r->tau = rounds ? (double)toks / (double)rounds : 0;
    r->compute_end = pf_probe_compute(s->ctx->k, s->ctx->pool, 3);
    rc = 0;
done:
    if (prompts)
        for (int t = 0; t < suite->n; t++) {
            if (prompts[t])
                for (int i = 0; i < suite->types[t].n; i++) free(prompts[t][i]);
            free(prompts[t]);
            if (np) free(np[t]);
        }
    free(prompts);
    free(np);
    free(a.toks);
    free(b.toks);
    free(ar_t);
    free(sp_t);
    if (specs)
        for (int t = 0; t < suite->n; t++) pf_spec_free(specs[t]);
    free(specs);
    for (int k = 0; k < 3; k++) pf_drafter_free(drafters[k]);
    pf_dec_free(dec);
    pf_session_free(s);
    pf_model_free(m);
    if (rc) pf_bench_result_free(r);
    return rc;
}

void pf_bench_result_free(pf_bench_result *r) {
    free(r->tasks);
    r->tasks = NULL;
    r->n = 0;
}
