/* Weights re-laid for the i8mm level's quantized gemm (kernels/arm/kernels_i8mm.c): groups of four
 * rows, block by block, with the two row pairs' quants already interleaved in 8-byte halves, so one
 * 16-byte load is an SMMLA weight operand (Q8_0) or two of them after the nibble split (Q4). Made
 * once at load time (engine/weight_pack.c); plain C, built for every ARM64 level. Layout of block k
 * of row group g (rows 4g .. 4g+3), at ((g * nblk) + k) * 4 * (GGUF block bytes) from the start:
 *   [4 f16 d][4 f16 m (Q4_1 only)][pair (rows 0, 1)][pair (rows 2, 3)]
 * a pair being, for c = 0 .. q/8 - 1 (q = 32 quant bytes for Q8_0, 16 for Q4), 16 bytes: the
 * 8 quant bytes 8c .. 8c+7 of its first row, then the same of its second. The same bytes as four
 * GGUF blocks; rows past the matrix in the last group are zero. */
#include <string.h>

#include "kernels/kernels.h"

#define I8MM_ROWS 4

static size_t block_bytes(uint32_t type, size_t *qs_off, int *has_m) {
    *has_m = type == PF_TYPE_Q4_1;
    *qs_off = type == PF_TYPE_Q4_1 ? 4 : 2;
    return type == PF_TYPE_Q8_0 ? sizeof(pf_block_q8_0)
           : type == PF_TYPE_Q4_0 ? sizeof(pf_block_q4_0) : sizeof(pf_block_q4_1);
}

size_t pf_packed_bytes_i8mm(const pf_weight *W) {
    size_t off;
    int has_m;
    const size_t bs = block_bytes(W->type, &off, &has_m);
    return (size_t)((W->rows + I8MM_ROWS - 1) / I8MM_ROWS) * (size_t)(W->cols / PF_QK) * I8MM_ROWS * bs;
}

void pf_pack_weight_i8mm(const pf_weight *W, void *dst_) {
    size_t off;
    int has_m;
    const size_t bs = block_bytes(W->type, &off, &has_m), nq = bs - off, head = (has_m ? 4 : 2) * I8MM_ROWS;
    const int64_t nblk = W->cols / PF_QK, groups = (W->rows + I8MM_ROWS - 1) / I8MM_ROWS;
    uint8_t *dst = dst_;
    for (int64_t g = 0; g < groups; g++)
        for (int64_t k = 0; k < nblk; k++, dst += I8MM_ROWS * bs) {
            memset(dst, 0, I8MM_ROWS * bs);
            for (int i = 0; i < I8MM_ROWS; i++) {
                const int64_t r = g * I8MM_ROWS + i;
                if (r >= W->rows) break;
                const uint8_t *b = (const uint8_t *)W->data + (size_t)r * W->row_bytes + (size_t)k * bs;
                memcpy(dst + 2 * i, b, 2);                               /* d */
                if (has_m) memcpy(dst + 2 * I8MM_ROWS + 2 * i, b + 2, 2); /* m */
                uint8_t *pair = dst + head + (size_t)(i / 2) * 2 * nq;
                for (size_t c = 0; c < nq / 8; c++) memcpy(pair + 16 * c + 8 * (i % 2), b + off + 8 * c, 8);
            }
        }
}
