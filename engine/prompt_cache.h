/* Persisted prompt cache: the target's K/V rows (all layers, f16) for a token prefix, plus the
 * tapped residual rows of that prefix a DFlash drafter rebuilds its context from, so a later
 * generation whose prompt starts with the prefix prefills only the rest. Because a forward is
 * batch invariant (row for row the same whatever the batch), restored rows are bitwise the rows a
 * cold prefill computes, and the output is identical.
 *
 * File layout (little-endian):
 *   header, 64 bytes:
 *     0  magic "PFPCACHE"   8 u32 version (1: f16 cache, 2: 8-bit cache)  12 u32 n_tokens (>= 1)
 *     16 u64 model key (pf_prompt_cache_key)       24 u32 n_layer   28 u32 kv_dim
 *     32 u32 n_embd         36 u32 n_taps          40 u64 raw payload size
 *     48 u64 xxh3-64 of the stored (compressed) payload
 *     56 u64 xxh3-64 of header bytes 0..55
 *   payload, one zstd frame of:
 *     i32 tokens[n_tokens], i32 tap_layers[n_taps],
 *     f16 K[n_layer][n_tokens][kv_dim], f16 V[n_layer][n_tokens][kv_dim],
 *     f32 taps[n_tokens][n_taps][n_embd]
 *   version 2 (the 8-bit cache) instead of each f16 K / V: i8 rows[n_layer][n_tokens][kv_dim], then
 *     f32 scales[n_layer][n_tokens][n_kv_head]. A file restores only into a cache of its type. */
#ifndef PF_PROMPT_CACHE_H
#define PF_PROMPT_CACHE_H

#include <stdint.h>

#include "engine/kv_cache.h"
#include "engine/model.h"

/* Identifies what the cached rows depend on: the model's GGUF header (metadata + tensor infos,
 * byte for byte, the same for a GGUF and its bundle), its hyper-parameters, every tensor's name,
 * type, shape and size with samples of its data (start, middle, end: a retrained model of the same
 * shape differs there), and the kernel level k (SIMD levels may round differently). */
uint64_t pf_prompt_cache_key(const pf_model *m, const pf_kernels *k);

/* Restore the longest usable prefix of `prompt` into kv (which must be empty): all cached rows if
 * the prompt is longer than the cached prefix, all but the last when the prompt equals it (so one
 * token is left to prefill). taps (NULL when n_taps 0) receives the restored rows' tapped rows in
 * pf_batch layout for the layers tap_layers. Returns the number of rows restored (>= 1), 0 when
 * the file does not exist, or -1 with the reason in err (corrupt or truncated file, another model,
 * a prompt that does not start with the cached prefix, tapped rows missing); kv is unchanged then. */
int pf_prompt_cache_restore(const char *path, uint64_t key, pf_kv_cache *kv, int n_embd, const int32_t *prompt,
                            int n_prompt, const int *tap_layers, int n_taps, float *taps, char err[PF_ERR_LEN]);

/* Save rows 0..n_tokens-1 of kv (and their tapped rows: taps in pf_batch layout for tap_layers,
 * may be NULL when n_taps is 0) for the prefix tokens. Written to a temporary file renamed over
 * path when complete. 0, or -1 with err. */
int pf_prompt_cache_save(const char *path, uint64_t key, const pf_kv_cache *kv, int n_embd, const int32_t *tokens,
                         int n_tokens, const int *tap_layers, int n_taps, const float *taps, char err[PF_ERR_LEN]);

#endif
