/* The rows one forward takes: tokens at the cache's next positions, which logits to return and
 * which layers' residual rows to tap (what a verifying round and a draft's context need). A
 * forward over several sequences (pf_forward_seqs) takes one pf_batch per sequence, each with its
 * own KV cache. */
#ifndef PF_BATCH_H
#define PF_BATCH_H

#include <stdint.h>

#include "engine/kv_cache.h"

enum { PF_LOGITS_NONE = 0, PF_LOGITS_LAST = 1, PF_LOGITS_ALL = 2 };

typedef struct pf_batch {
    pf_kv_cache *kv;       /* the sequence's cache; NULL: the context's own (pf_ctx.kv) */
    const int32_t *tokens; /* n rows at positions kv->len .. kv->len + n - 1 */
    int n;
    int logits_mode; /* PF_LOGITS_*: logits gets n_vocab (LAST) or n*n_vocab (ALL) floats */
    float *logits;
    /* Residual-stream rows after layers tap_layers[t] (0-based layer index; n_layer-1 = last
     * layer, before the output norm). Row b, tap t at taps + (b*n_taps + t)*n_embd. */
    const int *tap_layers;
    int n_taps;
    float *taps;
} pf_batch;

#endif
