/* Each failure kind reaches an application as itself (include/pocketflash.h, docs/api.md#status-codes):
 * a real failure of each kind is driven through the public calls, and the code and the one-line
 * message that come out are checked. I/O: a missing path, a folder; format: a truncated GGUF, a
 * file of another architecture, a truncated draft; argument: no bundled draft, a bad block;
 * cancelled: a callback returning a negative value (plain and speculative); out of memory: the
 * address space capped below what a load, a session or a generation needs (every call either
 * succeeds or says PF_ERR_OOM, never another kind). Compiled with the public header only. */
#include <pocketflash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fault.h"
#include "../test.h"
#include "text_sink.h"

#define TARGET "models/pf-target-f16.gguf"
#define DRAFT2 "models/pf-draft-dflash2.gguf"

/* The first n bytes of src copied to a scratch file named name; its path. */
static const char *truncated(const char *src, const char *name, long n) {
    static char path[4][512];
    static int k;
    char *p = path[k++ % 4];
    snprintf(p, 512, "%s/%s", pf_test_tmpdir(), name);
    FILE *in = fopen(src, "rb"), *out = fopen(p, "wb");
    for (long i = 0; in && out && i < n; i++) {
        int c = fgetc(in);
        if (c == EOF) break;
        fputc(c, out);
    }
    if (in) fclose(in);
    if (out) fclose(out);
    return p;
}

static int one_line(const char *err) { return err[0] && !strchr(err, '\n'); }

TEST(status_api_io_and_format_from_loads) {
    char err[PF_ERR_LEN];
    pf_model *m = (pf_model *)1;
    static const struct { const char *path; long cut; pf_status want; const char *msg; } cases[] = {
        {"/nonexistent/target.gguf", 0, PF_ERR_IO, "/nonexistent/target.gguf: cannot open: No such file"},
        {"models", 0, PF_ERR_IO, "models: not a regular file"},
        {"t20.gguf", 20, PF_ERR_FORMAT, "header: truncated file (20 bytes)"},
        {"t4k.gguf", 4096, PF_ERR_FORMAT, "t4k.gguf: "}, /* the field the cut falls in */
        {"thalf.gguf", 12000000, PF_ERR_FORMAT, "runs past the end of the file"},
        {DRAFT2, 0, PF_ERR_FORMAT, "general.architecture"}, /* a draft is no qwen3 target */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *path = cases[i].cut ? truncated(TARGET, cases[i].path, cases[i].cut) : cases[i].path;
        err[0] = 0;
        pf_status st = pf_load_model(path, &m, err);
        CHECKF(st == cases[i].want && !m && one_line(err) && strstr(err, cases[i].msg),
               "%s: status %s, '%s' (want %s, '%s')", path, pf_status_name(st), err, pf_status_name(cases[i].want),
               cases[i].msg);
    }
    CHECK(pf_load_model(NULL, &m, err) == PF_ERR_ARG && !m);
    CHECK(pf_load_model(TARGET, &m, err) == PF_OK && m);
    pf_draft *d = (pf_draft *)1;
    const char *cut_draft = truncated(DRAFT2, "d-half.gguf", 6000000);
    CHECKF(pf_load_draft(m, cut_draft, &d, err) == PF_ERR_FORMAT && !d && one_line(err) && strstr(err, "d-half.gguf"),
           "%s", err);
    CHECK(pf_load_draft(m, "/nonexistent/draft.gguf", &d, err) == PF_ERR_IO && !d);
    CHECK(pf_load_draft(m, NULL, &d, err) == PF_ERR_ARG && !d && strstr(err, "bundle"));
    CHECK(pf_load_draft(NULL, DRAFT2, &d, err) == PF_ERR_ARG && !d);
    pf_session *s = (pf_session *)1;
    CHECK(pf_session_new(NULL, NULL, &s, err) == PF_ERR_ARG && !s);
    pf_free_model(m);
}

TEST(status_api_names) {
    CHECK(!strcmp(pf_status_name(PF_OK), "ok") && !strcmp(pf_status_name(PF_ERR_IO), "io"));
    CHECK(!strcmp(pf_status_name(PF_ERR_OOM), "oom") && !strcmp(pf_status_name(PF_ERR_CANCELLED), "cancelled"));
    CHECK(!strcmp(pf_status_name((pf_status)99), "unknown"));
}

/* Text callback: cancels (-1) or stops (1) once it has seen `after` pieces. */
typedef struct {
    int seen, after, ret;
} stopper;

static int stop_after(void *u, const char *text, size_t len) {
    (void)text, (void)len;
    stopper *s = u;
    return ++s->seen >= s->after ? s->ret : 0;
}

TEST(status_api_cancelled_by_a_callback) {
    char err[PF_ERR_LEN];
    pf_model *m = NULL;
    pf_draft *d = NULL;
    pf_session *s = NULL;
    CHECKF(pf_load_model(TARGET, &m, err) == PF_OK && pf_load_draft(m, DRAFT2, &d, err) == PF_OK &&
               pf_session_new(m, NULL, &s, err) == PF_OK,
           "%s", err);
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.max_tokens = 40;
    gp.stop_at_eot = false;
    for (int spec = 0; spec < 2; spec++) { /* plain decoding, then speculative rounds */
        gp.draft = spec ? d : NULL;
        gp.spec = spec ? PF_SPEC_DFLASH : PF_SPEC_PLAIN;
        pf_gen_stats st;
        stopper c = {.after = 3, .ret = -1};
        pf_status rc = pf_generate(s, "The capital of France", 21, &gp, stop_after, &c, &st, err);
        CHECKF(rc == PF_ERR_CANCELLED && one_line(err) && strstr(err, "cancelled"), "%s: %s '%s'",
               spec ? "dflash" : "plain", pf_status_name(rc), err);
        CHECK(st.stop == PF_STOP_CALLBACK && st.n_gen >= 1 && st.n_gen < gp.max_tokens && c.seen == 3);
        stopper ok = {.after = 3, .ret = 1}; /* a positive value is a normal end */
        CHECK(pf_generate(s, "The capital of France", 21, &gp, stop_after, &ok, &st, err) == PF_OK &&
              st.stop == PF_STOP_CALLBACK);
    }
    /* the session is usable after a cancel: the same call to the end */
    gp.draft = NULL;
    gp.spec = PF_SPEC_PLAIN;
    text t = {0};
    CHECK(pf_generate(s, "The capital of France", 21, &gp, text_sink, &t, NULL, err) == PF_OK);
    pf_session_free(s);
    pf_free_draft(d);
    pf_free_model(m);
}

/* Under a cap of `extra` KiB above what the process holds: load, session, generation (plain and
 * speculative). Every call succeeds or says PF_ERR_OOM with one line; *n_oom counts the latter. */
static int under_cap(long extra, int *n_oom, char *why, size_t why_n) {
    char err[PF_ERR_LEN];
    pf_model *m = NULL;
    pf_draft *d = NULL;
    pf_session *s = NULL;
    pf_status st[4] = {PF_OK, PF_OK, PF_OK, PF_OK};
    const char *what[4] = {"pf_load_model", "pf_load_draft", "pf_session_new", "pf_generate"};
    int bad = -1;
    pf_fault_cap_vm(extra);
    if ((st[0] = pf_load_model(TARGET, &m, err)) == PF_OK && (st[1] = pf_load_draft(m, DRAFT2, &d, err)) == PF_OK &&
        (st[2] = pf_session_new(m, NULL, &s, err)) == PF_OK) {
        pf_gen_params gp;
        pf_gen_params_default(&gp);
        gp.max_tokens = 8;
        gp.draft = d;
        text t = {0};
        st[3] = pf_generate(s, "The capital of France", 21, &gp, text_sink, &t, NULL, err);
    }
    pf_fault_uncap_vm();
    for (int i = 0; i < 4 && bad < 0; i++)
        if (st[i] != PF_OK && (st[i] != PF_ERR_OOM || !one_line(err))) bad = i;
    for (int i = 0; i < 4; i++) *n_oom += st[i] == PF_ERR_OOM;
    if (bad >= 0) snprintf(why, why_n, "cap +%ld KiB: %s: %s '%s'", extra, what[bad], pf_status_name(st[bad]), err);
    pf_session_free(s);
    pf_free_draft(d);
    pf_free_model(m);
    return bad < 0 ? 0 : -1;
}

TEST(status_api_out_of_memory) {
    /* a probe cap (tests/fault.h): none without /proc/self/statm or under a sanitizer, whose shadow
     * memory cannot live under an address-space cap */
    if (pf_fault_cap_vm(1L << 30) != 0) {
        pf_test_skip("needs /proc/self/statm, and no sanitizer (its shadow memory cannot live under an address-space cap)");
        return;
    }
    pf_fault_uncap_vm();
    /* caps from nothing to past the whole load (target 25 MB, draft 11 MB, their packed copies,
     * a session's 4096-row cache): each allocation on the way fails at some cap */
    static const long extra[] = {0, 4000, 12000, 20000, 28000, 40000, 56000, 80000, 112000, 160000, 240000};
    int n_oom = 0;
    char why[600] = "";
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
        CHECKF(under_cap(extra[i], &n_oom, why, sizeof why) == 0, "%s", why);
    CHECKF(n_oom >= 3, "only %d calls ran out of memory under the caps", n_oom);
}
