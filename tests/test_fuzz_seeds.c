/* Every fuzz target over its seeds, one test per target (fuzz_seeds_NAME), registered from the
 * listing of tests/fuzz/, so a new target gets its test without an edit here. make test builds the
 * targets (mk/fuzz.mk) and names their folder in PF_FUZZ_BIN: libFuzzer builds, which run the
 * seeds (tests/fuzz/seeds/NAME and the generated build-fuzz/seeds/NAME) and then a fixed number
 * of mutations from a fixed seed, the same inputs on every run; or plain-driver builds
 * (tests/fuzz/driver.c), which run each seed once. A target's dictionary (tests/fuzz/NAME.dict)
 * goes to libFuzzer too, so one it cannot parse fails the test. A crash, a sanitizer report, a
 * leak or a target's own check failing fails the test, with the target's output. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test.h"
#include "util.h"

enum { MUTATIONS = 500 };

static int files_in(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void run_seeds(void) {
    const char *name = pf_test_name() + strlen("fuzz_seeds_");
    const char *bin = getenv("PF_FUZZ_BIN");
    if (!bin || !bin[0]) {
        pf_test_skip("the fuzz targets are not built (make test and make asan build them; PF_FUZZ_BIN names the folder)");
        return;
    }
    char exe[512], seeds[2][300], corpus[300], log[300], dict[300], cmd[2900];
    snprintf(exe, sizeof exe, "%s/fuzz_%s", bin, name);
    CHECKF(test_exists(exe), "%s is missing: the target did not build", exe);
    snprintf(seeds[0], sizeof seeds[0], "tests/fuzz/seeds/%s", name);
    snprintf(seeds[1], sizeof seeds[1], "build-fuzz/seeds/%s", name);
    int n_seeds = files_in(seeds[0]) + files_in(seeds[1]);
    CHECKF(n_seeds > 0, "no seeds for fuzz_%s in %s or %s", name, seeds[0], seeds[1]);
    /* libFuzzer writes what it finds into the first folder: a scratch one, never the seeds */
    snprintf(corpus, sizeof corpus, "%s/fuzz-%s", pf_test_tmpdir(), name);
    mkdir(corpus, 0700);
    snprintf(log, sizeof log, "%s/fuzz-%s.log", pf_test_tmpdir(), name);
    snprintf(dict, sizeof dict, "tests/fuzz/%s.dict", name);
    bool has_dict = test_exists(dict);
    size_t k = (size_t)snprintf(cmd, sizeof cmd,
                                "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 %s -seed=1 -runs=%d -max_len=400000 "
                                "-rss_limit_mb=4096 -artifact_prefix=%s/%s%s %s",
                                exe, n_seeds + MUTATIONS, corpus, has_dict ? " -dict=" : "", has_dict ? dict : "",
                                corpus);
    for (int i = 0; i < 2; i++)
        if (files_in(seeds[i])) k += (size_t)snprintf(cmd + k, sizeof cmd - k, " %s", seeds[i]);
    snprintf(cmd + k, sizeof cmd - k, " >%s 2>&1 </dev/null", log);
    int rc = test_sh(cmd);
    if (rc != 0) {
        size_t n = 0;
        char *out = test_slurp(log, &n);
        printf("    fuzz_%s output (last 3000 bytes):\n%s\n", name, out ? out + (n > 3000 ? n - 3000 : 0) : "(none)");
        free(out);
    }
    CHECKF(rc == 0, "fuzz_%s exited with status %d on its seeds", name, rc);
}

/* One test per tests/fuzz/fuzz_NAME.c (the runner starts in the repository's root). */
__attribute__((constructor)) static void register_targets(void) {
    DIR *d = opendir("tests/fuzz");
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "fuzz_", 5) || n < 8 || strcmp(e->d_name + n - 2, ".c")) continue;
        char *name = malloc(n + 8);
        if (!name) continue;
        snprintf(name, n + 8, "fuzz_seeds_%.*s", (int)(n - 7), e->d_name + 5);
        pf_test_register(name, run_seeds, __FILE__);
    }
    closedir(d);
}
