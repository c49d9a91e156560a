/* The set-up that installs itself (mk/deps.mk), on a simulated machine without the packages: an
 * -I folder of '#error' headers hides zstd.h and xxhash.h from the probes (DEPS_PROBE_FLAGS) and a
 * stand-in apt-get logs its calls and, on install, removes the hiding header of each package it is
 * given. Runs `make deps` in the repository (the tests' working directory). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test.h"
#include "util.h"

static char g_dir[300];

static void write_text(const char *name, const char *text, int mode) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    chmod(path, (mode_t)mode);
}

/* The hiding headers, and the stand-in installer (`installs` 0: it installs nothing). Like apt-get
 * it refuses to run beside another apt-get (its lock), and it holds that lock for a second while it
 * "installs", so that two makes started together overlap there. */
static void simulate(int installs) {
    char path[400], body[1024] = "", script[4096];
    snprintf(g_dir, sizeof g_dir, "%s/setup-sim", pf_test_tmpdir());
    mkdir(g_dir, 0700);
    snprintf(path, sizeof path, "%s/hide", g_dir);
    mkdir(path, 0700);
    write_text("hide/zstd.h", "#error zstd not installed\n", 0644);
    write_text("hide/xxhash.h", "#error xxhash not installed\n", 0644);
    snprintf(path, sizeof path, "%s/apt.log", g_dir);
    remove(path);
    if (installs)
        snprintf(body, sizeof body,
                 "for a; do case \"$a\" in libzstd-dev) rm -f %s/hide/zstd.h;; libxxhash-dev) rm -f %s/hide/xxhash.h;; "
                 "esac; done\n",
                 g_dir, g_dir);
    snprintf(script, sizeof script,
             "#!/bin/sh\nmkdir %s/apt.lock 2>/dev/null || { echo \"$*: could not get lock\" >>%s/apt.log; exit 100; }\n"
             "echo \"$*\" >>%s/apt.log\nsleep 1\n%srmdir %s/apt.lock\n",
             g_dir, g_dir, g_dir, body, g_dir);
    write_text("apt-get", script, 0755);
}

/* `make deps` with the simulation's flags plus EXTRA; output in out, returns the exit status. */
static int make_deps(const char *extra, char *out, size_t n) {
    char cmd[1600];
    snprintf(cmd, sizeof cmd,
             "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory deps DEPS_PROBE_FLAGS=-I%s/hide "
             "APT_GET=%s/apt-get %s",
             g_dir, g_dir, extra);
    return test_run(cmd, out, n, NULL, 0);
}

static int count_lines_with(const char *s, const char *what) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p++) n++;
    return n;
}

TEST(setup_installs_missing_build_deps) {
    char out[8192], log[4096], path[400];
    simulate(1);
    /* root with apt-get: one line saying so, both packages in one install, then the build goes on */
    int rc = make_deps("DEPS_UID=0", out, sizeof out);
    CHECKF(rc == 0, "exit %d:\n%s", rc, out);
    CHECKF(count_lines_with(out, "\n") == 1 &&
               strstr(out, "pocketflash: build dependencies missing, installing with apt-get: libzstd-dev libxxhash-dev"),
           "output:\n%s", out);
    snprintf(path, sizeof path, "%s/apt.log", g_dir);
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(log, 1, sizeof log - 1, f) : 0;
    log[k] = 0;
    if (f) fclose(f);
    CHECKF(strstr(log, "update") && strstr(log, "install -y -qq --no-install-recommends libzstd-dev libxxhash-dev"),
           "apt-get calls:\n%s", log);
    /* the packages are now "installed": nothing to do, nothing printed */
    rc = make_deps("DEPS_UID=0", out, sizeof out);
    CHECKF(rc == 0 && !out[0], "second run: exit %d:\n%s", rc, out);
}

TEST(setup_stops_with_the_command_to_run) {
    char out[8192];
    /* not root: nothing is installed; one line gives the command */
    simulate(1);
    int rc = make_deps("DEPS_UID=1000", out, sizeof out);
    CHECKF(rc != 0, "exit %d:\n%s", rc, out);
    CHECKF(count_lines_with(out, "pocketflash:") == 1 && strstr(out, "apt-get install libzstd-dev libxxhash-dev"),
           "output:\n%s", out);
    /* an installer that installs nothing: the second check catches it */
    simulate(0);
    rc = make_deps("DEPS_UID=0", out, sizeof out);
    CHECKF(rc != 0, "exit %d:\n%s", rc, out);
    CHECKF(strstr(out, "apt-get did not provide libzstd-dev libxxhash-dev; run: apt-get install libzstd-dev libxxhash-dev"),
           "output:\n%s", out);
}

TEST(setup_two_makes_at_once_install_once) {
    char out[8192], cmd[6144], log[4096], path[400];
    simulate(1);
    /* make -j or two build folders: both checks find the packages missing at once; the second waits
     * for the first's install, finds them there and installs nothing (a second apt-get would fail
     * on apt's lock) */
    snprintf(path, sizeof path, "%s/apt.lock", g_dir);
    rmdir(path);
    char one[1200];
    snprintf(one, sizeof one,
             "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL TMPDIR=%s make -s --no-print-directory deps DEPS_PROBE_FLAGS=-I%s/hide "
             "APT_GET=%s/apt-get DEPS_UID=0 SERVE=0",
             g_dir, g_dir, g_dir);
    snprintf(cmd, sizeof cmd, "(%s >%s/o1 2>&1; echo $? >%s/r1) & (%s >%s/o2 2>&1; echo $? >%s/r2) & wait; cat %s/r1 %s/r2 %s/o1 %s/o2",
             one, g_dir, g_dir, one, g_dir, g_dir, g_dir, g_dir, g_dir, g_dir);
    int rc = test_run(cmd, out, sizeof out, NULL, 0);
    CHECKF(rc == 0 && !strncmp(out, "0\n0\n", 4), "exit codes and output:\n%s", out);
    snprintf(path, sizeof path, "%s/apt.log", g_dir);
    FILE *f = fopen(path, "r");
    size_t k = f ? fread(log, 1, sizeof log - 1, f) : 0;
    log[k] = 0;
    if (f) fclose(f);
    CHECKF(count_lines_with(log, "install -y") == 1 && !strstr(log, "could not get lock"), "apt-get calls:\n%s", log);
}
