/* Packed copies of a model's weight matrices for the fast gemm (kernels.h, pf_pack_weight). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <unistd.h>

#include "engine/model.h"
#include "engine/weight_pack.h"

/* Drop the resident pages wholly inside [p, p + n) of a read-only file mapping: the packed copy
 * is what the gemm reads now, and anything else that reads the original gets it back from the
 * file. Only for mmap'd files (for memory we own, MADV_DONTNEED would zero it). */
static void release_pages(const void *p, size_t n) {
    long ps = sysconf(_SC_PAGESIZE);
    if (ps <= 0) return;
    uintptr_t a = ((uintptr_t)p + (uintptr_t)ps - 1) & ~(uintptr_t)(ps - 1), e = ((uintptr_t)p + n) & ~(uintptr_t)(ps - 1);
    if (e > a) madvise((void *)a, e - a, MADV_DONTNEED);
}

#define HUGE_PAGE ((size_t)2 << 20)

/* size bytes, 2 MiB aligned, asking the kernel for transparent huge pages: the weights are
 * streamed once per token, and with 4 KiB pages the TLB misses (two-level page walks under a
 * hypervisor) cost a large part of the memory bandwidth. *map_len is the mapping's length for
 * pf_weights_free, 0 where it fell back to aligned_alloc (or !hugepages). */
void *pf_weights_alloc(size_t size, bool hugepages, size_t *map_len) {
    *map_len = 0;
    if (hugepages) {
        size_t len = (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        uint8_t *p = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            uint8_t *data = (uint8_t *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
            if (data > p) munmap(p, (size_t)(data - p));
            if (p + HUGE_PAGE > data) munmap(data + len, (size_t)(p + HUGE_PAGE - data));
            madvise(data, len, MADV_HUGEPAGE);
            *map_len = len;
            return data;
        }
    }
    return aligned_alloc(64, (size + 63) & ~(size_t)63);
}

void pf_weights_free(void *p, size_t map_len) {
    if (!p) return;
    if (map_len) munmap(p, map_len);
    else free(p);
}

static bool env_off(const char *name) {
    const char *env = getenv(name);
    return env && !strcmp(env, "0");
}

pf_load_opts pf_load_opts_env(void) {
    return (pf_load_opts){pf_best_level(), !env_off("PF_REPACK"), !env_off("PF_HUGEPAGES")};
}

int pf_weights_pack(pf_weight *const *ws, const bool *release, int n, const pf_load_opts *o, void **store_out,
                    size_t *map_len, char err[PF_ERR_LEN]) {
    *store_out = NULL;
    *map_len = 0;
    if (!o->repack) return 0; /* packing off (comparisons): the GGUF layout is read */
    const pf_kernels *k = pf_kernels_get(o->level);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        if (pf_pack_wanted(k, ws[i]->type)) total += (pf_packed_bytes(ws[i]) + 63) & ~(size_t)63;
    if (total == 0) return 0;
    uint8_t *store = pf_weights_alloc(total, o->hugepages, map_len);
    if (!store) {
        snprintf(err, PF_ERR_LEN, "out of memory for %zu bytes of packed weights", total);
        return -1;
    }
    uint8_t *p = store;
    for (int i = 0; i < n; i++) {
        pf_weight *w = ws[i];
        if (!pf_pack_wanted(k, w->type)) continue;
        pf_pack_weight(w, p);
        w->packed = p;
        p += (pf_packed_bytes(w) + 63) & ~(size_t)63;
        if (release[i]) release_pages(w->data, (size_t)w->rows * w->row_bytes);
    }
    *store_out = store;
    return 0;
}

int pf_model_pack_weights(pf_model *m, char err[PF_ERR_LEN]) {
    if (m->packed_store) return 0;
    int nl = m->hp.n_layer, n = 0;
    pf_weight **ws = malloc(((size_t)nl * 7 + 1) * sizeof *ws);
    bool *rel = malloc(((size_t)nl * 7 + 1) * sizeof *rel);
    int rc = -1;
    if (!ws || !rel) {
        snprintf(err, PF_ERR_LEN, "out of memory for the packed weights");
        goto done;
    }
    for (int l = 0; l < nl; l++) {
        pf_layer *L = &m->layers[l];
        pf_weight *lw[7] = {&L->attn_q, &L->attn_k, &L->attn_v, &L->attn_o, &L->ffn_gate, &L->ffn_up, &L->ffn_down};
        for (int i = 0; i < 7; i++) rel[n] = m->file->mapped, ws[n++] = lw[i];
    }
    /* when tied, output is a view of tok_embd whose rows the embedding lookup keeps reading */
    rel[n] = m->file->mapped && !m->tied, ws[n++] = &m->output;
    rc = pf_weights_pack(ws, rel, n, &m->opts, &m->packed_store, &m->packed_map_len, err);
done:
    free(ws);
    free(rel);
    return rc;
}
