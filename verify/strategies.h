/* The strategy factory: every front end (run, gen, bench, demo, tune, the library) describes the
 * speculation it wants (kind, block, draft, head vocabulary, profile, task) and gets it from here.
 * Two steps: pf_strategy_plan_make resolves a description into the strategy to run (the one place
 * for the default, the profile's choice and the strategy names), pf_strategy_build makes that
 * strategy over a drafter; pf_strategy_open does both and opens the draft from a file or bundle.
 * Drafters by kind: "ngram", "dflash" or "hybrid" (prompt lookup where the committed text repeats
 * a long enough pattern, the DFlash draft otherwise). */
#ifndef PF_STRATEGIES_H
#define PF_STRATEGIES_H

#include "draft/dec.h"
#include "draft/dflash.h"
#include "draft/drafter.h"
#include "engine/generate.h"
#include "verify/profile.h"
#include "verify/spec.h"

/* The hybrid's lookup: patterns of at least PF_HYBRID_MIN_MATCH tokens (the bonus included, up to
 * max(ngram_n, that)), and its proposal kept when it has at least PF_HYBRID_MIN_TOKENS tokens (or fills
 * the block); otherwise the DFlash draft proposes (draft/hybrid.h). */
#ifndef PF_HYBRID_MIN_MATCH /* overridable at build time, for measuring other settings */
#define PF_HYBRID_MIN_MATCH 3
#endif
#ifndef PF_HYBRID_MIN_TOKENS
#define PF_HYBRID_MIN_TOKENS 2
#endif

/* The strategies by name: "default" (with a draft: dec when it has a Dec head, else adaptive;
 * without one: plain), "ar" (plain decoding), "dflash" (fixed block), "ngram", "hybrid", "dec"
 * (adaptive Dec gating), "adaptive" (the adaptive block without a head). */
typedef enum {
    PF_KIND_DEFAULT,
    PF_KIND_AR,
    PF_KIND_DFLASH,
    PF_KIND_NGRAM,
    PF_KIND_HYBRID,
    PF_KIND_DEC,
    PF_KIND_ADAPTIVE,
} pf_kind;

/* The one list of strategy names: 0, or -1 with err naming the unknown one and the list. */
int pf_kind_parse(const char *name, pf_kind *kind, char err[PF_ERR_LEN]);
const char *pf_kind_name(pf_kind kind);

/* Rows per round of the lookup draft when the user gives none. */
#define PF_NGRAM_BLOCK 8

/* What a front end asks for. */
typedef struct {
    pf_kind kind;              /* PF_KIND_DEFAULT: the profile's choice, else the default */
    int block;                 /* rows per round, 0: the kind's default (pf_default_block) */
    const pf_profile *profile; /* a tuned profile, or NULL */
    const char *profile_name;  /* its file, for messages (may be NULL) */
    const char *task;          /* its entry (must exist); NULL: its default entry */
    int profile_fixed;         /* the profile's entry as a fixed setting, not the adaptive prior */
    int has_draft;             /* a DFlash draft is at hand (file, bundle or loaded) */
    int draft_has_dec;         /* and it carries a Dec head */
} pf_strategy_desc;

/* What it resolves to. */
typedef struct {
    pf_kind kind;          /* never PF_KIND_DEFAULT */
    int block;             /* 0: the kind's default for the drafter's trained block */
    int use_prior;         /* adapt from the profile's choice: prior holds its costs and acceptance */
    pf_spec_prior prior;   /* points into the profile */
    int profile_block;     /* the block the profile's entry names (for reports), 0 without a profile */
} pf_strategy_plan;

/* Resolve a description. From a profile, when kind and block are both open and the entry is a
 * DFlash strategy, the generation adapts from the tuned choice up to the draft's trained block:
 * Dec when the draft has a Dec head, else the adaptive block, with the profile's costs (and its
 * acceptance) as the prior; otherwise the entry fills the kind and block left open. 0, or -1 with
 * err (a task not in the profile or without one, a strategy that needs a draft or a Dec head). */
int pf_strategy_plan_make(const pf_strategy_desc *d, pf_strategy_plan *plan, char err[PF_ERR_LEN]);

/* A drafter of the plan's kind over loaded DFlash weights w (not owned; NULL for ngram). */
pf_drafter *pf_drafter_for(pf_kind kind, const pf_dflash *w, pf_session *s, int ngram_n, char err[PF_ERR_LEN]);

/* The strategy of a plan over drafter d (trained block drafter_block; not owned) and, for dec, the
 * draft's Dec head (not owned). NULL with err on failure. */
pf_spec *pf_strategy_build(pf_session *s, const pf_strategy_plan *plan, pf_drafter *d, int drafter_block,
                           const pf_dec *dec, char err[PF_ERR_LEN]);

/* Open and build what d describes: the draft from draft_path (NULL: the one the session's target
 * bundles), its head vocabulary (draft_head as for pf_drafter_apply_head) and Dec head. *spec: the
 * strategy, owning its drafter and head (pf_spec_free it before the session), or NULL for plain
 * decoding; *plan (may be NULL) what the description resolved to. 0, or -1 with err. */
int pf_strategy_open(pf_session *s, const pf_strategy_desc *d, const char *draft_path, int draft_head, int ngram_n,
                     pf_spec **spec, pf_strategy_plan *plan, char err[PF_ERR_LEN]);

/* A DFlash draft is at hand: draft_path, or the draft the session's target bundles. */
int pf_draft_at_hand(const pf_session *s, const char *draft_path);

/* *block: in = requested rows per round (0 = default), out = the block to use (the draft's trained
 * block size for dflash and hybrid, PF_NGRAM_BLOCK for ngram). For dflash, draft_path NULL takes the
 * draft bundled with the session's target (a .pfb). NULL with err on failure. */
pf_drafter *pf_drafter_open(const char *spec, const char *draft_path, pf_session *s, int ngram_n, int *block,
                            char err[PF_ERR_LEN]);

/* Rows per round when the user gives none: for a fixed-block DFlash strategy at most
 * PF_FIXED_BLOCK_DEFAULT of the draft's trained block (a CPU's verify cost grows steeply with the
 * rows, so a small block beats the trained one; docs/performance.md has the runs; `tune` picks per
 * device and task); Dec gating ("dec") and the adaptive block keep the trained block as the most
 * they draft (they choose per round how many to verify); ngram keeps its PF_NGRAM_BLOCK. */
#define PF_FIXED_BLOCK_DEFAULT 4
int pf_default_block(pf_kind kind, int drafter_block);

/* THE default speculative strategy for a draft (what `run -d DRAFT` does without --spec/--block):
 * pf_strategy_open of PF_KIND_DEFAULT. NULL with err on failure. */
pf_spec *pf_spec_default(pf_session *s, const char *draft_path, int draft_head, char err[PF_ERR_LEN]);
/* The draft's Dec head: 1 loaded into *dec, 0 when the draft has none, -1 with err when it is bad. */
int pf_draft_dec_open(const pf_session *s, const char *draft_path, pf_dec **dec, char err[PF_ERR_LEN]);

/* Apply a front end's --draft-head value to a drafter: 0 leaves the draft's default, -1 the whole
 * vocabulary, N > 0 the N most frequent ranked tokens (DFlash drafts only). */
int pf_drafter_apply_head(pf_drafter *d, int draft_head, char err[PF_ERR_LEN]);

#endif
