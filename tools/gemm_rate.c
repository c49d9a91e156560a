/* Measurement behind docs/performance.md "Where a 256-bit verify row goes" (not part of the
 * build): one quantized gemm of a level on ONE core, no thread pool, no forward around it, for
 * B = 1, 2, 4, 8, 12, 16 activation rows; the best of REPS calls, as ns per output block (one
 * weight row x one activation row x one 32-wide block: 32 int8 products and the reference's float
 * operations of that block). A ROWS x COLS matrix that fits L2 gives the inner loop's own rate
 * (what llvm-mca predicts for it); a large one adds the stream from L3 / memory.
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I. -Iinclude tools/gemm_rate.c libpocketflash.a -lzstd -lxxhash -lm -pthread
 *   a.out LEVEL TYPE ROWS COLS REPS     (LEVEL avx2|avxvnni|avx512|..., TYPE q4_1|q4_0|q8_0) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/clock.h"
#include "formats/quant.h"
#include "kernels/kernels.h"

static float rnd(uint64_t *s) {
    *s = *s * 6364136223846793005u + 1442695040888963407u;
    return (float)((*s >> 40) & 0xffff) / 32768.0f - 1.0f;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s LEVEL q4_1|q4_0|q8_0 ROWS COLS REPS\n", argv[0]);
        return 2;
    }
    const pf_kernels *k = NULL;
    for (int l = 0; l < PF_LEVEL_COUNT && !k; l++)
        if (!strcmp(argv[1], pf_level_name((pf_level)l))) k = pf_kernels_get((pf_level)l);
    uint32_t type = !strcmp(argv[2], "q4_0") ? PF_TYPE_Q4_0 : !strcmp(argv[2], "q8_0") ? PF_TYPE_Q8_0 : PF_TYPE_Q4_1;
    int64_t rows = atoll(argv[3]), cols = atoll(argv[4]);
    int reps = atoi(argv[5]);
    if (!k || rows < 1 || cols < 32 || cols % 32 || reps < 1) {
        fprintf(stderr, "gemm_rate: level not runnable here or bad shape\n");
        return 2;
    }
    enum { BMAX = 16 };
    size_t rb = pf_row_bytes(type, cols);
    uint8_t *data = malloc(rb * (size_t)rows);
    float *x = malloc((size_t)BMAX * (size_t)cols * sizeof(float));
    uint64_t s = 1;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++) x[c] = 0.05f * rnd(&s);
        pf_quantize_row(type, x, data + (size_t)r * rb, cols);
    }
    for (int64_t i = 0; i < BMAX * cols; i++) x[i] = rnd(&s);
    pf_weight W = {data, type, rows, cols, rb, NULL};
    void *packed = NULL;
    if (pf_pack_wanted(k, type)) { /* what the loader gives this level */
        packed = aligned_alloc(64, (pf_packed_bytes(&W) + 63) / 64 * 64);
        pf_pack_weight(&W, packed);
        W.packed = packed;
    }
    size_t ab = pf_act_row_bytes(type, cols);
    void *act = malloc((size_t)BMAX * ab);
    pf_act_prepare(k, type, x, cols, BMAX, cols, act);
    float *y = malloc((size_t)BMAX * (size_t)rows * sizeof(float));
    static const int Bs[] = {1, 2, 4, 8, 12, 16};
    printf("%s %s %lld x %lld (%.1f MB), one core, best of %d\n", k->name, argv[2], (long long)rows,
           (long long)cols, (double)rb * (double)rows / 1e6, reps);
    for (int i = 0; i < 6; i++) {
        double best = 1e30;
        for (int r = 0; r < reps; r++) {
            double t = pf_now_s();
            k->gemm[type](&W, act, ab, Bs[i], y, rows, 0, rows);
            t = pf_now_s() - t;
            if (t < best) best = t;
        }
        double blocks = (double)rows * Bs[i] * (double)(cols / 32);
        printf("  B=%2d  %8.3f ms  %.3f ns per output block  %.2f GB/s of weights\n", Bs[i], best * 1e3,
               best * 1e9 / blocks, (double)rb * (double)rows / best / 1e9);
    }
    free(data), free(x), free(packed), free(act), free(y);
    return 0;
}
