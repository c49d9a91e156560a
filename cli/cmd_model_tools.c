/* pocketflash synth / quantize: write random-weight models of exact shapes, convert weight types. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "convert/synth.h"
#include "formats/ggml_types.h"
#include "convert/requantize.h"

static const char k_synth_usage[] =
    "usage: pocketflash synth --shape pocket|qwen3-0.6b|tiny --type f32|f16|bf16|q8_0|q4_0|q4_1 -o OUT.gguf\n"
    "                         [--seed S] [--untied]\n"
    "  writes a random-weight Qwen3 GGUF of that exact shape with a valid byte-level BPE tokenizer\n"
    "  (256 byte tokens, synthetic merges, Qwen3's 26 special tokens at the end)\n"
    "  --untied   add a separate output.weight instead of tying it to token_embd\n";

int cmd_synth(int argc, char **argv) {
    const char *shape = NULL, *type = "f16", *out = NULL;
    long long seed = 1;
    bool untied = false;
    const cli_arg args[] = {CLI_STR("--shape", &shape), CLI_STR("--type", &type), CLI_STR("-o", &out),
                            CLI_LL("--seed", &seed, 0, INT64_MAX), CLI_ON("--untied", &untied), CLI_END};
    int parsed = cli_parse("synth", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (fputs(k_synth_usage, stdout), 0) : 1;
    if (!shape || !out) return cli_fail("synth: --shape and -o are required");
    const pf_synth_shape *sh = pf_synth_shape_find(shape);
    if (!sh) return cli_fail("synth: unknown shape '%s' (pocket, qwen3-0.6b, tiny)", shape);
    int t = pf_type_from_name(type);
    if (t < 0) return cli_fail("synth: unknown type '%s' (f32, f16, bf16, q8_0, q4_0, q4_1)", type);
    char err[PF_ERR_LEN];
    pf_rc rc = pf_synth_save(sh, (uint32_t)t, untied, (uint64_t)seed, out, err);
    return rc == PF_RC_OK ? 0 : cli_fail_status(pf_api_status(rc), err);
}

int cmd_quantize(int argc, char **argv) {
    const char *pos[3] = {0};
    const cli_arg args[] = {CLI_POS(pos, 3), CLI_END};
    int parsed = cli_parse("quantize", argc, argv, args, 0);
    if (parsed < 0)
        puts("usage: pocketflash quantize IN.gguf OUT.gguf q8_0|q4_0|q4_1|f16|bf16|f32\n"
             "  converts every weight matrix (2-D, rows a multiple of 32) to the type; norms stay f32");
    if (parsed) return parsed < 0 ? 0 : 1;
    if (!pos[2]) return cli_fail("quantize: expected IN.gguf OUT.gguf TYPE");
    int t = pf_type_from_name(pos[2]);
    if (t < 0) return cli_fail("quantize: unknown type '%s' (q8_0, q4_0, q4_1, f16, bf16, f32)", pos[2]);
    if (!strcmp(pos[0], pos[1])) return cli_fail("quantize: output must differ from input");
    char err[PF_ERR_LEN];
    pf_rc rc = pf_requantize_file(pos[0], pos[1], (uint32_t)t, err);
    if (rc != PF_RC_OK) return cli_fail_status(pf_api_status(rc), err);
    return 0;
}
