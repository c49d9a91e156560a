/* The public generation types and the engine's, one into the other (api/generate.c). */
#ifndef PF_API_GEN_CONVERT_H
#define PF_API_GEN_CONVERT_H

#include "engine/decode.h"
#include "include/pocketflash.h"

/* The engine's decode parameters of the public ones (the speculation fields are the strategy's). */
pf_decode_params pf_api_decode_params(const pf_gen_params *p);
/* The engine's statistics into st's fields that are not the rounds'. */
void pf_api_copy_stats(const pf_decode_stats *d, pf_gen_stats *st);

#endif
