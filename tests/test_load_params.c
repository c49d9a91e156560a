/* How a model is loaded: --kernels, --repack, --hugepages on every command that loads one, and
 * pf_load_params in the library (docs/cli.md#loading, docs/api.md). A bad value is
 * one line naming it with the argument's exit status (1) / PF_ERR_ARG; what is asked for is what
 * the model and its sessions use, and the output does not change with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "engine/model.h"
#include "include/pocketflash.h"
#include "kernels/cpu.h"
#include "test.h"
#include "util.h"

#define TARGET "models/pf-target-f16.gguf"

/* A tiny Q8_0 model (a type the x86 kernels read packed), made once by `pocketflash synth`. */
static const char *q8_model(void) {
    static char path[300];
    if (!*path) test_cli_synth_tiny("q8_0", "load-q8.gguf", path, sizeof path);
    return path;
}

TEST(load_flags_bad_value_one_line_exit_1) {
    static const char *const cmds[] = {
        "run -m " TARGET " -p hi -n 2",
        "gen -m " TARGET " -i /dev/null -o /dev/null",
        "serve -m " TARGET " --port 0",
        "bench -m " TARGET " --tasks eval/tasks --prompts 1 -n 2 --reps 1",
        "bench-model -m " TARGET " --reps 1",
        "demo -m " TARGET " -d models/pf-draft-dflash2.gguf --prompts 1 -n 2 --reps 1",
        "tune -m " TARGET " --tasks eval/tasks --prompts 1 -o /dev/null",
    };
    static const struct { const char *flag, *msg; } bad[] = {
        {"--kernels avx9", "--kernels: 'avx9' is not one of this build's kernel levels (scalar"},
        {"--repack maybe", "--repack: 'maybe' is not on or off"},
        {"--hugepages 1", "--hugepages: '1' is not on or off"},
    };
    for (size_t c = 0; c < sizeof cmds / sizeof *cmds; c++)
        for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
            char args[600], o[4096], e[4096];
            snprintf(args, sizeof args, "%s %s", cmds[c], bad[b].flag);
            int rc = RUN_CLI(args, o, e);
            CHECKF(rc == 1 && test_count_lines(e) == 1 && strstr(e, bad[b].msg) && !*o, "%s: exit %d, '%s'", args,
                   rc, e);
        }
}

/* The same greedy text on the scalar reference without packed copies as on the default kernels. */
TEST(load_flags_same_output_on_every_choice) {
    static const char *const flags[] = {"", "--kernels scalar", "--repack off --hugepages off",
                                        "--kernels avx2 --repack on --hugepages on"};
    char first[8192] = "";
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
        if (i == 3 && pf_level_parse("avx2") < 0) continue; /* not an x86-64 build */
        char args[600], o[8192], e[8192];
        snprintf(args, sizeof args, "run -m %s -p 'The capital of France' -n 12 -t 2 %s", q8_model(), flags[i]);
        CHECKF(RUN_CLI(args, o, e) == 0, "%s: %s", args, e);
        if (i == 0) snprintf(first, sizeof first, "%s", o);
        CHECKF(!strcmp(o, first), "%s: '%s', default '%s'", args, o, first);
    }
}

TEST(load_params_api) {
    char err[PF_ERR_LEN];
    pf_model *m = NULL;
    pf_load_params p = {.kernels = "avx9"};
    CHECK(pf_load_model_with(TARGET, &p, &m, err) == PF_ERR_ARG && !m && strstr(err, "kernels: 'avx9'"));
    p = (pf_load_params){.repack = 2};
    CHECK(pf_load_model_with(TARGET, &p, &m, err) == PF_ERR_ARG && strstr(err, "repack: 2"));
    p = (pf_load_params){.hugepages = -2};
    CHECK(pf_load_model_with(TARGET, &p, &m, err) == PF_ERR_ARG && strstr(err, "hugepages: -2"));
    /* the scalar reference: the model's and its sessions' kernels */
    p = (pf_load_params){.kernels = "scalar"};
    CHECKF(pf_load_model_with(q8_model(), &p, &m, err) == PF_OK, "%s", err);
    pf_session *s = NULL;
    CHECK(m->opts.level == PF_LEVEL_SCALAR && pf_session_new(m, NULL, &s, err) == PF_OK);
    CHECK(s->engine.ctx->k->level == PF_LEVEL_SCALAR);
    pf_session_params q8 = {.kv_q8 = 1};
    pf_session *s8 = NULL;
    CHECKF(pf_session_new(m, &q8, &s8, err) == PF_ERR_ARG, "the 8-bit cache runs on the model's scalar kernels");
    pf_session_free(s);
    pf_free_model(m);
    /* packed copies where the kernels read them, none with repack off */
    const pf_kernels *best = pf_kernels_best();
    for (int repack = -1; repack <= 1; repack += 2) {
        p = (pf_load_params){.repack = repack, .hugepages = -1};
        CHECKF(pf_load_model_with(q8_model(), &p, &m, err) == PF_OK, "%s", err);
        bool want = repack > 0 && pf_pack_wanted(best, m->layers[0].ffn_up.type);
        CHECKF((m->layers[0].ffn_up.packed != NULL) == want, "repack %d: packed %d", repack,
               m->layers[0].ffn_up.packed != NULL);
        CHECK(!m->opts.hugepages && m->opts.repack == (repack > 0));
        pf_free_model(m);
    }
}
