/* The speculative round (verify/spec.h): each step drafts, verifies the drafts in one target
 * forward, accepts the longest kept prefix (or samples losslessly), rolls the target's cache back
 * to the committed rows and commits them to the drafter. Construction and configuration of the
 * object are in spec_setup.c, its statistics in spec_stats.c, the cost model's calibration in
 * cost_model.c. */
#include "verify/spec_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/clock.h"
#include "verify/accept.h"
#include "verify/spec_constrain.h"
#include "engine/batch.h"

/* The verify forward's taps of n rows split in two: the final layer's row `final_row` (-1: none)
 * is kept as h_target, and the drafter's own taps are returned (repacked without the final layer
 * when it is tapped). */
static const float *split_taps(pf_spec *sp, const float *taps, int final_row, int n) {
    if (!needs_final_tap(sp) || !taps) return taps;
    const int H = sp->s->model->hp.n_embd, nd = sp->d->n_taps;
    if (final_row >= 0)
        memcpy(sp->h_target, taps + ((size_t)final_row * sp->n_taps + sp->n_taps - 1) * H, (size_t)H * sizeof(float));
    for (int r = 0; r < n; r++)
        memcpy(sp->dtaps + (size_t)r * nd * H, taps + (size_t)r * sp->n_taps * H, (size_t)nd * H * sizeof(float));
    return sp->dtaps;
}

/* The cost model's starting point, measured once per speculation object (cost_model.c). */
static pf_rc calibrate(pf_spec *sp, const int32_t *prompt, int n_prompt, char err[PF_ERR_LEN]) {
    pf_cost_calib k = {.ctx = sp->s->ctx, .d = sp->d, .block = sp->block, .logits = sp->logits,
                       .prior_c = sp->have_prior ? sp->prior_c : NULL, .prior_d = sp->prior_d,
                       .prior_fixed = sp->prior_fixed};
    return pf_cost_calibrate(&sp->ad->cost, &k, prompt, n_prompt, &sp->calibrated, err);
}

/* Hand n prompt rows and their taps to the drafter (begin for a new prompt, else commit), in
 * chunks of the block buffer when the final layer's tap must be dropped from the taps. */
static pf_rc feed_prompt(pf_spec *sp, const int32_t *tok, int n, const float *taps, int first, char err[PF_ERR_LEN]) {
    const size_t row = (size_t)sp->n_taps * sp->s->model->hp.n_embd;
    if (first && n == 0) return sp->d->begin ? sp->d->begin(sp->d->state, tok, 0, taps, err) : PF_RC_OK;
    for (int r0 = 0, k; r0 < n; r0 += k) {
        k = needs_final_tap(sp) && taps && n - r0 > sp->block ? sp->block : n - r0;
        const float *dt = split_taps(sp, taps ? taps + (size_t)r0 * row : NULL, -1, k);
        pf_rc rc = r0 == 0 && first ? (sp->d->begin ? sp->d->begin(sp->d->state, tok, k, dt, err) : PF_RC_OK)
                                    : (sp->d->commit ? sp->d->commit(sp->d->state, tok + r0, k, dt, err) : PF_RC_OK);
        if (rc != PF_RC_OK) return rc;
    }
    return PF_RC_OK;
}

/* A generation starts: statistics and the plain-step state reset. */
static void start_generation(pf_spec *sp) {
    memset(&sp->st, 0, sizeof sp->st);
    sp->n_pend = 0;
    if (sp->ad) sp->ad->plain_run = 0;
}

static pf_rc spec_begin(void *state, pf_engine_session *s, const int32_t *prompt, int n_prompt, const float *taps,
                        char err[PF_ERR_LEN]) {
    pf_spec *sp = state;
    (void)s;
    start_generation(sp);
    double t0 = pf_now_s();
    split_taps(sp, taps, n_prompt - 1, 0);
    sp->lazy = 0;
    pf_rc rc = pf_spec_lazy_begin(sp, prompt, n_prompt, taps) ? PF_RC_OK : feed_prompt(sp, prompt, n_prompt, taps, 1, err);
    sp->st.t_prompt_ctx += pf_now_s() - t0;
    if (rc == PF_RC_OK && sp->ad && !sp->calibrated && n_prompt > 0) rc = calibrate(sp, prompt, n_prompt, err);
    return rc;
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
static pf_rc flush_pending(pf_spec *sp, char err[PF_ERR_LEN]) {
    int n = sp->n_pend;
    sp->n_pend = 0;
    if (!n || !sp->d->commit) return PF_RC_OK;
    return sp->d->commit(sp->d->state, sp->pend_tok, n, sp->d->n_taps ? sp->pend_taps : NULL, err);
}

/* Commit a round's rows to the drafter: a plain step's row waits for the next drafting round. */
static pf_rc commit_rows(pf_spec *sp, int n, const float *taps, int plain, char err[PF_ERR_LEN]) {
    if (pf_spec_lazy_add(sp, sp->rows, n, taps, (size_t)sp->d->n_taps * sp->s->model->hp.n_embd)) return PF_RC_OK;
    pf_rc rc = pf_spec_lazy_flush(sp, err);
    if (rc != PF_RC_OK || !sp->d->commit) return rc;
    if (!plain || !sp->ad || !sp->d->n_taps) { /* only an adaptive strategy's plain rows wait */
        if ((rc = flush_pending(sp, err)) != PF_RC_OK) return rc;
        return sp->d->commit(sp->d->state, sp->rows, n, taps, err);
    }
    if (sp->n_pend == PF_MAX_BLOCK && (rc = flush_pending(sp, err)) != PF_RC_OK) return rc;
    size_t row = (size_t)sp->d->n_taps * sp->s->model->hp.n_embd;
    sp->pend_tok[sp->n_pend] = sp->rows[0];
    if (row) memcpy(sp->pend_taps + sp->n_pend * row, taps, row * sizeof(float));
    sp->n_pend++;
    return PF_RC_OK;
}

/* Multi-turn reuse (pf_strategy.keep / resume): the drafter keeps its context of the rows the
 * session's cache kept (pending plain-step rows are handed over first, so its context covers the
 * cache), and resume feeds it the prompt's new rows as spec_begin feeds a whole prompt (context
 * rows do not depend on how they were split over calls). */
static int spec_keep(void *state, pf_engine_session *s, int n_keep) {
    pf_spec *sp = state;
    (void)s;
    char err[PF_ERR_LEN];
    if (sp->lazy) return pf_spec_lazy_truncate(sp, n_keep);
    if (!sp->d->truncate || flush_pending(sp, err) != PF_RC_OK) return -1; /* then the whole prompt is begun again */
    return sp->d->truncate(sp->d->state, n_keep);
}

static pf_rc spec_resume(void *state, pf_engine_session *s, const int32_t *prompt, int n_prompt, int n_keep,
                         const float *taps, char err[PF_ERR_LEN]) {
    pf_spec *sp = state;
    (void)s;
    start_generation(sp);
    double t0 = pf_now_s();
    split_taps(sp, taps, n_prompt - n_keep - 1, 0);
    pf_rc rc = PF_RC_OK;
    if (!pf_spec_lazy_add(sp, prompt + n_keep, n_prompt - n_keep, taps, (size_t)sp->n_taps * sp->s->model->hp.n_embd) &&
        (rc = pf_spec_lazy_flush(sp, err)) == PF_RC_OK)
        rc = feed_prompt(sp, prompt + n_keep, n_prompt - n_keep, taps, 0, err);
    if (rc != PF_RC_OK) return rc;
    sp->st.t_prompt_ctx += pf_now_s() - t0;
    if (sp->ad && !sp->calibrated && n_prompt > 0) rc = calibrate(sp, prompt, n_prompt, err);
    return rc;
}

/* Rows of this round: the block, within the room left, as the adaptive planner chooses (1: a
 * plain step). */
static int plan_rows(pf_spec *sp, int cap) {
    int B = sp->block < cap ? sp->block : cap;
    if (sp->ad && B >= 2) B = pf_adapt_plan(sp->ad, sp->dec ? sp->h_target : NULL, B);
    return B;
}

/* Dec: how many of the *nd drafts are worth verifying; planned (the caller chose the rows before
 * drafting, its draft forward shared): all of them, the head still reading them to learn. */
static void dec_choose(pf_spec *sp, int *nd, int planned) {
    int n_rows = 0, dim = 0;
    const float *h = sp->dec && sp->d->hidden ? sp->d->hidden(sp->d->state, &n_rows, &dim) : NULL;
    if (!h || n_rows < *nd + 1) return;
    int keep = pf_adapt_choose(sp->ad, sp->h_target, h, *nd);
    if (!planned) *nd = keep;
}

/* Pending plain-step rows reach the drafter before it drafts (it needs its whole context), on
 * the clock of the context. */
static pf_rc draft_flush(pf_spec *sp, round_clock *t, char err[PF_ERR_LEN]) {
    if (sp->lazy) { /* the deferred context first, off the round's clock (its own, t_prompt_ctx) */
        pf_rc rc = pf_spec_lazy_flush(sp, err);
        if (rc != PF_RC_OK) return rc;
        sp->st.t_prompt_ctx += sp->lz_s;
        t->t0 = pf_now_s();
    }
    if (!sp->n_pend) return PF_RC_OK;
    int n_pend = sp->n_pend;
    pf_rc rc = flush_pending(sp, err);
    if (rc != PF_RC_OK) return rc;
    double tf = pf_now_s();
    if (sp->ad) pf_cost_observe_flush(&sp->ad->cost, n_pend, tf - t->t0); /* the plain steps' deferred cost */
    sp->st.t_ctx += tf - t->t0;
    sp->st.t_total += tf - t->t0;
    t->t0 = tf;
    return PF_RC_OK;
}

/* The drafter's propose of B-1 tokens after `last` into rows[1..]. An adaptive strategy drafts
 * point masses (the draft's argmax): the target's own samples then decide, with plain sampling's
 * random numbers, so a seed gives plain sampling's text whatever the timing-driven decisions are. */
static pf_draft_call draft_call(pf_spec *sp, pf_engine_session *s, int32_t last, int64_t start, int B) {
    int point_mass = s->sampling.temp <= 0 || sp->ad;
    return (pf_draft_call){.d = sp->d, .bonus = last, .pos = start, .B = B,
                           .samp = point_mass ? NULL : &s->sampling, .rng = &s->rng, .draft = sp->rows + 1,
                           .q = point_mass || sp->d->deterministic ? NULL : sp->q};
}

/* After the propose (draft_s seconds): *nd drafts to verify (Dec may keep fewer than were *proposed,
 * unless the rows were planned by the caller). */
static void draft_done(pf_spec *sp, pf_engine_session *s, const pf_draft_call *c, double draft_s, int planned,
                       int *nd, int *proposed) {
    *nd = *proposed = c->n_drafted > c->B - 1 ? c->B - 1 : c->n_drafted;
    sp->st.draft_rounds++;
    if (sp->ad && *nd > 0) {
        pf_cost_observe_draft(&sp->ad->cost, c->B, draft_s);
        if (!s->cons) dec_choose(sp, nd, planned); /* under a constraint, once its forced drafts are marked */
    }
}

/* Draft up to B-1 tokens after `last` into rows[1..]: r->nd to verify, r->proposed made. */
static pf_rc draft(pf_spec *sp, int32_t last, int B, pf_spec_round_state *r, char err[PF_ERR_LEN]) {
    pf_rc rc = draft_flush(sp, &r->t, err);
    if (rc != PF_RC_OK) return rc;
    pf_draft_call c = draft_call(sp, sp->s, last, r->start, B);
    if ((rc = pf_drafter_call(&c, err)) != PF_RC_OK) return rc;
    draft_done(sp, sp->s, &c, pf_now_s() - r->t.t0, 0, &r->nd, &r->proposed);
    return PF_RC_OK;
}

/* The round's accepted length a (greedy: the longest matching prefix; sampled: lossless
 * rejection sampling) and the target's own next token. */
static int accept_drafts(pf_spec *sp, pf_engine_session *s, int nd, int32_t *bonus) {
    const int V = s->model->hp.n_vocab;
    if (s->sampling.temp <= 0) return pf_accept_greedy(sp->logits, V, sp->rows + 1, nd, bonus);
    return pf_accept_sampled(sp->logits, V, sp->rows + 1, sp->q, nd, sp->d->deterministic || sp->ad != NULL,
                             &s->sampling, &s->rng, &sp->p, &sp->resid, bonus);
}

/* The running cost model, the acceptance and the statistics follow every round. */
static void observe(pf_spec *sp, int nd, int a, const round_clock *t, int own_forward) {
    pf_spec_stats *st = &sp->st;
    if (sp->ad) {
        if (own_forward) pf_cost_observe_verify(&sp->ad->cost, nd + 1, t->t2 - t->t1);
        pf_cost_observe_overhead(&sp->ad->cost, nd == 0, t->t4 - t->t2);
        pf_adapt_observe(sp->ad, nd, a);
    }
    pf_spec_stats_round(st, nd, a);
    st->t_draft += t->t1 - t->t0;
    st->t_verify += t->t2 - t->t1;
    st->t_accept += t->t3 - t->t2;
    st->t_ctx += t->t4 - t->t3;
    st->t_total += pf_now_s() - t->t0;
}

/* Structured output: the drafts cut to what the constraint allows, forced tokens appended (a
 * forced position at the start skips the drafter); forced positions go to the planner as sure to
 * be kept, outside what it learns of the draft. r->nd: the rows to verify, r->n_masked: the rows
 * to mask after verifying. */
static pf_rc constrained_draft(pf_spec *sp, int32_t last, int B, int cap, pf_spec_round_state *r, char err[PF_ERR_LEN]) {
    pf_engine_session *s = sp->s;
    int rows_cap = sp->block < cap ? sp->block : cap, n_forced = 0;
    int stochastic = s->sampling.temp > 0 && !sp->ad && !sp->d->deterministic;
    if (B >= 2 && pf_constraint_forced(s->cons) < 0) {
        /* the drafter proposes only allowed tokens where it can (its logits or candidates masked) */
        pf_draft_filter f = pf_spec_draft_filter(s->cons);
        size_t pos0 = pf_constraint_pos(s->cons);
        if (sp->d->set_filter) sp->d->set_filter(sp->d->state, &f);
        pf_rc rc = draft(sp, last, B, r, err);
        if (sp->d->set_filter) sp->d->set_filter(sp->d->state, NULL);
        pf_constraint_rollback(s->cons, pos0);
        if (rc != PF_RC_OK) return rc;
        if (sp->ad && r->nd > 0) { /* forced drafts are sure to be kept once reached: Dec counts them so */
            pf_spec_mark_forced(s->cons, sp->rows + 1, r->nd, sp->ad->forced);
            dec_choose(sp, &r->nd, 0);
        }
    }
    r->nd = pf_spec_constrain_path(sp, s->cons, r->nd, rows_cap, stochastic, &n_forced, &r->n_masked);
    if (sp->ad) memset(sp->ad->forced + r->nd - n_forced, 1, (size_t)n_forced); /* the run appended */
    sp->st.forced += n_forced;
    return PF_RC_OK;
}

pf_rc pf_spec_round_begin(pf_spec *sp, int32_t last, int cap, int B, pf_spec_round_state *r, pf_draft_call *call,
                          char err[PF_ERR_LEN]) {
    pf_engine_session *s = sp->s;
    *r = (pf_spec_round_state){.t = {.t0 = pf_now_s()}, .start = s->ctx->kv->len};
    call->B = 0;
    r->planned = B != 0;
    if (B == 0) B = plan_rows(sp, cap);
    if (s->cons) return constrained_draft(sp, last, B, cap, r, err);
    if (B < 2) return PF_RC_OK;
    pf_rc rc = draft_flush(sp, &r->t, err);
    if (rc == PF_RC_OK) *call = draft_call(sp, s, last, r->start, B);
    return rc;
}

void pf_spec_round_drafted(pf_spec *sp, pf_spec_round_state *r, const pf_draft_call *call, double draft_s) {
    draft_done(sp, sp->s, call, draft_s, r->planned, &r->nd, &r->proposed);
}

void pf_spec_round_rows(pf_spec *sp, int32_t last, pf_spec_round_state *r, pf_batch *b) {
    r->t.t1 = pf_now_s();
    sp->rows[0] = last; /* verify [last, d1..d_nd] in one target forward, tapping the rows */
    *b = (pf_batch){.kv = sp->s->ctx->kv, .tokens = sp->rows, .n = r->nd + 1, .logits_mode = PF_LOGITS_ALL,
                    .logits = sp->logits, .tap_layers = sp->strat.tap_layers, .n_taps = sp->strat.n_taps,
                    .taps = sp->taps};
}

/* A round's first half: B rows planned (B = 0: the strategy's own planner within cap, as a
 * one-sequence round), the drafts proposed into sp->rows[1..], the verify rows described in *b. */
pf_rc pf_spec_round_draft(pf_spec *sp, int32_t last, int cap, int B, pf_spec_round_state *r, pf_batch *b,
                          char err[PF_ERR_LEN]) {
    pf_draft_call c;
    pf_rc rc = pf_spec_round_begin(sp, last, cap, B, r, &c, err);
    if (rc != PF_RC_OK) return rc;
    if (c.B >= 2) {
        if ((rc = pf_drafter_call(&c, err)) != PF_RC_OK) return rc;
        pf_spec_round_drafted(sp, r, &c, pf_now_s() - r->t.t0);
    }
    pf_spec_round_rows(sp, last, r, b);
    return PF_RC_OK;
}

/* A round's second half, once the verify forward filled the rows' logits and taps: accept,
 * rollback, commit. own_forward: the forward held this sequence's rows alone (its time is then
 * this sequence's verify cost). */
pf_rc pf_spec_round_finish(pf_spec *sp, pf_spec_round_state *r, int own_forward, int32_t *out, int *n_out,
                           char err[PF_ERR_LEN]) {
    pf_engine_session *s = sp->s;
    int nd = r->nd;
    int greedy_cons = s->cons && s->sampling.temp <= 0;
    if (s->cons && !greedy_cons) pf_spec_constrain_rows(sp, s->cons, r->n_masked);
    r->t.t2 = pf_now_s();
    int32_t bonus;
    int a = greedy_cons ? pf_spec_accept_greedy_constrained(sp, s->cons, nd, r->n_masked, &bonus)
                        : accept_drafts(sp, s, nd, &bonus);
    pf_kv_truncate(s->ctx->kv, r->start + a + 1); /* rollback: the cache keeps the committed rows */
    memcpy(out, sp->rows + 1, (size_t)a * sizeof *out);
    out[a] = bonus;
    r->t.t3 = pf_now_s();
    if (sp->log && r->proposed == nd && !s->cons) log_round(sp, nd, a);
    const float *dt = split_taps(sp, sp->taps, a, a + 1); /* commit the a+1 rows to the drafter */
    pf_rc rc = commit_rows(sp, a + 1, dt, sp->ad && nd == 0, err);
    if (rc != PF_RC_OK) return rc;
    r->t.t4 = pf_now_s();
    observe(sp, nd, a, &r->t, own_forward);
    *n_out = a + 1;
    return PF_RC_OK;
}

/* One round: draft -> verify -> accept -> rollback -> commit. */
static pf_rc spec_step(void *state, pf_engine_session *s, int32_t last, int32_t *out, int cap, int *n_out,
                       char err[PF_ERR_LEN]) {
    pf_spec *sp = state;
    (void)s;
    pf_spec_round_state r;
    pf_batch b;
    pf_rc rc = pf_spec_round_draft(sp, last, cap, 0, &r, &b, err);
    if (rc == PF_RC_OK) rc = pf_forward(sp->s->ctx, &b, err);
    return rc == PF_RC_OK ? pf_spec_round_finish(sp, &r, 1, out, n_out, err) : rc;
}

pf_strategy pf_spec_round(pf_spec *sp) {
    return (pf_strategy){.name = sp->d->name, .state = sp, .tap_layers = sp->d->tap_layers, .n_taps = sp->d->n_taps,
                         .begin = spec_begin, .step = spec_step, .keep = spec_keep, .resume = spec_resume};
}
