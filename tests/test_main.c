/* Test runner: runs every registered test, or those whose name or file contains one of the
 * arguments, less those whose name or file contains an argument written !PATTERN, and prints
 * "N passed, N failed, N skipped" as its last line (CTest runs one group of the suite per test this
 * way, CMakeLists.txt).
 *
 * Each test runs in a child process (fork), so a crash, an abort or an exit inside a test is a
 * failure of that test by name and the run goes on to the summary; nothing a test changes in its
 * process (environment, static state) reaches the next one. PF_TEST_FORK=0 runs the tests in the
 * runner's own process (for a debugger). The runner prints "run  NAME" before a test starts, so a
 * hang names its test too.
 *
 * A test that skips (a shared fixture is absent) is reported by name; under CI=true it counts
 * as a failure, so CI cannot lose it. A part of a test that did not run (a kernel level the CPU
 * lacks) is reported as "skip NAME[PART]" and counted as a skip; neither it nor a whole test skipped
 * for want of a kernel level is a failure under CI=true, since the machine, not the tree, lacks it.
 * An argument whose pattern no test's name or file contains (a typo would select nothing, or
 * leave nothing out), and a test table too small for the registered tests, are errors.
 *
 * A forked test's output (stdout and stderr) goes to a file and is copied to the runner's stdout
 * when the test ends; a failing test's is kept, and the closing summary repeats each failing
 * test's name with the end of its output, so a rare failure can be read after a long run. */
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MAX_TESTS
#define MAX_TESTS 1024
#endif
#define MAX_PARTS 16 /* distinct skipped parts one test reports */

typedef struct { const char *name, *file; pf_test_fn fn; } test_entry;
static test_entry g_tests[MAX_TESTS];
static int g_n, g_dropped;
static const char *g_self, *g_cur_name;

/* What a test reports to the runner; shared memory, so a forked test's child can write it. */
typedef struct {
    int done;        /* the test function returned */
    int failed;      /* a CHECK failed */
    int n_parts;     /* parts reported skipped */
    char skip[256];  /* reason, when the whole test skipped */
    int skip_level;  /* ... for want of a kernel level (not a failure under CI=true) */
    char parts[MAX_PARTS][64];
} test_outcome;
static test_outcome *g_out;

void pf_test_register(const char *name, pf_test_fn fn, const char *file) {
    if (g_n == MAX_TESTS) {
        g_dropped++;
        return;
    }
    g_tests[g_n++] = (test_entry){name, file, fn};
}

void pf_test_fail(const char *file, int line, const char *msg) {
    printf("    FAIL %s:%d: %s\n", file, line, msg);
    fflush(stdout);
    g_out->failed = 1;
}

void pf_test_failf(const char *file, int line, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pf_test_fail(file, line, msg);
}

int pf_test_failed(void) { return g_out->failed; }

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
    return s ? s : "";
}

int pf_test_shared_has(const char *rel) {
    if (!*pf_test_shared()) return 0;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", pf_test_shared(), rel);
    return access(path, R_OK) == 0;
}

void pf_test_skip(const char *reason) { snprintf(g_out->skip, sizeof g_out->skip, "%s", reason); }

void pf_test_skip_level(const char *reason) {
    pf_test_skip(reason);
    g_out->skip_level = 1;
}

void pf_test_skip_part(const char *part, const char *reason) {
    for (int i = 0; i < g_out->n_parts && i < MAX_PARTS; i++)
        if (!strcmp(g_out->parts[i], part)) return;
    if (g_out->n_parts < MAX_PARTS) snprintf(g_out->parts[g_out->n_parts], sizeof g_out->parts[0], "%s", part);
    g_out->n_parts++;
    printf("skip %s[%s] (%s)\n", g_cur_name, part, reason);
    fflush(stdout);
}

const char *pf_test_self(void) { return g_self; }

const char *pf_test_name(void) { return g_cur_name; }

static int cmp_tests(const void *a, const void *b) {
    const test_entry *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->name, y->name);
}

static int matches(const test_entry *t, const char *pattern) {
    return strstr(t->name, pattern) || strstr(t->file, pattern);
}

/* Selected by one of the filters (every test when all are exclusions) and left out by none. */
static int selected(const test_entry *t, char **filters, int n_filters) {
    int any = 0, hit = 0;
    for (int i = 0; i < n_filters; i++) {
        if (filters[i][0] == '!') {
            if (matches(t, filters[i] + 1)) return 0;
            continue;
        }
        any = 1;
        hit = hit || matches(t, filters[i]);
    }
    return !any || hit;
}

/* A failed test's name and the end of its output, for the summary. */
typedef struct { const char *name; char *out; } failure;
static failure g_fail[MAX_TESTS];
static int g_n_fail;
#define KEEP_OUTPUT 6000 /* bytes of a failing test's output the summary repeats */

static char g_out_path[300];

/* The slowest tests of the run, for the summary (where the suite's time goes, on any machine). */
#define N_SLOWEST 10
typedef struct { const char *name; double ms; } timing;
static timing g_slow[N_SLOWEST];

static void note_time(const char *name, double ms) {
    int i = N_SLOWEST;
    while (i > 0 && (!g_slow[i - 1].name || g_slow[i - 1].ms < ms)) i--;
    if (i == N_SLOWEST) return;
    memmove(&g_slow[i + 1], &g_slow[i], (N_SLOWEST - 1 - i) * sizeof g_slow[0]);
    g_slow[i] = (timing){name, ms};
}

static void print_slowest(double total_ms) {
    printf("%.1f s in tests; the slowest:", total_ms / 1e3);
    for (int i = 0; i < N_SLOWEST && g_slow[i].name; i++) printf(" %s %.1f s%s", g_slow[i].name, g_slow[i].ms / 1e3,
                                                                 i + 1 < N_SLOWEST && g_slow[i + 1].name ? "," : "");
    printf("\n");
}

/* Copies the finished test's output file to stdout; returns its last KEEP_OUTPUT bytes. */
static char *drain_output(void) {
    FILE *f = fopen(g_out_path, "rb");
    if (!f) return NULL;
    static char buf[1 << 16];
    char *tail = calloc(1, KEEP_OUTPUT + 1);
    size_t n_tail = 0;
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) {
        fwrite(buf, 1, n, stdout);
        if (!tail) continue;
        if (n >= KEEP_OUTPUT) {
            memcpy(tail, buf + n - KEEP_OUTPUT, KEEP_OUTPUT);
            n_tail = KEEP_OUTPUT;
        } else {
            size_t keep = n_tail + n > KEEP_OUTPUT ? KEEP_OUTPUT - n : n_tail;
            memmove(tail, tail + n_tail - keep, keep);
            memcpy(tail + keep, buf, n);
            n_tail = keep + n;
        }
        tail[n_tail] = 0;
    }
    fclose(f);
    fflush(stdout);
    unlink(g_out_path);
    return tail;
}

static void note_failure(const char *name, char *out) {
    if (g_n_fail < MAX_TESTS) g_fail[g_n_fail++] = (failure){name, out};
    else free(out);
}

/* Runs one test, in a child process unless in_process; returns its wait status (0 in process). */
static int run_test(const test_entry *t, int in_process) {
    g_cur_name = t->name;
    memset(g_out, 0, sizeof *g_out);
    if (in_process) {
        t->fn();
        g_out->done = 1;
        return 0;
    }
    fflush(stdout);
    fflush(stderr);
    snprintf(g_out_path, sizeof g_out_path, "%s/runner-output", pf_test_tmpdir());
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(g_out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        t->fn();
        g_out->done = 1;
        exit(0); /* exit, not _exit: buffers flush and a sanitizer's exit-time checks run */
    }
    if (pid < 0) {
        printf("    FAIL fork: %s\n", strerror(errno));
        g_out->failed = 1;
        return 0;
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return st;
}

/* The way a test's process ended, when that alone fails it; "" when it ended normally. */
static void abnormal_end(int st, char *why, size_t n) {
    const char *when = g_out->done ? "after the test returned" : "inside the test";
    if (WIFSIGNALED(st))
        snprintf(why, n, "killed by signal %d (%s) %s", WTERMSIG(st), strsignal(WTERMSIG(st)), when);
    else if (WIFEXITED(st) && (WEXITSTATUS(st) != 0 || !g_out->done))
        snprintf(why, n, "exited with status %d %s", WEXITSTATUS(st), when);
    else
        why[0] = 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* a crashing test loses none of the lines it printed */
    char **filters = argv + 1;
    int n_filters = argc - 1;
    const char *ci = getenv("CI"), *fork_env = getenv("PF_TEST_FORK");
    int strict = ci && !strcmp(ci, "true");
    int in_process = fork_env && !strcmp(fork_env, "0");
    g_self = argv[0];
    if (g_dropped) {
        printf("error: %d tests do not fit the runner's table (MAX_TESTS %d in tests/test_main.c)\n", g_dropped,
               MAX_TESTS);
        printf("0 passed, %d failed, 0 skipped\n", g_dropped);
        return 1;
    }
    g_out = mmap(NULL, sizeof *g_out, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_out == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    pf_test_tmpdir(); /* made here, so every test's process shares it */
    qsort(g_tests, (size_t)g_n, sizeof g_tests[0], cmp_tests);
    int passed = 0, failed = 0, skipped = 0;
    double total_ms = 0;
    for (int f = 0; f < n_filters; f++) {
        const char *pattern = filters[f] + (filters[f][0] == '!');
        int any = 0;
        for (int i = 0; i < g_n && !any; i++) any = matches(&g_tests[i], pattern);
        if (!any) {
            printf("FAIL no test's name or file contains '%s'\n", pattern);
            failed++;
        }
    }
    for (int i = 0; i < g_n; i++) {
        const test_entry *t = &g_tests[i];
        if (!selected(t, filters, n_filters)) continue;
        printf("run  %s\n", t->name);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int st = run_test(t, in_process);
        char *out = in_process ? NULL : drain_output();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        total_ms += ms;
        note_time(t->name, ms);
        char why[160];
        abnormal_end(st, why, sizeof why);
        skipped += g_out->n_parts;
        if (why[0]) {
            printf("FAIL %-48s %8.1f ms (%s)\n", t->name, ms, why);
            failed++;
            note_failure(t->name, out), out = NULL;
        } else if (g_out->skip[0] && !g_out->failed) {
            int fail = strict && !g_out->skip_level;
            printf("%s %-48s (%s%s)\n", fail ? "FAIL" : "skip", t->name, fail ? "skipped under CI=true: " : "",
                   g_out->skip);
            if (fail) failed++, note_failure(t->name, out), out = NULL;
            else skipped++;
        } else {
            printf("%s %-48s %8.1f ms\n", g_out->failed ? "FAIL" : "ok  ", t->name, ms);
            if (g_out->failed) failed++, note_failure(t->name, out), out = NULL;
            else passed++;
        }
        free(out);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", pf_test_tmpdir());
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", pf_test_tmpdir());
    for (int i = 0; i < g_n_fail; i++) {
        printf("==== failed: %s; its output%s:\n%s", g_fail[i].name,
               g_fail[i].out && strlen(g_fail[i].out) == KEEP_OUTPUT ? " (the end)" : "",
               g_fail[i].out && g_fail[i].out[0] ? g_fail[i].out : "(none)\n");
        size_t n = g_fail[i].out ? strlen(g_fail[i].out) : 0;
        if (n && g_fail[i].out[n - 1] != '\n') printf("\n");
        free(g_fail[i].out);
    }
    if (g_n_fail) {
        printf("failed:");
        for (int i = 0; i < g_n_fail; i++) printf(" %s", g_fail[i].name);
        printf("\n");
    }
    print_slowest(total_ms);
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
