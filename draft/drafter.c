#include "draft/drafter.h"

#include <stdlib.h>

void pf_drafter_free(pf_drafter *d) {
    if (!d) return;
    if (d->free) d->free(d->state);
    free(d);
}
