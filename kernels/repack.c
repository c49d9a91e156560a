/* Weights re-laid for the x86 quantized gemms (layout in kernels.h, pf_pack_weight); on ARM64
 * pf_packed_bytes / pf_pack_weight give the i8mm layout (kernels/arm/repack_i8mm.c).
 * The packed copy is made once at load time; the kernels then read each block of a 16-row group
 * as aligned vectors instead of transposing 16 rows in registers and gathering 16 scales. */
#include <string.h>

#include "kernels/kernels.h"

#define PACK_ROWS 16 /* rows per group: one per 32-bit lane of a 512-bit register */

int pf_pack_wanted(const pf_kernels *k, uint32_t type) {
    if (type != PF_TYPE_Q8_0 && type != PF_TYPE_Q4_0 && type != PF_TYPE_Q4_1) return 0;
    return k->reads_packed;
}

/* Block size, offset of the quants in a GGUF block, and whether there is a minimum. */
static size_t block_bytes(uint32_t type, size_t *qs_off, int *has_m) {
    *has_m = type == PF_TYPE_Q4_1;
    *qs_off = type == PF_TYPE_Q4_1 ? 4 : 2;
    return type == PF_TYPE_Q8_0 ? sizeof(pf_block_q8_0)
           : type == PF_TYPE_Q4_0 ? sizeof(pf_block_q4_0) : sizeof(pf_block_q4_1);
}

size_t pf_packed_bytes(const pf_weight *W) {
#ifdef __aarch64__
    return pf_packed_bytes_i8mm(W); /* the only packed layout of an ARM64 build */
#else
    size_t off;
    int has_m;
    size_t bs = block_bytes(W->type, &off, &has_m);
    size_t groups = (size_t)((W->rows + PACK_ROWS - 1) / PACK_ROWS);
    return groups * (size_t)(W->cols / PF_QK) * PACK_ROWS * bs;
#endif
}

void pf_pack_group(const pf_weight *W, int64_t g, int64_t k0, int64_t nk, void *dst_) {
    size_t off;
    int has_m;
    const size_t bs = block_bytes(W->type, &off, &has_m), nq = bs - off; /* quant bytes per block */
    uint8_t *dst = dst_;
    for (int64_t k = k0; k < k0 + nk; k++, dst += PACK_ROWS * bs) {
        memset(dst, 0, PACK_ROWS * bs); /* rows past the matrix stay zero */
        for (int i = 0; i < PACK_ROWS; i++) {
            int64_t r = g * PACK_ROWS + i;
            if (r >= W->rows) break;
            const uint8_t *b = (const uint8_t *)W->data + (size_t)r * W->row_bytes + (size_t)k * bs;
            memcpy(dst + 2 * i, b, 2);                               /* d */
            if (has_m) memcpy(dst + 2 * PACK_ROWS + 2 * i, b + 2, 2); /* m */
            uint8_t *q = dst + (has_m ? 4 : 2) * PACK_ROWS;
            for (size_t j = 0; j < nq / 4; j++) memcpy(q + j * 4 * PACK_ROWS + 4 * i, b + off + 4 * j, 4);
        }
    }
}

void pf_pack_weight(const pf_weight *W, void *dst_) {
#ifdef __aarch64__
    pf_pack_weight_i8mm(W, dst_);
#else
    size_t off;
    int has_m;
    const size_t bs = block_bytes(W->type, &off, &has_m);
    const int64_t nblk = W->cols / PF_QK, groups = (W->rows + PACK_ROWS - 1) / PACK_ROWS;
    for (int64_t g = 0; g < groups; g++) pf_pack_group(W, g, 0, nblk, (uint8_t *)dst_ + (size_t)g * nblk * PACK_ROWS * bs);
#endif
}
