/* libFuzzer target for the GGUF reader: any byte string must parse or fail cleanly, and every
 * tensor the reader accepts must lie inside the buffer. `make fuzz` (FUZZ_TIME seconds). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "tests/fuzz/fz_copy.h"

/* Every tensor and string the reader accepts is read at its last byte. */
static void parse(uint8_t *buf, size_t size) {
    char err[PF_ERR_LEN];
    gguf_file *f = gguf_parse(buf, size, "fuzz", err);
    if (!f) return;
    volatile uint8_t sink = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (t->nbytes) sink ^= ((const uint8_t *)t->data)[t->nbytes - 1];
    }
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const gguf_kv *kv = &f->kv[i];
        if (kv->type == GGUF_ARR && kv->v.arr.type == GGUF_STR)
            for (uint64_t j = 0; j < kv->v.arr.n; j++)
                if (kv->v.arr.strs[j].len) sink ^= (uint8_t)kv->v.arr.strs[j].ptr[kv->v.arr.strs[j].len - 1];
    }
    uint32_t u;
    gguf_get_u32(f, "general.alignment", &u);
    (void)sink;
    gguf_close(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_on_copy(data, size, parse); }
