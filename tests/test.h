/* Minimal test harness: TEST(name) registers a test; CHECK fails it with file:line and the
 * expression. The runner (tests/test_main.c) ends with "N passed, N failed". */
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
/* Path to shared fixtures (../shared relative to the repository, or $PF_SHARED). */
const char *pf_test_shared(void);

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

/* CHECK with a printf-style explanation. */
#define CHECKF(cond, ...)                                                            \
    do {                                                                             \
        if (!(cond)) {                                                               \
            pf_test_failf(__FILE__, __LINE__, __VA_ARGS__);                          \
            return;                                                                  \
        }                                                                            \
    } while (0)

#endif
