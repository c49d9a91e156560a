/* The speculation object's state, shared by the round loop (spec.c) and its construction and
 * configuration (spec_setup.c). Internal to verify/; users see verify/spec.h. */
#ifndef PF_SPEC_IMPL_H
#define PF_SPEC_IMPL_H

#include <stdio.h>

#include "draft/block.h"
#include "engine/constraint.h"
#include "verify/adapt.h"
#include "verify/spec.h"

/* One block (spec_setup.c): the struct, then its arrays whose sizes the block and the drafter fix. */
struct pf_spec {
    pf_engine_session *s;
    pf_drafter *d;
    pf_strategy strat;
    int block;
    pf_spec_stats st;
    int32_t *rows;  /* [bonus, d1..] */
    float *logits;  /* block * n_vocab */
    float *taps;    /* block * n_taps * n_embd (the drafter's taps, plus the final layer with Dec/logging);
                       tap_room while something is tapped, else NULL */
    float *tap_room; /* block * (the drafter's taps + 1) * n_embd */
    float *dtaps;   /* the drafter's taps alone, repacked, when the final layer is added */
    pf_dist *q;     /* block proposal distributions */
    pf_dist p, resid;
    /* adaptive planning (Dec gating or the adaptive block) and round logging (NULL when off) */
    pf_adapt *ad; /* &adapt while on */
    pf_adapt adapt;
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
    float *pend_taps; /* PF_MAX_BLOCK rows of the drafter's taps (used by an adaptive strategy) */
    int n_pend;
    float *h_target;       /* final residual row of the last committed position */
    /* structured output: the masks of a round's verified rows (PF_MAX_BLOCK of cmask_words words) */
    uint32_t *cmask;
    size_t cmask_words;
    /* a batch slot's deferred drafter context (spec_lazy.c): lazy_ok is the batch's leave; while
     * lazy the drafter holds none of this sequence's rows, which wait in lz_tok / lz_taps (the
     * drafter's taps of each) until the first draft builds the context from them */
    int lazy_ok, lazy;
    int32_t *lz_tok;
    float *lz_taps;
    int n_lz, cap_lz;
    double lz_s; /* the last deferred build: seconds, and its rows (0 once read) */
    int lz_rows;
};

/* The clock of one round: start, drafted, verified, accepted, committed. */
typedef struct {
    double t0, t1, t2, t3, t4;
} round_clock;

/* A round between its draft and its verify forward. */
typedef struct {
    round_clock t;
    int64_t start; /* the target cache's length before the round */
    int nd, proposed, n_masked;
    int planned; /* the caller gave the rows: every draft made is verified */
} pf_spec_round_state;

/* A round in two halves around the verify forward, for a caller that runs that forward together
 * with other sequences' rows (verify/spec_batch.c); spec_step is the two with pf_forward between.
 * B: the rows to draft (0: the strategy's own planner within cap; 1: a plain step; >= 2: that
 * many, all verified, Dec's head not cutting them after drafting). The verify rows go to *b (its
 * kv the session's cache). */
struct pf_batch;
pf_rc pf_spec_round_draft(pf_spec *sp, int32_t last, int cap, int B, pf_spec_round_state *r, struct pf_batch *b,
                          char err[PF_ERR_LEN]);
/* pf_spec_round_draft in three steps, for a caller that drafts several sequences in one draft
 * forward: _begin plans the rows and, when the round drafts through the drafter's propose, hands
 * it its pending rows and fills *call (call->B >= 2; else call->B = 0: the round is drafted, a
 * constrained round by itself); the caller runs the call (alone, pf_drafter_call, or batched with
 * others'), then _drafted takes its answer with the seconds it is charged and _rows describes the
 * verify rows. */
pf_rc pf_spec_round_begin(pf_spec *sp, int32_t last, int cap, int B, pf_spec_round_state *r, pf_draft_call *call,
                          char err[PF_ERR_LEN]);
void pf_spec_round_drafted(pf_spec *sp, pf_spec_round_state *r, const pf_draft_call *call, double draft_s);
void pf_spec_round_rows(pf_spec *sp, int32_t last, pf_spec_round_state *r, struct pf_batch *b);
pf_rc pf_spec_round_finish(pf_spec *sp, pf_spec_round_state *r, int own_forward, int32_t *out, int *n_out,
                           char err[PF_ERR_LEN]);

/* The deferred drafter context (spec_lazy.c). _begin: a new sequence's prompt (taps as the verify
 * forward taps them) waits instead of reaching the drafter, when the batch allows it and the
 * strategy is adaptive, calibrated and its drafter taps the target; 1 when so, else 0 (begin the
 * drafter now). _add: while lazy, more rows (`stride` floats of taps a row, the drafter's taps
 * first) wait too: 1, or 0 (not lazy, or past the most rows kept: the caller flushes and hands
 * them over itself). _flush: the drafter begins on every waiting row (nothing while not lazy).
 * _truncate: multi-turn reuse keeps the first n_keep waiting rows (-1: more than wait). */
int pf_spec_lazy_begin(pf_spec *sp, const int32_t *prompt, int n, const float *taps);
int pf_spec_lazy_add(pf_spec *sp, const int32_t *tok, int n, const float *taps, size_t stride);
pf_rc pf_spec_lazy_flush(pf_spec *sp, char err[PF_ERR_LEN]);
int pf_spec_lazy_truncate(pf_spec *sp, int n_keep);
void pf_spec_lazy_free(pf_spec *sp);

/* The round loop as the engine's strategy interface (spec.c), over sp's drafter's taps. */
pf_strategy pf_spec_round(pf_spec *sp);

/* Extra final-layer tap: the target row a decision head reads (Dec, round logging). */
static inline int needs_final_tap(const pf_spec *sp) { return sp->dec || sp->log; }

#endif
