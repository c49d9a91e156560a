/* The strategy factory: every front end (run, gen, demo and the server through the library's
 * pf_gen_params, bench and tune through their arms) describes the speculation it wants, the one
 * resolver (verify/plan.h) turns that into a plan, and this builds the plan's strategy over a
 * drafter. Drafters by kind: "ngram", "dflash" or "hybrid" (prompt lookup where the committed
 * text repeats a long enough pattern, the DFlash draft otherwise). */
#ifndef PF_STRATEGIES_H
#define PF_STRATEGIES_H

#include "draft/dec.h"
#include "draft/dflash.h"
#include "draft/drafter.h"
#include "engine/generate.h"
#include "verify/plan.h"
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

/* A drafter of the plan's kind over loaded DFlash weights w (NULL for ngram), with the plan's head
 * vocabulary, into *out; with own_weights it frees w (also when this fails), else w is borrowed.
 * PF_RC_OK, or the kind of what failed with err: PF_RC_ARG (a head vocabulary the draft cannot
 * take), PF_RC_OOM. */
pf_rc pf_drafter_for(const pf_strategy_plan *plan, const pf_dflash *w, int own_weights, pf_engine_session *s,
                         pf_drafter **out, char err[PF_ERR_LEN]);

/* The strategy of a plan (its block is asserted, not checked) over drafter d (not owned) and, for
 * dec, the draft's Dec head (not owned), into *out. PF_RC_OK, or PF_RC_ARG (dec without a head or
 * over a drafter without hidden rows) / PF_RC_OOM with err. */
pf_rc pf_strategy_build(pf_engine_session *s, const pf_strategy_plan *plan, pf_drafter *d, const pf_dec *dec,
                            pf_spec **out, char err[PF_ERR_LEN]);

/* A DFlash draft is at hand: draft_path, or the draft the session's target bundles. */
int pf_draft_at_hand(const pf_engine_session *s, const char *draft_path);
/* What an opened draft (pf_draft_open; w NULL: none at hand) brings to a description: has_draft,
 * draft_block and draft_has_dec. */
void pf_strategy_desc_draft(pf_strategy_desc *d, const pf_dflash *w, const pf_dec *dec);

/* A drafter by name ("dflash", "ngram", "hybrid") that owns what it opens, at the lookup length
 * ngram_n, into *out; *draft_block: the draft's trained block (PF_NGRAM_BLOCK for ngram). For
 * dflash and hybrid the draft is draft_path (a draft GGUF or a .pfb bundle), or with NULL the
 * draft bundled with the session's target. PF_RC_OK, or with err PF_RC_ARG (a bad name, no draft
 * at hand) or the draft's opening code (pf_draft_open). */
pf_rc pf_drafter_open(const char *name, const char *draft_path, pf_engine_session *s, int ngram_n, int *draft_block,
                      pf_drafter **out, char err[PF_ERR_LEN]);

#endif
