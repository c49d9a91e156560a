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
    pf_spec *sp;       /* NULL until the slot's first speculating request */
    pf_spec_choice made; /* what sp was built for */
    const void *user;  /* the speculating request the slot runs now (NULL: none) */
    pf_strategy strat; /* sp's, begin through slot_begin */
    pf_spec_batch *sb;
    pf_spec_round_state round;
    pf_draft_call call; /* this step's proposal (B < 2: none) */
    double s_plan[PF_MAX_BLOCK]; /* the survivals the row budget planned this step's drafts with */
    int shared;                  /* this step's rows came from the row budget */
    int fresh;                   /* sp was built since the slot's last request: it has no context to keep */
} slot_spec;

/* What a drafter is made of (pf_drafter_for): a slot keeps its drafter while this stays. */
typedef struct {
    const pf_dflash *w;
    pf_kind kind; /* PF_KIND_NGRAM, PF_KIND_HYBRID, else PF_KIND_DFLASH */
    int draft_head, ngram_n;
} drafter_key;

/* A draft's batched proposals, and the first calibration of each choice, handed to the slots of
 * the same choice that start after it. */
typedef struct {
    const pf_dflash *w;
    pf_dflash_batch *bt;
} draft_group;
typedef struct {
    pf_spec_choice c;
    pf_cost_model cost;
} calibration;

struct pf_spec_batch {
    pf_engine_session *s;
    pf_spec_choose_fn choose;
    void *choose_user;
    pf_spec_choice fixed; /* pf_spec_batch_new's: every request's */
    slot_spec *slots;
    int n_slots;
    /* each slot's drafter, kept from call to call (making one sets up the draft's head vocabulary,
     * which costs far more than a round): slot i of any call takes drafters[i] while its key holds */
    pf_drafter **drafters;
    drafter_key *keys;
    int n_drafters;
    calibration *calib;
    int n_calib;
    /* seconds of an R-row forward over several sequences' rows, R = 1..PF_MAX_BLOCK; its prior the
     * first calibration */
    pf_cost_model rows;
    int rows_prior;
    int own_forward; /* the last forward held one decoding sequence's rows alone */
    /* the drafts the row budget's rounds kept against what their planned survivals expected
     * (decayed sums): the budget scales every sequence's expected drafts by their ratio, so an
     * estimate that promises more than the verified rows keep (a head fitted to another draft,
     * the best of many noisy estimates being the one picked) stops buying rows */
    double kept_sum, expect_sum;
    /* seconds per row of building a slot's deferred drafter context (spec_lazy.c; 0: not known
     * yet): what a slot whose context waits pays for its first draft, on top of the draft */
    double ctx_row_s;
    pf_share_seq *share;
    int *n_rows;
    /* the slots' DFlash proposals of a step, one draft forward per draft */
    draft_group *groups;
    int n_groups;
    pf_draft_call **calls;
    pf_spec_stats st;
};

static void choose_fixed(void *user, const pf_seq_request *r, pf_spec_choice *c) {
    (void)r;
    *c = ((pf_spec_batch *)user)->fixed;
}

pf_rc pf_spec_batch_new_mixed(pf_engine_session *s, pf_spec_choose_fn choose, void *user, pf_spec_batch **out,
                              char err[PF_ERR_LEN]) {
    pf_spec_batch *sb = calloc(1, sizeof *sb);
    if (!(*out = sb)) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    *sb = (pf_spec_batch){.s = s, .choose = choose, .choose_user = user};
    pf_cost_init(&sb->rows, PF_MAX_BLOCK);
    return PF_RC_OK;
}

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
    pf_rc rc = pf_spec_batch_new_mixed(s, choose_fixed, NULL, out, err);
    if (rc == PF_RC_OK) {
        (*out)->choose_user = *out;
        (*out)->fixed = (pf_spec_choice){.plan = *plan, .w = plan->kind == PF_KIND_NGRAM ? NULL : w, .dec = dec};
    }
    return rc;
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
    free(sb->drafters), free(sb->keys), free(sb->calib);
    for (int i = 0; i < sb->n_groups; i++) pf_dflash_batch_free(sb->groups[i].bt);
    free(sb->groups);
    free(sb);
}

const pf_spec_stats *pf_spec_batch_stats(const pf_spec_batch *sb) { return &sb->st; }

const pf_spec *pf_spec_batch_request(const pf_spec_batch *sb, const void *user) {
    for (int i = 0; user && i < sb->n_slots; i++)
        if (sb->slots[i].user == user) return sb->slots[i].sp;
    return NULL;
}

static int same_choice(const pf_spec_choice *a, const pf_spec_choice *b) {
    return a->w == b->w && a->dec == b->dec && !memcmp(&a->plan, &b->plan, sizeof a->plan);
}

static calibration *calibration_of(pf_spec_batch *sb, const pf_spec_choice *c) {
    for (int i = 0; i < sb->n_calib; i++)
        if (same_choice(&sb->calib[i].c, c)) return &sb->calib[i];
    return NULL;
}

/* The first calibration of a choice becomes the starting point of the later slots of that
 * choice; the first of all, the prior of the forward's cost over R rows: the slot's c(n) up to
 * its block, beyond it c(block) grown in proportion to the rows (past a few rows the forward is
 * bound by its arithmetic, and its last slope, flattened by the weights' reads it shares, would
 * make rows no one has measured look nearly free). */
static void take_calibration(pf_spec_batch *sb, const slot_spec *ss) {
    const pf_spec *sp = ss->sp;
    if (!sp->ad || !sp->calibrated || calibration_of(sb, &ss->made)) return;
    calibration *k = realloc(sb->calib, (size_t)(sb->n_calib + 1) * sizeof *k);
    if (!k) return; /* the next slot calibrates itself */
    sb->calib = k;
    k[sb->n_calib++] = (calibration){.c = ss->made, .cost = sp->ad->cost};
    double t1 = pf_cost_verify(&sp->ad->cost, 1), c[PF_MAX_BLOCK + 1] = {0};
    if (sb->rows_prior || t1 <= 0) return;
    for (int n = 1; n <= sp->block; n++) c[n] = pf_cost_verify(&sp->ad->cost, n) / t1;
    for (int n = sp->block + 1; n <= PF_MAX_BLOCK; n++) c[n] = c[sp->block] * n / sp->block;
    pf_cost_set_prior(&sb->rows, c, NULL, PF_MAX_BLOCK + 1, t1);
    sb->rows_prior = 1;
}

/* An uncalibrated slot starts from its choice's calibration in this batch, when there is one. */
static void inherit_calibration(slot_spec *ss) {
    pf_spec *sp = ss->sp;
    const calibration *k = sp->ad && !sp->calibrated ? calibration_of(ss->sb, &ss->made) : NULL;
    if (k) {
        sp->ad->cost = k->cost;
        sp->calibrated = 1;
    }
}

/* The slot's strategy begins a request: calibrated once per choice for the batch, the other slots
 * of that choice start from that measurement. */
static pf_rc slot_begin(void *state, pf_engine_session *seq, const int32_t *prompt, int n_prompt, const float *taps,
                        char err[PF_ERR_LEN]) {
    slot_spec *ss = state;
    inherit_calibration(ss);
    pf_strategy *own = pf_spec_strategy(ss->sp);
    pf_rc rc = own->begin(own->state, seq, prompt, n_prompt, taps, err);
    if (rc == PF_RC_OK && !ss->sp->lazy && ss->sb->ctx_row_s <= 0 && n_prompt > 0)
        ss->sb->ctx_row_s = ss->sp->st.t_prompt_ctx / n_prompt; /* the first context built, eagerly */
    if (rc == PF_RC_OK) take_calibration(ss->sb, ss), ss->fresh = 0;
    return rc;
}

/* Multi-turn reuse in a slot (pf_strategy.keep / resume): the slot's speculation cuts its
 * drafter's context to the rows the slot's cache keeps, unless it was built after the slot's last
 * request. */
static int slot_keep(void *state, pf_engine_session *seq, int n_keep) {
    slot_spec *ss = state;
    pf_strategy *own = pf_spec_strategy(ss->sp);
    return ss->fresh || !own->keep ? -1 : own->keep(own->state, seq, n_keep);
}

static pf_rc slot_resume(void *state, pf_engine_session *seq, const int32_t *prompt, int n_prompt, int n_keep,
                         const float *taps, char err[PF_ERR_LEN]) {
    slot_spec *ss = state;
    inherit_calibration(ss);
    pf_strategy *own = pf_spec_strategy(ss->sp);
    pf_rc rc = own->resume(own->state, seq, prompt, n_prompt, n_keep, taps, err);
    if (rc == PF_RC_OK) take_calibration(ss->sb, ss);
    return rc;
}

static drafter_key key_of(const pf_spec_choice *c) {
    pf_kind k = c->plan.kind;
    return (drafter_key){.w = c->w, .kind = k == PF_KIND_NGRAM || k == PF_KIND_HYBRID ? k : PF_KIND_DFLASH,
                         .draft_head = c->plan.draft_head, .ngram_n = c->plan.ngram_n};
}

/* Slot i's drafter for choice c: its last one when made of the same, else a new one. */
static pf_rc slot_drafter(pf_spec_batch *sb, int i, const pf_spec_choice *c, pf_engine_session *seq,
                          char err[PF_ERR_LEN]) {
    drafter_key k = key_of(c), *h = &sb->keys[i];
    if (sb->drafters[i] && h->w == k.w && h->kind == k.kind && h->draft_head == k.draft_head && h->ngram_n == k.ngram_n)
        return PF_RC_OK;
    pf_drafter_free(sb->drafters[i]);
    sb->drafters[i] = NULL;
    pf_rc rc = pf_drafter_for(&c->plan, c->w, 0, seq, &sb->drafters[i], err);
    if (rc == PF_RC_OK) *h = k;
    return rc;
}

/* The batched proposals over draft w, made on first use. */
static pf_rc draft_group_for(pf_spec_batch *sb, const pf_dflash *w, char err[PF_ERR_LEN]) {
    for (int g = 0; g < sb->n_groups; g++)
        if (sb->groups[g].w == w) return PF_RC_OK;
    draft_group *gs = realloc(sb->groups, (size_t)(sb->n_groups + 1) * sizeof *gs);
    if (gs) sb->groups = gs;
    pf_dflash_batch *bt = gs ? pf_dflash_batch_new(w) : NULL;
    if (!bt) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    sb->groups[sb->n_groups++] = (draft_group){w, bt};
    return PF_RC_OK;
}

/* The slot's speculation for its request's choice: kept while the choice stays, else built anew. */
static pf_rc slot_spec_for(pf_spec_batch *sb, int i, const pf_spec_choice *c, pf_engine_session *seq,
                           char err[PF_ERR_LEN]) {
    slot_spec *ss = &sb->slots[i];
    if (ss->sp && same_choice(&ss->made, c)) {
        /* kept from an earlier request, maybe of an earlier call: its running acceptance and cost
         * model go on (as a session's own speculation does), in this call's session of the slot */
        ss->sp->s = seq;
        ss->strat.state = ss;
        return PF_RC_OK;
    }
    pf_spec_free(ss->sp);
    ss->sp = NULL;
    pf_rc rc = slot_drafter(sb, i, c, seq, err);
    if (rc == PF_RC_OK && c->w && c->plan.kind != PF_KIND_NGRAM) rc = draft_group_for(sb, c->w, err);
    if (rc == PF_RC_OK) rc = pf_strategy_build(seq, &c->plan, sb->drafters[i], c->dec, &ss->sp, err);
    if (rc != PF_RC_OK) return rc;
    ss->sp->lazy_ok = 1; /* a calibrated slot's drafter context waits for its first draft */
    ss->made = *c;
    ss->strat = *pf_spec_strategy(ss->sp);
    ss->strat.state = ss;
    ss->strat.begin = slot_begin;
    ss->strat.keep = slot_keep;
    ss->strat.resume = slot_resume;
    ss->fresh = 1;
    return PF_RC_OK;
}

static pf_rc slot_strategy(void *state, int slot, const pf_seq_request *r, pf_engine_session *seq, pf_strategy **out,
                           char err[PF_ERR_LEN]) {
    pf_spec_batch *sb = state;
    slot_spec *ss = &sb->slots[slot];
    ss->sb = sb;
    pf_spec_choice c;
    memset(&c, 0, sizeof c);
    sb->choose(sb->choose_user, r, &c);
    *out = NULL;
    ss->user = NULL;
    if (c.plan.kind == PF_KIND_PLAIN) return PF_RC_OK;
    if (c.plan.kind == PF_KIND_NGRAM) c.w = NULL;
    pf_rc rc = slot_spec_for(sb, slot, &c, seq, err);
    if (rc != PF_RC_OK) return rc;
    ss->user = r->user;
    *out = &ss->strat;
    return PF_RC_OK;
}

/* Kept drafts per expected one over the row budget's rounds, a prior of PF_SHARE_KEPT_W expected
 * tokens at 1; the sums decay every step, so after a stretch without drafts the ratio drifts back
 * toward 1 and the budget tries drafts again. */
#define PF_SHARE_KEPT_W 2.0
#define PF_SHARE_KEPT_DECAY 0.97
static double kept_ratio(const pf_spec_batch *sb) {
    return (sb->kept_sum + PF_SHARE_KEPT_W) / (sb->expect_sum + PF_SHARE_KEPT_W);
}

/* Expected kept drafts of nd verified ones under survivals s. */
static double expected_kept(const double *s, int nd) {
    double e = 0, surv = 1;
    for (int k = 1; k <= nd && k <= PF_MAX_BLOCK; k++) e += surv *= s[k - 1];
    return e;
}

/* What row_share needs of a slot's adaptive strategy this step (its head's target half first):
 * the survivals as its verified rounds kept them, the first scaled by the batch's kept ratio (it
 * is a factor of every draft's survival, so every draft's expected tokens scale alike). */
static void share_of(slot_spec *ss, double ratio, double ctx_row_s, int cap, pf_share_seq *q) {
    const pf_spec *sp = ss->sp;
    pf_adapt *a = sp->ad;
    q->bmax = sp->block < cap ? sp->block : cap;
    q->fixed = !a || q->bmax < 2;
    if (q->fixed) return;
    pf_adapt_target(a, sp->dec ? sp->h_target : NULL);
    for (int k = 1; k < q->bmax; k++) q->s[k - 1] = ss->s_plan[k - 1] = pf_adapt_survival_kept(a, k);
    q->s[0] = q->s[0] * ratio < 1 ? q->s[0] * ratio : 1;
    for (int B = 2; B <= q->bmax; B++) q->draft_s[B] = pf_cost_draft(&a->cost, B);
    q->over_spec = a->cost.over_spec + (sp->lazy ? sp->n_lz * ctx_row_s : 0); /* its deferred context */
    q->over_plain = a->cost.over_plain + (sp->lazy ? 0 : a->cost.flush_row);
}

/* A deferred drafter context was just built: its seconds per row move the batch's estimate. */
static void learn_ctx_cost(pf_spec_batch *sb, pf_spec *sp) {
    if (sp->lz_rows <= 0) return;
    double r = sp->lz_s / sp->lz_rows;
    sb->ctx_row_s = sb->ctx_row_s > 0 ? 0.7 * sb->ctx_row_s + 0.3 * r : r;
    sp->lz_rows = 0;
}

/* The slot's proposal goes into draft group g's batched forward. */
static int in_group(const pf_spec_batch *sb, const slot_spec *ss, int g) {
    return ss->call.B >= 2 && pf_dflash_drafter_of(ss->call.d, sb->groups[g].w);
}

/* Draft group g's proposals of the step in one draft forward, each charged its rows' share. */
static pf_rc propose_group(pf_spec_batch *sb, int g, int n, const int *slot, char err[PF_ERR_LEN]) {
    int m = 0, rows = 0;
    for (int j = 0; j < n; j++) {
        slot_spec *ss = &sb->slots[slot[j]];
        if (!in_group(sb, ss, g)) continue;
        sb->calls[m++] = &ss->call;
        rows += ss->call.B;
    }
    if (!m) return PF_RC_OK;
    double t0 = pf_now_s();
    pf_rc rc = pf_dflash_drafters_propose(sb->groups[g].bt, sb->calls, m, err);
    if (rc != PF_RC_OK) return rc;
    double t = pf_now_s() - t0;
    for (int j = 0; j < n; j++) {
        slot_spec *ss = &sb->slots[slot[j]];
        if (in_group(sb, ss, g)) pf_spec_round_drafted(ss->sp, &ss->round, &ss->call, t * ss->call.B / rows);
    }
    return PF_RC_OK;
}

/* The step's proposals: the DFlash drafters' in one batched draft forward per draft; any other
 * drafter (a lookup, a hybrid) proposes alone. */
static pf_rc propose(pf_spec_batch *sb, int n, const int *slot, char err[PF_ERR_LEN]) {
    for (int j = 0; j < n; j++) {
        slot_spec *ss = &sb->slots[slot[j]];
        int grouped = 0;
        for (int g = 0; g < sb->n_groups && !grouped; g++) grouped = in_group(sb, ss, g);
        if (ss->call.B < 2 || grouped) continue;
        double t0 = pf_now_s();
        pf_rc rc = pf_drafter_call(&ss->call, err);
        if (rc != PF_RC_OK) return rc;
        pf_spec_round_drafted(ss->sp, &ss->round, &ss->call, pf_now_s() - t0);
    }
    for (int g = 0; g < sb->n_groups; g++) {
        pf_rc rc = propose_group(sb, g, n, slot, err);
        if (rc != PF_RC_OK) return rc;
    }
    return PF_RC_OK;
}

static pf_rc plan_rows(void *state, int n, const int *slot, const int32_t *last, const int *cap, int n_plain,
                       pf_batch *rows, char err[PF_ERR_LEN]) {
    pf_spec_batch *sb = state;
    int *B = sb->n_rows;
    for (int j = 0; j < n; j++) B[j] = 0, sb->slots[slot[j]].shared = 0; /* the strategy's own planner */
    if (n + n_plain > 1 && sb->rows.have_t) {
        double v[PF_MAX_BLOCK + 1], ratio = kept_ratio(sb);
        sb->kept_sum *= PF_SHARE_KEPT_DECAY, sb->expect_sum *= PF_SHARE_KEPT_DECAY;
        for (int R = 1; R <= PF_MAX_BLOCK; R++) v[R] = pf_cost_verify(&sb->rows, R);
        for (int j = 0; j < n; j++) share_of(&sb->slots[slot[j]], ratio, sb->ctx_row_s, cap[j], &sb->share[j]);
        for (int j = n; j < n + n_plain; j++) sb->share[j] = (pf_share_seq){.bmax = 1, .fixed = 1};
        double rate = pf_share_rows(sb->share, n + n_plain, v, PF_MAX_BLOCK, B);
        for (int j = 0; j < n; j++) {
            pf_spec *sp = sb->slots[slot[j]].sp;
            if (sb->share[j].fixed) B[j] = 0;
            else if (sp->ad) sp->ad->rate = rate; /* what a second of verifying is worth: the batch's rate */
            sb->slots[slot[j]].shared = B[j] >= 2;
        }
    }
    for (int j = 0; j < n; j++) {
        slot_spec *ss = &sb->slots[slot[j]];
        pf_rc rc = pf_spec_round_begin(ss->sp, last[j], cap[j], B[j], &ss->round, &ss->call, err);
        if (rc != PF_RC_OK) return rc;
        learn_ctx_cost(sb, ss->sp);
    }
    pf_rc rc = propose(sb, n, slot, err);
    if (rc != PF_RC_OK) return rc;
    for (int j = 0; j < n; j++) {
        slot_spec *ss = &sb->slots[slot[j]];
        pf_spec_round_rows(ss->sp, last[j], &ss->round, &rows[j]);
    }
    sb->own_forward = n == 1 && n_plain == 0;
    return PF_RC_OK;
}

static void forward_done(void *state, int n_rows, int with_prompt, double seconds) {
    pf_spec_batch *sb = state;
    sb->own_forward = sb->own_forward && !with_prompt;
    if (!with_prompt && n_rows <= PF_MAX_BLOCK) pf_cost_observe_rows(&sb->rows, n_rows, seconds);
}

static pf_rc commit(void *state, int slot, int32_t *out, int *n_out, char err[PF_ERR_LEN]) {
    pf_spec_batch *sb = state;
    slot_spec *ss = &sb->slots[slot];
    pf_rc rc = pf_spec_round_finish(ss->sp, &ss->round, sb->own_forward, out, n_out, err);
    if (rc == PF_RC_OK && ss->shared && ss->round.nd > 0 && !ss->sp->s->cons) { /* forced drafts say nothing */
        sb->kept_sum += *n_out - 1;
        sb->expect_sum += expected_kept(ss->s_plan, ss->round.nd);
    }
    if (rc == PF_RC_OK) pf_spec_stats_round(&sb->st, ss->round.nd, *n_out - 1);
    return rc;
}

/* Room for n_slots slots: the kept ones (with their speculation) and new empty ones; 0, or -1
 * out of memory (everything freed). */
static int slots_for(pf_spec_batch *sb, int n_slots) {
    if (n_slots > sb->n_slots) {
        slot_spec *sl = realloc(sb->slots, (size_t)n_slots * sizeof *sl);
        if (sl) {
            memset(sl + sb->n_slots, 0, (size_t)(n_slots - sb->n_slots) * sizeof *sl);
            sb->slots = sl, sb->n_slots = n_slots;
        }
        free(sb->share), free(sb->n_rows), free(sb->calls); /* a step's scratch */
        sb->share = calloc((size_t)n_slots, sizeof *sb->share);
        sb->n_rows = calloc((size_t)n_slots, sizeof *sb->n_rows);
        sb->calls = calloc((size_t)n_slots, sizeof *sb->calls);
        if (!sl || !sb->share || !sb->n_rows || !sb->calls) {
            free_slots(sb);
            return -1;
        }
    }
    if (n_slots > sb->n_drafters) {
        pf_drafter **d = realloc(sb->drafters, (size_t)n_slots * sizeof *d);
        if (d) sb->drafters = d;
        drafter_key *k = d ? realloc(sb->keys, (size_t)n_slots * sizeof *k) : NULL;
        if (!k) return -1;
        sb->keys = k;
        memset(d + sb->n_drafters, 0, (size_t)(n_slots - sb->n_drafters) * sizeof *d);
        sb->n_drafters = n_slots;
    }
    for (int i = 0; i < sb->n_slots; i++) sb->slots[i].user = NULL; /* the last call's requests ended */
    return 0;
}

pf_rc pf_spec_batch_generate(pf_spec_batch *sb, int n_slots, const pf_seq_feed *feed, char err[PF_ERR_LEN]) {
    memset(&sb->st, 0, sizeof sb->st);
    if (n_slots >= 1 && slots_for(sb, n_slots) < 0) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    pf_seq_strategy st = {.state = sb, .slot = slot_strategy, .plan = plan_rows, .forward_done = forward_done,
                          .commit = commit};
    return pf_engine_generate_batch_spec(sb->s, n_slots, feed, &st, err);
}
