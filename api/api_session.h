/* The public session (pf_session, opaque in include/pocketflash.h) is api/'s: the engine's session
 * (context over a loaded model, sampler state; what every layer below works on) and what api/
 * keeps beside it, the speculation it built from pf_gen_params (api/strategy.c). Callers above
 * api/ that measure in the engine's session (bench, tune, the tests) reach it as &s->engine. */
#ifndef PF_API_API_SESSION_H
#define PF_API_API_SESSION_H

#include "engine/generate.h"
#include "include/pocketflash.h"

typedef struct api_spec api_spec;
typedef struct pf_spec_batch pf_spec_batch;

struct pf_session {
    pf_engine_session engine;
    api_spec *spec;        /* NULL until a generation speculates from pf_gen_params */
    pf_strategy *strategy; /* pf_api_use_strategy's, or NULL */
    /* pf_generate_batch's speculation, kept from call to call as a session keeps its own: the
     * slots' drafters and the cost model's calibration are made once, not per call */
    pf_spec_batch *batch;
};

/* Frees what api/strategy.c built for a session (NULL allowed). */
void pf_api_spec_free(api_spec *a);

#endif
