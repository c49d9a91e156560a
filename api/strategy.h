/* The speculation a pf_gen_params asks for, made into a strategy the engine runs. The objects
 * (drafter, round loop) belong to the session and are kept between calls while the parameters
 * stay the same, so the draft's context survives from turn to turn. */
#ifndef PF_API_STRATEGY_H
#define PF_API_STRATEGY_H

#include "engine/generate.h"
#include "include/pocketflash.h"
#include "verify/plan.h"
#include "verify/spec_batch.h"

typedef struct pf_spec pf_spec;

/* What a pf_gen_params resolved to. */
typedef struct {
    pf_strategy *strategy; /* what the engine runs (NULL: plain decoding) */
    pf_spec *spec;         /* the round loop whose statistics belong in the caller's stats (NULL for
                              plain decoding or a strategy set with pf_api_use_strategy) */
    int block;             /* its rows per round (0 with spec NULL) */
    const char *kind;      /* the strategy by name (pf_kind_name), NULL for pf_api_use_strategy's */
} api_choice;

/* What p asks for, built (or kept from the session's last call when the plan and draft are the
 * same), so a front end can reach the round loop (its statistics, --log-rounds) before and after
 * pf_generate* with the same p, which then runs this very object. */
pf_status pf_api_strategy(pf_session *s, const pf_gen_params *p, api_choice *c, char err[PF_ERR_LEN]);

/* What p asks of a batch's request (pf_generate_batch): its plan through the same resolver, over
 * p's draft (checked to be one for s's model) and its Dec head; the resolver's status and message
 * for a request it refuses. */
pf_status pf_api_choice(const pf_session *s, const pf_gen_params *p, pf_spec_choice *c, char err[PF_ERR_LEN]);

/* Tests and tools: the session's calls run strategy (not owned) instead of what pf_gen_params
 * asks for, until called again with NULL. No front end uses it: they all go through the resolver. */
void pf_api_use_strategy(pf_session *s, pf_strategy *strategy);
/* Copy the choice and the round statistics of the last generation into st. */
void pf_api_round_stats(const api_choice *c, pf_gen_stats *st);
/* The same from its parts: the strategy's name, the round loop that ran (NULL: none) and its block. */
void pf_api_spec_stats(const char *kind, const pf_spec *sp, int block, pf_gen_stats *st);

#endif
