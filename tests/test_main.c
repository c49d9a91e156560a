/* Test runner: runs every registered test (or those whose name contains argv[1]) and prints
 * "N passed, N failed, N skipped" as its last line. A test that skips (a fixture of ../shared is
 * absent) is reported by name; under CI=true it counts as a failure, so CI cannot lose it. */
#include "test.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_TESTS 1024

typedef struct { const char *name, *file; pf_test_fn fn; } test_entry;
static test_entry g_tests[MAX_TESTS];
static int g_n, g_cur_failed;
static char g_cur_skip[256]; /* reason, when the current test skipped */
static const char *g_self;

void pf_test_register(const char *name, pf_test_fn fn, const char *file) {
    if (g_n < MAX_TESTS) {
        g_tests[g_n].name = name;
        g_tests[g_n].fn = fn;
        g_tests[g_n].file = file;
        g_n++;
    }
}

void pf_test_fail(const char *file, int line, const char *msg) {
    printf("    FAIL %s:%d: %s\n", file, line, msg);
    fflush(stdout);
    g_cur_failed = 1;
}

void pf_test_failf(const char *file, int line, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pf_test_fail(file, line, msg);
}

int pf_test_failed(void) { return g_cur_failed; }

const char *pf_test_tmpdir(void) {
    static char dir[256];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/pf-test-%d", (int)getpid());
        mkdir(dir, 0700);
    }
    return dir;
}

const char *pf_test_shared(void) {
    const char *s = getenv("PF_SHARED");
    return s ? s : "../shared";
}

int pf_test_shared_has(const char *rel) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", pf_test_shared(), rel);
    return access(path, R_OK) == 0;
}

void pf_test_skip(const char *reason) { snprintf(g_cur_skip, sizeof g_cur_skip, "%s", reason); }

const char *pf_test_self(void) { return g_self; }

static int cmp_tests(const void *a, const void *b) {
    const test_entry *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->name, y->name);
}

int main(int argc, char **argv) {
    const char *filter = argc > 1 ? argv[1] : NULL;
    const char *ci = getenv("CI");
    int strict = ci && !strcmp(ci, "true");
    g_self = argv[0];
    qsort(g_tests, (size_t)g_n, sizeof g_tests[0], cmp_tests);
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < g_n; i++) {
        if (filter && !strstr(g_tests[i].name, filter) && !strstr(g_tests[i].file, filter)) continue;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        g_cur_failed = 0;
        g_cur_skip[0] = 0;
        g_tests[i].fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (g_cur_skip[0] && !g_cur_failed) {
            printf("%s %-48s (%s%s)\n", strict ? "FAIL" : "skip", g_tests[i].name, strict ? "skipped under CI=true: " : "",
                   g_cur_skip);
            if (strict) failed++; else skipped++;
        } else {
            printf("%s %-48s %8.1f ms\n", g_cur_failed ? "FAIL" : "ok  ", g_tests[i].name, ms);
            if (g_cur_failed) failed++; else passed++;
        }
        fflush(stdout);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", pf_test_tmpdir());
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", pf_test_tmpdir());
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
