/* What kind of speculation runs, and the one check of a block size. Every layer names the rows a
 * round verifies `block`; pf_block_check is the only place that decides which blocks are valid. */
#ifndef PF_KIND_H
#define PF_KIND_H

#include "draft/block.h"
#include "formats/gguf.h"

/* The strategies by name: "default" (with a draft: dec when it has a Dec head, else adaptive, or
 * dflash when a block is given; without one: plain), "plain" (plain decoding; "ar" is taken for it
 * too), "dflash" (fixed block),
 * "ngram", "dec" (adaptive Dec gating), "adaptive" (the adaptive block without a head), "hybrid".
 * The values are the public pf_spec_kind's, one for one (api/strategy.c asserts it). */
typedef enum {
    PF_KIND_DEFAULT,
    PF_KIND_PLAIN,
    PF_KIND_DFLASH,
    PF_KIND_NGRAM,
    PF_KIND_DEC,
    PF_KIND_ADAPTIVE,
    PF_KIND_HYBRID,
} pf_kind;

/* The one list of strategy names: 0, or -1 with err naming the unknown one and the list. */
int pf_kind_parse(const char *name, pf_kind *kind, char err[PF_ERR_LEN]);
const char *pf_kind_name(pf_kind kind);
/* The kind drafts with a DFlash draft (dflash, hybrid, dec, adaptive). */
int pf_kind_uses_draft(pf_kind kind);

/* A block (rows verified per round) is 2..PF_MAX_BLOCK: 0, or -1 with err "<what> B is outside
 * 2..PF_MAX_BLOCK" (what: how the caller's user spelt it, e.g. "--block"). */
int pf_block_check(const char *what, long long block, char err[PF_ERR_LEN]);

#endif
