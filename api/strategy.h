/* The speculation a pf_gen_params asks for, made into a strategy the engine runs. The objects
 * (drafter, round loop) belong to the session and are kept between calls while the parameters
 * stay the same, so the draft's context survives from turn to turn. */
#ifndef PF_API_STRATEGY_H
#define PF_API_STRATEGY_H

#include "engine/generate.h"
#include "include/pocketflash.h"

typedef struct pf_spec pf_spec;

/* *strategy: what the engine runs (NULL: plain decoding); *spec and *block: the round loop whose
 * statistics belong in the caller's stats (NULL / 0 for plain decoding or p->strategy). */
pf_status pf_api_strategy(pf_session *s, const pf_gen_params *p, pf_strategy **strategy, pf_spec **spec, int *block,
                          char err[PF_ERR_LEN]);
/* Copy the round statistics of the last generation into st (nothing for spec NULL). */
void pf_api_round_stats(const pf_spec *spec, int block, pf_gen_stats *st);

#endif
