/* libFuzzer target for the draft loader against a target: a valid DFlash, DFlash2 or DFlash +
 * Dec-head draft of a tiny synthetic target, with its metadata values, tensor types, shapes and
 * offsets edited (gguf_patch.h; the input's first byte picks the draft), is parsed, its Dec head
 * loaded, and the draft loaded against the target and run: context rows appended and one block
 * proposed (greedy). Each step works or fails with a one-line message. `make fuzz`. */
#include <unistd.h>

#include "draft/dec.h"
#include "draft/dflash.h"
#include "convert/dflash_synth.h"
#include "engine/model.h"
#include "convert/synth.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "tests/fuzz/fz_check.h"
#include "tests/fuzz/fz_dec_head.h"
#include "tests/fuzz/gguf_patch.h"

/* smaller than synth's "tiny" for speed: 2 layers (a draft taps layer 0, never the last), hidden
 * 64, 2 heads of 32 over 1 KV head */
static const pf_synth_shape k_fuzz_shape = {"fuzz", 2, 64, 128, 2, 1, 32, 320, 256};

static pf_model *g_target;
static gp_file g_draft[3];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    setenv("PF_KERNELS", "scalar", 0); /* the sanitized kernels (mk/fuzz.mk) */
    char tpath[128], dpath[3][128], err[PF_ERR_LEN];
    int pid = (int)getpid();
    snprintf(tpath, sizeof tpath, "/tmp/pf-fuzz-draft-%d-target.gguf", pid);
    for (int i = 0; i < 3; i++) snprintf(dpath[i], sizeof dpath[i], "/tmp/pf-fuzz-draft-%d-%d.gguf", pid, i);
    fz_check(pf_synth_write(&k_fuzz_shape, PF_TYPE_Q8_0, false, 3, tpath, err) == 0, "synth", err);
    fz_check(!!(g_target = pf_model_load(tpath, err)), "target", err);
    fz_check(pf_dflash_synth(tpath, 1, 1, 4, NULL, 0, 5, false, dpath[0], err) == 0, "synth-draft v1", err);
    fz_check(pf_dflash_synth(tpath, 2, 1, 4, NULL, 0, 5, false, dpath[1], err) == 0, "synth-draft v2", err);
    fz_check(fz_attach_dec_head(dpath[0], g_target->hp.n_embd, dpath[2], err) == 0, "dec-attach", err);
    for (int i = 0; i < 3; i++) {
        size_t size;
        uint8_t *b = gp_slurp(dpath[i], &size);
        fz_check(b && gp_index(&g_draft[i], b, size), "index", dpath[i]);
        unlink(dpath[i]);
    }
    unlink(tpath); /* the target stays mapped */
    return 0;
}

static void run_draft(const pf_dflash *d) {
    char err[PF_ERR_LEN] = "";
    pf_dflash_state *s = pf_dflash_state_new(d, 32, NULL, NULL, err);
    if (!s) {
        gp_check_err(err);
        return;
    }
    int n_taps = 0;
    pf_dflash_tap_layers(d, &n_taps);
    int n = 5, H = g_target->hp.n_embd;
    float *taps = malloc((size_t)n * (size_t)(n_taps > 0 ? n_taps : 1) * (size_t)H * sizeof *taps);
    for (size_t i = 0; taps && i < (size_t)n * (size_t)(n_taps > 0 ? n_taps : 1) * (size_t)H; i++)
        taps[i] = (float)((int)(i % 13) - 6) * 0.1f;
    int32_t draft[8];
    if (taps && pf_dflash_append_context(s, taps, n, err) != 0) gp_check_err(err);
    else if (taps && pf_dflash_propose(s, 1, 4, NULL, NULL, draft, NULL, NULL, err) != 0) gp_check_err(err);
    else
        for (int k = 0; taps && k < 3; k++)
            if (draft[k] < 0 || draft[k] >= g_target->hp.n_vocab) abort();
    free(taps);
    pf_dflash_state_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[PF_ERR_LEN] = "";
    uint8_t *buf;
    gguf_file *f = gp_parse(g_draft, 3, data, size, "fuzz-draft.gguf", err, &buf);
    if (!f) return 0;
    if (gguf_find_tensor(f, "dec.weight")) {
        pf_dec *dec = NULL;
        pf_dec_load(f, g_target->hp.n_embd, &dec, err);
        if (!dec) gp_check_err(err);
        pf_dec_free(dec);
    }
    pf_dflash *d = NULL;
    pf_dflash_from_gguf(f, 1, g_target, &d, err);
    if (!d) gp_check_err(err);
    else run_draft(d);
    pf_dflash_free(d);
    free(buf);
    return 0;
}
