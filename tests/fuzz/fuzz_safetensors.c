/* libFuzzer target for the safetensors reader: any byte string must parse or fail cleanly, and every
 * tensor the reader accepts must lie inside the buffer (its last byte is read, float tensors are
 * widened). `make fuzz` (FUZZ_TIME seconds), seeded with a small valid file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/safetensors.h"
#include "tests/fuzz/fz_copy.h"

/* Every tensor the reader accepts is read at its last byte and, when small, widened to floats. */
static void parse(uint8_t *buf, size_t size) {
    char err[PF_ERR_LEN];
    pf_safetensors *st;
    if (pf_st_parse(buf, size, "fuzz", &st, err) != PF_RC_OK) return;
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < pf_st_count(st); i++) {
        const pf_st_tensor *t = pf_st_at(st, i);
        if (t->nbytes) sink ^= t->data[t->nbytes - 1];
        if (t->nel <= (1u << 16)) {
            float *f = malloc((t->nel ? t->nel : 1) * sizeof *f);
            if (f && pf_st_to_f32(t, f) == 0 && t->nel) sink ^= (uint8_t)(f[t->nel - 1] > 0);
            free(f);
        }
    }
    (void)sink;
    pf_st_close(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_on_copy(data, size, parse); }
