/* pocketflash tune: pick the strategy and block size per task type on this device. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "eval/tune.h"
#include "eval/md_table.h"
#include "verify/kind.h"
#include "formats/atomic_file.h"

static const char k_usage[] =
    "usage: pocketflash tune -m TARGET.gguf [-d DRAFT.gguf] --tasks DIR -o PROFILE.json [options]\n"
    "  measures this device's c(B) for the target at --depth, each drafter's cost per block (ngram, and\n"
    "  dflash with -d), and acceptance by block position per task type; predicts the speedup\n"
    "  tau(B) / (c(B) + draft(B)) of every (strategy, B), picks the best per task type, measures\n"
    "  the chosen settings against plain decoding (interleaved), prints predicted vs measured and\n"
    "  writes the profile that run and bench accept with --profile.\n"
    "  --blocks LIST  candidate block sizes (default 2,3,4,6,8,12,16)\n"
    "  --depth D      context depth of the cost measurements (default 256)\n"
    "  -n N           tokens per prompt (default 64)\n"
    "  --prompts N    prompts per task type (default 8)\n"
    "  --reps R       repetitions of the final measurement (default 3)\n"
    "  -t N           threads (default 2)\n"
    CLI_LOAD_USAGE
    "  -c N           context size (default 1024)\n"
    "  --kv f16|q8    KV cache: f16 (default) or 8-bit keys and values with per-row scales (half\n"
    "                 the memory and the bytes attention reads; slightly less exact; SIMD kernels only)\n"
    "  --draft-head N|full  the draft's head scores its N most frequent tokens, or the whole\n"
    "                 vocabulary (default: the draft's dflash.head_vocab, else the whole vocabulary)\n";

/* --blocks: a comma-separated list of block sizes into o->blocks; 1 (reported) when malformed. */
static int parse_blocks(const char *blocks, pf_tune_opts *o, char *err) {
    for (const char *p = blocks; *p;) {
        char *end;
        long b = strtol(p, &end, 10);
        if (end == p || o->n_blocks == PF_BENCH_MAX || (*end && *end != ','))
            return cli_fail("tune: --blocks: '%s' is not a list of at most %d block sizes", blocks, PF_BENCH_MAX);
        if (pf_block_check("tune: --blocks:", b, err) < 0) return cli_fail("%s", err);
        o->blocks[o->n_blocks++] = (int)b;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* The cost table (c(B), each strategy's draft cost) and the choice per task. */
static void print_report(const char *model, const pf_tune_opts *o, const pf_tune_result *r) {
    printf("## tune: %s%s%s, %d threads, depth %d, 1-row forward %.3f ms\n\n", model, o->bench.draft_path ? " + " : "",
           o->bench.draft_path ? o->bench.draft_path : "", o->bench.threads, o->depth, r->t1_ms);
    pf_md_head h = {0};
    pf_md_cell(&h, "B");
    for (int i = 0; i < o->n_blocks; i++) pf_md_cell(&h, "%d", o->blocks[i]);
    pf_md_rule(&h);
    printf("| c(B) |");
    for (int i = 0; i < o->n_blocks; i++) printf(" %.2f |", r->c[i]);
    for (int s = 0; s < r->n_strategies; s++) {
        printf("\n| %s draft cost |", r->strategies[s]);
        for (int i = 0; i < o->n_blocks; i++) printf(" %.2f |", r->draft_cost[s][i]);
    }
    printf("\n\n| task | chosen | predicted speedup | measured speedup | predicted by B (%s) |\n|---|---|---|---|---|\n",
           r->strategies[r->n_strategies - 1]);
    for (int t = 0; t < r->n; t++) {
        const pf_tune_task *tt = &r->tasks[t];
        printf("| %s | %s/%d | %.2fx | %.2fx |", tt->type, r->strategies[tt->best_s], o->blocks[tt->best_b],
               tt->predicted[tt->best_s][tt->best_b], tt->measured);
        for (int i = 0; i < o->n_blocks; i++) printf(" %d:%.2f", o->blocks[i], tt->predicted[r->n_strategies - 1][i]);
        printf(" |\n");
    }
    printf("| **overall** (geomean) | default %s/%d | %.2fx | %.2fx | |\n", r->profile.spec, r->profile.block,
           r->predicted_geomean, r->measured_geomean);
}

/* The profile: the measured costs, the default and each task's choice, with the predictions. */
static int write_profile(const char *out, const char *model, const pf_tune_opts *o, const pf_tune_result *r) {
    atomic_file af;
    int rc = cli_create(out, &af);
    if (rc) return rc;
    FILE *f = af.fp;
    fprintf(f, "{\"model\": \"%s\", \"draft\": \"%s\", \"threads\": %d, \"depth\": %d, \"t1_ms\": %.4f,\n \"c\": {", model,
            o->bench.draft_path ? o->bench.draft_path : "", o->bench.threads, o->depth, r->t1_ms);
    for (int i = 0; i < o->n_blocks; i++) fprintf(f, "%s\"%d\": %.4f", i ? ", " : "", o->blocks[i], r->c[i]);
    fprintf(f, "},\n \"draft_cost\": {");
    for (int s = 0; s < r->n_strategies; s++) {
        fprintf(f, "%s\"%s\": {", s ? ", " : "", r->strategies[s]);
        for (int i = 0; i < o->n_blocks; i++) fprintf(f, "%s\"%d\": %.4f", i ? ", " : "", o->blocks[i], r->draft_cost[s][i]);
        fputc('}', f);
    }
    fprintf(f, "},\n \"default\": {\"spec\": \"%s\", \"block\": %d},\n \"tasks\": {", r->profile.spec, r->profile.block);
    for (int t = 0; t < r->profile.n; t++) {
        const pf_profile_task *pt = &r->profile.tasks[t];
        fprintf(f, "%s\n  \"%s\": {\"spec\": \"%s\", \"block\": %d, \"predicted_speedup\": %.4f, \"measured_speedup\": %.4f, \"alpha\": [",
                t ? "," : "", pt->type, pt->spec, pt->block, pt->predicted, pt->measured);
        for (int k = 0; k < pt->n_alpha; k++) fprintf(f, "%s%.4f", k ? ", " : "", pt->alpha[k]);
        fputs("]}", f);
    }
    fprintf(f, "\n },\n \"overall\": {\"predicted_speedup_geomean\": %.4f, \"measured_speedup_geomean\": %.4f}}\n",
            r->predicted_geomean, r->measured_geomean);
    return cli_finish(&af, out);
}

int cmd_tune(int argc, char **argv) {
    const char *model = NULL, *tasks = NULL, *out = NULL, *blocks = "2,3,4,6,8,12,16";
    pf_tune_opts o = {.depth = 256};
    o.bench = (pf_bench_opts){.threads = 2, .n_ctx = 1024, .max_tokens = 64, .reps = 3, .top_p = 1.0f, .ngram_n = 3,
                              .progress = 1};
    int max_prompts = 8;
    const cli_arg args[] = {CLI_STR("-m", &model), CLI_STR("-d", &o.bench.draft_path), CLI_STR("--tasks", &tasks),
                            CLI_STR("-o", &out), CLI_STR("--blocks", &blocks), CLI_INT("--depth", &o.depth, 1, 1 << 20),
                            CLI_INT("-n", &o.bench.max_tokens, 2, 1 << 16), CLI_INT("--prompts", &max_prompts, 1, 1 << 20),
                            CLI_INT("--reps", &o.bench.reps, 1, 255), CLI_INT("-t", &o.bench.threads, 1, 256),
                            CLI_DRAFT_HEAD("--draft-head", &o.bench.draft_head), CLI_KV("--kv", &o.bench.kv_q8),
                            CLI_I64("-c", &o.bench.n_ctx, 16, 1 << 24), CLI_LOAD(&o.bench.load), CLI_END};
    int parsed = cli_parse("tune", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (fputs(k_usage, stdout), 0) : 1;
    if (!model || !tasks || !out) return cli_fail("tune: -m, --tasks and -o are required");
    char err[PF_ERR_LEN];
    if (parse_blocks(blocks, &o, err)) return 1;
    if (o.bench.n_ctx < o.depth + 80) o.bench.n_ctx = o.depth + 80;
    pf_task_suite suite;
    pf_rc lrc = pf_tasks_load(tasks, max_prompts, &suite, err);
    if (lrc != PF_RC_OK) return cli_fail_kind(pf_api_status(lrc), "%s", err);
    int orc = cli_can_create(out); /* before the measurement, not after it */
    if (orc) {
        pf_tasks_free(&suite);
        return orc;
    }
    pf_tune_result r;
    pf_rc trc = pf_tune_run(model, &suite, &o, &r, err);
    if (trc != PF_RC_OK) {
        pf_tasks_free(&suite);
        return cli_fail_kind(pf_api_status(trc), "tune: %s", err);
    }
    print_report(model, &o, &r);
    int rc = write_profile(out, model, &o, &r);
    pf_tune_result_free(&r);
    pf_tasks_free(&suite);
    return rc;
}
