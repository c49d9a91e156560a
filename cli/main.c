/* pocketflash command-line entry: one table of commands, from which --help is printed too. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} k_commands[] = {
    {"demo", cmd_demo, "the first command: plain vs speculative decoding on a few task prompts, one table"},
    {"run", cmd_run, "generate text with a model (plain or speculative decoding)"},
    {"serve", cmd_serve, "an OpenAI-compatible HTTP server (chat and text completions, streaming)"},
    {"bench", cmd_bench, "per-task speedup of speculative over plain decoding (interleaved, checked)"},
    {"dec-attach", cmd_dec_attach, "store a trained Dec head (decision head) in a draft GGUF"},
    {"draft-head", cmd_draft_head, "store a frequency-ranked head vocabulary in a draft GGUF"},
    {"schema-bench", cmd_schema_bench, "MaskBench's protocol: real-world JSON Schemas through the token masks"},
    {"tune", cmd_tune, "pick the strategy and block size per task type on this device (writes a profile)"},
    {"bench-model", cmd_bench_model, "measure prefill, decode by depth, c(B) and the bandwidth ceiling of a model"},
    {"gen", cmd_gen, "batch generation over a JSONL prompt file (responses and token ids)"},
    {"taps", cmd_taps, "a target's tapped residual rows over token sequences (draft training features)"},
    {"info", cmd_info, "print a GGUF file's metadata and tensors"},
    {"synth", cmd_synth, "write a random-weight Qwen3 GGUF of an exact shape"},
    {"synth-draft", cmd_synth_draft, "write a random-weight DFlash / DFlash2 draft for a target"},
    {"expand", cmd_expand, "grow a small target (and drafts) to Pocket's shape, function-preserving"},
    {"quantize", cmd_quantize, "convert a GGUF's weight matrices to q8_0 / q4_0 / q4_1 / f16 / bf16 / f32"},
    {"tokenize", cmd_tokenize, "print the token ids of a text (or decode ids with --decode)"},
    {"vocab-import", cmd_vocab_import, "convert a Hugging Face tokenizer.json into a tokenizer-only GGUF"},
    {"convert", cmd_convert, "convert a Hugging Face checkpoint (Qwen3 target, DFlash / DFlash2 draft) into a GGUF"},
    {"pack", cmd_pack, "bundle a target, its draft and a tuned profile into one .pfb file"},
    {"verify", cmd_verify, "check every section hash of a .pfb bundle"},
};

static void usage(FILE *f) {
    fputs("usage: pocketflash COMMAND [options]\n\ncommands:\n", f);
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        fprintf(f, "  %-12s %s\n", k_commands[i].name, k_commands[i].summary);
    fputs("\nRun 'pocketflash COMMAND --help' for a command's options.\n", f);
}

int main(int argc, char **argv) {
    /* Past a file-size limit (ulimit -f) the default SIGXFSZ kills the process with no message and
     * leaves the writer's temporary behind; ignored, the write fails with EFBIG and the writer
     * reports it and removes the temporary. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        if (!strcmp(argv[1], k_commands[i].name)) return k_commands[i].fn(argc - 1, argv + 1);
    return cli_fail("unknown command '%s' (try --help)", argv[1]);
}
