#include "verify/strategies.h"

#include <stdio.h>
#include <string.h>

#include "draft/ngram.h"

pf_drafter *pf_drafter_open(const char *spec, const char *draft_path, pf_session *s, int ngram_n, int *block,
                            char err[PF_ERR_LEN]) {
    (void)s;
    (void)draft_path;
    if (!strcmp(spec, "ngram")) {
        if (*block <= 0) *block = 8;
        pf_drafter *d = pf_ngram_drafter_new(1, ngram_n);
        if (!d) snprintf(err, PF_ERR_LEN, "out of memory");
        return d;
    }
    snprintf(err, PF_ERR_LEN, "unknown speculative strategy '%s'", spec);
    return NULL;
}
