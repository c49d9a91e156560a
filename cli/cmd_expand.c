/* pocketflash expand: function-preserving expansion of a small target (and its drafts) to a larger
 * shape, by default MNN-Pocket-0.3B's: the Pocket-shape stand-in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "draft/dflash_taps.h"
#include "convert/expand.h"
#include "formats/ggml_types.h"

static const char k_usage[] =
    "usage: pocketflash expand -m SMALL.gguf -o BIG.gguf [-d DRAFT.gguf -O BIG-DRAFT.gguf]... [--type T]\n"
    "                          [--seed S] [--shape pocket|qwen3-0.6b|tiny] [--layers N] [--hidden N] [--ffn N]\n"
    "                          [--heads N] [--heads-kv N] [--head-dim N] [--vocab N] [--ctx N] [--keep-eps]\n"
    "  writes a model of the target shape that computes exactly the small model's function (greedy\n"
    "  output identical, real-token logits equal up to float rounding): extra layers, heads, FFN and\n"
    "  hidden dims contribute zero, extra vocabulary tokens can never win (guard dimension), the\n"
    "  tokenizer is padded with unused tokens. Benchmarks on it are labelled Pocket-shape stand-in.\n"
    "  -m FILE        the small qwen3 target (GGUF)\n"
    "  -o FILE        the expanded target\n"
    "  -d FILE        a DFlash / DFlash2 draft of the small target (repeatable, each with its -O)\n"
    "  -O FILE        where the preceding -d's expanded draft goes\n"
    "  --type T       matrices of the outputs: f32 (default), f16, bf16, q8_0, q4_0, q4_1; norms stay f32\n"
    "  --seed S       seed of the random entries (default 1); the same seed writes the same files\n"
    "  --shape NAME   the target shape (default pocket: 28 layers, hidden 896, FFN 2560, 14/2 heads of 64,\n"
    "                 vocabulary 65536, context 40960); the flags below override single fields\n"
    "  --layers N --hidden N --ffn N --heads N --heads-kv N --head-dim N --vocab N --ctx N\n"
    "                 (head_dim must equal the source's: heads are added, never resized)\n"
    "  --keep-eps     keep the source's RMSNorm eps (the effective eps then grows by hidden'/hidden);\n"
    "                 by default it is scaled by hidden/hidden' so every norm is exact\n";

int cmd_expand(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *type_s = "f32", *shape_s = "pocket";
    enum { MAX_DRAFTS = 8 };
    const char *din[MAX_DRAFTS] = {0}, *dout[MAX_DRAFTS] = {0};
    long long seed = 1, ov[8] = {0}; /* the shape overrides; 0: not given (each is >= 1) */
    bool keep_eps = false;
    const cli_arg args[] = {
        CLI_STR("-m", &in), CLI_STR("-o", &out), CLI_STR("--type", &type_s), CLI_STR("--shape", &shape_s),
        CLI_LL("--seed", &seed, 0, INT64_MAX), CLI_LIST("-d", din, MAX_DRAFTS), CLI_LIST("-O", dout, MAX_DRAFTS),
        CLI_LL("--layers", &ov[0], 1, 1 << 20), CLI_LL("--hidden", &ov[1], 1, 1 << 20), CLI_LL("--ffn", &ov[2], 1, 1 << 20),
        CLI_LL("--heads", &ov[3], 1, 1 << 20), CLI_LL("--heads-kv", &ov[4], 1, 1 << 20),
        CLI_LL("--head-dim", &ov[5], 1, 1 << 20), CLI_LL("--vocab", &ov[6], 1, 1 << 20), CLI_LL("--ctx", &ov[7], 1, 1 << 30),
        CLI_ON("--keep-eps", &keep_eps), CLI_END};
    int parsed = cli_parse("expand", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (fputs(k_usage, stdout), 0) : 1;
    int nd = 0, no = 0;
    while (nd < MAX_DRAFTS && din[nd]) nd++;
    while (no < MAX_DRAFTS && dout[no]) no++;
    if (!in || !out) return cli_fail("expand: -m and -o are required");
    if (nd != no) return cli_fail("expand: every -d needs its -O (%d drafts, %d outputs)", nd, no);
    const pf_synth_shape *base = pf_synth_shape_find(shape_s);
    if (!base) return cli_fail("expand: unknown shape '%s' (pocket, qwen3-0.6b, tiny)", shape_s);
    int t = pf_type_from_name(type_s);
    if (t < 0) return cli_fail("expand: unknown type '%s' (f32, f16, bf16, q8_0, q4_0, q4_1)", type_s);
    pf_expand_opts o = {.shape = *base, .type = (uint32_t)t, .seed = (uint64_t)seed, .keep_eps = keep_eps};
    int *fields[7] = {&o.shape.n_layer, &o.shape.n_embd,     &o.shape.n_ff,   &o.shape.n_head,
                      &o.shape.n_head_kv, &o.shape.head_dim, &o.shape.n_vocab};
    for (int k = 0; k < 7; k++)
        if (ov[k]) *fields[k] = (int)ov[k];
    if (ov[7]) o.shape.n_ctx = ov[7];
    for (int k = 0; k < 8; k++)
        if (ov[k]) o.shape.name = "custom";
    for (int k = 0; k < nd; k++)
        if (!strcmp(din[k], dout[k]) || !strcmp(dout[k], in) || !strcmp(dout[k], out))
            return cli_fail("expand: %s: an output must differ from every input and the other output", dout[k]);
    if (!strcmp(in, out)) return cli_fail("expand: output must differ from input");

    char err[PF_ERR_LEN];
    pf_expand_info info;
    pf_rc rc = pf_expand_target(in, out, &o, &info, err);
    if (rc != PF_RC_OK) return cli_fail_status(pf_api_status(rc), err);
    const pf_synth_shape *d = &o.shape;
    fprintf(stderr,
            "expand: %s -> %s: %d layers, hidden %d, FFN %d, %d/%d heads of %d, vocabulary %d, %s\n"
            "  source: %d layers, hidden %d, FFN %d, %d/%d heads, vocabulary %d, %s; eps %g -> %g\n",
            in, out, d->n_layer, d->n_embd, d->n_ff, d->n_head, d->n_head_kv, d->head_dim, d->n_vocab,
            pf_type_info(o.type)->name, info.src.n_layer, info.src.n_embd, info.src.n_ff, info.src.n_head,
            info.src.n_head_kv, info.src.n_vocab, info.tied ? "tied" : "untied", info.src.rms_eps, info.eps);
    if (info.guard >= 0)
        fprintf(stderr,
                "  guard dim %d: c = %.3g (embedding rms %.3g, norm perturbation <= %.2g), output_norm %.4g, A = %g;\n"
                "  final residual rms %.3g..%.3g on the probe; real logits within +-%.3g of the shift; extra tokens\n"
                "  lose by >= %.3g nats (a residual %g times larger still loses); tied shift <= %.3g\n",
                info.guard, info.guard_c, info.e_rms, info.norm_perturb, info.guard_w, info.guard_a, info.rho_min,
                info.rho, info.logit_bound, info.guard_gap, PF_EXPAND_GUARD_MARGIN, info.shift_max);
    for (int k = 0; k < nd; k++) {
        if ((rc = pf_expand_draft(din[k], in, dout[k], &o, &info, err)) != PF_RC_OK)
            return cli_fail_status(pf_api_status(rc), err);
        fprintf(stderr, "expand: draft %s -> %s\n", din[k], dout[k]);
        /* a tap of the small target's last layer keeps its index (the small layers come first): in a
         * deeper expanded target that is the input of an extra layer, the same residual, which llama.cpp
         * can tap; at equal depth it stays the last layer, which llama.cpp refuses */
        int at = pf_dflash_file_taps_last(din[k], info.src.n_layer);
        if (at >= 0 && d->n_layer > info.src.n_layer)
            fprintf(stderr, "pocketflash: warning: %s: dflash.target_layers[%d] = %d taps the last layer of the %d-layer source "
                    "target; kept as %d in %s, the input of layer %d of the %d-layer expanded target (the same residual: "
                    "the extra layers add nothing), which llama.cpp accepts\n", din[k], at, info.src.n_layer,
                    info.src.n_layer, info.src.n_layer, dout[k], info.src.n_layer, d->n_layer);
        else if (at >= 0)
            fprintf(stderr, "pocketflash: warning: %s: dflash.target_layers[%d] = %d taps the target's last layer; %s keeps it "
                    "(pocketflash runs it, llama.cpp's loader refuses the draft)\n", din[k], at, info.src.n_layer, dout[k]);
    }
    return 0;
}
