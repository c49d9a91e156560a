/* THE way to open a draft for a target, used by the library, the strategy factory and every
 * command that takes -d: a draft GGUF or a .pfb bundle that holds a draft (told by its magic), or,
 * with no path, the draft the target's own bundle holds. The file is opened and mapped once; the
 * DFlash weights and the Dec head come from that one parse. */
#ifndef PF_DRAFT_OPEN_H
#define PF_DRAFT_OPEN_H

#include "draft/dec.h"
#include "draft/dflash.h"
#include "engine/model.h"

/* The draft at path (NULL: the target's bundled draft) into *weights (they keep the file, and a
 * bundle opened for them, until pf_dflash_free) and, with dec non-NULL, its Dec head into *dec
 * (NULL when the file has no dec.* tensors). PF_RC_OK, or with err: PF_RC_ARG (no path and no
 * bundled draft), PF_RC_IO (the path cannot be opened), PF_RC_FORMAT (a bad file, a draft that does
 * not fit the target, a malformed Dec head), PF_RC_OOM. */
pf_rc pf_draft_open(const pf_model *target, const char *path, pf_dflash **weights, pf_dec **dec, char err[PF_ERR_LEN]);

#endif
