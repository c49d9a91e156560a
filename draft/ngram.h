/* Prompt-lookup draft: no model. The last n tokens (bonus included) are matched against the prompt
 * and the output so far (most recent match, longest n first); what followed is proposed. */
#ifndef PF_NGRAM_H
#define PF_NGRAM_H

#include "draft/drafter.h"

/* max_n: longest pattern tried (e.g. 3); min_n: shortest (e.g. 1). NULL on out of memory. */
pf_drafter *pf_ngram_drafter_new(int min_n, int max_n);

#endif
