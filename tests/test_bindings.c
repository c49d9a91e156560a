/* The language bindings against this build's shared library ($PF_LIB, else build/libpocketflash.so):
 * the Python binding (bindings/python, run by the machine's python3 on tests/bindings/test_python.py)
 * and the Java class of the Android binding (bindings/android, compiled with javac and its JNI file
 * with cc, run with java on tests/bindings/BindingTest.java). Each is skipped by name where its tool
 * is missing, and in a cross build (PF_CROSS=1: the library is not for this machine). Their text
 * must equal `pocketflash run`'s on the committed stand-in target and draft. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan_table.h"
#include "test.h"
#include "util.h"

#define TARGET "models/pf-target-f16.gguf"
#define DRAFT "models/pf-draft-dflash2.gguf"
#define PROMPT "The capital of France is"
#define CHAT "A shop sells 12 apples for 3 dollars each. How much do they cost?"
#define BAD_MODEL "/nonexistent/model.gguf"

/* The shared library, or NULL with the test skipped. */
static const char *shared_lib(void) {
    static char path[1024];
    const char *cross = getenv("PF_CROSS");
    if (cross && !strcmp(cross, "1")) {
        pf_test_skip("a cross build: its library does not load on this machine");
        return NULL;
    }
    const char *lib = getenv("PF_LIB") ? getenv("PF_LIB") : "build/libpocketflash.so";
    if (!realpath(lib, path)) {
        pf_test_failf(__FILE__, __LINE__, "%s missing (make builds it for make test; CMake passes PF_LIB)", lib);
        return NULL;
    }
    return path;
}

/* python3 and the library into *py and *lib, or 0 with the test skipped (or failed). */
static int python_ready(const char **py, const char **lib) {
    *py = getenv("PYTHON") ? getenv("PYTHON") : "/usr/bin/python3";
    if (access(*py, X_OK) != 0) {
        pf_test_skip("needs python3 (/usr/bin/python3 or $PYTHON)");
        return 0;
    }
    return (*lib = shared_lib()) != NULL;
}

/* `pocketflash run` on the prompt, with --chat when chat: its stdout (the text and a newline). */
static int cli_text(int chat, char *out, size_t n) {
    char args[512], err[4096];
    snprintf(args, sizeof args, "run -m %s -d %s %s-p '%s' -n 48 -t 1", TARGET, DRAFT, chat ? "--chat " : "",
             chat ? CHAT : PROMPT);
    return test_run_cli(args, out, n, err, sizeof err);
}

/* The library's message for a bad model path and for a target given as the draft, as the CLI prints them. */
static int cli_errors(char *bad_model, char *bad_draft, size_t n) {
    char out[256], err[1024];
    const char *const args[2] = {"run -m " BAD_MODEL " -p x", "run -m " TARGET " -d " TARGET " -p x"};
    char *dst[2] = {bad_model, bad_draft};
    for (int i = 0; i < 2; i++) {
        if (test_run_cli(args[i], out, sizeof out, err, sizeof err) == 0) return -1;
        const char *msg = strncmp(err, "pocketflash: ", 13) ? err : err + 13;
        snprintf(dst[i], n, "%.*s", (int)strcspn(msg, "\n"), msg);
    }
    return 0;
}

/* python3 tests/bindings/test_python.py MODE LIB ... OUT [EXTRA]: its exit status; its output in log. */
static int run_python(const char *py, const char *mode, const char *lib, const char *out, const char *extra, char *log,
                      size_t n_log) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s tests/bindings/test_python.py %s %s %s %s %s %s", py, mode, lib, TARGET, DRAFT, out,
             extra ? extra : "");
    return test_run(cmd, log, n_log, NULL, 0);
}

/* test_python.py MODE as a whole test, its output to <tmp>/out_name (NULL: none): a failure with its log. */
static void python_mode(const char *mode, const char *out_name) {
    const char *py, *lib;
    if (!python_ready(&py, &lib)) return;
    char out[512] = "/dev/null", log[4096];
    if (out_name) test_tmp_path(out, sizeof out, out_name);
    CHECKF(run_python(py, mode, lib, out, NULL, log, sizeof log) == 0, "test_python.py %s: %s", mode, log);
}

TEST(bindings_python_text_equals_run) {
    const char *py, *lib;
    if (!python_ready(&py, &lib)) return;
    static char want_gen[8192], want_chat[8192], log[8192];
    CHECK(cli_text(0, want_gen, sizeof want_gen) == 0);
    CHECK(cli_text(1, want_chat, sizeof want_chat) == 0);
    char out[512];
    test_tmp_path(out, sizeof out, "python-text.out");
    CHECKF(run_python(py, "text", lib, out, NULL, log, sizeof log) == 0, "test_python.py text: %s", log);
    size_t n = 0;
    char *got = test_slurp(out, &n);
    CHECK(got);
    size_t first = strlen(got);
    CHECKF(first < n, "no chat part in %s", out);
    CHECKF(!strcmp(got, want_gen), "Python generate:\n%s\npocketflash run:\n%s", got, want_gen);
    CHECKF(!strcmp(got + first + 1, want_chat), "Python chat:\n%s\npocketflash run --chat:\n%s", got + first + 1,
           want_chat);
    free(got);
}

TEST(bindings_python_errors_are_exceptions) {
    const char *py, *lib;
    if (!python_ready(&py, &lib)) return;
    char bad_model[512], bad_draft[512], out[512], log[4096];
    CHECK(cli_errors(bad_model, bad_draft, sizeof bad_model) == 0);
    test_tmp_path(out, sizeof out, "python-errors.out");
    CHECKF(run_python(py, "errors", lib, out, NULL, log, sizeof log) == 0, "test_python.py errors: %s", log);
    char *got = test_slurp(out, NULL);
    CHECK(got);
    char *l1 = got, *l2 = strchr(l1, '\n');
    CHECK(l2);
    *l2++ = 0;
    char *l3 = strchr(l2, '\n');
    CHECK(l3);
    *l3++ = 0;
    CHECKF(!strcmp(l1, bad_model), "bad model: Python '%s', CLI '%s'", l1, bad_model);
    CHECKF(!strcmp(l2, bad_draft), "target as draft: Python '%s', CLI '%s'", l2, bad_draft);
    CHECKF(strstr(l3, "block"), "block 1: '%s'", l3);
    free(got);
}

TEST(bindings_python_struct_sizes_equal_c) {
    const char *py, *lib;
    if (!python_ready(&py, &lib)) return;
    char sizes[256], log[2048];
    snprintf(sizes, sizeof sizes,
             "pf_load_params=%zu pf_session_params=%zu pf_gen_params=%zu pf_gen_stats=%zu pf_message=%zu "
             "pf_tool_call=%zu pf_batch_request=%zu pf_batch_feed=%zu",
             sizeof(pf_load_params), sizeof(pf_session_params), sizeof(pf_gen_params), sizeof(pf_gen_stats), sizeof(pf_message),
             sizeof(pf_tool_call), sizeof(pf_batch_request), sizeof(pf_batch_feed));
    CHECKF(run_python(py, "sizes", lib, "/dev/null", sizes, log, sizeof log) == 0, "%s", log);
}

/* Model(path, kernels=..., repack=..., hugepages=...) is pf_load_model_with: the scalar kernels
 * without packing or huge pages give the default load's greedy text, and a level this build lacks
 * raises with status "arg" (tests/bindings/test_python.py load). */
TEST(bindings_python_load_params) { python_mode("load", NULL); }

/* Tool calls through Session.chat (tools, tool_choice required and named) and parse_tool_calls:
 * one call of a listed tool with arguments its parameters accept, speculative equal to plain, a
 * history with the call and its result goes on, an unknown name raises (tests/bindings/test_python.py). */
TEST(bindings_python_tool_calls) { python_mode("tools", "python-tools.out"); }

TEST(bindings_python_sessions_freed) { python_mode("freed", NULL); }

/* Session.generate_batch: each request's text and token count are its solo call's. */
TEST(bindings_python_batch_equals_solo) { python_mode("batch", NULL); }

/* The plan table (tests/plan_table.h) through Session.plan: every row's plan or message as the
 * library, the CLI and the server give it (tests/test_plan_table.c). */
TEST(bindings_python_plan_table) {
    const char *py, *lib;
    if (!python_ready(&py, &lib)) return;
    char rows[300], out[300], log[2048];
    test_tmp_path(rows, sizeof rows, "python-plan.rows");
    test_tmp_path(out, sizeof out, "python-plan.out");
    FILE *f = fopen(rows, "w");
    CHECK(f);
    for (int i = 0; i < N_PLAN_ROWS; i++) {
        const plan_row *r = &k_plan_rows[i];
        fprintf(f, "%s %d %s %s %s\n", r->spec_name, r->block, r->profile ? r->profile : "-", r->task ? r->task : "-",
                r->draft ? "1" : "-");
    }
    fclose(f);
    CHECKF(run_python(py, "plan", lib, out, rows, log, sizeof log) == 0, "test_python.py plan: %s", log);
    char *text = test_slurp(out, NULL);
    CHECK(text);
    char *line = text;
    for (int i = 0; i < N_PLAN_ROWS; i++) {
        const plan_row *r = &k_plan_rows[i];
        char *nl = strchr(line, '\n');
        CHECKF(nl, "%d plan lines, fewer than %d", i, N_PLAN_ROWS);
        *nl = 0;
        int ok = strncmp(line, "error: ", 7) != 0;
        CHECKF(plan_row_ok(r, ok, ok ? line : line + 7), "python %s%s: got '%s', expected '%s'",
               r->draft ? "-d DRAFT " : "", r->flags, line, r->expect);
        line = nl + 1;
    }
    free(text);
}

/* javac, java and the JDK's jni.h, or 0 with the test skipped. */
static int have_jdk(void) {
    if (test_sh("command -v javac >/dev/null && command -v java >/dev/null && "
                "test -f \"$(dirname \"$(dirname \"$(readlink -f \"$(command -v javac)\")\")\")/include/jni.h\"") != 0) {
        pf_test_skip("needs a JDK (javac, java, jni.h)");
        return 0;
    }
    return 1;
}

TEST(bindings_java_jni_text_equals_run) {
    if (!have_jdk()) return;
    const char *lib = shared_lib();
    if (!lib) return;
    static char want_gen[8192], want_chat[8192], log[16384];
    char bad_model[512], bad_draft[512];
    CHECK(cli_text(0, want_gen, sizeof want_gen) == 0);
    CHECK(cli_text(1, want_chat, sizeof want_chat) == 0);
    CHECK(cli_errors(bad_model, bad_draft, sizeof bad_model) == 0);
    const char *dir = pf_test_tmpdir();
    char cmd[4096];
    /* the JNI file as an app's build compiles it: against the public header and the library only */
    snprintf(cmd, sizeof cmd,
             "jdk=$(dirname \"$(dirname \"$(readlink -f \"$(command -v javac)\")\")\") && mkdir -p %s/jni/classes && "
             "javac -Xlint:all -Werror -d %s/jni/classes bindings/android/java/org/pocketflash/PocketFlash.java "
             "tests/bindings/BindingTest.java && "
             "cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -Iinclude -I\"$jdk/include\" -I\"$jdk/include/linux\" "
             "-o %s/jni/libpocketflash_jni.so bindings/android/jni/pocketflash_jni.c %s -Wl,-rpath,\"$(dirname %s)\"",
             dir, dir, dir, lib, lib);
    CHECKF(test_run(cmd, log, sizeof log, NULL, 0) == 0, "%s\n%s", cmd, log);
    char out[512];
    test_tmp_path(out, sizeof out, "java.out");
    snprintf(cmd, sizeof cmd,
             "java -Djava.library.path=%s/jni -cp %s/jni/classes BindingTest %s %s '%s' '%s' %s %s", dir, dir, TARGET,
             DRAFT, PROMPT, CHAT, BAD_MODEL, out);
    CHECKF(test_run(cmd, log, sizeof log, NULL, 0) == 0, "%s\n%s", cmd, log);
    size_t n = 0;
    char *got = test_slurp(out, &n);
    CHECK(got);
    const char *gen = got, *chat = gen + strlen(gen) + 1, *bad = chat < got + n ? chat + strlen(chat) + 1 : NULL;
    CHECKF(bad && bad < got + n, "%s: three NUL-separated parts expected", out);
    CHECKF(!strcmp(gen, want_gen), "Java generate:\n%s\npocketflash run:\n%s", gen, want_gen);
    CHECKF(!strcmp(chat, want_chat), "Java chat:\n%s\npocketflash run --chat:\n%s", chat, want_chat);
    char want_bad[600];
    snprintf(want_bad, sizeof want_bad, "%s\n", bad_model);
    CHECKF(!strcmp(bad, want_bad), "bad model path: Java '%s', CLI '%s'", bad, bad_model);
    free(got);
}

/* include/module.modulemap, as Swift's importer reads it (clang modules): `@import PocketFlash;`
 * finds the module and declares the API, and a name it does not have is an error. Swift itself and
 * Xcode are not on this machine. */
TEST(bindings_module_map_imports_as_module) {
    if (test_sh("command -v clang >/dev/null") != 0) {
        pf_test_skip("needs clang (its module importer is the one Swift uses)");
        return;
    }
    const char *dir = pf_test_tmpdir();
    char src[512], cmd[2048], log[4096];
    test_tmp_path(src, sizeof src, "import.m");
    CHECK(test_write_file(src, "@import PocketFlash;\nint main(void) { return pf_version()[0] == 0; }\n", (size_t)-1) == 0);
    snprintf(cmd, sizeof cmd, "clang -fmodules -fmodules-cache-path=%s/modules -Iinclude -Werror -fsyntax-only %s", dir,
             src);
    CHECKF(test_run(cmd, log, sizeof log, NULL, 0) == 0, "%s\n%s", cmd, log);
    CHECK(test_write_file(src, "@import PocketFlash;\nint main(void) { return pf_no_such_function(); }\n", (size_t)-1) == 0);
    CHECKF(test_run(cmd, log, sizeof log, NULL, 0) != 0, "an undeclared name compiled: %s", cmd);
}
