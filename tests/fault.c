/* Fault checks of the CLI (see fault.h). stderr comes back through a pipe: a file opened by the
 * shell would itself be under the file-size limit and lose the message. */
#include "fault.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

static const char *cli(void) { return getenv("PF_CLI") ? getenv("PF_CLI") : "./pocketflash"; }

int pf_fault_sanitized(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    return 1;
#else
    return 0;
#endif
#else
    return 0;
#endif
}

/* This process's address space in KiB (/proc/self/statm), or -1. */
static long vm_kb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = -1;
    if (!f) return -1;
    if (fscanf(f, "%ld", &pages) != 1) pages = -1;
    fclose(f);
    return pages < 0 ? -1 : pages * (sysconf(_SC_PAGESIZE) / 1024);
}

int pf_fault_cap_vm(long extra_kb) {
    long kb = vm_kb();
    if (kb < 0 || pf_fault_sanitized()) return -1;
    struct rlimit r = {.rlim_cur = (rlim_t)(kb + extra_kb) * 1024, .rlim_max = RLIM_INFINITY};
    return setrlimit(RLIMIT_AS, &r) == 0 ? 0 : -1;
}

void pf_fault_uncap_vm(void) {
    struct rlimit r = {.rlim_cur = RLIM_INFINITY, .rlim_max = RLIM_INFINITY};
    setrlimit(RLIMIT_AS, &r);
}

int pf_fault_run(const char *pre, const char *args, char *err, size_t err_n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%sexec %s %s 2>&1 >/dev/null </dev/null", pre, cli(), args);
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(err, err_n, "popen failed");
        return -1;
    }
    size_t n = fread(err, 1, err_n - 1, p);
    err[n] = 0;
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {
    }
    return pclose(p);
}

/* ARGS with its %s replaced by OUT. */
static void with_out(char *dst, size_t n, const char *args, const char *out) {
    const char *at = strstr(args, "%s");
    if (!at) {
        snprintf(dst, n, "%s", args);
        return;
    }
    snprintf(dst, n, "%.*s%s%s", (int)(at - args), args, out, at + 2);
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* stderr ends with the one error line, "pocketflash: ..." holding EXPECT; lines before it may only
 * be progress (the benchmarks print theirs), never another error. */
static int one_error_line(const char *err, const char *expect) {
    size_t n = strlen(err);
    if (!n || err[n - 1] != '\n') return 0;
    const char *last = err + n - 1;
    while (last > err && last[-1] != '\n') last--;
    if (strncmp(last, "pocketflash: ", 13) != 0 || !strstr(last, expect)) return 0;
    for (const char *l = err; l < last; l = strchr(l, '\n') + 1)
        if (!strncmp(l, "pocketflash: ", 13)) return 0;
    return 1;
}

/* Entries of DIR other than . and .. and KEEP; the first one's name goes to FIRST. */
static int n_entries(const char *dir, const char *keep, char *first, size_t first_n) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    first[0] = 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || (keep && !strcmp(e->d_name, keep))) continue;
        if (!n++) snprintf(first, first_n, "%s", e->d_name);
    }
    closedir(d);
    return n;
}

/* One failing run: status, the one line, and OUT's folder left as it was (only KEEP in it). */
static int expect_one_line(const char *what, const char *pre, const char *args, const char *expect, const char *dir,
                           const char *keep) {
    char err[8192], first[256];
    int st = pf_fault_run(pre, args, err, sizeof err);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) == 0) {
        pf_test_failf(__FILE__, __LINE__, "%s: %s: %s %d, stderr: %s", what, args,
                      st != -1 && WIFSIGNALED(st) ? "killed by signal" : "exit", st != -1 && WIFSIGNALED(st) ? WTERMSIG(st) : st, err);
        return -1;
    }
    if (!one_error_line(err, expect)) {
        pf_test_failf(__FILE__, __LINE__, "%s: %s: stderr does not end in one error line with '%s': %s", what, args,
                      expect, err);
        return -1;
    }
    int n = n_entries(dir, keep, first, sizeof first);
    if (n != 0) {
        pf_test_failf(__FILE__, __LINE__, "%s: %s: left %d file(s) behind in %s (%s)", what, args, n, dir, first);
        return -1;
    }
    return 0;
}

int pf_fault_writer(const char *label, int blocks, const char *args) {
    char dir[512], out[600], cmd[4096], pre[64];
    snprintf(dir, sizeof dir, "%s/fault-%s", pf_test_tmpdir(), label);
    mkdir(dir, 0700);
    snprintf(out, sizeof out, "%s/out", dir);
    with_out(cmd, sizeof cmd, args, out);
    snprintf(pre, sizeof pre, "ulimit -f %d; ", blocks);
    if (expect_one_line("under ulimit -f", pre, cmd, strerror(EFBIG), dir, NULL) < 0) return -1;
    snprintf(out, sizeof out, "%s/missing/out", dir);
    with_out(cmd, sizeof cmd, args, out);
    if (expect_one_line("into a missing folder", "", cmd, strerror(ENOENT), dir, NULL) < 0) return -1;
    snprintf(out, sizeof out, "%s/isdir", dir);
    mkdir(out, 0700);
    with_out(cmd, sizeof cmd, args, out);
    if (expect_one_line("onto a folder", "", cmd, strerror(EISDIR), dir, "isdir") < 0) return -1;
    char first[256];
    if (n_entries(out, NULL, first, sizeof first) != 0) {
        pf_test_failf(__FILE__, __LINE__, "onto a folder: %s: wrote into it (%s)", cmd, first);
        return -1;
    }
    rmdir(out);
    return 0;
}

int pf_fault_vm_limit(long kb, const char *args) {
    char pre[64], err[8192];
    snprintf(pre, sizeof pre, "ulimit -v %ld; ", kb);
    int st = pf_fault_run(pre, args, err, sizeof err);
    if (st == -1 || !WIFEXITED(st)) {
        pf_test_failf(__FILE__, __LINE__, "ulimit -v %ld: %s: killed by signal %d, stderr: %s", kb, args,
                      st != -1 && WIFSIGNALED(st) ? WTERMSIG(st) : -1, err);
        return -1;
    }
    if (WEXITSTATUS(st) != 0 && (count_lines(err) != 1 || strncmp(err, "pocketflash: ", 13) != 0)) {
        pf_test_failf(__FILE__, __LINE__, "ulimit -v %ld: %s: exit %d without one line: %s", kb, args, WEXITSTATUS(st),
                      err);
        return -1;
    }
    return 0;
}
