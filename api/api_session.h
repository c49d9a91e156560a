/* The library's session wraps the engine's: the engine's session (what every layer below works on;
 * the public pf_session * points at it) and what api/ keeps for it, the speculation it built from
 * pf_gen_params (api/strategy.c). Every engine session is made by pf_session_new, inside one. */
#ifndef PF_API_API_SESSION_H
#define PF_API_API_SESSION_H

#include "engine/generate.h"

typedef struct api_spec api_spec;

typedef struct {
    pf_session engine; /* first: a pf_session * is this struct's address */
    api_spec *spec;    /* NULL until a generation speculates from pf_gen_params */
    pf_strategy *strategy; /* pf_api_use_strategy's, or NULL */
} api_session;

static inline api_session *pf_api_session(pf_session *s) { return (api_session *)s; }

/* Frees what api/strategy.c built for a session (NULL allowed). */
void pf_api_spec_free(api_spec *a);

#endif
