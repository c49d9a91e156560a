/* The target model: a Qwen3 decoder loaded from GGUF or a .pfb bundle (weights stay in the
 * mapping). Its KV cache is engine/kv_cache.h, the forward engine/forward.h. */
#ifndef PF_MODEL_H
#define PF_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/hparams.h"
#include "formats/gguf.h"
#include "engine/weight_pack.h"
#include "kernels/kernels.h"

typedef struct pf_tokenizer pf_tokenizer;
typedef struct pfb_bundle pfb_bundle;

typedef struct {
    pf_weight attn_q, attn_k, attn_v, attn_o, ffn_gate, ffn_up, ffn_down;
    const float *attn_norm, *ffn_norm, *q_norm, *k_norm;
} pf_layer;

typedef struct pf_model {
    gguf_file *file;
    int own_file; /* close file on free */
    pf_hparams hp;
    pf_layer *layers;
    pf_weight tok_embd, output; /* output aliases tok_embd when tied */
    const float *output_norm;
    bool tied;
    pf_tokenizer *tok;
    float *norm_store; /* norm vectors converted to f32 when stored otherwise */
    /* Set when loaded from a .pfb bundle: `file` and every weight point into it, and so does a
     * draft built from it (pfb_gguf(bundle, PFB_OWNER_DRAFT)), which must be freed before the
     * model. Closed by pf_model_free after `file`. */
    pfb_bundle *bundle;
    void *packed_store; /* the weights' packed copies (pf_model_pack_weights), or NULL */
    size_t packed_map_len; /* for pf_weights_free */
    pf_load_opts opts;     /* its kernels and weight layout; its drafts follow them */
} pf_model;

/* Load a qwen3-architecture GGUF, or the target of a .pfb bundle (recognised by its magic, not
 * its name), into *out. Errors name the file and the field (wrong architecture, missing tensor,
 * wrong shape or type; for a bundle also the section). PF_RC_OK, or with err PF_RC_IO (the path
 * cannot be opened or mapped), PF_RC_FORMAT (truncated, malformed, unsupported), PF_RC_OOM. */
pf_rc pf_model_open(const char *path, pf_model **out, char err[PF_ERR_LEN]);
/* pf_model_open with the kernels and weight layout of o rather than the environment's. */
pf_rc pf_model_open_with(const char *path, const pf_load_opts *o, pf_model **out, char err[PF_ERR_LEN]);
/* pf_model_open for callers that need no kind (tools, tests): NULL with err. */
pf_model *pf_model_load(const char *path, char err[PF_ERR_LEN]);
/* Build a model over an already parsed file into *out (the environment's pf_load_opts, its
 * weights not packed yet); takes ownership of f when own_file.
 * PF_RC_OK, or PF_RC_FORMAT / PF_RC_OOM with err. */
pf_rc pf_model_from_gguf(gguf_file *f, int own_file, pf_model **out, char err[PF_ERR_LEN]);
void pf_model_free(pf_model *m);
/* m was loaded from a .pfb bundle that also holds a draft (a front end speculates with it when
 * no draft is named). */
bool pf_model_bundles_draft(const pf_model *m);
/* Give every weight matrix the fast kernels can read packed (kernels.h) a packed copy, made
 * once (pf_model_open does this; nothing is packed when its opts.repack is off;
 * engine/weight_pack.h). Where the file is
 * mapped, the pages of the originals are handed back to the OS (they are re-read from the file
 * if anything reads them again), so resident memory does not double. Returns -1 (err set) when
 * out of memory. */
int pf_model_pack_weights(pf_model *m, char err[PF_ERR_LEN]);
/* Bytes of all weight tensors (what a decode step streams). */
size_t pf_model_weight_bytes(const pf_model *m);

#endif
