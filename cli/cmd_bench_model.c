/* pocketflash bench-model: prefill, decode by depth, c(B), bandwidth ceiling, peak memory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "eval/bench_model.h"
#include "eval/md_table.h"
#include "kernels/cpu.h"
#include "formats/atomic_file.h"
#include "engine/op_timing.h"

static const char k_usage[] =
    "usage: pocketflash bench-model -m MODEL.gguf [-t N] [--depth D] [--reps R] [--json FILE] [--ops] [--kv f16|q8]\n"
    "  measures, in one run with every configuration interleaved and repeated (median and range):\n"
    "  prefill tok/s (512-token prompt), plain decode tok/s at depths 0, 512, 2048, c(B) = time of a\n"
    "  B-row forward / time of a 1-row forward for every B from 1 to 16 at depth D (default 512),\n"
    "  the memory read bandwidth (1 GiB array, same threads, once per repetition), the decode\n"
    "  ceiling it implies (bandwidth / weight bytes per token), decode as a fraction of the same\n"
    "  repetition's ceiling, the fp32 compute rate of the threads (the attention kernel on a small\n"
    "  cache in L2, once per repetition: on a shared machine it drifts like the bandwidth) and peak\n"
    "  resident memory.\n"
    "  -t N         threads (default 2)\n"
    CLI_LOAD_USAGE
    "  --kv f16|q8  KV cache type (default f16; q8: 8-bit keys and values, SIMD kernels only)\n"
    "  --depth D    context depth of the c(B) measurements (default 512)\n"
    "  --reps R     interleaved repetitions (default 5)\n"
    "  --json FILE  also write the medians as JSON\n"
    "  --bw-mib N   size of the bandwidth test array in MiB (default 1024)\n"
    "  --ops        also print where a B-row forward's time goes (ms per operation, per B)\n";

static void stat_cell(char *buf, size_t n, const pf_stat *s, int prec, const char *unit) {
    char a[32], b[32], c[32];
    snprintf(a, sizeof a, "%.*f%s", prec, s->median, unit);
    snprintf(b, sizeof b, "%.*f%s", prec, s->lo, unit);
    snprintf(c, sizeof c, "%.*f%s", prec, s->hi, unit);
    snprintf(buf, n, "%s (%s-%s)", a, b, c);
}

/* The table of measures. */
static void print_measures(const char *path, const char *level, const pf_bench_model_opts *o,
                           const pf_bench_model_result *r) {
    char cell[160];
    printf("## bench-model: %s, %d threads, kernels %s, %s KV cache, %d interleaved repetitions (median, min-max)\n\n",
           path, o->threads, level, o->kv_q8 ? "8-bit" : "f16", o->reps);
    pf_md_head_line("measure | value");
    stat_cell(cell, sizeof cell, &r->prefill_tok_s, 1, "");
    printf("| prefill tok/s (%d-token prompt) | %s |\n", o->prefill_tokens, cell);
    for (int i = 0; i < o->n_depths; i++) {
        stat_cell(cell, sizeof cell, &r->decode_tok_s[i], 1, "");
        printf("| decode tok/s, depth %d | %s |\n", o->depths[i], cell);
    }
    for (int i = 0; i < o->n_blocks; i++) {
        stat_cell(cell, sizeof cell, &r->c[i], 2, "");
        char ms[160];
        stat_cell(ms, sizeof ms, &r->block_ms[i], 2, "");
        printf("| c(%d) at depth %d | %s (%s ms) |\n", o->blocks[i], o->cb_depth, cell, ms);
    }
    stat_cell(cell, sizeof cell, &r->bandwidth, 1, "");
    printf("| memory read bandwidth (each repetition) | %s GB/s |\n", cell);
    printf("| weight bytes per token | %.1f MB |\n", r->bytes_per_token / 1e6);
    printf("| bandwidth ceiling (median bandwidth) | %.1f tok/s |\n", r->ceiling_tok_s);
    pf_stat pct = {100 * r->decode_fraction.median, 100 * r->decode_fraction.lo, 100 * r->decode_fraction.hi};
    stat_cell(cell, sizeof cell, &pct, 0, "%");
    printf("| decode (depth %d) / ceiling of the same repetition | %s |\n", o->depths[0], cell);
    stat_cell(cell, sizeof cell, &r->compute, 1, "");
    printf("| fp32 compute of the threads (attention kernel, hot caches, each repetition) | %s GFMA/s |\n", cell);
    printf("| peak resident memory | %.0f MB |\n", r->peak_rss_mb);
}

/* --ops: the time of each operation per block size. */
static void print_ops(const pf_bench_model_opts *o, const pf_bench_model_result *r) {
    printf("\n### time per operation at depth %d (ms, the fastest forward of each B)\n\n", o->cb_depth);
    pf_md_head h = {0};
    pf_md_cell(&h, "operation");
    for (int i = 0; i < o->n_blocks; i++) pf_md_cell(&h, "B=%d", o->blocks[i]);
    pf_md_rule(&h);
    double tot[PF_BENCH_MAX] = {0};
    for (int p = 0; p < PF_OP_COUNT; p++) {
        printf("| %s |", pf_op_names[p]);
        for (int i = 0; i < o->n_blocks; i++) {
            printf(" %.2f |", r->op_ms[i][p]);
            tot[i] += r->op_ms[i][p];
        }
        printf("\n");
    }
    printf("| total |");
    for (int i = 0; i < o->n_blocks; i++) printf(" %.2f |", tot[i]);
    printf("\n");
}

/* --json: the summary as one JSON object. */
static int write_json(const char *json, const char *path, const char *level, const pf_bench_model_opts *o,
                      const pf_bench_model_result *r) {
    atomic_file af;
    int rc = cli_create(json, &af);
    if (rc) return rc;
    FILE *f = af.fp;
    fprintf(f, "{\"model\": \"%s\", \"threads\": %d, \"kernels\": \"%s\", \"c\": {", path, o->threads, level);
    for (int i = 0; i < o->n_blocks; i++) fprintf(f, "%s\"%d\": %.4f", i ? ", " : "", o->blocks[i], r->c[i].median);
    fprintf(f, "}, \"decode_tok_s\": {");
    for (int i = 0; i < o->n_depths; i++)
        fprintf(f, "%s\"%d\": %.3f", i ? ", " : "", o->depths[i], r->decode_tok_s[i].median);
    fprintf(f, "}, \"prefill_tok_s\": %.3f, \"bandwidth_gb_s\": %.3f, \"decode_fraction_of_ceiling\": %.4f, "
               "\"peak_rss_mb\": %.1f, \"c_depth\": %d, \"weight_bytes_per_token\": %zu, "
               "\"compute_gfma_s\": %.2f}\n",
            r->prefill_tok_s.median, r->bandwidth_gb_s, r->decode_fraction.median, r->peak_rss_mb,
            o->cb_depth, r->bytes_per_token, r->compute.median);
    return cli_finish(&af, json);
}

int cmd_bench_model(int argc, char **argv) {
    const char *path = NULL, *json = NULL;
    pf_bench_model_opts o = {.threads = 2, .reps = 5, .inner = 3, .depths = {0, 512, 2048}, .n_depths = 3,
                             .blocks = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, .n_blocks = 16, .cb_depth = 512,
                             .prefill_tokens = 512, .bandwidth_mib = 1024, .progress = 1};
    pf_load_params lp = {0};
    const cli_arg args[] = {CLI_STR("-m", &path), CLI_STR("--json", &json), CLI_INT("-t", &o.threads, 1, 256),
                            CLI_INT("--depth", &o.cb_depth, 0, 1 << 20), CLI_INT("--bw-mib", &o.bandwidth_mib, 1, 1 << 16),
                            CLI_KV("--kv", &o.kv_q8), CLI_INT("--reps", &o.reps, 1, 255), CLI_ON_INT("--ops", &o.ops),
                            CLI_LOAD(&lp), CLI_END};
    int parsed = cli_parse("bench-model", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (fputs(k_usage, stdout), 0) : 1;
    if (!path) return cli_fail("bench-model: missing -m MODEL.gguf");
    int orc = json ? cli_can_create(json) : 0; /* before the measurement, not after it */
    if (orc) return orc;
    char err[PF_ERR_LEN];
    pf_model *m = NULL;
    pf_status st = pf_load_model_with(path, &lp, &m, err);
    if (st != PF_OK) return cli_fail_status(st, err);
    pf_bench_model_result r;
    pf_rc brc = pf_bench_model(m, &o, &r, err);
    if (brc != PF_RC_OK) {
        pf_model_free(m);
        return cli_fail_kind(pf_api_status(brc), "bench-model: %s", err);
    }
    const char *level = pf_level_name(m->opts.level);
    print_measures(path, level, &o, &r);
    if (o.ops) print_ops(&o, &r);
    int rc = json ? write_json(json, path, level, &o, &r) : 0;
    pf_model_free(m);
    return rc;
}
