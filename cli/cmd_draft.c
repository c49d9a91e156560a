/* pocketflash synth-draft: write a random-weight DFlash / DFlash2 draft GGUF for a target. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "convert/dflash_synth.h"
#include "draft/dflash_taps.h"
#include "formats/gguf.h"

static const char k_usage[] =
    "usage: pocketflash synth-draft -m TARGET.gguf -o DRAFT.gguf [--version 1|2] [--layers N] [--block B]\n"
    "                               [--taps L1,L2,..] [--seed S] [--identity]\n"
    "  writes a random-weight DFlash (1) or DFlash2 (2) draft for the target: its hidden size, heads and\n"
    "  tokenizer, matrices in the target's weight type, MASK = <|fim_pad|> (or the last control token)\n"
    "  -m FILE       target model (qwen3 GGUF)\n"
    "  -o FILE       output draft GGUF\n"
    "  --version V   1 = DFlash, 2 = DFlash2 (conv + candidate selector); default 1\n"
    "  --layers N    draft layers (default 5)\n"
    "  --block B     trained block size stored as dflash.block_size (default 16)\n"
    "  --taps LIST   target layers to tap, 0-based 'after layer L' (default: one per draft layer by\n"
    "                z-lab's rule round(1 + i*(n-4)/(layers-1)), never the last layer, which llama.cpp\n"
    "                cannot tap; a list that taps it is written with a warning)\n"
    "  --seed S      RNG seed (default 1); the same seed gives the same shared weights for v1 and v2\n"
    "  --identity    DFlash2 starts as plain DFlash: conv base = identity tap, dyn proj = 0,\n"
    "                selector successor = 0\n";

/* "3,7,11" -> taps; false after printing an error. */
static bool parse_taps(const char *s, int **out, int *n) {
    int cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    int *t = malloc((size_t)cap * sizeof *t);
    if (!t) return cli_fail("out of memory"), false;
    char *copy = strdup(s), *save = NULL;
    int k = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long long v;
        if (!cli_int("--taps", tok, 0, 4095, &v)) {
            free(copy);
            free(t);
            return false;
        }
        t[k++] = (int)v;
    }
    free(copy);
    if (k == 0) {
        free(t);
        cli_fail("--taps: expected a comma-separated list of layer indices");
        return false;
    }
    *out = t;
    *n = k;
    return true;
}

int cmd_synth_draft(int argc, char **argv) {
    const char *target = NULL, *out = NULL, *taps_s = NULL;
    long long version = 1, layers = 5, block = 16, seed = 1;
    bool identity = false;
    const cli_arg args[] = {CLI_STR("-m", &target), CLI_STR("-o", &out), CLI_STR("--taps", &taps_s),
                            CLI_LL("--version", &version, 1, 2), CLI_LL("--layers", &layers, 1, 256),
                            CLI_LL("--block", &block, 2, 4096), CLI_LL("--seed", &seed, 0, INT64_MAX),
                            CLI_ON("--identity", &identity), CLI_END};
    int parsed = cli_parse("synth-draft", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (fputs(k_usage, stdout), 0) : 1;
    if (!target || !out) return cli_fail("synth-draft: -m and -o are required");
    if (identity && version != 2) return cli_fail("synth-draft: --identity needs --version 2");
    int *taps = NULL, n_taps = 0;
    if (taps_s && !parse_taps(taps_s, &taps, &n_taps)) return 1;
    char err[PF_ERR_LEN];
    pf_rc rc = pf_dflash_synth(target, (int)version, (int)layers, (int)block, taps, n_taps, (uint64_t)seed, identity,
                               out, err);
    free(taps);
    if (rc != PF_RC_OK) return cli_fail_status(pf_api_status(rc), err);
    gguf_file *tf;
    uint32_t n_target = 0;
    if (gguf_open_file(target, &tf, err) == PF_RC_OK && gguf_get_u32(tf, "qwen3.block_count", &n_target) == 0) {
        int at = pf_dflash_file_taps_last(out, (int)n_target);
        if (at >= 0)
            fprintf(stderr, "pocketflash: warning: %s: --taps entry %d taps the target's last layer %u (dflash.target_layers "
                    "%u): pocketflash runs it, llama.cpp's loader refuses the draft\n", out, at, n_target - 1, n_target);
    }
    gguf_close(tf);
    return 0;
}
