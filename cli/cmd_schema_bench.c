/* pocketflash schema-bench: MaskBench's protocol over a folder of schema files (eval/schema_bench.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "engine/constraint.h"
#include "engine/tokenizer.h"
#include "eval/schema_bench.h"
#include "formats/gguf.h"

static const char k_usage[] =
    "usage: pocketflash schema-bench -m MODEL.gguf DIR [--json FILE] [--sample N] [--seed S] [--slowest N]\n"
    "       [--max-tokens N]\n"
    "  MaskBench's protocol (JSONSchemaBench) over every *.json schema file in DIR, each\n"
    "  {\"schema\": ..., \"tests\": [{\"valid\": ..., \"data\": ...}]}: each test's data serialized as\n"
    "  Python's json.dumps(data, ensure_ascii=False) writes it, tokenized with MODEL's tokenizer and\n"
    "  walked token by token through the structured-output masks. Prints schemas, passing, compile\n"
    "  errors, validation errors (a valid instance refused), invalidation errors (an invalid instance\n"
    "  accepted), TBM (time between masks) and TTFM (compile + first mask) percentiles in us, on one\n"
    "  thread, and the failures by keyword (compile errors) or by MaskBench feature (the others).\n"
    "  -m MODEL.gguf  any GGUF with a tokenizer (a model or a vocab-import output)\n"
    "  --json FILE    also write the results (the counts, percentiles, reasons and each failure)\n"
    "  --sample N     a fixed-seed sample of N of the files (default: all)\n"
    "  --seed S       the sample's seed (default 1)\n"
    "  --slowest N    also print the N slowest masks after a token (file, instance, the bytes\n"
    "                 before the mask), slowest first, to see what the TBM tail is\n"
    "  --max-tokens N every mask within a budget of N tokens, as generation takes it: the\n"
    "                 budget counts down by one per token of the instance, and only tokens after\n"
    "                 which the document can still close within what is left are allowed\n"
    "                 (TTFM then includes building the schema's closing distances)\n";

static void print_reasons(const char *title, pf_sb_reason *l, int n, int top) {
    if (!n) return;
    /* most first (a stable order for equal counts: the name) */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && (l[j].n > l[j - 1].n || (l[j].n == l[j - 1].n && strcmp(l[j].why, l[j - 1].why) < 0));
             j--) {
            pf_sb_reason t = l[j];
            l[j] = l[j - 1];
            l[j - 1] = t;
        }
    printf("%s\n", title);
    for (int i = 0; i < n && i < top; i++) printf("  %6d  %s\n", l[i].n, l[i].why);
    if (n > top) printf("  (%d more)\n", n - top);
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void json_pcts(FILE *f, const char *name, float *x, size_t n) {
    fprintf(f, "  \"%s\": {", name);
    for (int i = 0; i < PF_SB_N_PCT; i++)
        fprintf(f, "%s\"p%g\": %.1f", i ? ", " : "", pf_sb_pct[i], pf_sb_percentile(x, n, pf_sb_pct[i]));
    fprintf(f, ", \"n\": %zu},\n", n);
}

static void json_reasons(FILE *f, const char *name, const pf_sb_reason *l, int n) {
    fprintf(f, "  \"%s\": {", name);
    for (int i = 0; i < n; i++) {
        fputs(i ? ", " : "", f);
        json_str(f, l[i].why);
        fprintf(f, ": %d", l[i].n);
    }
    fputs("},\n", f);
}

static int write_json(const char *path, pf_sb_result *r) {
    atomic_file af;
    int rc = cli_create(path, &af);
    if (rc) return rc;
    FILE *f = af.fp;
    static const char *const outcome[] = {"pass", "compile_error", "invalidation_error", "validation_error"};
    fprintf(f, "{\n  \"schemas\": %d, \"passing\": %d, \"compile_error\": %d, \"validation_error\": %d, "
               "\"invalidation_error\": %d,\n",
            r->schemas, r->passing, r->compile_error, r->validation_error, r->invalidation_error);
    if (r->max_tokens > 0) fprintf(f, "  \"max_tokens\": %lld,\n", r->max_tokens);
    fprintf(f, "  \"no_tests\": %d, \"valid_tests\": %ld, \"invalid_tests\": %ld, \"valid_refused\": %ld, "
               "\"invalid_accepted\": %ld, \"tokens\": %ld,\n",
            r->no_tests, r->valid_tests, r->invalid_tests, r->valid_refused, r->invalid_accepted, r->tokens);
    json_pcts(f, "tbm_us", r->tbm_us, r->n_tbm);
    json_pcts(f, "ttfm_us", r->ttfm_us, r->n_ttfm);
    json_reasons(f, "compile_error_by_keyword", r->compile_why, r->n_compile_why);
    json_reasons(f, "validation_error_by_feature", r->validation_why, r->n_validation_why);
    json_reasons(f, "invalidation_error_by_feature", r->invalidation_why, r->n_invalidation_why);
    fputs("  \"failures\": [", f);
    for (size_t i = 0; i < r->n_failures; i++) {
        fputs(i ? ",\n    {\"file\": " : "\n    {\"file\": ", f);
        json_str(f, r->failures[i].file);
        fprintf(f, ", \"outcome\": \"%s\", \"why\": ", outcome[r->failures[i].outcome]);
        json_str(f, r->failures[i].why);
        fputc('}', f);
    }
    fputs("\n  ]\n}\n", f);
    return cli_finish(&af, path);
}

static void print_table(pf_sb_result *r) {
    double n = r->schemas ? r->schemas : 1;
    printf("schemas %d: passing %d (%.1f%%), compile errors %d, validation errors %d, invalidation errors %d\n",
           r->schemas, r->passing, 100.0 * r->passing / n, r->compile_error, r->validation_error,
           r->invalidation_error);
    printf("instances: %ld valid (%ld refused), %ld invalid (%ld accepted); %d compiled schemas without tests; "
           "%ld tokens walked\n",
           r->valid_tests, r->valid_refused, r->invalid_tests, r->invalid_accepted, r->no_tests, r->tokens);
    if (r->max_tokens > 0) printf("masks within max_tokens %lld (the budget counting down per token)\n", r->max_tokens);
    printf("%-8s", "us");
    for (int i = 0; i < PF_SB_N_PCT; i++) {
        char h[16];
        snprintf(h, sizeof h, "p%g", pf_sb_pct[i]);
        printf(" %9s", h);
    }
    printf("\n%-8s", "TBM");
    for (int i = 0; i < PF_SB_N_PCT; i++) printf(" %9.1f", pf_sb_percentile(r->tbm_us, r->n_tbm, pf_sb_pct[i]));
    printf("\n%-8s", "TTFM");
    for (int i = 0; i < PF_SB_N_PCT; i++) printf(" %9.1f", pf_sb_percentile(r->ttfm_us, r->n_ttfm, pf_sb_pct[i]));
    printf("\n");
    print_reasons("compile errors by keyword:", r->compile_why, r->n_compile_why, 25);
    print_reasons("validation errors by MaskBench feature:", r->validation_why, r->n_validation_why, 15);
    print_reasons("invalidation errors by MaskBench feature:", r->invalidation_why, r->n_invalidation_why, 15);
    if (r->n_slow) printf("slowest masks (us, file, instance, bytes before it, ...their end):\n");
    for (int i = 0; i < r->n_slow; i++) {
        const pf_sb_slow *e = &r->slow[i];
        printf("  %9.1f  %s  test %d  at %zu  ...", e->us, e->file, e->test, e->at);
        for (const char *c = e->ctx; *c; c++) putchar((unsigned char)*c < 0x20 ? '?' : *c);
        putchar('\n');
    }
}

int cmd_schema_bench(int argc, char **argv) {
    const char *model = NULL, *json = NULL, *pos[1] = {NULL};
    int sample = 0, slowest = 0;
    long long seed = 1, max_tokens = 0;
    const cli_arg args[] = {CLI_STR("-m", &model), CLI_STR("--json", &json), CLI_INT("--sample", &sample, 1, 1 << 30),
                            CLI_LL("--seed", &seed, 0, (1ll << 62)), CLI_INT("--slowest", &slowest, 1, 100000),
                            CLI_LL("--max-tokens", &max_tokens, 1, (1ll << 40)),
                            CLI_POS(pos, 1), CLI_END};
    int parsed = cli_parse("schema-bench", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (fputs(k_usage, stdout), 0) : 1;
    if (!model) return cli_fail("schema-bench: missing -m MODEL.gguf");
    if (!pos[0]) return cli_fail("schema-bench: missing DIR (a folder of MaskBench schema files)");
    int orc = json ? cli_can_create(json) : 0; /* before the walk, not after it */
    if (orc) return orc;
    char err[PF_ERR_LEN];
    char **paths = NULL;
    int n = 0;
    pf_rc lrc = pf_sb_list(pos[0], sample, (unsigned long long)seed, &paths, &n, err);
    if (lrc != PF_RC_OK) return cli_fail_kind(pf_api_status(lrc), "schema-bench: %s", err);
    if (!n) {
        pf_sb_list_free(paths, n);
        return cli_fail("schema-bench: %s: no *.json files", pos[0]);
    }
    /* the model's tokenizer only: its file opened here, so a failure keeps its kind */
    gguf_file *f = NULL;
    pf_tokenizer *tok = NULL;
    pf_rc rc = gguf_open_file(model, &f, err);
    if (rc == PF_RC_OK) rc = pf_tokenizer_load(f, &tok, err);
    gguf_close(f);
    pf_token_masker *tm = tok ? pf_vocab_masker(tok, pf_tokenizer_n_vocab(tok), err) : NULL;
    int status = 1;
    pf_sb_result r = {.want_slow = slowest, .max_tokens = max_tokens};
    if (rc != PF_RC_OK) status = cli_fail_kind(pf_api_status(rc), "schema-bench: %s", err);
    else if (!tm) status = cli_fail_kind(PF_ERR_OOM, "schema-bench: %s", err);
    else if (pf_sb_run(tok, tm, paths, n, &r) < 0) status = cli_fail_kind(PF_ERR_OOM, "schema-bench: out of memory");
    else {
        print_table(&r);
        status = json ? write_json(json, &r) : 0;
    }
    pf_sb_result_free(&r);
    pf_token_masker_free(tm);
    pf_tokenizer_free(tok);
    pf_sb_list_free(paths, n);
    return status;
}
