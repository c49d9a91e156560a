/* One table of strategy requests and the plan each resolves to, the same in every front end: the
 * CLI's run, gen and bench (--print-plan), the library (pf_gen_plan), the server's request parser
 * and the Python binding (tests/test_plan_table.c, tests/test_bindings.c). A front end that cannot
 * say a row (the server has no profile; bench measures plain decoding in every run, so it refuses
 * --spec ar and has no --task) skips it. */
#ifndef PF_TEST_PLAN_TABLE_H
#define PF_TEST_PLAN_TABLE_H

#include "include/pocketflash.h"

#define PLAN_TARGET "models/pf-target-f16.gguf"
#define PLAN_DRAFT "models/pf-draft-dflash2.gguf" /* trained block 8, with a Dec head */
#define PLAN_PROFILE "eval/results/profile-pocket.json" /* default entry dflash/6, math dflash/3 */

typedef struct {
    const char *flags;     /* the CLI's flags, after -m PLAN_TARGET and, with draft, -d PLAN_DRAFT */
    int draft;             /* the draft is at hand */
    const char *spec_name; /* the strategy by name (the server's "spec", Python's strategy) */
    pf_spec_kind spec;     /* the same for pf_gen_params (an out-of-range value for a bad name) */
    int block;
    const char *profile, *task;
    int server, bench;     /* the server / bench can say it */
    const char *expect;    /* the plan line, or "error: " and a fragment of every front end's message */
} plan_row;

static const plan_row k_plan_rows[] = {
    {"", 1, "default", PF_SPEC_DEFAULT, 0, NULL, NULL, 1, 1, "dec block=8"},
    {"--block 3", 1, "default", PF_SPEC_DEFAULT, 3, NULL, NULL, 1, 1, "dflash block=3"},
    {"--spec dec", 1, "dec", PF_SPEC_DEC, 0, NULL, NULL, 1, 1, "dec block=8"},
    {"--spec plain", 1, "plain", PF_SPEC_PLAIN, 0, NULL, NULL, 1, 0, "plain block=1"},
    {"--spec ar", 1, "ar", PF_SPEC_PLAIN, 0, NULL, NULL, 1, 0, "plain block=1"}, /* plain's earlier name */
    {"--spec ngram", 1, "ngram", PF_SPEC_NGRAM, 0, NULL, NULL, 1, 1, "ngram block=8 ngram=3"},
    {"--spec dflash --block 6", 1, "dflash", PF_SPEC_DFLASH, 6, NULL, NULL, 1, 1, "dflash block=6"},
    {"--spec dflash", 1, "dflash", PF_SPEC_DFLASH, 0, NULL, NULL, 1, 1, "dflash block=4"},
    {"--spec adaptive --block 5", 1, "adaptive", PF_SPEC_ADAPTIVE, 5, NULL, NULL, 1, 1, "adaptive block=5"},
    {"--spec hybrid", 1, "hybrid", PF_SPEC_HYBRID, 0, NULL, NULL, 1, 1, "hybrid block=4 ngram=3"},
    {"--block 3", 0, "default", PF_SPEC_DEFAULT, 3, NULL, NULL, 1, 0, "plain block=1"},
    {"--spec dec", 0, "dec", PF_SPEC_DEC, 0, NULL, NULL, 1, 0, "error: strategy dec needs a draft"},
    {"--profile " PLAN_PROFILE, 1, "default", PF_SPEC_DEFAULT, 0, PLAN_PROFILE, NULL, 0, 1,
     "dec block=8 prior=profile(block 6)"},
    {"--profile " PLAN_PROFILE " --spec dflash", 1, "dflash", PF_SPEC_DFLASH, 0, PLAN_PROFILE, NULL, 0, 1,
     "dflash block=6"},
    {"--profile " PLAN_PROFILE " --block 3", 1, "default", PF_SPEC_DEFAULT, 3, PLAN_PROFILE, NULL, 0, 1,
     "dflash block=3"},
    {"--profile " PLAN_PROFILE " --task nosuch", 1, "default", PF_SPEC_DEFAULT, 0, PLAN_PROFILE, "nosuch", 0, 0,
     "error: task 'nosuch' is not in the profile"},
    {"--task math", 1, "default", PF_SPEC_DEFAULT, 0, NULL, "math", 0, 0, "error: task 'math' needs a profile"},
    {"--block 99", 1, "default", PF_SPEC_DEFAULT, 99, NULL, NULL, 1, 1, "error: 99 is outside 2..64"},
    {"--spec bogus", 1, "bogus", (pf_spec_kind)42, 0, NULL, NULL, 1, 1, "error: unknown strategy"},
    {"--profile /nonexistent/p.json", 1, "default", PF_SPEC_DEFAULT, 0, "/nonexistent/p.json", NULL, 0, 1,
     "error: /nonexistent/p.json"},
};
enum { N_PLAN_ROWS = sizeof k_plan_rows / sizeof *k_plan_rows };

/* got (a plan line, or a failure's message) is what row r expects. */
static inline int plan_row_ok(const plan_row *r, int ok, const char *got) {
    if (strncmp(r->expect, "error: ", 7)) return ok && !strcmp(got, r->expect);
    return !ok && strstr(got, r->expect + 7) != NULL;
}

#endif
