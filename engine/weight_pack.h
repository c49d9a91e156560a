/* Packed copies of weight matrices for the kernels that read them packed (kernels.h), in memory
 * that asks for huge pages; the target (pf_model_pack_weights) and the drafts use it. */
#ifndef PF_WEIGHT_PACK_H
#define PF_WEIGHT_PACK_H

#include <stdbool.h>
#include <stddef.h>

#include "formats/gguf.h"
#include "kernels/cpu.h"
#include "kernels/kernels.h"

/* How a model's weights sit in memory and which kernels read them: chosen when it is loaded
 * (pocketflash --kernels, --repack, --hugepages; pf_load_params), its drafts follow it. */
typedef struct {
    pf_level level; /* the kernels every forward over the model uses (pf_level_at_most of the cap) */
    bool repack;    /* packed copies for the kernels that read them (PF_REPACK=0: off) */
    bool hugepages; /* packed copies in memory that asks for transparent huge pages (PF_HUGEPAGES=0: off) */
} pf_load_opts;

/* The defaults, from the environment: PF_KERNELS (pf_best_level), PF_REPACK, PF_HUGEPAGES. */
pf_load_opts pf_load_opts_env(void);

/* Packed copies of those of n weights o's kernels want packed (nothing when !o->repack), in one
 * allocation of pf_weights_alloc returned in *store and *map_len (NULL if
 * none; the caller frees it with pf_weights_free); release[i] says whether weight i's original
 * pages are a file mapping that may be handed back. -1 (err set) when out of memory. */
int pf_weights_pack(pf_weight *const *ws, const bool *release, int n, const pf_load_opts *o, void **store,
                    size_t *map_len, char err[PF_ERR_LEN]);
/* Memory for weights: 2 MiB aligned with transparent huge pages requested (!hugepages: plain
 * aligned_alloc); free with pf_weights_free(p, *map_len). NULL when out of memory. */
void *pf_weights_alloc(size_t size, bool hugepages, size_t *map_len);
void pf_weights_free(void *p, size_t map_len);

#endif
