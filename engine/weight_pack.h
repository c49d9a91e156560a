/* Packed copies of weight matrices for the kernels that read them packed (kernels.h), in memory
 * that asks for huge pages; the target (pf_model_pack_weights) and the drafts use it. */
#ifndef PF_WEIGHT_PACK_H
#define PF_WEIGHT_PACK_H

#include <stdbool.h>
#include <stddef.h>

#include "formats/gguf.h"
#include "kernels/kernels.h"

/* Packed copies of those of n weights the kernels want packed (nothing when the environment has
 * PF_REPACK=0), in one allocation of pf_weights_alloc returned in *store and *map_len (NULL if
 * none; the caller frees it with pf_weights_free); release[i] says whether weight i's original
 * pages are a file mapping that may be handed back. -1 (err set) when out of memory. */
int pf_weights_pack(pf_weight *const *ws, const bool *release, int n, void **store, size_t *map_len,
                    char err[PF_ERR_LEN]);
/* Memory for weights: 2 MiB aligned with transparent huge pages requested (PF_HUGEPAGES=0: plain
 * aligned_alloc); free with pf_weights_free(p, *map_len). NULL when out of memory. */
void *pf_weights_alloc(size_t size, size_t *map_len);
void pf_weights_free(void *p, size_t map_len);

#endif
