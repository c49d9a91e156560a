/* The suite's skip rule is honest: with the shared fixture directory hidden (PF_SHARED pointing at
 * an empty folder), the fixture tests are reported skipped by name, never passed, and under
 * CI=true the same run fails. Runs this very runner as a subprocess on the fixture tests only
 * (filter "golden": tests/test_golden.c and tokenizer_golden_qwen2_vectors). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test.h"
#include "util.h"

static const char *const k_fixture_tests[] = {"golden_llamacpp_f32_exact", "golden_llamacpp_q8_0",
                                              "golden_llamacpp_q4_1", "tokenizer_golden_qwen2_vectors"};
#define N_FIXTURE_TESTS (int)(sizeof k_fixture_tests / sizeof *k_fixture_tests)

/* Runs the suite on "golden" with the fixtures hidden; returns the exit status, output in out. */
static int run_hidden(const char *ci, char *out, size_t n) {
    char empty[300], cmd[1200];
    snprintf(empty, sizeof empty, "%s/no-shared", pf_test_tmpdir());
    mkdir(empty, 0700);
    snprintf(cmd, sizeof cmd, "PF_SHARED=%s CI=%s %s golden", empty, ci, pf_test_self());
    return test_run(cmd, out, n, NULL, 0);
}

/* The result line of test `name` in the runner's output ("ok   name ...", "skip name ...", ...;
 * not the "run  name" line printed before it). */
static const char *line_of(const char *out, const char *name) {
    for (const char *p = out; (p = strstr(p, name)); p++)
        if (p >= out + 5 && p[-1] == ' ' && (p - 5 == out || p[-6] == '\n') && p[strlen(name)] == ' ' &&
            strncmp(p - 5, "run  ", 5))
            return p - 5;
    return NULL;
}

static const char *last_line(const char *out) {
    size_t n = strlen(out);
    while (n && out[n - 1] == '\n') n--;
    const char *p = out + n;
    while (p > out && p[-1] != '\n') p--;
    return p;
}

TEST(skip_path_honest_without_shared) {
    static char out[1 << 16];
    CHECKF(pf_test_self(), "runner path unknown");
    int rc = run_hidden("", out, sizeof out);
    CHECKF(rc == 0, "hidden fixtures, CI unset: exit %d\n%s", rc, out);
    for (int i = 0; i < N_FIXTURE_TESTS; i++) {
        const char *l = line_of(out, k_fixture_tests[i]);
        CHECKF(l && !strncmp(l, "skip ", 5) && strstr(l, "shared fixtures"), "%s not reported skipped:\n%s",
               k_fixture_tests[i], out);
    }
    char want[64];
    snprintf(want, sizeof want, "0 passed, 0 failed, %d skipped", N_FIXTURE_TESTS);
    CHECKF(!strncmp(last_line(out), want, strlen(want)), "closing line '%s', want '%s'", last_line(out), want);

    rc = run_hidden("true", out, sizeof out);
    CHECKF(rc != 0 && rc < 128, "hidden fixtures under CI=true: exit %d\n%s", rc, out);
    for (int i = 0; i < N_FIXTURE_TESTS; i++) {
        const char *l = line_of(out, k_fixture_tests[i]);
        CHECKF(l && !strncmp(l, "FAIL ", 5), "%s not failed under CI=true:\n%s", k_fixture_tests[i], out);
    }
    snprintf(want, sizeof want, "0 passed, %d failed, 0 skipped", N_FIXTURE_TESTS);
    CHECKF(!strncmp(last_line(out), want, strlen(want)), "closing line '%s', want '%s'", last_line(out), want);
}
