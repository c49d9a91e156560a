/* Minimal test harness: TEST(name) registers a test; CHECK fails it with file:line and the
 * expression; NEED_SHARED skips it when a shared fixture is absent; pf_test_skip_part reports a
 * part that did not run (a kernel level). The runner (tests/test_main.c) runs each test in its own
 * process and ends with "N passed, N failed, N skipped"; under CI=true a skipped test is a failure.
 * Helpers several test files share are in tests/util.h. */
#ifndef PF_TEST_H
#define PF_TEST_H

#include <stdio.h>

typedef void (*pf_test_fn)(void);
void pf_test_register(const char *name, pf_test_fn fn, const char *file);
void pf_test_fail(const char *file, int line, const char *msg);
void pf_test_failf(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int pf_test_failed(void); /* current test already failed */
/* Path to a scratch directory unique to this run (created on first use). */
const char *pf_test_tmpdir(void);
/* The shared fixtures folder: $PF_SHARED (`make test` sets it from the Makefile's SHARED); "" when
 * unset, so every NEED_SHARED test skips by name. */
const char *pf_test_shared(void);
/* Mark the current test skipped (reported by name with the reason); return from the test after it. */
void pf_test_skip(const char *reason);
/* A part of the current test did not run (a kernel level the CPU lacks or PF_KERNELS caps): reported
 * as "skip TEST[PART] (REASON)" once per part and counted as a skip; the test goes on. */
void pf_test_skip_part(const char *part, const char *reason);
/* The whole test needs a kernel level (or what only such a level does) that this run lacks: skipped
 * by name like pf_test_skip, but not a failure under CI=true (the machine lacks it, not the tree).
 * Return from the test after it. */
void pf_test_skip_level(const char *reason);
/* The runner binary's own path (argv[0]), for tests that run the suite as a subprocess. */
const char *pf_test_self(void);
/* The running test's name (for one function registered under several names). */
const char *pf_test_name(void);

#define TEST(name)                                                                   \
    static void name(void);                                                          \
    __attribute__((constructor)) static void pf_reg_##name(void) {                   \
        pf_test_register(#name, name, __FILE__);                                     \
    }                                                                                \
    static void name(void)

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            pf_test_fail(__FILE__, __LINE__, #cond);                                 \
            return;                                                                  \
        }                                                                            \
    } while (0)

/* Skip the test when pf_test_shared()/REL (a fixture file) is absent: a plain clone has no
 * fixtures folder beside it. */
#define NEED_SHARED(rel)                                                             \
    do {                                                                             \
        if (!pf_test_shared_has(rel)) {                                              \
            pf_test_skip("needs " rel " from the shared fixtures");                  \
            return;                                                                  \
        }                                                                            \
    } while (0)
int pf_test_shared_has(const char *rel);

/* CHECK with a printf-style explanation. */
#define CHECKF(cond, ...)                                                            \
    do {                                                                             \
        if (!(cond)) {                                                               \
            pf_test_failf(__FILE__, __LINE__, __VA_ARGS__);                          \
            return;                                                                  \
        }                                                                            \
    } while (0)

#endif
