/* make install into a scratch DESTDIR, then README's minimal program (examples/minimal.c, which
 * README quotes verbatim) compiled with nothing but what pkg-config says about the installed
 * pocketflash.pc, and run with the committed target and draft.
 *
 * cmake --install into a scratch prefix, then a consumer project (tests/api/cmake_consumer) that
 * says find_package(pocketflash CONFIG REQUIRED) builds the same program against it, static and
 * shared, and both runs print the same reply. Under CTest the build being tested is installed
 * ($PF_CMAKE_BUILD); under `make test` a library-only CMake build beside the runner, kept between
 * runs (build/tests/cmake-lib). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

TEST(install_pkg_config_builds_readme_program) {
    char *readme = slurp("README.md"), *prog = slurp("examples/minimal.c");
    CHECK(readme && prog);
    CHECKF(strstr(readme, prog), "README's minimal program differs from examples/minimal.c");
    free(readme);
    free(prog);
    const char *dir = pf_test_tmpdir();
    char cmd[2048], path[400];
    snprintf(cmd, sizeof cmd, "MAKEFLAGS= make -s install PREFIX=/usr DESTDIR=%s/inst >%s/install.log 2>&1", dir, dir);
    CHECKF(system(cmd) == 0, "%s", cmd);
    static const char *const files[] = {"lib/libpocketflash.a", "include/pocketflash.h", "lib/pkgconfig/pocketflash.pc",
                                        "bin/pocketflash"};
    struct stat st;
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/inst/usr/%s", dir, files[i]);
        CHECKF(stat(path, &st) == 0 && st.st_size > 0, "%s not installed", path);
    }
    snprintf(cmd, sizeof cmd,
             "export PKG_CONFIG_PATH=%s/inst/usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=%s/inst; "
             "test \"$(pkg-config --modversion pocketflash)\" = \"$(sed -n 's/^#define PF_VERSION_STRING \"\\(.*\\)\"/\\1/p' include/pocketflash.h)\" && "
             "cc -std=c11 -Wall -Wextra -Werror -o %s/minimal examples/minimal.c $(pkg-config --cflags --libs pocketflash) "
             ">%s/cc.log 2>&1",
             dir, dir, dir, dir);
    CHECKF(system(cmd) == 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "%s/minimal models/pf-target-f16.gguf models/pf-draft-dflash2.gguf >%s/minimal.out", dir,
             dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/minimal.out", dir);
    char *out = slurp(path);
    int n_prompt = 0, reused = 0;
    const char *last = out ? strstr(out, " prompt tokens, ") : NULL;
    while (last && last > out && last[-1] != '[') last--;
    CHECKF(last && sscanf(last, "%d prompt tokens, %d reused", &n_prompt, &reused) == 2 && reused > 0 &&
               reused < n_prompt,
           "output: %s", out ? out : "(none)");
    free(out);
}

TEST(install_cmake_package_find_package) {
    if (system("command -v cmake >/dev/null 2>&1") != 0) {
        pf_test_skip("needs cmake");
        return;
    }
    if (getenv("PF_CROSS") && !strcmp(getenv("PF_CROSS"), "1")) {
        pf_test_skip("a cross build: the installed library is not for this machine's compiler");
        return;
    }
    const char *dir = pf_test_tmpdir();
    char cmd[4096], path[1024], cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd));
    const char *build = getenv("PF_CMAKE_BUILD");
    char own[300], conf[500];
    if (!build || !*build) {
        /* beside the runner (build/tests/cmake-lib), kept from run to run like the Makefile's
         * objects: a later run rebuilds what changed; a folder configured for another source
         * tree (a copied build/) is made afresh */
        const char *self = pf_test_self(), *slash = strrchr(self, '/');
        if (slash) snprintf(own, sizeof own, "%.*scmake-lib", (int)(slash - self + 1), self);
        else snprintf(own, sizeof own, "%s/cmake-lib", dir);
        snprintf(conf, sizeof conf, "cmake -S . -B %s -DCMAKE_BUILD_TYPE=Debug -DPF_BUILD_CLI=OFF -DPF_BUILD_TESTS=OFF", own);
        snprintf(cmd, sizeof cmd,
                 "{ %s >%s/cmake.log 2>&1 || { rm -rf %s && %s >>%s/cmake.log 2>&1; }; } && "
                 "cmake --build %s -j2 >>%s/cmake.log 2>&1",
                 conf, dir, own, conf, dir, own, dir);
        CHECKF(system(cmd) == 0, "%s (see %s/cmake.log)", cmd, dir);
        build = own;
    }
    snprintf(cmd, sizeof cmd, "cmake --install %s --prefix %s/cm-inst >%s/cmake-install.log 2>&1", build, dir, dir);
    CHECKF(system(cmd) == 0, "%s", cmd);
    /* GNUInstallDirs may choose lib or lib64 */
    char libdir[600];
    snprintf(libdir, sizeof libdir, "%s/cm-inst/lib", dir);
    struct stat st;
    snprintf(path, sizeof path, "%s/cmake/pocketflash/pocketflashConfig.cmake", libdir);
    if (stat(path, &st) != 0) snprintf(libdir, sizeof libdir, "%s/cm-inst/lib64", dir);
    static const char *const files[] = {"cmake/pocketflash/pocketflashConfig.cmake",
                                        "cmake/pocketflash/pocketflashConfigVersion.cmake",
                                        "cmake/pocketflash/pocketflashTargets.cmake", "pkgconfig/pocketflash.pc",
                                        "libpocketflash.a", "libpocketflash.so"};
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/%s", libdir, files[i]);
        CHECKF(stat(path, &st) == 0 && st.st_size > 0, "%s not installed", path);
    }
    snprintf(path, sizeof path, "%s/cm-inst/include/pocketflash.h", dir);
    CHECKF(stat(path, &st) == 0, "%s not installed", path);
    /* the .pc names the prefix it was installed to */
    snprintf(path, sizeof path, "%s/pkgconfig/pocketflash.pc", libdir);
    char *pc = slurp(path);
    char want[700];
    snprintf(want, sizeof want, "prefix=%s/cm-inst\n", dir);
    CHECKF(pc && strstr(pc, want), "%s: %s", path, pc ? pc : "(unreadable)");
    free(pc);

    snprintf(cmd, sizeof cmd,
             "cmake -S tests/api/cmake_consumer -B %s/consumer -DCMAKE_PREFIX_PATH=%s/cm-inst "
             "-DPF_PROGRAM=%s/examples/minimal.c -DCMAKE_C_FLAGS='-Wall -Wextra -Werror' >%s/consumer.log 2>&1 && "
             "cmake --build %s/consumer >>%s/consumer.log 2>&1",
             dir, dir, cwd, dir, dir, dir);
    CHECKF(system(cmd) == 0, "%s (see %s/consumer.log)", cmd, dir);
    char *out[2] = {0};
    static const char *const kinds[] = {"static", "shared"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd,
                 "%s/consumer/minimal_%s models/pf-target-f16.gguf models/pf-draft-dflash2.gguf >%s/minimal-%s.out", dir,
                 kinds[i], dir, kinds[i]);
        CHECKF(system(cmd) == 0, "%s", cmd);
        snprintf(path, sizeof path, "%s/minimal-%s.out", dir, kinds[i]);
        out[i] = slurp(path);
    }
    CHECKF(out[0] && strstr(out[0], " reused]"), "minimal_static printed: %s", out[0] ? out[0] : "(none)");
    /* the replies, not the stats lines: tau depends on the machine's timing under the Dec strategy */
    char *cut0 = strstr(out[0], "\n["), *cut1 = out[1] ? strstr(out[1], "\n[") : NULL;
    CHECKF(cut1 && cut1 - out[1] == cut0 - out[0] && !memcmp(out[0], out[1], (size_t)(cut0 - out[0])),
           "static and shared programs differ:\n%s\n---\n%s", out[0], out[1] ? out[1] : "(none)");
    /* the shared program runs against the installed library (its RUNPATH), not a copy of it */
    snprintf(cmd, sizeof cmd, "ldd %s/consumer/minimal_shared | grep -q '%s/libpocketflash.so'", dir, libdir);
    CHECKF(system(cmd) == 0, "%s", cmd);
    free(out[0]);
    free(out[1]);
}
