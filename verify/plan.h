/* The one resolver of "how to speculate": what a front end asks for (CLI flags, pf_gen_params, a
 * server request, a tuned profile) becomes a validated plan -- kind, block, head vocabulary, ngram
 * length, prior -- here and only here, with one error message per wrong value. Below the plan the
 * block is an invariant: builders assert it and never clamp it. */
#ifndef PF_PLAN_H
#define PF_PLAN_H

#include "draft/block.h"
#include "verify/kind.h"
#include "verify/profile.h"

#include <stddef.h>

/* Rows per round of the lookup draft when the user gives none. */
#define PF_NGRAM_BLOCK 8
/* The lookup's longest pattern when the user gives none. */
#define PF_NGRAM_N_DEFAULT 3

/* What a front end asks for. */
typedef struct {
    pf_kind kind;              /* PF_KIND_DEFAULT: the profile's choice, else the default */
    int block;                 /* rows per round, 0: the kind's default (pf_default_block) */
    int draft_head;            /* head vocabulary: 0 the draft's default, -1 the whole vocabulary, N > 0 the N most frequent */
    int ngram_n;               /* the lookup's longest pattern (1..16), 0: PF_NGRAM_N_DEFAULT */
    const pf_profile *profile; /* a tuned profile, or NULL */
    const char *profile_name;  /* its file, for messages (may be NULL) */
    const char *task;          /* its entry (must exist); NULL: its default entry */
    int profile_fixed;         /* the profile's entry as a fixed setting, not the adaptive prior */
    /* the draft at hand (pf_strategy_desc_draft fills these from an opened draft) */
    int has_draft;     /* a DFlash draft is at hand (file, bundle or loaded) */
    int draft_has_dec; /* and it carries a Dec head */
    int draft_block;   /* and the block it was trained with */
} pf_strategy_desc;

/* What it resolves to. Self-contained (the prior is copied) and zeroed whole, so two plans compare
 * with memcmp. */
typedef struct {
    pf_kind kind;      /* never PF_KIND_DEFAULT */
    int block;         /* 2..PF_MAX_BLOCK; 1 for plain */
    int draft_head;    /* as asked when the kind drafts with the DFlash draft, else 0 */
    int ngram_n;       /* 1..16 for ngram and hybrid, else 0 */
    int use_prior;     /* adapt from the profile's choice: its costs and acceptance below */
    double c[PF_MAX_BLOCK + 1], draft[PF_MAX_BLOCK + 1], alpha[PF_MAX_BLOCK];
    int n_cost, n_alpha; /* c[n], draft[n] for n < n_cost (0: no costs); alpha[0..n_alpha) */
    int profile_block; /* the block the profile's entry names (for reports), 0 without a profile */
} pf_strategy_plan;

/* Resolve a description. Without a profile, "default" is plain decoding without a draft; with one,
 * dflash when a block is given, else dec when the draft has a Dec head, else adaptive. From a profile, when kind and block are both open and the entry is a
 * DFlash strategy, the generation adapts from the tuned choice up to the draft's trained block:
 * Dec when the draft has a Dec head, else the adaptive block, with the profile's costs (and its
 * acceptance) as the prior; otherwise the entry fills the kind and block left open. 0, or -1 with
 * err (a block, head or ngram length out of range, a task not in the profile or without one, a
 * strategy that needs a draft or a Dec head). */
int pf_strategy_plan_make(const pf_strategy_desc *d, pf_strategy_plan *plan, char err[PF_ERR_LEN]);

/* The plan as one line, what every front end's --print-plan prints: "KIND block=B" and, where
 * they apply, " draft_head=H", " ngram=N", " prior=profile(block B)". */
void pf_plan_format(const pf_strategy_plan *plan, char *buf, size_t n);

/* The plan's prior for pf_spec_set_adaptive, pointing into plan; NULL when it has none. */
const pf_spec_prior *pf_plan_prior(const pf_strategy_plan *plan, pf_spec_prior *prior);

/* Rows per round when the user gives none: for a fixed-block DFlash strategy at most
 * PF_FIXED_BLOCK_DEFAULT of the draft's trained block (a CPU's verify cost grows steeply with the
 * rows, so a small block beats the trained one; docs/performance.md has the runs; `tune` picks per
 * device and task); Dec gating ("dec") and the adaptive block keep the trained block (at most
 * PF_MAX_BLOCK) as the most they draft (they choose per round how many to verify); ngram keeps
 * its PF_NGRAM_BLOCK. */
#define PF_FIXED_BLOCK_DEFAULT 4
int pf_default_block(pf_kind kind, int draft_block);

#endif
