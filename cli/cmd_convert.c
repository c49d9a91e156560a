/* pocketflash convert: a Hugging Face checkpoint (Qwen3 target, z-lab DFlash / DFlash2 draft) -> GGUF. */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "draft/dflash.h"
#include "engine/model.h"
#include "formats/ggml_types.h"
#include "convert/hf_convert.h"

static const char k_usage[] =
    "usage: pocketflash convert HF_DIR -o OUT.gguf [--type f32|f16|bf16|q8_0|q4_0|q4_1] [--target TARGET.gguf]\n"
    "  converts a Hugging Face checkpoint folder (config.json, model.safetensors or the shards of\n"
    "  model.safetensors.index.json; F32 / F16 / BF16 weights) into the GGUF llama.cpp's converter writes:\n"
    "  Qwen3ForCausalLM targets (tied or untied head; tokenizer.json and tokenizer_config.json of the\n"
    "  folder) and z-lab DFlashDraftModel / DFlash2DraftModel drafts (--target names the target's GGUF,\n"
    "  whose tokenizer is copied in so the draft file is self-contained).\n"
    "  --type  weight matrices of the output (default f16); vectors and conv bases are f32\n"
    "  The output is loaded (a draft with its target) before the command succeeds. A draft that taps the\n"
    "  target's last layer converts with a warning: llama.cpp's loader refuses it.\n";

static void print_warning(void *ctx, const char *msg) {
    (void)ctx;
    fprintf(stderr, "pocketflash: warning: %s\n", msg);
}

/* The result must load: a target alone, a draft with its target; else it is removed and the
 * loader's kind is the exit status. */
static int check_output(const char *out, const char *target, int arch, const char *type_s) {
    char err[PF_ERR_LEN];
    pf_model *m = NULL;
    pf_dflash *d = NULL;
    pf_rc rc = pf_model_open(arch == 0 ? out : target, &m, err);
    if (rc == PF_RC_OK && arch != 0) rc = pf_dflash_open(out, m, &d, err);
    if (rc == PF_RC_OK && arch == 0)
        printf("%s: qwen3 target, %d layers, hidden %d, vocabulary %d, %s matrices\n", out, m->hp.n_layer, m->hp.n_embd,
               m->hp.n_vocab, type_s);
    else if (rc == PF_RC_OK)
        printf("%s: DFlash%s draft, %d layers, block %d, %s matrices, loads with %s\n", out, arch == 2 ? "2" : "",
               pf_dflash_n_layer(d), pf_dflash_block_size(d), type_s, target);
    pf_dflash_free(d);
    pf_model_free(m);
    if (rc == PF_RC_OK) return 0;
    remove(out);
    return cli_fail_kind(pf_api_status(rc), "%s", err);
}

int cmd_convert(int argc, char **argv) {
    const char *dir = NULL, *out = NULL, *target = NULL, *type_s = "f16";
    const cli_arg args[] = {CLI_STR("-o", &out), CLI_STR("--type", &type_s), CLI_STR("--target", &target),
                            CLI_POS(&dir, 1), CLI_END};
    int parsed = cli_parse("convert", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (fputs(k_usage, stdout), 0) : 1;
    if (!dir || !out) return cli_fail("convert: HF_DIR and -o OUT.gguf are required (try --help)");
    if (target) { /* the check after writing loads the target: it must not be the file written */
        char *a = realpath(target, NULL), *b = realpath(out, NULL);
        bool same = !strcmp(target, out) || (a && b && !strcmp(a, b));
        free(a);
        free(b);
        if (same) return cli_fail("convert: -o %s: the output must differ from --target", out);
    }
    int t = pf_type_from_name(type_s);
    if (t < 0) return cli_fail("convert: --type: unknown type '%s' (f32, f16, bf16, q8_0, q4_0, q4_1)", type_s);
    pf_convert_opts o = {.type = (uint32_t)t, .target = target, .warn = print_warning};
    char err[PF_ERR_LEN];
    int arch = 0;
    pf_rc rc = pf_hf_convert(dir, out, &o, &arch, err);
    if (rc != PF_RC_OK) return cli_fail_kind(pf_api_status(rc), "%s", err);
    return check_output(out, target, arch, type_s);
}
