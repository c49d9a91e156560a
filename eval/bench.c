#include "eval/bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "draft/draft_open.h"
#include "engine/chat_tokens.h"
#include "engine/generate.h"
#include "engine/tokenizer.h"
#include "eval/bench_split.h"
#include "eval/stat.h"
#include "eval/probe.h"
#include "eval/schema_valid.h"
#include "grammar/lit_set.h"
#include "verify/strategies.h"
#include "include/pocketflash.h"

typedef struct {
    int32_t *toks;
    int n, cap;
} tokbuf;

static int collect(void *u, int32_t t) {
    tokbuf *b = u;
    if (b->n < b->cap) b->toks[b->n++] = t;
    return 0;
}

/* Count a document generated under schema: valid, invalid, or cut by the token limit. */
static void check_doc(const pf_tokenizer *tok, const tokbuf *b, const char *schema, pf_end stop, pf_bench_docs *d) {
    pf_sbuf text = {0};
    for (int i = 0; i < b->n; i++) {
        size_t len = 0;
        const char *bytes = pf_token_bytes(tok, b->toks[i], &len);
        if (bytes) pf_sbuf_put(&text, bytes, len);
    }
    int ok = !text.oom && pf_schema_valid_text(schema, text.p ? text.p : "", text.n);
    free(text.p);
    if (ok) d->valid++;
    else if (stop == PF_END_LENGTH) d->cut++;
    else d->invalid++;
}

static void progress(const pf_bench_opts *o, int done, int total, const char *what) {
    if (!o->progress) return;
    int w = 30, fill = total ? done * w / total : w;
    fprintf(stderr, "\r[");
    for (int i = 0; i < w; i++) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %d/%d %-12s", done, total, what);
    if (done == total) fputc('\n', stderr);
}

int pf_bench_arm_parse(const char *text, pf_bench_arm *arm, pf_profile *prof, char err[PF_ERR_LEN]) {
    memset(arm, 0, sizeof *arm);
    snprintf(arm->name, sizeof arm->name, "%s", text);
    const char *colon = strchr(text, ':');
    size_t klen = colon ? (size_t)(colon - text) : strlen(text);
    const char *val = colon ? colon + 1 : NULL;
    if (klen == 7 && !strncmp(text, "profile", 7)) {
        if (!val || !*val) {
            snprintf(err, PF_ERR_LEN, "--compare: profile:FILE needs a file");
            return -1;
        }
        if (pf_profile_load(val, prof, err) != PF_RC_OK) return -1;
        arm->kind = PF_KIND_DEFAULT;
        arm->profile = prof;
        return 0;
    }
    static const struct { const char *key; pf_kind kind; int need_block; } kinds[] = {
        {"fixed", PF_KIND_DFLASH, 1}, {"ngram", PF_KIND_NGRAM, 0}, {"hybrid", PF_KIND_HYBRID, 1}, {"dec", PF_KIND_DEC, 0},
        {"adaptive", PF_KIND_ADAPTIVE, 0}, {"default", PF_KIND_DEFAULT, -1}};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        if (strlen(kinds[k].key) != klen || strncmp(text, kinds[k].key, klen)) continue;
        arm->kind = kinds[k].kind;
        if (val) {
            char *end, what[80];
            long b = strtol(val, &end, 10);
            snprintf(what, sizeof what, "--compare: '%.40s': block", text);
            if (kinds[k].need_block < 0 || *end || end == val) {
                if (kinds[k].need_block < 0) snprintf(err, PF_ERR_LEN, "--compare: '%.40s': takes no block", text);
                else snprintf(err, PF_ERR_LEN, "--compare: '%.40s': the block is not a number", text);
                return -1;
            }
            if (pf_block_check(what, b, err) < 0) return -1;
            arm->block = (int)b;
        } else if (kinds[k].need_block > 0) {
            snprintf(err, PF_ERR_LEN, "--compare: '%.40s' needs a block (fixed:B)", text);
            return -1;
        }
        return 0;
    }
    snprintf(err, PF_ERR_LEN, "--compare: unknown strategy '%.40s' (fixed:B, ngram[:B], hybrid:B, dec[:B], adaptive[:B], default, profile:FILE)",
             text);
    return -1;
}

typedef struct {
    pf_dflash *w;      /* the draft, opened once for every arm (pf_draft_open), or NULL */
    pf_dec *dec;       /* its Dec head, or NULL */
    int opened;        /* the draft at hand was opened */
    pf_drafter *d[3];  /* dflash, ngram, hybrid over w: made when an arm needs them */
} bench_drafters;

static void bench_drafters_free(bench_drafters *dr) {
    for (int k = 0; k < 3; k++) pf_drafter_free(dr->d[k]);
    pf_dec_free(dr->dec);
    pf_dflash_free(dr->w); /* after the drafters that borrow it */
}

/* The draft at hand, opened on the first arm's call. */
static pf_rc open_draft(pf_engine_session *s, const pf_bench_opts *o, bench_drafters *dr, char err[PF_ERR_LEN]) {
    if (dr->opened || !pf_draft_at_hand(s, o->draft_path)) return PF_RC_OK;
    pf_rc rc = pf_draft_open(s->model, o->draft_path, &dr->w, &dr->dec, err);
    dr->opened = rc == PF_RC_OK;
    return rc;
}

static pf_rc get_drafter(pf_engine_session *s, const pf_bench_opts *o, bench_drafters *dr, pf_kind kind,
                         pf_drafter **out, char err[PF_ERR_LEN]) {
    int which = kind == PF_KIND_NGRAM ? 1 : kind == PF_KIND_HYBRID ? 2 : 0;
    pf_rc rc = PF_RC_OK;
    if (!dr->d[which]) {
        static const pf_kind kinds[3] = {PF_KIND_DFLASH, PF_KIND_NGRAM, PF_KIND_HYBRID};
        pf_strategy_plan plan = {.kind = kinds[which], .ngram_n = o->ngram_n};
        rc = pf_drafter_for(&plan, which == 1 ? NULL : dr->w, 0, s, &dr->d[which], err);
        if (rc == PF_RC_OK && which != 1) rc = pf_drafter_set_head(dr->d[which], o->draft_head, err);
    }
    *out = dr->d[which];
    return rc;
}

/* The one resolver's plan of an arm for a task type (NULL: the profile's default entry): the
 * draft's opening code, or PF_RC_ARG for a plan the resolver refuses. */
static pf_rc arm_plan(pf_engine_session *s, const pf_bench_opts *o, const pf_bench_arm *arm, const char *type,
                      bench_drafters *dr, pf_strategy_plan *plan, char err[PF_ERR_LEN]) {
    pf_strategy_desc desc = {.kind = arm->kind, .block = arm->block, .draft_head = o->draft_head, .ngram_n = o->ngram_n,
                             .profile = arm->profile,
                             .profile_fixed = arm->profile_fixed};
    /* a task type the profile does not name takes its default entry */
    desc.task = arm->profile && type && pf_profile_find(arm->profile, type) ? type : NULL;
    pf_rc rc = open_draft(s, o, dr, err);
    if (rc != PF_RC_OK) return rc;
    pf_strategy_desc_draft(&desc, dr->w, dr->dec);
    return pf_strategy_plan_make(&desc, plan, err) < 0 ? PF_RC_ARG : PF_RC_OK;
}

/* The speculation object of one arm for one task type, labelled with its strategy and block: the
 * arm's plan built over the drafters the arms share. */
static pf_rc arm_spec(pf_engine_session *s, const pf_bench_opts *o, const pf_bench_arm *arm, const char *type,
                      bench_drafters *dr, pf_bench_task *bt, pf_spec **sp, char err[PF_ERR_LEN]) {
    pf_strategy_plan plan;
    pf_drafter *d = NULL;
    pf_rc rc = arm_plan(s, o, arm, type, dr, &plan, err);
    if (rc == PF_RC_OK) rc = get_drafter(s, o, dr, plan.kind, &d, err);
    if (rc == PF_RC_OK) rc = pf_strategy_build(s, &plan, d, dr->dec, sp, err);
    if (rc != PF_RC_OK) return rc;
    snprintf(bt->spec, sizeof bt->spec, "%s", arm->profile && plan.use_prior ? "prior" : pf_kind_name(plan.kind));
    bt->block = arm->profile && plan.use_prior ? plan.profile_block : plan.block;
    return PF_RC_OK;
}

/* The one arm of a run without --compare: --spec/--block (no --spec: the default, which the
 * resolver makes dflash with --block, as everywhere) and --profile. */
static int single_arm(const pf_bench_opts *o, pf_bench_arm *arm, char err[PF_ERR_LEN]) {
    memset(arm, 0, sizeof *arm);
    const char *spec = o->spec ? o->spec : "default";
    if (pf_kind_parse(spec, &arm->kind, err) < 0) return -1;
    arm->block = o->block; /* with a profile too: explicit --spec/--block win, as in run */
    arm->profile = o->profile;
    arm->profile_fixed = o->profile_fixed;
    snprintf(arm->name, sizeof arm->name, "%s", o->profile ? "profile" : spec);
    return 0;
}

/* One run's shared state: the session, the arms' strategies per task type, the prompts, the
 * outputs of one prompt and the decode seconds and tokens per (arm, type, repetition). */
typedef struct {
    const pf_bench_opts *o;
    const pf_task_suite *suite;
    pf_bench_result *r;
    const pf_model *m;
    pf_session *s;
    int n_arms;
    pf_spec **specs;     /* [arm][type] */
    int32_t ***prompts;  /* [type][prompt] token ids */
    int **np;            /* their lengths */
    tokbuf out[PF_BENCH_MAX_ARMS + 1]; /* [0] plain, then each arm's output of a prompt */
    double *plain_t, *sp_t; /* [type][rep] / [arm][type][rep]: decode seconds, tokens */
    pf_bench_record rec; /* per prompt, for the constrained tasks' split */
    int done, total;     /* prompts measured, for the progress bar */
} bench_state;

/* Every prompt as chat token ids. PF_RC_OK, or the tokenizer's code with err. */
static pf_rc tokenize_prompts(bench_state *b, const pf_model *m, char err[PF_ERR_LEN]) {
    const pf_task_suite *suite = b->suite;
    b->prompts = calloc((size_t)suite->n, sizeof *b->prompts);
    b->np = calloc((size_t)suite->n, sizeof *b->np);
    if (!b->prompts || !b->np) goto oom;
    for (int t = 0; t < suite->n; t++) {
        const pf_task_type *tt = &suite->types[t];
        b->prompts[t] = calloc((size_t)tt->n, sizeof **b->prompts);
        b->np[t] = calloc((size_t)tt->n, sizeof **b->np);
        if (!b->prompts[t] || !b->np[t]) goto oom;
        for (int i = 0; i < tt->n; i++) {
            size_t n = 0;
            pf_rc rc = pf_chat_tokenize(m->tok, NULL, tt->prompts[i].prompt, !b->o->no_special, &b->prompts[t][i], &n, err);
            if (rc != PF_RC_OK) return rc;
            b->np[t][i] = (int)n;
            /* checked before anything is measured, not when the run reaches the prompt */
            if ((int64_t)n >= b->s->engine.ctx->kv->n_ctx) {
                snprintf(err, PF_ERR_LEN, "%s prompt %d: %zu tokens do not fit the context of %lld tokens (-c)", tt->type,
                         i + 1, n, (long long)b->s->engine.ctx->kv->n_ctx);
                return PF_RC_CONTEXT;
            }
        }
        b->total += tt->n;
    }
    b->total *= b->o->reps;
    return PF_RC_OK;
oom:
    snprintf(err, PF_ERR_LEN, "out of memory");
    return PF_RC_OOM;
}

/* Prefill and first-token times of one type's prompts in the first repetition. */
typedef struct {
    double prefill_s, ttft_a, ttft_s[PF_BENCH_MAX_ARMS];
    int64_t prefill_tok;
} type_times;

/* Prompt i of type t, plain and every arm, the order rotating so that none always runs on a
 * warmer cache; outputs compared with plain decoding's. PF_RC_OK, or generation's code with err. */
static pf_rc run_prompt(bench_state *b, int rep, int t, int i, type_times *tt, char err[PF_ERR_LEN]) {
    const pf_bench_opts *o = b->o;
    const int n_types = b->suite->n, runs = b->n_arms + 1;
    pf_decode_params gp = {.max_tokens = o->max_tokens, .temp = o->temp, .top_k = o->top_k, .top_p = o->top_p,
                           .seed = o->seed + (uint64_t)i, .stop_at_eot = true};
    const char *schema = b->suite->types[t].constrained ? b->suite->types[t].prompts[i].schema : NULL;
    gp.json_schema = schema;
    for (int k = 0; k < runs; k++) {
        int j = (k + rep + i) % runs; /* 0 = plain, else arm j-1 */
        pf_spec *spec = j ? b->specs[(j - 1) * n_types + t] : NULL;
        pf_decode_stats gs;
        b->out[j].n = 0;
        pf_session_reset(b->s); /* every run prefills its whole prompt (no reuse between runs) */
        pf_rc rc = pf_engine_generate_tokens(&b->s->engine, b->prompts[t][i], b->np[t][i], &gp,
                                             j ? pf_spec_strategy(spec) : NULL, collect, &b->out[j], &gs, err);
        if (rc != PF_RC_OK) return rc;
        size_t idx = j ? (((size_t)(j - 1) * n_types + t) * o->reps + rep) * 2 : ((size_t)t * o->reps + rep) * 2;
        double *acc = j ? b->sp_t : b->plain_t;
        acc[idx] += gs.decode_s;
        acc[idx + 1] += gs.n_gen > 1 ? gs.n_gen - 1 : 0;
        tt->prefill_s += gs.prefill_s;
        tt->prefill_tok += gs.n_prompt;
        if (!j) tt->ttft_a += gs.ttft_s;
        else tt->ttft_s[j - 1] += gs.ttft_s;
        if (j && rep == 0) pf_spec_stats_add(&b->r->arms[j - 1].tasks[t].st, pf_spec_stats_get(spec));
        const pf_spec_stats *pst = j ? pf_spec_stats_get(spec) : NULL;
        pf_bench_record_add(&b->rec, t, i, j, gs.decode_s, gs.n_gen > 1 ? gs.n_gen - 1 : 0, pst ? pst->rounds : 0,
                            pst ? pst->tokens : 0);
        if (!j && rep == 0) pf_bench_record_plain(&b->rec, t, i, b->out[0].toks, b->out[0].n);
        if (schema && rep == 0) {
            if (j) check_doc(b->m->tok, &b->out[j], schema, gs.stop, &b->r->arms[j - 1].tasks[t].spec_docs);
            else
                for (int a = 0; a < b->n_arms; a++) check_doc(b->m->tok, &b->out[0], schema, gs.stop, &b->r->arms[a].tasks[t].plain_docs);
        }
    }
    for (int k = 0; k < b->n_arms && o->temp <= 0; k++)
        if (b->out[0].n != b->out[k + 1].n || memcmp(b->out[0].toks, b->out[k + 1].toks, (size_t)b->out[0].n * sizeof(int32_t)))
            b->r->arms[k].tasks[t].identical = 0;
    progress(o, ++b->done, b->total, b->suite->types[t].type);
    return PF_RC_OK;
}

/* Every repetition of every type's prompts. PF_RC_OK, or run_prompt's code with err. */
static pf_rc measure(bench_state *b, char err[PF_ERR_LEN]) {
    for (int rep = 0; rep < b->o->reps; rep++)
        for (int t = 0; t < b->suite->n; t++) {
            type_times tt = {0};
            for (int i = 0; i < b->suite->types[t].n; i++) {
                pf_rc rc = run_prompt(b, rep, t, i, &tt, err);
                if (rc != PF_RC_OK) return rc;
            }
            if (rep) continue;
            int n = b->suite->types[t].n ? b->suite->types[t].n : 1;
            for (int k = 0; k < b->n_arms; k++) {
                pf_bench_task *bt = &b->r->arms[k].tasks[t];
                bt->prefill_tok_s = tt.prefill_s > 0 ? (double)tt.prefill_tok / tt.prefill_s : 0;
                bt->ttft_plain_ms = 1e3 * tt.ttft_a / n;
                bt->ttft_spec_ms = 1e3 * tt.ttft_s[k] / n;
            }
        }
    return PF_RC_OK;
}

/* Arm k's per-type speeds and speedups (median over repetitions), geomean, tau and identity. */
static void summarize_arm(const bench_state *b, int k) {
    const pf_bench_opts *o = b->o;
    const pf_task_suite *suite = b->suite;
    pf_bench_arm_result *ar = &b->r->arms[k];
    double logsum = 0;
    int64_t rounds = 0, toks = 0;
    ar->identical = 1;
    for (int t = 0; t < suite->n; t++) {
        pf_bench_task *bt = &ar->tasks[t];
        double va[256], vs[256], vr[256];
        int n = o->reps < 256 ? o->reps : 256;
        for (int rep = 0; rep < n; rep++) {
            size_t ia = ((size_t)t * o->reps + rep) * 2, is = (((size_t)k * suite->n + t) * o->reps + rep) * 2;
            va[rep] = b->plain_t[ia] > 0 ? b->plain_t[ia + 1] / b->plain_t[ia] : 0;
            vs[rep] = b->sp_t[is] > 0 ? b->sp_t[is + 1] / b->sp_t[is] : 0;
            vr[rep] = va[rep] > 0 ? vs[rep] / va[rep] : 0;
        }
        bt->plain_tokens = (int64_t)b->plain_t[((size_t)t * o->reps) * 2 + 1];
        bt->spec_tokens = (int64_t)b->sp_t[(((size_t)k * suite->n + t) * o->reps) * 2 + 1];
        pf_stat_summarize(va, n, &bt->plain_tok_s);
        pf_stat_summarize(vs, n, &bt->spec_tok_s);
        pf_stat_summarize(vr, n, &bt->speedup);
        logsum += log(bt->speedup.median > 0 ? bt->speedup.median : 1e-9);
        rounds += bt->st.rounds;
        toks += bt->st.tokens;
        if (bt->identical == 0) ar->identical = 0;
        if (bt->identical < 0 && ar->identical == 1) ar->identical = -1;
    }
    ar->speedup_geomean = suite->n ? exp(logsum / suite->n) : 0;
    ar->tau = rounds ? (double)toks / (double)rounds : 0;
}

/* Each arm's strategy for each task type (labelled in the result), and the output buffers. */
static pf_rc make_arms(bench_state *b, const pf_bench_arm *arms, bench_drafters *dr, char err[PF_ERR_LEN]) {
    const pf_task_suite *suite = b->suite;
    b->r->n = suite->n;
    b->r->n_arms = b->n_arms;
    if (!(b->specs = calloc((size_t)b->n_arms * suite->n, sizeof *b->specs))) goto oom;
    for (int k = 0; k < b->n_arms; k++) {
        pf_bench_arm_result *ar = &b->r->arms[k];
        snprintf(ar->name, sizeof ar->name, "%s", arms[k].name);
        if (!(ar->tasks = calloc((size_t)suite->n, sizeof *ar->tasks))) goto oom;
        for (int t = 0; t < suite->n; t++) {
            pf_bench_task *bt = &ar->tasks[t];
            pf_rc rc = arm_spec(&b->s->engine, b->o, &arms[k], suite->types[t].type, dr, bt, &b->specs[k * suite->n + t], err);
            if (rc != PF_RC_OK) return rc;
            if (t == 0 || bt->block > ar->block) ar->block = bt->block;
            snprintf(bt->type, sizeof bt->type, "%s", suite->types[t].type);
            bt->n_prompts = suite->types[t].n;
            bt->identical = b->o->temp > 0 ? -1 : 1;
            bt->constrained = b->suite->types[t].constrained;
            bt->twin = bt->constrained ? b->suite->types[t].twin : -1;
        }
        /* the one arm of a run without --spec is named by what the resolver made of it */
        if (!b->o->arms && arms[k].kind == PF_KIND_DEFAULT && !arms[k].profile && suite->n)
            snprintf(ar->name, sizeof ar->name, "%s", ar->tasks[0].spec);
    }
    for (int k = 0; k <= b->n_arms; k++) {
        b->out[k].cap = b->o->max_tokens;
        if (!(b->out[k].toks = malloc((size_t)b->out[k].cap * sizeof(int32_t)))) goto oom;
    }
    b->plain_t = calloc((size_t)suite->n * b->o->reps * 2, sizeof(double));
    b->sp_t = calloc((size_t)b->n_arms * suite->n * b->o->reps * 2, sizeof(double));
    if (b->plain_t && b->sp_t && pf_bench_record_init(&b->rec, suite, b->n_arms, b->o->max_tokens) == 0) return PF_RC_OK;
oom:
    snprintf(err, PF_ERR_LEN, "out of memory");
    return PF_RC_OOM;
}

static void bench_state_free(bench_state *b) {
    if (b->prompts)
        for (int t = 0; t < b->suite->n; t++) {
            if (b->prompts[t])
                for (int i = 0; i < b->suite->types[t].n; i++) free(b->prompts[t][i]);
            free(b->prompts[t]);
            if (b->np) free(b->np[t]);
        }
    free(b->prompts);
    free(b->np);
    for (int k = 0; k <= PF_BENCH_MAX_ARMS; k++) free(b->out[k].toks);
    free(b->plain_t);
    free(b->sp_t);
    pf_bench_record_free(&b->rec);
    if (b->specs)
        for (int k = 0; k < b->n_arms * b->suite->n; k++) pf_spec_free(b->specs[k]);
    free(b->specs);
}

/* The arms of a run: o->arms, else the one arm of --spec/--block/--profile into *one. */
static const pf_bench_arm *run_arms(const pf_bench_opts *o, pf_bench_arm *one, int *n_arms, char err[PF_ERR_LEN]) {
    *n_arms = o->n_arms;
    if (o->arms && o->n_arms >= 1) return o->arms;
    *n_arms = 1;
    return single_arm(o, one, err) < 0 ? NULL : one;
}

pf_rc pf_bench_plans(const char *model_path, const pf_bench_opts *o, FILE *f, char err[PF_ERR_LEN]) {
    pf_bench_arm one;
    int n_arms;
    const pf_bench_arm *arms = run_arms(o, &one, &n_arms, err);
    if (!arms) return PF_RC_ARG;
    pf_model *m = NULL;
    pf_rc rc = (pf_rc)pf_load_model_with(model_path, &o->load, &m, err);
    if (rc != PF_RC_OK) return rc;
    pf_session_params sp = {.n_threads = 1, .n_ctx = o->n_ctx, .kv_q8 = o->kv_q8};
    pf_session *s = NULL;
    rc = (pf_rc)pf_session_new(m, &sp, &s, err);
    bench_drafters dr = {0};
    for (int k = 0; rc == PF_RC_OK && k < n_arms; k++) {
        pf_strategy_plan plan;
        char line[160];
        rc = arm_plan(&s->engine, o, &arms[k], NULL, &dr, &plan, err);
        if (rc != PF_RC_OK) break;
        pf_plan_format(&plan, line, sizeof line);
        if (o->arms) fprintf(f, "plan %s: %s\n", arms[k].name, line);
        else fprintf(f, "plan: %s\n", line);
    }
    bench_drafters_free(&dr);
    pf_session_free(s);
    pf_model_free(m);
    return rc;
}

pf_rc pf_bench_run(const char *model_path, const pf_task_suite *suite, const pf_bench_opts *o, pf_bench_result *r,
                   char err[PF_ERR_LEN]) {
    memset(r, 0, sizeof *r);
    snprintf(r->model, sizeof r->model, "%s", model_path);
    snprintf(r->draft, sizeof r->draft, "%s", o->draft_path ? o->draft_path : "");
    pf_bench_arm one;
    int n_arms;
    const pf_bench_arm *arms = run_arms(o, &one, &n_arms, err);
    if (!arms) return PF_RC_ARG;
    if (n_arms > PF_BENCH_MAX_ARMS) {
        snprintf(err, PF_ERR_LEN, "at most %d strategies in one run", PF_BENCH_MAX_ARMS);
        return PF_RC_ARG;
    }
    pf_model *m = NULL;
    pf_rc rc = (pf_rc)pf_load_model_with(model_path, &o->load, &m, err);
    if (rc != PF_RC_OK) return rc;
    r->level = m->opts.level;
    pf_session_params sp = {.n_threads = o->threads, .n_ctx = o->n_ctx, .kv_q8 = o->kv_q8};
    bench_state b = {.o = o, .suite = suite, .r = r, .m = m, .n_arms = n_arms};
    rc = (pf_rc)pf_session_new(m, &sp, &b.s, err);
    bench_drafters dr = {0};
    if (rc == PF_RC_OK) {
        double la[1];
        r->load_start = getloadavg(la, 1) == 1 ? la[0] : -1;
        r->compute_start = pf_probe_compute(b.s->engine.ctx->k, b.s->engine.ctx->pool, 3);
        rc = make_arms(&b, arms, &dr, err);
        if (rc == PF_RC_OK) rc = tokenize_prompts(&b, m, err);
        if (rc == PF_RC_OK) rc = measure(&b, err);
    }
    if (rc == PF_RC_OK) {
        for (int k = 0; k < n_arms; k++) {
            summarize_arm(&b, k);
            pf_bench_record_split(&b.rec, suite, k, r->arms[k].tasks);
            pf_bench_record_by_length(&b.rec, suite, b.np, k, r->arms[k].by_len);
        }
        r->tasks = r->arms[0].tasks;
        r->block = r->arms[0].block;
        r->speedup_geomean = r->arms[0].speedup_geomean;
        r->tau = r->arms[0].tau;
        r->identical = r->arms[0].identical;
        r->compute_end = pf_probe_compute(b.s->engine.ctx->k, b.s->engine.ctx->pool, 3);
        double la[1];
        r->load_end = getloadavg(la, 1) == 1 ? la[0] : -1;
    }
    bench_state_free(&b);
    bench_drafters_free(&dr);
    pf_session_free(b.s);
    pf_model_free(m);
    if (rc) pf_bench_result_free(r);
    return rc;
}

void pf_bench_result_free(pf_bench_result *r) {
    for (int k = 0; k < PF_BENCH_MAX_ARMS; k++) {
        free(r->arms[k].tasks);
        r->arms[k].tasks = NULL;
    }
    r->tasks = NULL;
    r->n = r->n_arms = 0;
}
