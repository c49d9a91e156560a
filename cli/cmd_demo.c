/* pocketflash demo: the first command to run (`make demo`). A few prompts of every task type,
 * plain and speculative decoding measured interleaved in one process (bench's machinery), one
 * short table: what speculation buys on this machine, and that it changes no token. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "eval/bench.h"
#include "eval/md_table.h"
#include "formats/gguf.h"
#include "kernels/cpu.h"
#include "kernels/topology.h"

/* The strategy of the demo: what `run -d DRAFT` picks with no --spec (cli/cmd_run.c); block 0 is
 * its default block (pf_default_block). Change it here, in one place, if run's default changes. */
static const char *const k_demo_spec = "default"; /* what run -d does: the resolver's default */

static const char k_usage[] =
    "usage: pocketflash demo -m TARGET.gguf -d DRAFT.gguf [--tasks DIR] [options]\n"
    "  decodes the first prompts of every task type in DIR (default eval/tasks) plain and\n"
    "  speculatively (the strategy `run -d DRAFT` uses by default), interleaved in one process as\n"
    "  `bench` does, greedy; prints one table: task, plain tok/s, speculative tok/s, speedup, tau\n"
    "  (tokens committed per round) and whether every speculative output equals the plain one\n"
    "  token for token (exit status 1 if one does not).\n"
    "  --prompts N    prompts per task type (default 2)\n"
    "  -n N           tokens generated per prompt (default 64)\n"
    "  --reps R       interleaved repetitions (default 2)\n"
    "  -t N           threads (default: the physical cores, here %d)\n"
    CLI_LOAD_USAGE
    "  -c N           context size (default 1024)\n";

/* "general.name (TYPE)" of a GGUF, e.g. "pf-target (Pocket-shape stand-in)", or the path. */
static void describe(const char *path, char *out, size_t n) {
    char err[PF_ERR_LEN];
    gguf_file *f;
    gguf_str s;
    if (gguf_open_file(path, &f, err) == PF_RC_OK && gguf_get_str(f, "general.name", &s) == 0)
        snprintf(out, n, "%.*s", (int)(s.len < 200 ? s.len : 200), s.ptr);
    else
        snprintf(out, n, "%s", path);
    gguf_close(f);
}

int cmd_demo(int argc, char **argv) {
    const char *model = NULL, *tasks = "eval/tasks";
    pf_bench_opts o = {.threads = pf_physical_cores(), .n_ctx = 1024, .max_tokens = 64, .reps = 2, .top_p = 1.0f,
                       .ngram_n = 3, .progress = 1, .spec = k_demo_spec};
    int max_prompts = 2;
    const cli_arg args[] = {CLI_STR("-m", &model), CLI_STR("-d", &o.draft_path), CLI_STR("--tasks", &tasks),
                            CLI_INT("--prompts", &max_prompts, 1, 48), CLI_INT("-n", &o.max_tokens, 2, 1 << 16),
                            CLI_INT("--reps", &o.reps, 1, 255), CLI_INT("-t", &o.threads, 1, 256),
                            CLI_I64("-c", &o.n_ctx, 16, 1 << 24), CLI_LOAD(&o.load), CLI_END};
    int parsed = cli_parse("demo", argc, argv, args, CLI_PARSE_ALIASES);
    if (parsed) return parsed < 0 ? (printf(k_usage, o.threads), 0) : 1;
    if (!model || !o.draft_path) return cli_fail("demo: -m TARGET.gguf and -d DRAFT.gguf are required");
    char err[PF_ERR_LEN], target_name[256], draft_name[256];
    pf_task_suite suite;
    pf_rc lrc = pf_tasks_load(tasks, max_prompts, &suite, err);
    if (lrc != PF_RC_OK) return cli_fail_kind(pf_api_status(lrc), "%s", err);
    if (suite.n == 0) {
        pf_tasks_free(&suite);
        return cli_fail("demo: %s: no task files (<type>.jsonl)", tasks);
    }
    describe(model, target_name, sizeof target_name);
    describe(o.draft_path, draft_name, sizeof draft_name);
    pf_bench_result r;
    pf_rc brc = pf_bench_run(model, &suite, &o, &r, err);
    if (brc != PF_RC_OK) {
        pf_tasks_free(&suite);
        return cli_fail_kind(pf_api_status(brc), "demo: %s", err);
    }
    printf("\n%s + %s\n", target_name, draft_name);
    printf("%d threads, %s kernels, greedy, %d tokens per prompt, %d prompts per task, %d interleaved repetitions, "
           "strategy %s/%d\n\n",
           o.threads, pf_level_name(r.level), o.max_tokens, max_prompts, o.reps, r.tasks[0].spec, r.block);
    pf_md_head_line("task | plain tok/s | speculative tok/s | speedup | tau | identical");
    for (int i = 0; i < r.n; i++) {
        const pf_bench_task *t = &r.tasks[i];
        printf("| %s | %.1f | %.1f | %.2fx | %.2f | %s |\n", t->type, t->plain_tok_s.median, t->spec_tok_s.median,
               t->speedup.median, pf_spec_tau(&t->st), t->identical ? "yes" : "NO");
    }
    printf("| **overall** (geomean) | | | **%.2fx** | %.2f | %s |\n", r.speedup_geomean, r.tau,
           r.identical ? "yes" : "NO");
    int rc = r.identical == 1 ? 0 : 1;
    if (rc) fprintf(stderr, "pocketflash: demo: a speculative output differs from plain decoding\n");
    pf_bench_result_free(&r);
    pf_tasks_free(&suite);
    return rc;
}
