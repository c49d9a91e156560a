/* make install into a scratch DESTDIR, then README's minimal program (examples/minimal.c, which
 * README quotes verbatim) compiled with nothing but what pkg-config says about the installed
 * pocketflash.pc, and run with the committed target and draft. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
