#include "verify/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify/accept.h"
#include "verify/adapt.h"
#include "engine/clock.h"

struct pf_spec {
    pf_session *s;
    pf_drafter *d;
    pf_strategy strat;
    int block;
    pf_spec_stats st;
    int32_t *rows;  /* [bonus, d1..] */
    float *logits;  /* block * n_vocab */
    float *taps;    /* block * n_taps * n_embd (the drafter's taps, plus the final layer with Dec/logging) */
    float *dtaps;   /* the drafter's taps alone, repacked, when the final layer is added */
    pf_dist *q;     /* block proposal distributions */
    pf_dist p, resid;
    /* adaptive planning (Dec gating or the adaptive block) and round logging (NULL when off) */
    pf_adapt *ad;
    const pf_dec *dec;
    int calibrated;       /* the cost model's starting point was measured (first generation) */
    double prior_c[PF_MAX_BLOCK + 1], prior_d[PF_MAX_BLOCK + 1]; /* relative costs from a profile */
    int have_prior, prior_fixed;
    pf_drafter *own_d; /* freed with the strategy (pf_spec_own) */
    pf_dec *own_dec;
    FILE *log;
    int *tap_list, n_taps; /* what the verify forward taps */
    /* rows committed by plain steps of an adaptive strategy, handed to the drafter in one batch
     * when it drafts next (one n-row context injection is cheaper than n one-row ones) */
    int32_t pend_tok[PF_MAX_BLOCK];
    float *pend_taps; /* PF_MAX_BLOCK rows of the drafter's taps */
    int n_pend;
    float *h_target;       /* final residual row of the last committed position */
};

/* Extra final-layer tap: the target row a decision head reads. */
static int needs_final_tap(const pf_spec *sp) { return sp->dec || sp->log; }

/* Copy the drafter's taps (all but the last per row) of n rows into dtaps. */
static const float *drafter_taps(pf_spec *sp, const float *taps, int n) {
    if (!needs_final_tap(sp) || !taps) return taps;
    const int H = sp->s->model->hp.n_embd, nd = sp->d->n_taps;
    for (int r = 0; r < n; r++)
        memcpy(sp->dtaps + (size_t)r * nd * H, taps + (size_t)r * sp->n_taps * H, (size_t)nd * H * sizeof(float));
    return sp->dtaps;
}

static void keep_final_row(pf_spec *sp, const float *taps, int row) {
    if (!needs_final_tap(sp) || !taps) return;
    const int H = sp->s->model->hp.n_embd;
    memcpy(sp->h_target, taps + ((size_t)row * sp->n_taps + sp->n_taps - 1) * H, (size_t)H * sizeof(float));
}

/* Seconds of an n-row forward at the current depth, the fastest of `reps`; its rows are then
 * truncated away (the cache is unchanged). */
static double time_forward(pf_spec *sp, const int32_t *rows, int n, int reps, char err[PF_ERR_LEN]) {
    pf_ctx *c = sp->s->ctx;
    int64_t len = c->kv->len;
    double best = 1e9;
    for (int rep = 0; rep < reps; rep++) {
        pf_batch b = {.tokens = rows, .n = n, .logits_mode = PF_LOGITS_ALL, .logits = sp->logits};
        double t0 = pf_now_s();
        if (pf_forward(c, &b, err) < 0) return -1;
        double dt = pf_now_s() - t0;
        pf_kv_truncate(c->kv, len);
        if (dt < best) best = dt;
    }
    return best;
}

/* The cost model's starting point, once per speculation object (later generations keep the
 * running estimates): t(n) at a few row counts and the draft's cost at a few block sizes, measured
 * at the prompt's depth after the drafter has its context. t(1) is measured before and after the
 * others and the faster kept (the first forwards after a prefill run on cold caches; a noisy t(1)
 * skews every plain-or-draft decision, and the rounds seldom refresh it). With a profile's relative
 * costs, t(1) and t(nref) are measured alternately and the profile's curve is refitted through
 * them: its shape is the prior, its slope this minute's (the bandwidth/compute regime that sets
 * the slope drifts between the tune run and now). Later rounds refine every estimate. */
static int calibrate(pf_spec *sp, const int32_t *prompt, int n_prompt, char err[PF_ERR_LEN]) {
    pf_ctx *c = sp->s->ctx;
    int32_t rows[PF_MAX_BLOCK], drafts[PF_MAX_BLOCK];
    for (int i = 0; i < sp->block; i++) rows[i] = prompt[(n_prompt - 1 + i) % n_prompt];
    double t1 = time_forward(sp, rows, 1, 2, err);
    if (t1 < 0) return -1;
    sp->calibrated = 1;
    if (sp->have_prior) {
        int nref = sp->block < 4 ? sp->block : 4;
        if (c->kv->len + nref > c->kv->n_ctx) nref = 1;
        double tr = 1e9;
        for (int rep = 0; rep < 3 && nref > 1; rep++) {
            double a = time_forward(sp, rows, nref, 1, err);
            if (a < 0) return -1;
            double b = time_forward(sp, rows, 1, 1, err);
            if (b < 0) return -1;
            if (a < tr) tr = a;
            if (b < t1) t1 = b;
        }
        pf_cost_model *cm = &sp->ad->cost;
        pf_cost_set_prior(cm, sp->prior_c, sp->prior_d, sp->block + 1, t1);
        if (!sp->prior_fixed && nref > 1) pf_cost_refit(cm, nref, tr / t1);
        cm->frozen = sp->prior_fixed;
        return 0;
    }
    /* every row count up to 8 (a B-row forward's cost is not smooth in B: the kernels switch from
     * one-row to blocked paths, and on this CPU c(3) ~ c(2) while c(4) jumps), then 12, 16, 24..;
     * the rounds refine every estimate */
    static const int big[] = {12, 16, 24, 32, 48, 64};
    double tn[PF_MAX_BLOCK + 1] = {0}, cr[PF_MAX_BLOCK + 1] = {0}, dr[PF_MAX_BLOCK + 1] = {0};
    for (int i = 2, j = 0; i <= sp->block;) {
        int n = i;
        if (c->kv->len + n > c->kv->n_ctx) break;
        if ((tn[n] = time_forward(sp, rows, n, n <= 4 ? 2 : 1, err)) < 0) return -1;
        if (n == 4 || n == sp->block) {
            double best = 1e9; /* the fastest of two proposals (the first one warms the draft up) */
            for (int rep = 0; rep < 2; rep++) {
                double t0 = pf_now_s(); /* a proposal leaves the drafter's context as it was */
                if (sp->d->propose(sp->d->state, prompt[n_prompt - 1], c->kv->len, n, NULL, NULL, drafts, NULL, err) < 0)
                    return -1;
                double dt = pf_now_s() - t0;
                if (dt < best) best = dt;
            }
            dr[n] = best;
        }
        if (n == sp->block) break;
        if (i < 8) i++;
        else {
            while (j < 6 && big[j] <= i) j++;
            i = j < 6 && big[j] < sp->block ? big[j] : sp->block;
        }
    }
    double t1b = time_forward(sp, rows, 1, 2, err);
    if (t1b < 0) return -1;
    if (t1b < t1) t1 = t1b;
    cr[1] = 1;
    for (int n = 2; n <= sp->block; n++) {
        if (tn[n] > 0) cr[n] = tn[n] / t1;
        if (dr[n] > 0) dr[n] /= t1;
    }
    pf_cost_set_prior(&sp->ad->cost, cr, dr, sp->block + 1, t1);
    return 0;
}

static int spec_begin(void *state, pf_session *s, const int32_t *prompt, int n_prompt, const float *taps,
                      char err[PF_ERR_LEN]) {
    pf_spec *sp = state;
    (void)s;
    memset(&sp->st, 0, sizeof sp->st);
    sp->n_pend = 0;
    if (sp->ad) sp->ad->plain_run = 0;
    double t0 = pf_now_s();
    keep_final_row(sp, taps, n_prompt - 1);
    const float *dt = NULL;
    if (taps && needs_final_tap(sp)) {
        /* repack the prompt's rows in chunks of the block buffer */
        for (int r0 = 0; r0 < n_prompt; r0 += sp->block) {
            int n = n_prompt - r0 < sp->block ? n_prompt - r0 : sp->block;
            dt = drafter_taps(sp, taps + (size_t)r0 * sp->n_taps * s->model->hp.n_embd, n);
            int r = r0 == 0 ? (sp->d->begin ? sp->d->begin(sp->d->state, prompt, n, dt, err) : 0)
                            : (sp->d->commit ? sp->d->commit(sp->d->state, prompt + r0, n, dt, err) : 0);
            if (r < 0) return -1;
        }
        sp->st.t_prompt_ctx += pf_now_s() - t0;
    } else {
        int r = sp->d->begin ? sp->d->begin(sp->d->state, prompt, n_prompt, taps, err) : 0;
        sp->st.t_prompt_ctx += pf_now_s() - t0;
        if (r < 0) return -1;
    }
    if (sp->ad && !sp->calibrated && n_prompt > 0 && calibrate(sp, prompt, n_prompt, err) < 0) return -1;
    return 0;
}

static void log_round(pf_spec *sp, int nd, int a) {
    int n_rows = 0, dim = 0;
    const float *h = sp->d->hidden ? sp->d->hidden(sp->d->state, &n_rows, &dim) : NULL;
    if (!h || n_rows < nd + 1 || nd < 1) return;
    int32_t hdr[4] = {0x52434544, dim, nd, a}; /* "DECR" */
    fwrite(hdr, sizeof hdr, 1, sp->log);
    fwrite(sp->h_target, sizeof(float), (size_t)dim, sp->log);
    fwrite(h, sizeof(float), (size_t)(nd + 1) * dim, sp->log);
}

/* Hand the pending plain-step rows to the drafter. */
static int flush_pending(pf_spec *sp, char err[PF_ERR_LEN]) {
    int n = sp->n_pend;
    sp->n_pend = 0;
    if (!n || !sp->d->commit) return 0;
    return sp->d->commit(sp->d->state, sp->pend_tok, n, sp->d->n_taps ? sp->pend_taps : NULL, err);
}

/* Commit a round's rows to the drafter: a plain step's row waits for the next drafting round. */
static int commit_rows(pf_spec *sp, int n, const float *taps, int plain, char err[PF_ERR_LEN]) {
    if (!sp->d->commit) return 0;
    if (!plain || !sp->pend_taps) {
        if (flush_pending(sp, err) < 0) return -1;
        return sp->d->commit(sp->d->state, sp->rows, n, taps, err);
    }
    if (sp->n_pend == PF_MAX_BLOCK && flush_pending(sp, err) < 0) return -1;
    size_t row = (size_t)sp->d->n_taps * sp->s->model->hp.n_embd;
    sp->pend_tok[sp->n_pend] = sp->rows[0];
    if (row) memcpy(sp->pend_taps + sp->n_pend * row, taps, row * sizeof(float));
    sp->n_pend++;
    return 0;
}

/* Multi-turn reuse (pf_strategy.keep / resume): the drafter keeps its context of the rows the
 * session's cache kept (pending plain-step rows are handed over first, so its context covers the
 * cache), and resume feeds it the prompt's new rows as spec_begin feeds a whole prompt (context
 * rows do not depend on how they were split over calls). */
static int spec_keep(void *state, pf_session *s, int n_keep) {
    pf_spec *sp = state;
    (void)s;
    char err[PF_ERR_LEN];
    if (!sp->d->truncate || flush_pending(sp, err) < 0) return -1;
    return sp->d->truncate(sp->d->state, n_keep);
}

static int spec_resume(void *state, pf_session *s, const int32_t *prompt, int n_prompt, int n_keep, const float *taps,
                       char err[PF_ERR_LEN]) {
    pf_spec *sp = state;
    memset(&sp->st, 0, sizeof sp->st);
    sp->n_pend = 0;
    if (sp->ad) sp->ad->plain_run = 0;
    double t0 = pf_now_s();
    const int n_new = n_prompt - n_keep;
    const size_t row = (size_t)sp->n_taps * s->model->hp.n_embd;
    keep_final_row(sp, taps, n_new - 1);
    /* in chunks of the block buffer when the final layer's tap must be dropped */
    for (int r0 = 0, n; r0 < n_new; r0 += n) {
        n = needs_final_tap(sp) && n_new - r0 > sp->block ? sp->block : n_new - r0;
        const float *dt = drafter_taps(sp, taps ? taps + (size_t)r0 * row : NULL, n);
        if (sp->d->commit && sp->d->commit(sp->d->state, prompt + n_keep + r0, n, dt, err) < 0) return -1;
    }
    sp->st.t_prompt_ctx += pf_now_s() - t0;
    if (sp->ad && !sp->calibrated && n_prompt > 0 && calibrate(sp, prompt, n_prompt, err) < 0) return -1;
    return 0;
}

static int spec_step(void *state, pf_session *s, int32_t last, int32_t *out, int cap, char err[PF_ERR_LEN]) {
    pf_spec *sp = state;
    pf_spec_stats *st = &sp->st;
    pf_ctx *c = s->ctx;
    const int V = s->model->hp.n_vocab;
    double t0 = pf_now_s(), t1, t2, t3, t4;
    int B = sp->block;
    if (B > cap) B = cap; /* length limit and room left in the context */
    int64_t start = c->kv->len;
    int greedy = s->sampling.temp <= 0;
    int nd = 0, proposed = 0;
    /* the adaptive planner picks the rows to draft this round (1: a plain step) */
    if (sp->ad && B >= 2) B = pf_adapt_plan(sp->ad, sp->dec ? sp->h_target : NULL, B);
    if (B >= 2) {
        if (sp->n_pend) { /* the drafter needs its whole context: the plain steps' rows first */
            int n_pend = sp->n_pend;
            if (flush_pending(sp, err) < 0) return -1;
            double tf = pf_now_s();
            if (sp->ad) pf_cost_observe_flush(&sp->ad->cost, n_pend, tf - t0); /* the plain steps' deferred cost */
            st->t_ctx += tf - t0;
            st->t_total += tf - t0;
            t0 = tf;
        }
        /* an adaptive strategy drafts point masses (the draft's argmax): the target's own samples then
         * decide, with plain sampling's random numbers, so a seed gives plain sampling's text
         * whatever the timing-driven decisions are */
        int point_mass = greedy || sp->ad;
        nd = sp->d->propose(sp->d->state, last, start, B, point_mass ? NULL : &s->sampling, &s->rng, sp->rows + 1,
                            point_mass || sp->d->deterministic ? NULL : sp->q, err);
        if (nd < 0) return -1;
        if (nd > B - 1) nd = B - 1;
        proposed = nd;
        st->draft_rounds++;
        if (sp->ad && nd > 0) {
            pf_cost_observe_draft(&sp->ad->cost, B, pf_now_s() - t0);
            int n_rows = 0, dim = 0; /* Dec: how many of these drafts are worth verifying */
            const float *h = sp->dec && sp->d->hidden ? sp->d->hidden(sp->d->state, &n_rows, &dim) : NULL;
            if (h && n_rows >= nd + 1) nd = pf_adapt_choose(sp->ad, sp->h_target, h, nd);
        }
    }
    t1 = pf_now_s();
    sp->rows[0] = last;
    pf_batch b = {.tokens = sp->rows, .n = nd + 1, .logits_mode = PF_LOGITS_ALL, .logits = sp->logits,
                  .tap_layers = sp->strat.tap_layers, .n_taps = sp->strat.n_taps, .taps = sp->taps};
    if (pf_forward(c, &b, err) < 0) return -1;
    t2 = pf_now_s();
    int32_t bonus;
    int a = greedy ? pf_accept_greedy(sp->logits, V, sp->rows + 1, nd, &bonus)
                   : pf_accept_sampled(sp->logits, V, sp->rows + 1, sp->q, nd, sp->d->deterministic || sp->ad != NULL,
                                       &s->sampling, &s->rng, &sp->p, &sp->resid, &bonus);
    pf_kv_truncate(c->kv, start + a + 1);
    memcpy(out, sp->rows + 1, (size_t)a * sizeof *out);
    out[a] = bonus;
    t3 = pf_now_s();
    if (sp->log && proposed == nd) log_round(sp, nd, a);
    keep_final_row(sp, sp->taps, a);
    if (commit_rows(sp, a + 1, drafter_taps(sp, sp->taps, a + 1), sp->ad && nd == 0, err) < 0) return -1;
    t4 = pf_now_s();
    if (sp->ad) { /* the running cost model and acceptance follow every round */
        pf_cost_observe_verify(&sp->ad->cost, nd + 1, t2 - t1);
        pf_cost_observe_overhead(&sp->ad->cost, nd == 0, t4 - t2);
        pf_adapt_observe(sp->ad, nd, a);
    }
    st->verified_rows[nd + 1]++;
    st->rounds++;
    st->tokens += a + 1;
    st->hist[a]++;
    st->drafted += nd;
    for (int k = 0; k < nd; k++) st->pos_tried[k]++;
    for (int k = 0; k < a; k++) st->pos_accepted[k]++;
    st->t_draft += t1 - t0;
    st->t_verify += t2 - t1;
    st->t_accept += t3 - t2;
    st->t_ctx += t4 - t3;
    st->t_total += pf_now_s() - t0;
    return a + 1;
}

pf_spec *pf_spec_new(pf_session *s, pf_drafter *d, int block, char err[PF_ERR_LEN]) {
    if (block < 2 || block > PF_MAX_BLOCK) {
        snprintf(err, PF_ERR_LEN, "block size %d is outside 2..%d", block, PF_MAX_BLOCK);
        return NULL;
    }
    const pf_hparams *hp = &s->model->hp;
    pf_spec *sp = calloc(1, sizeof *sp);
    if (!sp) goto oom;
    sp->s = s;
    sp->d = d;
    sp->block = block;
    sp->rows = malloc((size_t)block * sizeof *sp->rows);
    sp->logits = malloc((size_t)block * hp->n_vocab * sizeof(float));
    sp->taps = d->n_taps ? malloc((size_t)block * d->n_taps * hp->n_embd * sizeof(float)) : NULL;
    sp->q = calloc((size_t)block, sizeof *sp->q);
    if (!sp->rows || !sp->logits || (d->n_taps && !sp->taps) || !sp->q) goto oom;
    if (!d->deterministic)
        for (int k = 0; k < block; k++)
            if (pf_dist_init(&sp->q[k], hp->n_vocab) < 0) goto oom;
    if (pf_dist_init(&sp->p, hp->n_vocab) < 0 || pf_dist_init(&sp->resid, hp->n_vocab) < 0) goto oom;
    sp->strat = (pf_strategy){.name = d->name, .state = sp, .tap_layers = d->tap_layers, .n_taps = d->n_taps,
                              .begin = spec_begin, .step = spec_step, .keep = spec_keep, .resume = spec_resume};
    return sp;
oom:
    snprintf(err, PF_ERR_LEN, "out of memory");
    pf_spec_free(sp);
    return NULL;
}

void pf_spec_free(pf_spec *sp) {
    if (!sp) return;
    if (sp->q)
        for (int k = 0; k < sp->block; k++) pf_dist_free(&sp->q[k]);
    free(sp->q);
    pf_dist_free(&sp->p);
    pf_dist_free(&sp->resid);
    free(sp->rows);
    free(sp->logits);
    free(sp->taps);
    free(sp->dtaps);
    free(sp->tap_list);
    free(sp->h_target);
    free(sp->pend_taps);
    free(sp->ad);
    pf_dec_free(sp->own_dec);
    pf_drafter_free(sp->own_d);
    free(sp);
}

void pf_spec_own(pf_spec *sp, pf_drafter *d, pf_dec *dec) {
    sp->own_d = d;
    sp->own_dec = dec;
}

pf_strategy *pf_spec_strategy(pf_spec *sp) { return &sp->strat; }
const pf_spec_stats *pf_spec_stats_get(const pf_spec *sp) { return &sp->st; }

double pf_spec_tau(const pf_spec_stats *st) { return st->rounds ? (double)st->tokens / (double)st->rounds : 0.0; }

void pf_spec_stats_print(const pf_spec_stats *st, int block, void *file) {
    FILE *f = file;
    fprintf(f, "speculation: %lld rounds, %lld tokens, tau %.2f tokens/round (block %d), %lld drafted, acceptance %.1f%%\n",
            (long long)st->rounds, (long long)st->tokens, pf_spec_tau(st), block, (long long)st->drafted,
            st->drafted ? 100.0 * (double)(st->tokens - st->rounds) / (double)st->drafted : 0.0);
    fprintf(f, "accepted drafts per round:");
    for (int a = 0; a < block; a++) fprintf(f, " %d:%lld", a, (long long)st->hist[a]);
    fprintf(f, "\nacceptance by block position:");
    for (int k = 0; k < block - 1; k++) {
        if (st->pos_tried[k]) fprintf(f, " %d:%.0f%%", k + 1, 100.0 * (double)st->pos_accepted[k] / (double)st->pos_tried[k]);
        else fprintf(f, " %d:-", k + 1);
    }
    int64_t varied = 0;
    for (int n = 1; n <= block; n++) varied += st->verified_rows[n] && st->verified_rows[n] != st->rounds;
    if (varied) { /* an adaptive strategy: what it chose */
        fprintf(f, "\nrows verified per round (1 = plain step):");
        for (int n = 1; n <= block; n++)
            if (st->verified_rows[n]) fprintf(f, " %d:%lld", n, (long long)st->verified_rows[n]);
    }
    double other = st->t_total - st->t_draft - st->t_verify - st->t_accept - st->t_ctx;
    if (other < 0) other = 0;
    double T = st->t_total > 0 ? st->t_total : 1;
    fprintf(f, "\ntime in rounds %.3f s: draft %.1f%%, context %.1f%%, verify %.1f%%, accept/sample %.1f%%, other %.1f%%"
               " (and %.3f s building the draft's context from the prompt)\n",
            st->t_total, 100 * st->t_draft / T, 100 * st->t_ctx / T, 100 * st->t_verify / T, 100 * st->t_accept / T,
            100 * other / T, st->t_prompt_ctx);
}

/* Re-plan the taps: the drafter's, plus the target's last layer when Dec or logging needs it. */
static int retap(pf_spec *sp, char err[PF_ERR_LEN]) {
    const pf_hparams *hp = &sp->s->model->hp;
    int n = sp->d->n_taps + (needs_final_tap(sp) ? 1 : 0);
    free(sp->tap_list);
    free(sp->taps);
    free(sp->dtaps);
    free(sp->h_target);
    sp->tap_list = malloc((size_t)(n ? n : 1) * sizeof(int));
    sp->taps = n ? malloc((size_t)sp->block * n * hp->n_embd * sizeof(float)) : NULL;
    sp->dtaps = malloc((size_t)sp->block * (sp->d->n_taps ? sp->d->n_taps : 1) * hp->n_embd * sizeof(float));
    sp->h_target = calloc((size_t)hp->n_embd, sizeof(float));
    if (!sp->tap_list || (n && !sp->taps) || !sp->dtaps || !sp->h_target) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return -1;
    }
    for (int i = 0; i < sp->d->n_taps; i++) sp->tap_list[i] = sp->d->tap_layers[i];
    if (needs_final_tap(sp)) sp->tap_list[n - 1] = hp->n_layer - 1;
    sp->n_taps = n;
    sp->strat.tap_layers = sp->tap_list;
    sp->strat.n_taps = n;
    return 0;
}

int pf_spec_set_adaptive(pf_spec *sp, const pf_dec *dec, const pf_spec_prior *prior, char err[PF_ERR_LEN]) {
    if (dec && !sp->d->hidden) {
        snprintf(err, PF_ERR_LEN, "Dec gating needs a drafter with hidden rows (dflash)");
        return -1;
    }
    if (!sp->ad && !(sp->ad = malloc(sizeof *sp->ad))) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return -1;
    }
    pf_adapt_init(sp->ad, sp->block, dec, prior ? prior->alpha : NULL, prior ? prior->n_alpha : 0);
    if (!sp->pend_taps && sp->d->n_taps &&
        !(sp->pend_taps = malloc((size_t)PF_MAX_BLOCK * sp->d->n_taps * sp->s->model->hp.n_embd * sizeof(float)))) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return -1;
    }
    sp->dec = dec;
    sp->calibrated = 0;
    sp->have_prior = prior && prior->c && prior->n > 1;
    sp->prior_fixed = sp->have_prior && prior->fixed;
    memset(sp->prior_c, 0, sizeof sp->prior_c);
    memset(sp->prior_d, 0, sizeof sp->prior_d);
    if (sp->have_prior)
        for (int n = 1; n < prior->n && n <= PF_MAX_BLOCK; n++) {
            sp->prior_c[n] = prior->c[n];
            if (prior->draft) sp->prior_d[n] = prior->draft[n];
        }
    return dec ? retap(sp, err) : 0;
}

int pf_spec_set_dec(pf_spec *sp, const pf_dec *dec, const double *cost, int n_cost, char err[PF_ERR_LEN]) {
    if (!sp->d->hidden) {
        snprintf(err, PF_ERR_LEN, "Dec gating needs a drafter with hidden rows (dflash)");
        return -1;
    }
    pf_spec_prior prior = {.c = cost, .n = n_cost};
    return pf_spec_set_adaptive(sp, dec, cost ? &prior : NULL, err);
}

int pf_spec_block(const pf_spec *sp) { return sp->block; }
int pf_spec_is_adaptive(const pf_spec *sp) { return sp->ad != NULL; }
const pf_cost_model *pf_spec_cost(const pf_spec *sp) { return sp->ad ? &sp->ad->cost : NULL; }

int pf_spec_set_log(pf_spec *sp, FILE *log, char err[PF_ERR_LEN]) {
    if (!sp->d->hidden) {
        snprintf(err, PF_ERR_LEN, "round logging needs a drafter with hidden rows (dflash)");
        return -1;
    }
    sp->log = log;
    return retap(sp, err);
}
