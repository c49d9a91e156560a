/* pocketflash bench: per-task speedup of speculative over plain decoding, measured interleaved. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "eval/bench.h"
#include "eval/bench_concurrency.h"
#include "eval/bench_report.h"
#include "eval/md_table.h"
#include "formats/atomic_file.h"
#include "kernels/topology.h"

static const char k_usage[] =
    "usage: pocketflash bench -m TARGET.gguf [-d DRAFT.gguf] --tasks DIR [options]\n"
    "  for every task type in DIR (eval/tasks/<type>.jsonl) and overall (geometric mean): plain and\n"
    "  speculative decode tok/s measured interleaved in one process (median and range over\n"
    "  repetitions), speedup, tau, accepted-length histogram, acceptance by block position, time\n"
    "  split of a round, prefill tok/s and time to first token; greedy runs check that every\n"
    "  speculative output equals the plain output.\n"
    "  --spec S       dflash (fixed block), ngram (default without -d), hybrid (prompt lookup where the text\n"
    "                 repeats a pattern of 3+ tokens, dflash otherwise; fixed block), dec (the draft's Dec head decides each\n"
    "                 round a plain step or how many drafts to verify, by expected tokens per second under\n"
    "                 a running cost model of the machine), adaptive (the same without a head: the block\n"
    "                 from the running acceptance by position), default (with -d and no --block; what\n"
    "                 run -d DRAFT does: dec when the draft has a Dec head, else adaptive; with --block\n"
    "                 dflash at that block); for dec/adaptive --block is the most rows\n"
    "  --compare LIST several strategies in ONE run, interleaved per prompt with plain decoding: a comma-\n"
    "                 separated list of fixed:B, ngram[:B], hybrid:B, dec[:B], adaptive[:B], default, profile:FILE\n"
    "                 (at most 8); one table and one JSON (overrides --spec/--block/--profile)\n"
    "  --block B      rows verified per round (default: dflash and hybrid min(4, the draft's trained block), dec\n"
    "                 the draft's trained block as the most it drafts, ngram 8)\n"
    "  --draft-max N  llama.cpp's spelling: N tokens drafted per round, i.e. --block N+1\n"
    "  --ngram N      longest ngram pattern (default 3)\n"
    "  --no-special   special-token texts inside the prompts are plain text (template markers stay special)\n"
    "  --structured   structured output: every task type whose prompts carry a \"schema\" (eval/tasks/structured)\n"
    "                 is also measured as <type>+schema, plain and speculative decoding both held to each\n"
    "                 prompt's schema; a table adds the forced tokens' share and how many documents parse\n"
    "                 and validate, and compares the constrained speedup with the free one\n"
    "  --draft-head N|full  the draft's head scores its N most frequent tokens, or the whole\n"
    "                 vocabulary (default: the draft's dflash.head_vocab, else the whole vocabulary)\n"
    "  --print-plan   print each strategy's plan (the profile's default entry) and exit; no --tasks\n"
    "  --concurrency LIST  the prompts (--prompts in all, the task types in turn) decoded one after\n"
    "                 another, and N at a time in one forward for every N > 1 of the comma-separated LIST\n"
    "                 (e.g. 1,2,4,8), plain and, with -d and --spec S or --compare LIST, speculatively\n"
    "                 across the sequences (one target forward verifies every sequence's drafts); 1\n"
    "                 also runs through the batch scheduler with one slot (a server's lone request);\n"
    "                 aggregate tok/s (prefill included), per-request tok/s, the ratio to plain one at a\n"
    "                 time, and whether every output is the one-at-a-time output; each prompt makes\n"
    "                 exactly -n tokens (end of turn ignored)\n"
    "  -n N           tokens generated per prompt (default 64)\n"
    "  --prompts N    prompts per task type (default 8)\n"
    "  --reps R       interleaved repetitions (default 3)\n"
    "  -t N           threads (default: the physical cores, here %d)\n"
    CLI_LOAD_USAGE
    "  -c N           context size (default 1024)\n"
    "  --kv f16|q8    KV cache: f16 (default) or 8-bit keys and values with per-row scales (half\n"
    "                 the memory and the bytes attention reads; slightly less exact; SIMD kernels only)\n"
    "  --temp T --top-k K --top-p P --seed S   sampled decoding (default greedy)\n"
    "  --json FILE    write the results as JSON\n"
    "  --svg FILE     write a bar chart of speedup per task type (with tau)\n"
    "  --profile FILE per task type, start from a tuned profile's strategy and block (pocketflash tune)\n"
    "                 and adapt with the running cost model, as run --profile does (profile:FILE in\n"
    "                 --compare)\n"
    "llama.cpp spellings accepted: --model, --predict/--n-predict, --ctx-size, --threads, -s (--seed),\n"
    "  -md/--model-draft, --draft/--draft-n (--draft-max)\n";

/* Write through a temporary file so a failed run never leaves a partial output; 0 or the exit status. */
static int write_out(const char *path, void (*fn)(FILE *, const pf_bench_result *, const pf_bench_opts *),
                     const pf_bench_result *r, const pf_bench_opts *o) {
    atomic_file af;
    int rc = cli_create(path, &af);
    if (rc) return rc;
    fn(af.fp, r, o);
    return cli_finish(&af, path);
}

/* --json and --svg: both writable before anything is measured; 0 or the exit status. */
static int check_outputs(const char *json, const char *svg) {
    int rc = json ? cli_can_create(json) : 0;
    return rc ? rc : svg ? cli_can_create(svg) : 0;
}

/* --json and --svg written (each tried); 0, or the exit status of the first that failed. */
static int write_outputs(const char *json, const char *svg,
                         void (*write_json)(FILE *, const pf_bench_result *, const pf_bench_opts *),
                         const pf_bench_result *r, const pf_bench_opts *o) {
    int rc = json ? write_out(json, write_json, r, o) : 0;
    int rc_svg = svg ? write_out(svg, pf_bench_write_svg, r, o) : 0;
    return rc ? rc : rc_svg;
}


/* --compare's list: each strategy parsed into arms (a profile one loading its profile into the next
 * of arm_prof, the arm then pointing at it); -1 with err set, the profiles loaded so far freed. */
static int parse_compare(const char *compare, bool have_draft, pf_bench_arm *arms, pf_profile *arm_prof, int *n_arms,
                         int *n_prof, char *err) {
    for (const char *c = compare; *c;) {
        const char *e = strchr(c, ',');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        char item[1024];
        int r = 0;
        if (*n_arms == PF_BENCH_MAX_ARMS || len >= sizeof item) {
            snprintf(err, PF_ERR_LEN, "--compare: at most %d strategies, each under 1024 bytes", PF_BENCH_MAX_ARMS);
            r = -1;
        } else {
            memcpy(item, c, len);
            item[len] = 0;
            memset(&arm_prof[*n_prof], 0, sizeof arm_prof[*n_prof]);
            r = pf_bench_arm_parse(item, &arms[*n_arms], &arm_prof[*n_prof], err);
            if (r == 0 && arms[*n_arms].kind != PF_KIND_NGRAM && !have_draft) {
                snprintf(err, PF_ERR_LEN, "--compare: '%.40s' needs -d DRAFT.gguf", item);
                r = -1;
            }
        }
        if (r < 0) {
            for (int k = 0; k < *n_prof; k++) pf_profile_free(&arm_prof[k]);
            return -1;
        }
        if (arms[*n_arms].profile) (*n_prof)++;
        (*n_arms)++;
        c = e ? e + 1 : c + len;
    }
    if (!*n_arms) {
        snprintf(err, PF_ERR_LEN, "--compare needs a list of strategies");
        return -1;
    }
    /* profiles were loaded into arm_prof in order; point each profile arm at its own */
    for (int k = 0, p = 0; k < *n_arms; k++)
        if (arms[k].profile) arms[k].profile = &arm_prof[p++];
    return 0;
}

/* --compare's report: the header, the table (and the structured one), the files. */
static int report_compare(const char *model, const pf_bench_opts *o, const pf_bench_result *r, int structured,
                          const char *json, const char *svg) {
    printf("## bench --compare: %s + %s, %d threads,%s %s, %d tokens per prompt, %d interleaved repetitions\n\n", model,
           o->draft_path ? o->draft_path : "(no draft)", o->threads, o->kv_q8 ? " 8-bit KV cache," : "",
           o->temp > 0 ? "sampled" : "greedy", o->max_tokens, o->reps);
    printf("machine: fp32 compute of the threads %.1f GFMA/s at the start, %.1f at the end; load average %.2f at the "
           "start, %.2f at the end\n\n", r->compute_start, r->compute_end, r->load_start, r->load_end);
    pf_bench_print_compare(r);
    pf_bench_print_by_length(r);
    if (structured) pf_bench_print_structured(r);
    return write_outputs(json, svg, pf_bench_write_compare_json, r, o);
}

/* The speedup table per task and overall, then per task the acceptance and the time split. */
static void print_tables(const pf_bench_result *r) {
    pf_md_head_line("task | strategy/block | prompts | plain tok/s | spec tok/s | speedup (min-max) | tau | accepted | identical");
    for (int i = 0; i < r->n; i++) {
        const pf_bench_task *t = &r->tasks[i];
        printf("| %s | %s/%d | %d | %.1f | %.1f | %.2fx (%.2f-%.2f) | %.2f | %.0f%% | %s |\n", t->type, t->spec, t->block, t->n_prompts,
               t->plain_tok_s.median, t->spec_tok_s.median, t->speedup.median, t->speedup.lo, t->speedup.hi,
               pf_spec_tau(&t->st), t->st.drafted ? 100.0 * (double)(t->st.tokens - t->st.rounds) / (double)t->st.drafted : 0.0,
               t->identical < 0 ? "n/a (sampled)" : t->identical ? "yes" : "NO");
    }
    printf("| **overall** (geomean) | | | | | **%.2fx** | %.2f | | %s |\n\n", r->speedup_geomean, r->tau,
           r->identical < 0 ? "n/a (sampled)" : r->identical ? "yes" : "NO");
    pf_md_head h = {0};
    pf_md_cell(&h, "task");
    pf_md_cell(&h, "accepted drafts per round (0..%d)", r->block - 1);
    static const char *const rest[] = {"acceptance by position", "time split draft/ctx/verify/accept/other", "prefill tok/s",
                                       "TTFT plain / spec"};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++) pf_md_cell(&h, "%s", rest[i]);
    pf_md_rule(&h);
    for (int i = 0; i < r->n; i++) {
        const pf_bench_task *t = &r->tasks[i];
        printf("| %s |", t->type);
        for (int a = 0; a < r->block; a++) printf(" %lld", (long long)t->st.hist[a]);
        printf(" |");
        for (int k = 0; k < r->block - 1; k++)
            printf(" %.0f", t->st.pos_tried[k] ? 100.0 * (double)t->st.pos_accepted[k] / (double)t->st.pos_tried[k] : 0.0);
        double T = t->st.t_total > 0 ? t->st.t_total : 1;
        double other = t->st.t_total - t->st.t_draft - t->st.t_ctx - t->st.t_verify - t->st.t_accept;
        printf(" | %.0f/%.0f/%.0f/%.0f/%.0f%% | %.0f | %.1f / %.1f ms |\n", 100 * t->st.t_draft / T, 100 * t->st.t_ctx / T,
               100 * t->st.t_verify / T, 100 * t->st.t_accept / T, 100 * (other > 0 ? other : 0) / T, t->prefill_tok_s,
               t->ttft_plain_ms, t->ttft_spec_ms);
    }
}

/* A strategy's (or a profile's) report: the header, the tables (and the structured one), the files. */
static int report_spec(const char *model, const char *profile_path, const pf_bench_opts *o, const pf_bench_result *r,
                       int structured, const char *json, const char *svg) {
    printf("## bench: %s%s%s, %s%s, %d threads,%s %s, %d tokens per prompt, %d interleaved repetitions\n\n",
           model, o->draft_path ? " + " : "", o->draft_path ? o->draft_path : "", o->profile ? "profile " : "spec ",
           o->profile ? profile_path : o->spec, o->threads, o->kv_q8 ? " 8-bit KV cache," : "", o->temp > 0 ? "sampled" : "greedy",
           o->max_tokens, o->reps);
    /* plain decoding is memory-bound and verification compute-bound: the ratios depend on both */
    printf("machine: fp32 compute of the threads %.1f GFMA/s at the start, %.1f at the end (it drifts on a shared "
           "machine; plain tok/s shows the memory side); load average %.2f at the start, %.2f at the end\n\n",
           r->compute_start, r->compute_end, r->load_start, r->load_end);
    print_tables(r);
    printf("\n");
    pf_bench_print_by_length(r);
    if (structured) {
        printf("\n");
        pf_bench_print_structured(r);
    }
    return write_outputs(json, svg, pf_bench_write_json, r, o);
}

/* --concurrency's list into o->levels; 1 (reported) when malformed. */
static int parse_levels(const char *list, pf_conc_opts *o) {
    for (const char *p = list; *p;) {
        char *end;
        long n = strtol(p, &end, 10);
        if (end == p || n < 1 || n > 256 || o->n_levels == PF_BENCH_MAX || (*end && *end != ','))
            return cli_fail("bench: --concurrency: '%s' is not a list of at most %d counts of 1..256 sequences", list,
                            PF_BENCH_MAX);
        o->levels[o->n_levels++] = (int)n;
        p = *end ? end + 1 : end;
    }
    return o->n_levels ? 0 : cli_fail("bench: --concurrency needs a list such as 1,2,4,8");
}

static void write_concurrency_json(FILE *f, const char *model, const pf_conc_opts *o, const pf_conc_result *r) {
    /* strategy names come from --compare's items: JSON-safe by pf_bench_arm_parse's grammar, but a
     * profile:FILE path may hold anything, so it is written with its quotes and backslashes cut */
    fprintf(f, "{\"model\": \"%s\", \"threads\": %d, \"max_tokens\": %d, \"prompts\": %d, \"reps\": %d, "
               "\"sampled\": %s, \"rows\": [", model, o->threads, o->max_tokens, r->n_prompts, o->reps,
            o->temp > 0 ? "true" : "false");
    for (int k = 0; k < r->n_rows; k++) {
        const pf_conc_row *w = &r->rows[k];
        char name[64];
        size_t n = 0;
        for (const char *c = w->strategy; *c && n + 1 < sizeof name; c++)
            if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20) name[n++] = *c;
        name[n] = 0;
        char vs_one[32] = "null"; /* no plain one-at-a-time run to compare with */
        if (r->has_one) snprintf(vs_one, sizeof vs_one, "%.3f", w->speedup.median);
        fprintf(f, "%s{\"strategy\": \"%s\", \"sequences\": %d, \"batched\": %s, \"aggregate_tok_s\": %.2f, "
                   "\"per_request_tok_s\": %.2f, \"vs_one\": %s, \"identical\": %s}", k ? ", " : "", name, w->n_seq,
                w->batched ? "true" : "false", w->agg_tok_s.median, w->per_req_tok_s.median, vs_one,
                w->identical ? "true" : "false");
    }
    fprintf(f, "]}\n");
}

/* bench --concurrency: measured, the table printed (and the JSON written); 0, or the exit status (reported). */
static int run_concurrency(const char *model, const char *tasks, const char *list, const pf_bench_opts *b,
                           int max_prompts, const char *json) {
    pf_conc_opts o = {.threads = b->threads, .n_ctx = b->n_ctx, .kv_q8 = b->kv_q8, .load = b->load, .max_tokens = b->max_tokens,
                      .n_prompts = max_prompts, .reps = b->reps, .temp = b->temp, .top_k = b->top_k, .top_p = b->top_p,
                      .seed = b->seed, .no_special = b->no_special, .progress = b->progress, .arms = b->arms,
                      .n_arms = b->n_arms, .draft_path = b->draft_path, .draft_head = b->draft_head,
                      .ngram_n = b->ngram_n};
    if (parse_levels(list, &o)) return 1;
    char err[PF_ERR_LEN];
    pf_task_suite suite;
    pf_conc_result r;
    pf_rc trc = pf_tasks_load(tasks, max_prompts, &suite, err);
    if (trc != PF_RC_OK) return cli_fail_kind(pf_api_status(trc), "%s", err);
    int orc = check_outputs(json, NULL);
    if (orc) {
        pf_tasks_free(&suite);
        return orc;
    }
    int failed = pf_bench_concurrency(model, &suite, &o, &r, err) < 0;
    pf_tasks_free(&suite);
    if (failed) return cli_fail("bench: %s", err);
    printf("## bench --concurrency: %s, %d threads,%s %s, %d prompts, %d tokens generated for each, %d interleaved repetitions\n\n",
           model, o.threads, o.kv_q8 ? " 8-bit KV cache," : "", o.temp > 0 ? "sampled" : "greedy", r.n_prompts,
           o.max_tokens, o.reps);
    printf("machine: load average %.2f at the start, %.2f at the end\n\n", r.load_start, r.load_end);
    pf_md_head_line("strategy | sequences | aggregate tok/s (min-max) | x plain one at a time (min-max) | per-request tok/s | identical");
    for (int k = 0; k < r.n_rows; k++) {
        const pf_conc_row *w = &r.rows[k];
        char ratio[64] = "- (no 1 in the list)";
        if (r.has_one) snprintf(ratio, sizeof ratio, "%.2fx (%.2f-%.2f)", w->speedup.median, w->speedup.lo, w->speedup.hi);
        printf("| %s | %d%s | %.1f (%.1f-%.1f) | %s | %.1f | %s |\n", w->strategy, w->n_seq,
               w->n_seq > 1 ? "" : w->batched ? " (batch scheduler)" : " (one at a time)", w->agg_tok_s.median, w->agg_tok_s.lo, w->agg_tok_s.hi,
               ratio, w->per_req_tok_s.median, w->identical ? "yes" : "NO");
    }
    if (!json) return 0;
    atomic_file af;
    int rc = cli_create(json, &af);
    if (rc) return rc;
    write_concurrency_json(af.fp, model, &o, &r);
    return cli_finish(&af, json);
}

/* bench --concurrency's strategies: --compare's arms, or --spec's one (with --block); none without
 * either. 0, or the exit status (reported). */
static int bench_concurrency(const char *model, const char *tasks, const char *list, pf_bench_opts *o,
                             const char *compare, int other_flags, int max_prompts, const char *json) {
    if (other_flags) return cli_fail("bench: --concurrency takes no --profile, --structured, --print-plan or --svg");
    char err[PF_ERR_LEN];
    pf_bench_arm arms[PF_BENCH_MAX_ARMS];
    pf_profile arm_prof[PF_BENCH_MAX_ARMS];
    int n_arms = 0, n_prof = 0;
    if (compare && parse_compare(compare, o->draft_path != NULL, arms, arm_prof, &n_arms, &n_prof, err) < 0)
        return cli_fail("bench: %s", err);
    if (!compare && o->spec) {
        pf_kind kind;
        if (pf_kind_parse(o->spec, &kind, err) < 0) return cli_fail("bench: %s", err);
        if (kind != PF_KIND_NGRAM && kind != PF_KIND_PLAIN && !o->draft_path)
            return cli_fail("bench: --spec %s needs -d DRAFT.gguf", o->spec);
        if (kind != PF_KIND_PLAIN) {
            arms[0] = (pf_bench_arm){.kind = kind, .block = o->block};
            snprintf(arms[0].name, sizeof arms[0].name, "%s", o->spec);
            n_arms = 1;
        }
    } else if (!compare && o->draft_path) { /* a draft without a strategy: the default, as `run -d` */
        arms[0] = (pf_bench_arm){.kind = PF_KIND_DEFAULT, .block = o->block};
        snprintf(arms[0].name, sizeof arms[0].name, "default");
        n_arms = 1;
    } else if (!compare && o->block) {
        return cli_fail("bench: --concurrency: --block needs -d or --spec");
    }
    o->arms = n_arms ? arms : NULL;
    o->n_arms = n_arms;
    int rc = run_concurrency(model, tasks, list, o, max_prompts, json);
    for (int k = 0; k < n_prof; k++) pf_profile_free(&arm_prof[k]);
    return rc;
}

int cmd_bench(int argc, char **argv) {
    const char *model = NULL, *tasks = NULL, *json = NULL, *svg = NULL, *profile_path = NULL, *compare = NULL;
    const char *concurrency = NULL;
    pf_bench_opts o = {.threads = pf_physical_cores(), .n_ctx = 1024, .max_tokens = 64, .reps = 3, .top_p = 1.0f, .ngram_n = 3,
                       .progress = 1};
    int max_prompts = 8, structured = 0, print_plan = 0;
    const cli_arg args[] = {
        CLI_STR("-m", &model), CLI_STR("-d", &o.draft_path), CLI_STR("--tasks", &tasks), CLI_STR("--spec", &o.spec),
        CLI_STR("--json", &json), CLI_STR("--svg", &svg), CLI_STR("--profile", &profile_path),
        CLI_STR("--compare", &compare), CLI_BLOCK("--block", &o.block), CLI_DRAFT_MAX("--draft-max", &o.block),
        CLI_INT("--ngram", &o.ngram_n, 1, 16), CLI_DRAFT_HEAD("--draft-head", &o.draft_head),
        CLI_INT("-n", &o.max_tokens, 2, 1 << 16), CLI_INT("--prompts", &max_prompts, 1, 1 << 20),
        CLI_INT("--reps", &o.reps, 1, 255), CLI_INT("-t", &o.threads, 1, 256), CLI_I64("-c", &o.n_ctx, 16, 1 << 24),
        CLI_KV("--kv", &o.kv_q8), CLI_FLOAT("--temp", &o.temp, 0, 100), CLI_INT("--top-k", &o.top_k, 0, 1 << 30),
        CLI_FLOAT("--top-p", &o.top_p, 0, 1), CLI_U64("--seed", &o.seed, 0, INT64_MAX),
        CLI_ON_INT("--no-special", &o.no_special), CLI_ON_INT("--structured", &structured),
        CLI_ON_INT("--print-plan", &print_plan), CLI_STR("--concurrency", &concurrency), CLI_LOAD(&o.load), CLI_END};
    int parsed = cli_parse("bench", argc, argv, args, CLI_PARSE_ALIASES);
    if (parsed) return parsed < 0 ? (printf(k_usage, o.threads), 0) : 1;
    if (!model) return cli_fail("bench: missing -m TARGET.gguf");
    if (!tasks && !print_plan) return cli_fail("bench: missing --tasks DIR");
    if (concurrency) return bench_concurrency(model, tasks, concurrency, &o, compare, profile_path || structured ||
                                              print_plan || svg, max_prompts, json);
    /* without --spec: the default (what `run -d` does; the resolver makes it dflash with --block);
     * without a draft, the lookup: plain decoding is measured in every run anyway */
    if (!o.spec) o.spec = !o.draft_path ? "ngram" : "default";
    char err[PF_ERR_LEN];
    pf_kind kind;
    if (pf_kind_parse(o.spec, &kind, err) < 0) return cli_fail("bench: %s", err);
    if (kind == PF_KIND_PLAIN) return cli_fail("bench: --spec %s: plain decoding is measured in every run", o.spec);
    if (kind != PF_KIND_NGRAM && !o.draft_path && !compare) return cli_fail("bench: --spec %s needs -d DRAFT.gguf", o.spec);
    pf_profile prof;
    if (profile_path && !compare) {
        pf_rc lrc = pf_profile_load(profile_path, &prof, err);
        if (lrc != PF_RC_OK) return cli_fail_kind(pf_api_status(lrc), "%s", err);
        o.profile = &prof;
    }
    pf_bench_arm arms[PF_BENCH_MAX_ARMS];
    pf_profile arm_prof[PF_BENCH_MAX_ARMS];
    int n_arms = 0, n_prof = 0;
    if (compare && parse_compare(compare, o.draft_path != NULL, arms, arm_prof, &n_arms, &n_prof, err) < 0)
        return cli_fail("bench: %s", err);
    o.arms = n_arms ? arms : NULL;
    o.n_arms = n_arms;
    if (print_plan) {
        pf_rc brc = pf_bench_plans(model, &o, stdout, err);
        int prc = brc != PF_RC_OK ? cli_fail_kind(pf_api_status(brc), "bench: %s", err) : 0;
        if (o.profile) pf_profile_free(&prof);
        for (int k = 0; k < n_prof; k++) pf_profile_free(&arm_prof[k]);
        return prc;
    }
    pf_task_suite suite;
    pf_bench_result r;
    /* each failure reported with the exit status of its kind, as the run does */
    int rc = 0;
    pf_rc brc = pf_tasks_load(tasks, max_prompts, &suite, err);
    if (brc != PF_RC_OK) {
        rc = cli_fail_kind(pf_api_status(brc), "bench: %s", err);
    } else if ((rc = check_outputs(json, svg))) {
        pf_tasks_free(&suite);
    } else if (structured && pf_tasks_add_constrained(&suite, err) < 0) {
        pf_tasks_free(&suite);
        rc = cli_fail("%s", err);
    } else if ((brc = pf_bench_run(model, &suite, &o, &r, err)) != PF_RC_OK) {
        pf_tasks_free(&suite);
        rc = cli_fail_kind(pf_api_status(brc), "bench: %s", err);
    }
    if (rc) {
        if (o.profile) pf_profile_free(&prof);
        for (int k = 0; k < n_prof; k++) pf_profile_free(&arm_prof[k]);
        return rc;
    }
    if (n_arms) {
        rc = report_compare(model, &o, &r, structured, json, svg);
        pf_bench_result_free(&r);
        pf_tasks_free(&suite);
        for (int k = 0; k < n_prof; k++) pf_profile_free(&arm_prof[k]);
        return rc;
    }
    rc = report_spec(model, profile_path, &o, &r, structured, json, svg);
    pf_bench_result_free(&r);
    pf_tasks_free(&suite);
    if (o.profile) pf_profile_free(&prof);
    return rc;
}
