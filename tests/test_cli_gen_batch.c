/* The CLI's batched decoding. gen --batch N: the output file of a batched run is byte for byte the
 * one-prompt-at-a-time run's, greedy and sampled (prompt i's seed S+i), at N = 3 and 8, plain and
 * speculative (Dec with the draft, prompt lookup sampled), and with structured output (lines with
 * their own schema beside plain ones, --json); what --batch does not take is refused in one line
 * without an output file. bench --concurrency: a row per strategy and concurrency (and one sequence
 * through the batch scheduler), every output identical, its JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "util.h"

#define TARGET "models/pf-target-f16.gguf"

static const char k_lines[] =
    "{\"id\": \"poem\", \"prompt\": \"Write a short poem about the sea.\"}\n"
    "{\"prompt\": \"What is 17 times 23?\"}\n"
    "\n"
    "{\"prompt\": \"Name three colours.\"}\n"
    "{\"id\": \"fox\", \"prompt\": \"Tell me a story about a fox and a crow, in a few sentences.\"}\n"
    "{\"prompt\": \"hi\"}\n"
    "{\"prompt\": \"List the days of the week.\"}\n"
    "{\"prompt\": \"Explain why the sky is blue to a child.\"}\n";

/* gen over the prompt file with `flags` into out; the output's text (malloc'd), NULL (printed) on
 * failure. */
static char *gen(const char *in, const char *out, const char *flags) {
    char args[1500], o[4096], e[4096];
    snprintf(args, sizeof args, "gen -m " TARGET " -i %s -o %s -n 24 -t 2 -c 128 %s", in, out, flags);
    if (RUN_CLI(args, o, e) == 0) return test_slurp(out, NULL);
    printf("    gen %s: %s", flags, e);
    return NULL;
}

TEST(cli_gen_batch_equals_one_at_a_time) {
    char in[300], out[400];
    test_tmp_path(in, sizeof in, "gen-batch-prompts.jsonl");
    test_tmp_path(out, sizeof out, "gen-batch-out.jsonl");
    CHECK(test_write_file(in, k_lines, (size_t)-1) == 0);
    const char *modes[] = {"", "--temp 0.9 --top-k 40 --seed 11", "-d models/pf-draft-dflash2.gguf",
                           "--spec ngram --temp 0.9 --top-k 40 --seed 11"};
    for (int m = 0; m < 4; m++) {
        char *solo = gen(in, out, modes[m]);
        CHECK(solo && test_count_lines(solo) == 7);
        int eot = 0;
        for (const char *p = strstr(solo, "\"stop\": \"eot\""); p; p = strstr(p + 1, "\"stop\": \"eot\"")) eot++;
        /* fewer slots than prompts and more; one slot at a time is the library's own case
         * (generate_batch_*, spec_batch_*, api_batch_equals_solo) */
        const int batches[] = {3, 8};
        for (int b = 0; b < 2; b++) {
            char flags[200];
            snprintf(flags, sizeof flags, "%s --batch %d", modes[m], batches[b]);
            char *got = gen(in, out, flags);
            CHECKF(got && !strcmp(got, solo), "gen %s differs from the one-at-a-time output", flags);
            free(got);
        }
        printf("    %s: 7 prompts (%d ended at end of turn), --batch 3, 8 the same file\n", modes[m][0] ? modes[m] : "greedy",
               eot);
        free(solo);
    }
}

/* Lines with their own "schema" among plain lines, plainly and speculating, and --json over every
 * line: each line's response is the one-at-a-time run's. */
TEST(cli_gen_batch_structured_equals_one_at_a_time) {
    static const char lines[] =
        "{\"id\": \"wet\", \"prompt\": \"Is water wet?\", \"schema\": {\"enum\": [\"yes\", \"no\"]}}\n"
        "{\"prompt\": \"Name three colours.\"}\n"
        "{\"prompt\": \"Give a person as JSON.\", \"schema\": {\"type\": \"object\", \"properties\": "
        "{\"age\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 99}}, \"required\": [\"age\"]}}\n"
        "{\"prompt\": \"hi\"}\n";
    char in[300], out[400];
    test_tmp_path(in, sizeof in, "gen-batch-schema.jsonl");
    test_tmp_path(out, sizeof out, "gen-batch-schema-out.jsonl");
    CHECK(test_write_file(in, lines, (size_t)-1) == 0);
    const char *modes[] = {"", "-d models/pf-draft-dflash2.gguf", "--json"};
    for (int m = 0; m < 3; m++) {
        char *solo = gen(in, out, modes[m]);
        CHECK(solo && test_count_lines(solo) == 4);
        CHECKF(solo && (strstr(solo, "\"response\": \"\\\"yes\\\"\"") || strstr(solo, "\"response\": \"\\\"no\\\"\"")),
               "the enum line's response: %s", solo ? solo : "");
        char flags[200];
        snprintf(flags, sizeof flags, "%s --batch 3", modes[m]);
        char *got = gen(in, out, flags);
        CHECKF(got && solo && !strcmp(got, solo), "gen %s differs from the one-at-a-time output:\n%s\n%s", flags,
               got ? got : "", solo ? solo : "");
        free(got);
        free(solo);
    }
}

TEST(cli_gen_batch_refusals) {
    char in[300], out[400], args[1500], o[4096], e[4096];
    test_tmp_path(in, sizeof in, "gen-batch-bad.jsonl");
    test_tmp_path(out, sizeof out, "gen-batch-bad-out.jsonl");
    CHECK(test_write_file(in, "{\"prompt\": \"a\"}\n{\"prompt\": \"b\", \"schema\": {\"type\": \"object\"}}\n",
                          (size_t)-1) == 0);
    /* a schema's budget too small for -n: that line's message, as without --batch, and no file */
    snprintf(args, sizeof args, "gen -m " TARGET " -i %s -o %s -n 1 --batch 2", in, out);
    CHECK(RUN_CLI(args, o, e) != 0 && strstr(e, ":2: ") && strstr(e, "max_tokens") && test_count_lines(e) == 1);
    CHECK(!test_exists(out));
    snprintf(args, sizeof args, "gen -m " TARGET " -d models/pf-draft-dflash2.gguf -i %s -o %s -n 4 --batch 2 "
             "--log-rounds x.log", in, out);
    CHECK(RUN_CLI(args, o, e) != 0 && strstr(e, "--batch takes no --log-rounds") && test_count_lines(e) == 1);
    snprintf(args, sizeof args, "gen -m " TARGET " -i %s -o %s -n 4 --batch 0", in, out);
    CHECK(RUN_CLI(args, o, e) != 0 && test_count_lines(e) == 1);
    CHECK(!test_exists(out));
}

TEST(cli_bench_concurrency) {
    char json[300], args[1500], o[8192], e[8192];
    test_tmp_path(json, sizeof json, "bench-concurrency.json");
    snprintf(args, sizeof args, "bench -m " TARGET " --tasks eval/tasks --concurrency 1,3 -n 6 --prompts 3 --reps 1 "
             "-t 2 --temp 0.8 --seed 3 --json %s", json);
    CHECKF(RUN_CLI(args, o, e) == 0, "bench --concurrency: %s", e);
    CHECKF(strstr(o, "| 1 (one at a time) |") && strstr(o, "| 3 |") && !strstr(o, "| NO |") && strstr(o, "sampled"),
           "%.800s", o);
    char *j = test_slurp(json, NULL);
    CHECK(j && strstr(j, "\"sequences\": 3") && strstr(j, "\"sampled\": true") && !strstr(j, "\"identical\": false"));
    free(j);
    /* without 1 in the list there is no plain one-at-a-time run: no ratio, not a 0.00x */
    snprintf(args, sizeof args, "bench -m " TARGET " --tasks eval/tasks --concurrency 2 -n 4 --prompts 2 --reps 1 -t 2 "
             "--json %s", json);
    CHECKF(RUN_CLI(args, o, e) == 0, "bench --concurrency 2: %s", e);
    CHECKF(strstr(o, "no 1 in the list") && !strstr(o, "0.00x"), "%.800s", o);
    j = test_slurp(json, NULL);
    CHECK(j && strstr(j, "\"vs_one\": null"));
    free(j);
    snprintf(args, sizeof args, "bench -m " TARGET " --tasks eval/tasks --concurrency 1,0");
    CHECK(RUN_CLI(args, o, e) != 0 && strstr(e, "--concurrency") && test_count_lines(e) == 1);
    snprintf(args, sizeof args, "bench -m " TARGET " --tasks eval/tasks --concurrency 1,2 --spec ngram --svg x.svg");
    CHECK(RUN_CLI(args, o, e) != 0 && strstr(e, "takes no") && test_count_lines(e) == 1);
    /* speculative across sequences: a row per strategy and level, every output plain decoding's */
    snprintf(args, sizeof args, "bench -m " TARGET " -d models/pf-draft-dflash2.gguf --tasks eval/tasks --concurrency 1,2 "
             "--compare dec,ngram -n 6 --prompts 2 --reps 1 -t 2 --json %s", json);
    CHECKF(RUN_CLI(args, o, e) == 0, "bench --concurrency --compare: %s", e);
    CHECKF(strstr(o, "| plain | 2 |") && strstr(o, "| dec | 2 |") && strstr(o, "| ngram | 1 (one at a time) |") &&
           strstr(o, "| dec | 1 (batch scheduler) |") && !strstr(o, "| NO |"), "%.1200s", o);
    j = test_slurp(json, NULL);
    CHECK(j && strstr(j, "\"strategy\": \"dec\"") && strstr(j, "\"sequences\": 1, \"batched\": true") &&
          !strstr(j, "\"identical\": false"));
    free(j);
}
