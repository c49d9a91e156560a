/* libFuzzer target for the model loader end to end: a valid tiny target (synthetic, q8_0 or f16
 * matrices) with its metadata values, tensor types, shapes and offsets edited (gguf_patch.h) is
 * parsed, loaded as the engine loads it (weights packed), and run through one 3-row forward with
 * logits. Each step either works or fails with a one-line message; a crash, a sanitizer report or
 * a multi-line error is a finding. `make fuzz` (FUZZ_TIME seconds). */
#include <unistd.h>

#include "engine/batch.h"
#include "engine/forward.h"
#include "convert/synth.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "tests/fuzz/fz_check.h"
#include "tests/fuzz/gguf_patch.h"

/* smaller than synth's "tiny" for speed: 1 layer, hidden 64, 2 heads of 32 over 1 KV head */
static const pf_synth_shape k_fuzz_shape = {"fuzz", 1, 64, 128, 2, 1, 32, 320, 256};

static gp_file g_base[2];

static void make_base(gp_file *g, uint32_t type) {
    char path[128], err[PF_ERR_LEN];
    snprintf(path, sizeof path, "/tmp/pf-fuzz-model-%d-%u.gguf", (int)getpid(), type);
    fz_check(pf_synth_write(&k_fuzz_shape, type, false, 7, path, err) == 0, "synth", err);
    size_t size;
    uint8_t *b = gp_slurp(path, &size);
    unlink(path);
    if (!b || !gp_index(g, b, size)) abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    setenv("PF_KERNELS", "scalar", 0); /* the sanitized kernels (mk/fuzz.mk) */
    make_base(&g_base[0], PF_TYPE_Q8_0);
    make_base(&g_base[1], PF_TYPE_F16);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[PF_ERR_LEN] = "";
    uint8_t *buf;
    gguf_file *f = gp_parse(g_base, 2, data, size, "fuzz.gguf", err, &buf);
    if (!f) return 0;
    pf_model *m = NULL;
    pf_model_from_gguf(f, 1, &m, err);
    if (m && pf_model_pack_weights(m, err) < 0) {
        pf_model_free(m);
        m = NULL;
    }
    if (!m) {
        gp_check_err(err);
        free(buf);
        return 0;
    }
    pf_ctx *c = pf_ctx_new(m, 16, 1, NULL, err);
    if (!c) {
        gp_check_err(err);
    } else {
        const int32_t toks[3] = {1, 2, 3};
        float *logits = malloc((size_t)m->hp.n_vocab * sizeof *logits);
        pf_batch b = {.tokens = toks, .n = 3, .logits_mode = PF_LOGITS_LAST, .logits = logits};
        if (logits && pf_forward(c, &b, err) != 0) gp_check_err(err);
        free(logits);
        pf_ctx_free(c);
    }
    pf_model_free(m);
    free(buf);
    return 0;
}
