/* The structured-output task suite (eval/tasks/structured): every prompt carries a schema of the
 * subset that compiles and that its reference answer satisfies, the suite covers every supported
 * kind of field in both languages, and `bench --structured` measures it free and constrained and
 * checks every document it generates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval/schema_valid.h"
#include "eval/tasks.h"
#include "formats/json.h"
#include "grammar/schema.h"
#include "test.h"
#include "util.h"

/* The "reference" of record `id` in the suite file (malloc'd), NULL when absent. */
static char *reference_of(const char *id) {
    FILE *f = fopen("eval/tasks/structured/extraction.jsonl", "rb");
    if (!f) return NULL;
    char *line = NULL, *ref = NULL;
    size_t cap = 0;
    ssize_t len;
    char err[PF_ERR_LEN];
    while (!ref && (len = getline(&line, &cap, f)) > 0) {
        pf_json_doc *d = pf_json_parse(line, (size_t)len, err);
        const pf_json *r = d ? pf_json_root(d) : NULL, *v = r ? pf_json_get(r, "reference") : NULL;
        if (r && pf_json_str_eq(pf_json_get(r, "id"), id) && v && v->type == PF_JSON_STRING) ref = strdup(v->u.str.s);
        pf_json_free(d);
    }
    free(line);
    fclose(f);
    return ref;
}

TEST(structured_suite_covers_the_subset) {
    pf_task_suite s;
    char err[PF_ERR_LEN];
    CHECKF(pf_tasks_load("eval/tasks/structured", 0, &s, err) == 0, "%s", err);
    CHECK(s.n == 1 && !strcmp(s.types[0].type, "extraction") && s.types[0].n >= 16);
    static const char *const kinds[] = {"\"type\":\"string\"", "\"type\":\"number\"", "\"type\":\"integer\"",
                                        "\"type\":\"boolean\"", "\"type\":\"null\"", "\"enum\":", "\"minItems\":",
                                        "\"maxItems\":", "\"anyOf\":", "\"properties\":{\"name\":{\"type\":\"string\"},\"email\""};
    enum { N_KINDS = sizeof kinds / sizeof *kinds };
    int seen[N_KINDS] = {0}, en = 0, zh = 0;
    for (int i = 0; i < s.types[0].n; i++) {
        const pf_task_prompt *p = &s.types[0].prompts[i];
        CHECKF(p->schema, "%s has no schema", p->id);
        pf_schema *c = NULL;
        CHECKF(pf_schema_compile(p->schema, strlen(p->schema), &c, err) == PF_SCHEMA_OK, "%s: %s", p->id, err);
        pf_schema_free(c);
        char *ref = reference_of(p->id);
        CHECKF(ref && pf_schema_valid_text(p->schema, ref, strlen(ref)), "%s: reference %s", p->id, ref ? ref : "missing");
        free(ref);
        for (int k = 0; k < N_KINDS; k++) seen[k] |= strstr(p->schema, kinds[k]) != NULL;
        en += !strcmp(p->lang, "en");
        zh += !strcmp(p->lang, "zh");
    }
    for (int k = 0; k < N_KINDS; k++) CHECKF(seen[k], "no schema has %s", kinds[k]);
    CHECKF(en >= 8 && zh >= 8, "%d English and %d Chinese prompts", en, zh);
    CHECK(pf_tasks_add_constrained(&s, err) == 0);
    CHECK(s.n == 2 && !strcmp(s.types[1].type, "extraction+schema") && s.types[1].constrained && !s.types[0].constrained);
    CHECK(s.types[1].n == s.types[0].n && !strcmp(s.types[1].prompts[3].schema, s.types[0].prompts[3].schema));
    pf_tasks_free(&s);
    /* the free suites have no schemas: --structured has nothing to constrain */
    CHECKF(pf_tasks_load("eval/tasks", 1, &s, err) == 0, "%s", err);
    CHECK(pf_tasks_add_constrained(&s, err) < 0 && strstr(err, "\"schema\""));
    pf_tasks_free(&s);
}

TEST(structured_suite_bad_schema_is_one_line) {
    char dir[300], path[400];
    test_tmp_path(dir, sizeof dir, "bad-schema-tasks");
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/x.jsonl", dir);
    CHECK(test_write_file(path, "{\"type\": \"x\", \"prompt\": \"p\", \"schema\": \"string\"}\n", (size_t)-1) == 0);
    pf_task_suite s;
    char err[PF_ERR_LEN];
    CHECK(pf_tasks_load(dir, 0, &s, err) == PF_RC_FORMAT);
    CHECKF(strstr(err, "x.jsonl:1: \"schema\" must be a JSON Schema object"), "%s", err);
}

/* One prompt per type, a few tokens: the run's tables name the constrained type, the forced share,
 * the documents checked, and the comparison with the free run; greedy output stays identical. */
TEST(structured_bench_checks_documents) {
    static char out[32768], errs[4096];
    CHECKF(RUN_CLI("bench -m models/pf-target-f16.gguf -d models/pf-draft-dflash2.gguf --tasks eval/tasks/structured "
                   "--structured --prompts 2 -n 128 --reps 1 -t 1 --block 4", out, errs) == 0, "%s", errs);
    CHECKF(strstr(out, "| extraction+schema | dflash/4 | 2 |"), "%.2000s", out);
    CHECKF(!strstr(out, "| NO |"), "speculative output differs: %.2000s", out);
    const char *row = strstr(out, "| dflash | extraction+schema |");
    CHECKF(row, "%.3000s", out);
    /* "valid/documents (k cut)" for plain and speculative: a complete document always validates */
    const char *cells = row;
    for (int bar = 0; bar < 7 && cells; bar++) cells = strchr(cells + 1, '|');
    for (int run = 0; run < 2; run++) {
        int valid = -1, n = -1, cut = 0;
        CHECKF(cells && sscanf(cells, "| %d/%d (%d cut)", &valid, &n, &cut) >= 2, "%.300s", row);
        CHECKF(n == 2 && valid + cut == n, "%.300s", row);
        cells = strchr(cells + 1, '|');
    }
    CHECKF(strstr(out, "dflash, extraction: constrained speculative over constrained plain"), "%.3000s", out);
    /* the split of that comparison: the prompts whose plain output under the schema is the free one,
     * counted here with `run` free and under the schema */
    pf_task_suite suite;
    char err[PF_ERR_LEN];
    CHECKF(pf_tasks_load("eval/tasks/structured", 2, &suite, err) == 0 && suite.n == 1 && suite.types[0].n == 2, "%s", err);
    int unchanged = 0;
    for (int i = 0; i < 2; i++) {
        char prompt[400], schema[400], args[1200];
        static char free_out[8192], con_out[8192];
        test_tmp_path(prompt, sizeof prompt, "split-prompt.txt");
        test_tmp_path(schema, sizeof schema, "split-schema.json");
        CHECK(test_write_file(prompt, suite.types[0].prompts[i].prompt, strlen(suite.types[0].prompts[i].prompt)) == 0);
        CHECK(test_write_file(schema, suite.types[0].prompts[i].schema, strlen(suite.types[0].prompts[i].schema)) == 0);
        snprintf(args, sizeof args, "run -m models/pf-target-f16.gguf --chat -f %s -n 128 -t 1", prompt);
        CHECKF(RUN_CLI(args, free_out, errs) == 0, "%s", errs);
        snprintf(args + strlen(args), sizeof args - strlen(args), " --json-schema %s", schema);
        CHECKF(RUN_CLI(args, con_out, errs) == 0, "%s", errs);
        unchanged += !strcmp(free_out, con_out);
    }
    pf_tasks_free(&suite);
    char want[200];
    for (int g = 0; g < 2; g++) {
        int n = g ? 2 - unchanged : unchanged;
        snprintf(want, sizeof want, "  the %d prompt%s %s: constrained ", n, n == 1 ? "" : "s",
                 g ? "whose text the schema changes" : "whose plain output the schema leaves as the free one");
        CHECKF(!n || strstr(out, want), "no line '%s' (%d of 2 unchanged by `run`):\n%.3000s", want, unchanged, out);
    }
    CHECK(RUN_CLI("bench -m models/pf-target-f16.gguf --tasks eval/tasks --structured --prompts 1 --reps 1 -n 4", out, errs) == 1);
    CHECKF(strstr(errs, "no task type whose every prompt has a \"schema\"") && test_count_lines(errs) == 1, "%s", errs);
}
