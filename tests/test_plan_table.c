/* One resolver: every row of tests/plan_table.h gives the same plan -- or a failure whose message
 * names the same wrong value -- through `pocketflash run`, `gen` and `bench` (--print-plan), the
 * library (pf_gen_plan over a draft from pf_load_draft) and the server's request parser (its
 * "spec" and "block", made into pf_gen_params as the server does). The Python binding runs the
 * same table in tests/test_bindings.c. */
#include <stdio.h>
#include <string.h>

#include "cli/serve_json.h"
#include "plan_table.h"
#include "test.h"
#include "util.h"

/* `pocketflash CMD --print-plan` for row r: its plan line (without "plan: ") or its message. */
static int cli_plan(const char *cmd, const plan_row *r, char *got, size_t n) {
    char args[1024], out[4096], err[4096];
    snprintf(args, sizeof args, "%s --print-plan -m %s%s %s", cmd, PLAN_TARGET, r->draft ? " -d " PLAN_DRAFT : "",
             r->flags);
    int ok = RUN_CLI(args, out, err) == 0 && !strncmp(out, "plan: ", 6);
    const char *line = ok ? out + 6 : strncmp(err, "pocketflash: ", 13) ? err : err + 13;
    snprintf(got, n, "%.*s", (int)strcspn(line, "\n"), line);
    return ok;
}

TEST(plan_table_cli_run_gen_bench) {
    static const char *const cmds[] = {"run", "gen", "bench"};
    for (int i = 0; i < N_PLAN_ROWS; i++)
        for (int c = 0; c < 3; c++) {
            const plan_row *r = &k_plan_rows[i];
            if (c == 2 && !r->bench) continue;
            char got[512];
            int ok = cli_plan(cmds[c], r, got, sizeof got);
            CHECKF(plan_row_ok(r, ok, got), "%s %s%s: got '%s', expected '%s'", cmds[c], r->draft ? "-d DRAFT " : "",
                   r->flags, got, r->expect);
        }
}

/* The library's plan of row r, or its message. */
static int library_plan(const plan_row *r, const pf_draft *d, char *got, size_t n) {
    pf_gen_params p;
    pf_gen_params_default(&p);
    p.draft = r->draft ? d : NULL;
    p.spec = r->spec;
    p.block = r->block;
    p.profile = r->profile;
    p.task = r->task;
    char err[PF_ERR_LEN];
    if (pf_gen_plan(&p, got, n, err) == PF_OK) return 1;
    snprintf(got, n, "%s", err);
    return 0;
}

/* The server's: the request's strategy fields through its parser and sv_gen_strategy. */
static int server_plan(const plan_row *r, const pf_draft *d, char *got, size_t n) {
    char body[256], err[PF_ERR_LEN];
    int k = snprintf(body, sizeof body, "{\"prompt\": \"x\", \"spec\": \"%s\"", r->spec_name);
    if (r->block) k += snprintf(body + k, sizeof body - (size_t)k, ", \"block\": %d", r->block);
    snprintf(body + k, sizeof body - (size_t)k, "}");
    sv_request req;
    const char *param = NULL;
    if (!sv_request_parse(body, strlen(body), SV_COMPLETION, &req, err, &param)) {
        snprintf(got, n, "%s", err);
        return 0;
    }
    pf_gen_params p;
    pf_gen_params_default(&p);
    sv_gen_strategy(&req, r->draft ? d : NULL, &p);
    pf_status st = pf_gen_plan(&p, got, n, err);
    sv_request_free(&req);
    if (st != PF_OK) snprintf(got, n, "%s", err);
    return st == PF_OK;
}

TEST(plan_table_library_and_server) {
    char err[PF_ERR_LEN];
    pf_model *m = NULL;
    pf_load_model(PLAN_TARGET, &m, err);
    pf_draft *d = NULL;
    if (m) pf_load_draft(m, PLAN_DRAFT, &d, err);
    CHECKF(d, "%s", err);
    for (int i = 0; i < N_PLAN_ROWS; i++) {
        const plan_row *r = &k_plan_rows[i];
        char got[512];
        int ok = library_plan(r, d, got, sizeof got);
        CHECKF(plan_row_ok(r, ok, got), "library %s%s: got '%s', expected '%s'", r->draft ? "-d DRAFT " : "", r->flags,
               got, r->expect);
        if (!r->server) continue;
        ok = server_plan(r, d, got, sizeof got);
        CHECKF(plan_row_ok(r, ok, got), "server %s%s: got '%s', expected '%s'", r->draft ? "-d DRAFT " : "", r->flags,
               got, r->expect);
    }
    pf_free_draft(d);
    pf_free_model(m);
}
