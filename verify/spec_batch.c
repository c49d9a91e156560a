/* pf_spec_batch (spec_batch.h): per slot a speculation object of the plan, driven in two halves
 * around the batch's one forward (spec_impl.h's round halves). */
#include "verify/spec_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draft/dflash_drafter.h"
#include "engine/batch.h"
#include "engine/clock.h"
#include "verify/row_share.h"
#include "verify/spec_impl.h"
#include "verify/strategies.h"

typedef struct {
    pf_spec *sp; /* NULL until the slot's first request */
    pf_strategy strat; /* sp's, begin through slot_begin */
    pf_spec_batch *sb;
    pf_spec_round_state round;
    pf_draft_call call; /* this step's proposal (B < 2: none) */
} slot_spec;

struct pf_spec_batch {
    pf_engine_session *s;
    pf_strategy_plan plan;
    const pf_dflash *w;
    const pf_dec *dec;
    slot_spec *slots;
    int n_slots;
    /* each slot's drafter, kept from call to call (making one sets up the draft's head vocabulary,
     * which costs far more than a round): slot i of any call takes drafters[i] */
    pf_drafter **drafters;
    int n_drafters;
    /* one slot's calibration, handed to the slots that start after it */
    pf_cost_model calib;
    int have_calib;
    /* seconds of an R-row forward over several sequences' rows, R = 1..PF_MAX_BLOCK */
    pf_cost_model rows;
    int own_forward; /* the last forward held one decoding sequence's rows alone */
    pf_share_seq *share;
    int *n_rows;
    /* the slots' DFlash proposals of a step in one draft forward (NULL: no DFlash draft) */
    pf_dflash_batch *draft_batch;
    pf_draft_call **calls;
    pf_spec_stats st;
};

pf_rc pf_spec_batch_new(pf_engine_session *s, const pf_strategy_plan *plan, const pf_dflash *w, const pf_dec *dec,
                        pf_spec_batch **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    if (plan->kind == PF_KIND_PLAIN) {
        snprintf(err, PF_ERR_LEN, "speculation across sequences needs a speculative strategy, not plain decoding");
        return PF_RC_ARG;
    }
    if (plan->kind == PF_KIND_DEC && !dec) {
        snprintf(err, PF_ERR_LEN, "strategy dec needs a draft with a Dec head (dec.* tensors)");
        return PF_RC_ARG;
    }
    pf_spec_batch *sb = calloc(1, sizeof *sb);
    if (!sb) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    *sb = (pf_spec_batch){.s = s, .plan = *plan, .w = w, .dec = dec};
    pf_cost_init(&sb->rows, PF_MAX_BLOCK);
    if (w && plan->kind != PF_KIND_NGRAM && !(sb->draft_batch = pf_dflash_batch_new(w))) {
        free(sb);
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    *out = sb;
    return PF_RC_OK;
}

static void free_slots(pf_spec_batch *sb) {
    for (int i = 0; sb->slots && i < sb->n_slots; i++) pf_spec_free(sb->slots[i].sp);
    free(sb->slots), free(sb->share), free(sb->n_rows), free(sb->calls);
    sb->slots = NULL, sb->share = NULL, sb->n_rows = NULL, sb->calls = NULL;
    sb->n_slots = 0;
}

void pf_spec_batch_free(pf_spec_batch *sb) {
    if (!sb) return;
    free_slots(sb);
    for (int i = 0; i < sb->n_drafters; i++) pf_drafter_free(sb->drafters[i]);
    free(sb->drafters);
    pf_dflash_batch_free(sb->draft_batch);
    free(sb);
}

const pf_spec_stats *pf_spec_batch_stats(const pf_spec_batch *sb) { return &sb->st; }

/* The first calibration seen becomes every later slot's starting point, and the prior of the
 * forward's cost over R rows: the slot's c(n) up to its block, its last slope beyond. */
static void take_calibration(pf_spec_batch *sb, const pf_spec *sp) {
    if (sb->have_calib || !sp->ad || !sp->calibrated) return;
    sb->calib = sp->ad->cost;
    sb->have_calib = 1;
    double t1 = pf_cost_verify(&sp->ad->cost, 1), c[PF_MAX_BLOCK + 1] = {0};
    if (t1 <= 0) return;
    for (int n = 1; n <= sp->block; n++) c[n] = pf_cost_verify(&sp->ad->cost, n) / t1;
    pf_cost_set_prior(&sb->rows, c, NULL, sp->block + 1, t1);
}

/* The slot's strategy begins a request: calibrated once for the batch, the other slots start
 * from that measurement. */
static pf_rc slot_begin(void *state, pf_engine_session *seq, const int32_t *prompt, int n_prompt, const float *taps,
                        char err[PF_ERR_LEN]) {
    slot_spec *ss = state;
    pf_spec *sp = ss->sp;
    if (sp->ad && !sp->calibrated && ss->sb->have_calib) {
        sp->ad->cost = ss->sb->calib;
        sp->calibrated = 1;
    }
    pf_strategy *own = pf_spec_strategy(sp);
    pf_rc rc = own->begin(own->state, seq, prompt, n_prompt, taps, err);
    if (rc == PF_RC_OK) take_calibration(ss->sb, sp);
    return rc;
}

static pf_strategy *slot_strategy(void *state, int slot, pf_engine_session *seq, char err[PF_ERR_LEN]) {
    pf_spec_batch *sb = state;
    pf_spec *sp = NULL;
    pf_rc rc = PF_RC_OK;
    /* a drafter begins afresh on every prompt, so one made for the same session serves every call */
    if (!sb->drafters[slot])
        rc = pf_drafter_for(&sb->plan, sb->plan.kind == PF_KIND_NGRAM ? NULL : sb->w, 0, seq, &sb->drafters[slot], err);
    if (rc == PF_RC_OK) rc = pf_strategy_build(seq, &sb->plan, sb->drafters[slot], sb->dec, &sp, err);
    if (rc != PF_RC_OK) return NULL;
    slot_spec *ss = &sb->slots[slot];
    ss->sp = sp, ss->sb = sb;
    ss->strat = *pf_spec_strategy(sp);
    ss->strat.state = ss;
    ss->strat.begin = slot_begin;
    return &ss->strat;
}

/* What row_share needs of a slot's adaptive strategy this step (its head's target half first). */
static void share_of(const pf_spec *sp, int cap, pf_share_seq *q) {
    pf_adapt *a = sp->ad;
    q->bmax = sp->block < cap ? sp->block : cap;
    q->fixed = !a || q->bmax < 2;
    if (q->fixed) return;
    pf_adapt_target(a, sp->dec ? sp->h_target : NULL);
    for (int k = 1; k < q->bmax; k++) q->s[k - 1] = pf_adapt_survival(a, k);
    for (int B = 2; B <= q->bmax; B++) q->draft_s[B] = pf_cost_draft(&a->cost, B);
    q->over_spec = a->cost.over_spec;
    q->over_plain = a->cost.over_plain + a->cost.flush_row;
}

/* The step's proposals: the DFlash drafters' in one batched draft forward, each charged its rows'
 * share of its time; any other drafter (a lookup, a hybrid) proposes alone. */
static pf_rc propose(pf_spec_batch *sb, int n, const int *slot, char err[PF_ERR_LEN]) {
    int m = 0, rows = 0;
    for (int j = 0; j < n; j++) {
        slot_spec *ss = &sb->slots[slot[j]];
        if (ss->call.B < 2) continue;
        if (sb->draft_batch && pf_dflash_drafter_of(ss->call.d, sb->w)) {
            sb->calls[m++] = &ss->call;
            rows += ss->call.B;
            continue;
        }
        double t0 = pf_now_s();
        pf_rc rc = pf_drafter_call(&ss->call, err);
        if (rc != PF_RC_OK) return rc;
        pf_spec_round_drafted(ss->sp, &ss->round, &ss->call, pf_now_s() - t0);
    }
    if (!m) return PF_RC_OK;
    double t0 = pf_now_s();
    pf_rc rc = pf_dflash_drafters_propose(sb->draft_batch, sb->calls, m, err);
    if (rc != PF_RC_OK) return rc;
    double t = pf_now_s() - t0;
    for (int j = 0; j < n; j++) {
        slot_spec *ss = &sb->slots[slot[j]];
        if (ss->call.B >= 2 && sb->draft_batch && pf_dflash_drafter_of(ss->call.d, sb->w))
            pf_spec_round_drafted(ss->sp, &ss->round, &ss->call, t * ss->call.B / rows);
    }
    return PF_RC_OK;
}

static pf_rc plan_rows(void *state, int n, const int *slot, const int32_t *last, const int *cap, pf_batch *rows,
                       char err[PF_ERR_LEN]) {
    pf_spec_batch *sb = state;
    int *B = sb->n_rows;
    for (int j = 0; j < n; j++) B[j] = 0; /* the strategy's own planner */
    if (n > 1 && sb->rows.have_t) {
        double v[PF_MAX_BLOCK + 1];
        for (int R = 1; R <= PF_MAX_BLOCK; R++) v[R] = pf_cost_verify(&sb->rows, R);
        for (int j = 0; j < n; j++) share_of(sb->slots[slot[j]].sp, cap[j], &sb->share[j]);
        double rate = pf_share_rows(sb->share, n, v, PF_MAX_BLOCK, B);
        for (int j = 0; j < n; j++) {
            pf_spec *sp = sb->slots[slot[j]].sp;
            if (sb->share[j].fixed) B[j] = 0;
            else if (sp->ad) sp->ad->rate = rate; /* what a second of verifying is worth: the batch's rate */
        }
    }
    for (int j = 0; j < n; j++) {
        slot_spec *ss = &sb->slots[slot[j]];
        pf_rc rc = pf_spec_round_begin(ss->sp, last[j], cap[j], B[j], &ss->round, &ss->call, err);
        if (rc != PF_RC_OK) return rc;
    }
    pf_rc rc = propose(sb, n, slot, err);
    if (rc != PF_RC_OK) return rc;
    for (int j = 0; j < n; j++) {
        slot_spec *ss = &sb->slots[slot[j]];
        pf_spec_round_rows(ss->sp, last[j], &ss->round, &rows[j]);
    }
    sb->own_forward = n == 1;
    return PF_RC_OK;
}

static void forward_done(void *state, int n_rows, int with_prompt, double seconds) {
    pf_spec_batch *sb = state;
    sb->own_forward = sb->own_forward && !with_prompt;
    if (!with_prompt && n_rows <= PF_MAX_BLOCK) pf_cost_observe_verify(&sb->rows, n_rows, seconds);
}

static pf_rc commit(void *state, int slot, int32_t *out, int *n_out, char err[PF_ERR_LEN]) {
    pf_spec_batch *sb = state;
    slot_spec *ss = &sb->slots[slot];
    pf_rc rc = pf_spec_round_finish(ss->sp, &ss->round, sb->own_forward, out, n_out, err);
    if (rc == PF_RC_OK) pf_spec_stats_round(&sb->st, ss->round.nd, *n_out - 1);
    return rc;
}

pf_rc pf_spec_batch_generate(pf_spec_batch *sb, int n_slots, const pf_seq_feed *feed, char err[PF_ERR_LEN]) {
    free_slots(sb);
    memset(&sb->st, 0, sizeof sb->st);
    if (n_slots >= 1) {
        sb->slots = calloc((size_t)n_slots, sizeof *sb->slots);
        sb->share = calloc((size_t)n_slots, sizeof *sb->share);
        sb->n_rows = calloc((size_t)n_slots, sizeof *sb->n_rows);
        sb->calls = calloc((size_t)n_slots, sizeof *sb->calls);
        if (n_slots > sb->n_drafters) {
            pf_drafter **d = realloc(sb->drafters, (size_t)n_slots * sizeof *d);
            if (d) {
                memset(d + sb->n_drafters, 0, (size_t)(n_slots - sb->n_drafters) * sizeof *d);
                sb->drafters = d, sb->n_drafters = n_slots;
            }
        }
        if (!sb->slots || !sb->share || !sb->n_rows || !sb->calls || n_slots > sb->n_drafters) {
            free_slots(sb);
            snprintf(err, PF_ERR_LEN, "out of memory");
            return PF_RC_OOM;
        }
        sb->n_slots = n_slots;
    }
    pf_seq_strategy st = {.state = sb, .slot = slot_strategy, .plan = plan_rows, .forward_done = forward_done,
                          .commit = commit};
    pf_rc rc = pf_engine_generate_batch_spec(sb->s, n_slots, feed, &st, err);
    free_slots(sb); /* the slots' sessions ended with the call */
    return rc;
}
