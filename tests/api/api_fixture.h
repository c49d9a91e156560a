/* What the public-API tests share (-Iinclude only; tests/test.h is the harness): the committed
 * models, loaded, and a session over them (api_fixture holds the three). */
#ifndef PF_TEST_API_FIXTURE_H
#define PF_TEST_API_FIXTURE_H

#include <pocketflash.h>
#include <stdio.h>

#include "../test.h"

#define TARGET "models/pf-target-f16.gguf"
#define DRAFT2 "models/pf-draft-dflash2.gguf" /* DFlash2 with a Dec head */
#define DRAFT1 "models/pf-draft-dflash.gguf"  /* DFlash, no Dec head */

/* TARGET into *m and, unless draft is NULL, that draft into *d: 1, or 0 with the library's message
 * recorded as the current test's failure and nothing held. */
static inline int api_load(const char *draft, pf_model **m, pf_draft **d) {
    char err[PF_ERR_LEN];
    *m = NULL;
    if (d) *d = NULL;
    if (pf_load_model(TARGET, m, err) == PF_OK && (!draft || pf_load_draft(*m, draft, d, err) == PF_OK)) return 1;
    pf_test_failf(__FILE__, __LINE__, "%s", err);
    pf_free_model(*m);
    *m = NULL;
    return 0;
}

/* A session of `threads` threads over n_ctx tokens; NULL after printing the library's message. */
static inline pf_session *api_session(const pf_model *m, int threads, int64_t n_ctx) {
    char err[PF_ERR_LEN];
    pf_session_params sp = {.n_threads = threads, .n_ctx = n_ctx};
    pf_session *s = NULL;
    if (pf_session_new(m, &sp, &s, err) != PF_OK) printf("    %s\n", err);
    return s;
}

/* What most tests start from: TARGET, a draft of it or none, and a session over it. */
typedef struct {
    pf_model *m;
    pf_draft *d;
    pf_session *s;
} api_fixture;

static inline void api_close(api_fixture *f) {
    pf_session_free(f->s);
    pf_free_draft(f->d);
    pf_free_model(f->m);
}

/* TARGET, the draft at `draft` unless it is NULL, and a session of `threads` threads over n_ctx
 * tokens into f: 1, or 0 with the failure recorded as the current test's and nothing held. */
static inline int api_open(api_fixture *f, const char *draft, int threads, int64_t n_ctx) {
    f->s = NULL;
    if (!api_load(draft, &f->m, &f->d)) return 0;
    if ((f->s = api_session(f->m, threads, n_ctx))) return 1;
    pf_test_failf(__FILE__, __LINE__, "no session over %s", TARGET);
    api_close(f);
    return 0;
}

#endif
