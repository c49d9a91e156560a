/* libFuzzer target for the .pfb bundle reader: any byte string must load or fail cleanly; every
 * section and every tensor the reader hands out must lie inside memory it owns or the buffer.
 * Built with a small PFB_MAX_RAW so forged sizes cannot ask for gigabytes. `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pfb.h"
#include "tests/fuzz/fz_copy.h"

/* Every section, the profile and every tensor of the bundle's models are read at both ends; then
 * the bytes go through pfb_verify as well. */
static void parse(uint8_t *buf, size_t size) {
    char err[PF_ERR_LEN];
    volatile uint8_t sink = 0;
    pfb_bundle *b = pfb_parse(buf, size, "fuzz", err);
    if (b) {
        for (int i = 0; i < pfb_n_sections(b); i++) {
            const pfb_section *s = pfb_section_at(b, i);
            sink ^= s->data[0];
            sink ^= s->data[s->raw_size - 1];
        }
        size_t plen;
        const uint8_t *prof = pfb_profile(b, &plen);
        if (prof && plen) sink ^= prof[plen - 1];
        for (int owner = PFB_OWNER_TARGET; owner <= PFB_OWNER_DRAFT; owner++) {
            if (!pfb_has_model(b, owner)) continue;
            gguf_file *f = NULL;
            pfb_gguf(b, owner, &f, err);
            if (!f) continue;
            for (uint64_t i = 0; i < f->n_tensors; i++) {
                const gguf_tensor *t = &f->tensors[i];
                sink ^= ((const uint8_t *)t->data)[0];
                sink ^= ((const uint8_t *)t->data)[t->nbytes - 1];
            }
            gguf_close(f);
        }
        pfb_close(b);
    }
    int n_sections;
    (void)pfb_verify(buf, size, "fuzz", &n_sections, err);
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_on_copy(data, size, parse); }
