/* pocketflash command-line entry: dispatches to the subcommands. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"

static const char k_usage[] =
    "usage: pocketflash COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  demo         the first command: plain vs speculative decoding on a few task prompts, one table\n"
    "  run          generate text with a model (plain or speculative decoding)\n"
    "  serve        an OpenAI-compatible HTTP server (chat and text completions, streaming)\n"
    "  bench        per-task speedup of speculative over plain decoding (interleaved, checked)\n"
    "  dec-attach   store a trained Dec head (decision head) in a draft GGUF\n"
    "  draft-head   store a frequency-ranked head vocabulary in a draft GGUF\n"
    "  tune         pick the strategy and block size per task type on this device (writes a profile)\n"
    "  bench-model  measure prefill, decode by depth, c(B) and the bandwidth ceiling of a model\n"
    "  gen          batch generation over a JSONL prompt file (responses and token ids)\n"
    "  taps         a target's tapped residual rows over token sequences (draft training features)\n"
    "  info         print a GGUF file's metadata and tensors\n"
    "  synth        write a random-weight Qwen3 GGUF of an exact shape\n"
    "  synth-draft  write a random-weight DFlash / DFlash2 draft for a target\n"
    "  expand       grow a small target (and drafts) to Pocket's shape, function-preserving\n"
    "  quantize     convert a GGUF's weight matrices to q8_0 / q4_0 / q4_1 / f16 / bf16 / f32\n"
    "  tokenize     print the token ids of a text (or decode ids with --decode)\n"
    "  vocab-import convert a Hugging Face tokenizer.json into a tokenizer-only GGUF\n"
    "  convert      convert a Hugging Face checkpoint (Qwen3 target, DFlash / DFlash2 draft) into a GGUF\n"
    "  pack         bundle a target, its draft and a tuned profile into one .pfb file\n"
    "  verify       check every section hash of a .pfb bundle\n"
    "\n"
    "Run 'pocketflash COMMAND --help' for a command's options.\n";

int main(int argc, char **argv) {
    /* Past a file-size limit (ulimit -f) the default SIGXFSZ kills the process with no message and
     * leaves the writer's temporary behind; ignored, the write fails with EFBIG and the writer
     * reports it and removes the temporary. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        fputs(k_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    static const struct { const char *name; int (*fn)(int, char **); } cmds[] = {
        {"demo", cmd_demo},         {"run", cmd_run},           {"serve", cmd_serve},           {"info", cmd_info},         {"bench-model", cmd_bench_model}, {"bench", cmd_bench}, {"gen", cmd_gen}, {"tune", cmd_tune}, {"dec-attach", cmd_dec_attach}, {"draft-head", cmd_draft_head},         {"synth", cmd_synth},
        {"quantize", cmd_quantize}, {"tokenize", cmd_tokenize}, {"vocab-import", cmd_vocab_import},
        {"synth-draft", cmd_synth_draft},
        {"expand", cmd_expand},
        {"pack", cmd_pack},         {"verify", cmd_verify},
        {"convert", cmd_convert},
        {"taps", cmd_taps},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name)) return cmds[i].fn(argc - 1, argv + 1);
    return cli_fail("unknown command '%s' (try --help)", argv[1]);
}
