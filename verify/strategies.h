/* Drafter construction by name, for front ends (CLI, bench): "ngram", "dflash" or "hybrid" (prompt
 * lookup where the committed text repeats a long enough pattern, the DFlash draft otherwise). */
#ifndef PF_STRATEGIES_H
#define PF_STRATEGIES_H

#include "draft/dec.h"
#include "draft/drafter.h"
#include "engine/generate.h"
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

/* *block: in = requested rows per round (0 = default), out = the block to use (the draft's trained
 * block size for dflash and hybrid, 8 for ngram). For dflash, draft_path NULL takes the draft bundled with
 * the session's target (a .pfb). NULL with err on failure. */
pf_drafter *pf_drafter_open(const char *spec, const char *draft_path, pf_session *s, int ngram_n, int *block,
                            char err[PF_ERR_LEN]);

/* Rows per round when the user gives none: for a fixed-block DFlash strategy at most
 * PF_FIXED_BLOCK_DEFAULT of the draft's trained block (a CPU verifies 4 rows for ~1.4x a one-row
 * forward but 8 for ~2.1x, so on the Pocket-shape stand-in B=4 gave 1.66x overall and the trained
 * B=16 well under 1x; `tune` picks per device and task); Dec gating ("dec") keeps the trained block
 * as the most it drafts (it chooses per round how many to verify); ngram keeps its 8. */
#define PF_FIXED_BLOCK_DEFAULT 4
int pf_default_block(const char *spec, int drafter_block);

/* THE default speculative strategy for a draft (what `run -d DRAFT` does without --spec/--block;
 * every front end that wants "speculate with this draft" calls this): adaptive Dec gating when the
 * draft carries a Dec head (dec.* tensors), the adaptive block otherwise, up to the draft's
 * trained block per round, the cost model measured when generation starts and then following the
 * machine (verify/adapt.h). draft_path NULL: the draft bundled with the session's target.
 * draft_head as for pf_drafter_apply_head. The strategy owns its drafter and head; free it with
 * pf_spec_free before the session. NULL with err on failure. */
pf_spec *pf_spec_default(pf_session *s, const char *draft_path, int draft_head, char err[PF_ERR_LEN]);
/* The draft's Dec head: 1 loaded into *dec, 0 when the draft has none, -1 with err when it is bad. */
int pf_draft_dec_open(const pf_session *s, const char *draft_path, pf_dec **dec, char err[PF_ERR_LEN]);

/* Apply a front end's --draft-head value to a drafter: 0 leaves the draft's default, -1 the whole
 * vocabulary, N > 0 the N most frequent ranked tokens (DFlash drafts only). */
int pf_drafter_apply_head(pf_drafter *d, int draft_head, char err[PF_ERR_LEN]);

#endif
