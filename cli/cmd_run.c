/* pocketflash run: stream generated text to stdout, timings to stderr. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/strategy.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/spec_flags.h"
#include "include/pocketflash.h"
#include "kernels/topology.h"
#include "verify/spec.h"

static const char k_usage[] =
    "usage: pocketflash run -m MODEL.gguf|APP.pfb (-p PROMPT | -f FILE) [options]\n"
    "  -m FILE        target model (qwen3 GGUF), or a .pfb bundle (its draft is used unless --spec/-d)\n"
    "  -p TEXT        prompt text (exact bytes, UTF-8); special-token texts such as <|im_start|> are\n"
    "                 special tokens, as in llama.cpp\n"
    "  -f FILE        read the prompt from a file (exact bytes)\n"
    "  --no-special   special-token texts in the prompt are plain text (with --chat the template's\n"
    "                 own markers stay special)\n"
    "  -n N           tokens to generate (default 128)\n"
    "  -c N           context size in tokens (default min(4096, model's))\n"
    "  -t N           threads (default: the physical cores, here %d)\n"
    CLI_LOAD_USAGE
    "  --kv f16|q8    KV cache: f16 (default) or 8-bit keys and values with per-row scales (half\n"
    "                 the memory and the bytes attention reads; slightly less exact; SIMD kernels only)\n"
    "  --chat         wrap the prompt in the model's chat template, ChatML (stops at <|im_end|>)\n"
    "  --system TEXT  system message (with --chat)\n"
    "  --temp T       sampling temperature (default 0 = greedy)\n"
    "  --top-k K      keep the K most likely tokens (default 0 = off)\n"
    "  --top-p P      nucleus sampling threshold (default 1 = off)\n"
    "  --seed S       RNG seed (default 0)\n"
    "  --ignore-eos   do not stop at the end-of-turn token\n"
    "  --json-schema FILE  the reply is JSON valid against the JSON Schema in FILE (the\n"
    "                 subset of docs/structured-output.md; another keyword is an error naming it);\n"
    "                 generation ends when the document is complete\n"
    "  --json         the reply is any JSON object (JSON mode)\n"
    "  --prompt-cache FILE  restore the K/V rows of a cached prompt prefix from FILE (same output,\n"
    "                 shorter prefill); written when absent or unusable: the --system block with\n"
    "                 --chat, else the whole prompt minus its last token\n"
    "speculative decoding (output identical to plain decoding; same distribution when sampling):\n"
    "  --spec S       plain (default without a draft; also ar), dflash (fixed block), ngram (prompt lookup),\n"
    "                 hybrid (prompt lookup where the text repeats a pattern of 3+ tokens, dflash\n"
    "                 otherwise; needs -d; fixed block),\n"
    "                 dec (the draft's Dec head decides each round a plain step or how many drafts to\n"
    "                 verify, by expected tokens per second under a running cost model of this machine),\n"
    "                 adaptive (the same without a head: the block from the running acceptance).\n"
    "                 With -d (or a bundled draft) and neither --spec nor --block: dec when the draft\n"
    "                 has a Dec head, else adaptive\n"
    "  -d FILE        DFlash / DFlash2 draft GGUF for the target, or a .pfb bundle holding one (also -md)\n"
    "  --block B      rows verified per round, 2..64 (default: dflash and hybrid min(4, the draft's\n"
    "                 trained block), dec and adaptive the draft's trained block as the most rows,\n"
    "                 ngram 8); --block without --spec (and without --profile) is dflash with that\n"
    "                 fixed block, in every command, the library and the server alike\n"
    "  --draft-max N  llama.cpp's spelling: N tokens drafted per round, i.e. --block N+1\n"
    "  --ngram N      longest pattern the ngram draft matches (default 3)\n"
    "  --draft-head N|full  the draft's head scores its N most frequent tokens, or the whole\n"
    "                 vocabulary (default: the draft's dflash.head_vocab, else the whole vocabulary)\n"
    "  --profile FILE start from a tuned profile's strategy and block (pocketflash tune), the entry of\n"
    "                 --task TYPE else the profile's default, and adapt with the running cost model\n"
    "                 (dec when the draft has a Dec head, else adaptive; an ngram choice as it is);\n"
    "                 explicit --spec/--block win\n"
    "  --task TYPE    task type to look up in the profile (e.g. math, code, extraction)\n"
    "  --log-rounds FILE  append every full round's Dec features and accepted length (binary) to FILE\n"
    "  --print-plan   print the strategy the flags resolve to (\"plan: KIND block=B ...\") and exit\n"
    "                 without generating (no -p needed)\n"
    "  --stats        print round statistics (tau, accepted-length histogram, per-position\n"
    "                 acceptance, time split) to stderr\n"
    "llama.cpp spellings accepted: --model, --prompt, --file, --predict/--n-predict, --ctx-size,\n"
    "  --threads, -s (--seed), -md/--model-draft, --draft/--draft-n (--draft-max), -sys/--system-prompt\n";

/* SIGINT during generation cancels it (the library returns PF_ERR_CANCELLED): the text so far
 * stays on stdout and run exits with status 130. */
static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig) {
    (void)sig;
    g_interrupted = 1;
}

static int on_text(void *user, const char *text, size_t len) {
    (void)user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return g_interrupted ? -1 : 0;
}

/* The prefill and decode times on stderr. */
static void print_timing(const pf_gen_stats *st) {
    if (st->n_cached)
        fprintf(stderr, "prefill: %d tokens (%d more restored from the prompt cache) in %.3f s (%.1f tok/s)\n",
                st->n_prompt - st->n_cached, st->n_cached, st->prefill_s,
                st->prefill_s > 0 ? (st->n_prompt - st->n_cached) / st->prefill_s : 0.0);
    else
        fprintf(stderr, "prefill: %d tokens in %.3f s (%.1f tok/s)\n", st->n_prompt, st->prefill_s,
                st->prefill_s > 0 ? st->n_prompt / st->prefill_s : 0.0);
    fprintf(stderr, "decode: %d tokens in %.3f s (%.1f tok/s), time to first token %.3f s, stop: %s\n", st->n_gen,
            st->decode_s, st->decode_s > 0 && st->n_gen > 1 ? (st->n_gen - 1) / st->decode_s : 0.0, st->ttft_s,
            st->stop == PF_STOP_EOT ? "end of turn" : st->stop == PF_STOP_LENGTH ? "length" :
            st->stop == PF_STOP_CONTEXT ? "context full" : "callback");
}

int cmd_run(int argc, char **argv) {
    const char *model_path = NULL, *prompt = NULL, *prompt_file = NULL, *log_rounds = NULL, *schema_path = NULL;
    char *schema_text = NULL;
    FILE *log_file = NULL;
    cli_spec_flags fl = {0};
    bool show_stats = false;
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    pf_session_params sp = {.n_threads = pf_physical_cores(), .n_ctx = 0};
    pf_load_params lp = {0};
    const cli_arg args[] = {
        CLI_LOAD(&lp),
        CLI_ON("--chat", &gp.chat), CLI_ON("--no-special", &gp.no_special), CLI_OFF("--ignore-eos", &gp.stop_at_eot),
        CLI_ON("--stats", &show_stats), CLI_ON("--json", &gp.json_object), CLI_STR("-d", &fl.draft),
        CLI_STR("--profile", &fl.profile), CLI_STR("--task", &fl.task), CLI_STR("--spec", &fl.spec),
        CLI_ON("--print-plan", &fl.print_plan), CLI_STR("--log-rounds", &log_rounds), CLI_BLOCK("--block", &fl.block),
        CLI_DRAFT_HEAD("--draft-head", &fl.draft_head), CLI_DRAFT_MAX("--draft-max", &fl.block),
        CLI_INT("--ngram", &fl.ngram_n, 1, 16), CLI_STR("-m", &model_path),
        CLI_STR("-p", &prompt), CLI_STR("-f", &prompt_file), CLI_STR("--system", &gp.system),
        CLI_STR("--prompt-cache", &gp.prompt_cache), CLI_STR("--json-schema", &schema_path),
        CLI_INT("-n", &gp.max_tokens, 0, 1 << 30), CLI_I64("-c", &sp.n_ctx, 1, 1 << 24),
        CLI_INT("-t", &sp.n_threads, 1, 256), CLI_KV("--kv", &sp.kv_q8), CLI_FLOAT("--temp", &gp.temp, 0, 100),
        CLI_INT("--top-k", &gp.top_k, 0, 1 << 30), CLI_FLOAT("--top-p", &gp.top_p, 0, 1),
        CLI_U64("--seed", &gp.seed, 0, INT64_MAX), CLI_END};
    int parsed = cli_parse("run", argc, argv, args, CLI_PARSE_ALIASES);
    if (parsed) return parsed < 0 ? (printf(k_usage, sp.n_threads), 0) : 1;
    if (!model_path) return cli_fail("run: missing -m MODEL.gguf");
    char err[PF_ERR_LEN];
    const char *bad = log_rounds && !fl.draft ? "run: --log-rounds needs -d DRAFT.gguf"
                    : !fl.print_plan && !prompt == !prompt_file ? "run: give exactly one of -p PROMPT or -f FILE"
                    : schema_path && gp.json_object ? "run: give one of --json-schema FILE or --json" : NULL;
    if (bad) return cli_fail("%s", bad);
    if (fl.print_plan) prompt = "", prompt_file = NULL;
    size_t plen = 0;
    char *file_text = NULL;
    int read_st = prompt_file ? cli_read_file(prompt_file, &file_text, &plen) : 0;
    if (read_st) return read_st;
    if (prompt_file) prompt = file_text;
    else plen = strlen(prompt);
    size_t schema_len = 0;
    if (schema_path && (read_st = cli_read_file(schema_path, &schema_text, &schema_len))) {
        free(file_text);
        return read_st;
    }
    gp.json_schema = schema_text;
    int rc = 1;
    pf_model *m = NULL;
    pf_session *s = NULL;
    pf_draft *draft = NULL;
    pf_status r = pf_load_model_with(model_path, &lp, &m, err);
    if (r != PF_OK) { rc = cli_fail_status(r, err); goto done; }
    if ((rc = cli_spec_params("run", m, &fl, &gp, &draft))) goto done;
    if (fl.print_plan) { rc = cli_print_plan(&gp); goto done; }
    rc = 1;
    if ((r = pf_session_new(m, &sp, &s, err)) != PF_OK) { rc = cli_fail_status(r, err); goto done; }
    /* the strategy the library's resolver makes of gp, built now so that --log-rounds and --stats
     * reach its rounds; pf_generate with the same gp runs this object */
    api_choice choice;
    if ((r = pf_api_strategy(s, &gp, &choice, err)) != PF_OK) { rc = cli_fail_status(r, err); goto done; }
    pf_spec *spec = choice.spec;
    if (spec && log_rounds && (rc = cli_round_log(spec, log_rounds, &log_file))) goto done;
    pf_gen_stats st;
    signal(SIGINT, on_sigint);
    r = pf_generate(s, prompt, plen, &gp, on_text, NULL, &st, err);
    signal(SIGINT, SIG_DFL);
    if (r != PF_OK) {
        if (r == PF_ERR_CANCELLED) snprintf(err, sizeof err, "run: cancelled (SIGINT) after %d tokens", st.n_gen);
        rc = cli_fail_status(r, err);
        goto done;
    }
    fputc('\n', stdout);
    fflush(stdout);
    print_timing(&st);
    if (spec && show_stats) pf_spec_stats_print(pf_spec_stats_get(spec), choice.block, stderr);
    rc = 0;
done:
    if (log_file) fclose(log_file);
    pf_session_free(s);
    pf_free_draft(draft);
    pf_free_model(m);
    free(file_text);
    free(schema_text);
    return rc;
}
