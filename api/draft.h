/* The public draft object: DFlash / DFlash2 weights loaded once for a target, shared read-only by
 * every session that speculates with them, with the draft's Dec head when its file has one. */
#ifndef PF_API_DRAFT_H
#define PF_API_DRAFT_H

#include "draft/dec.h"
#include "draft/dflash.h"
#include "include/pocketflash.h"

struct pf_draft {
    const pf_model *target;
    pf_dflash *weights; /* they keep the draft's file (and a .pfb opened for it) open */
    pf_dec *dec;        /* NULL when the file has no dec.* tensors */
};

#endif
