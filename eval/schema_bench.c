/* MaskBench's protocol over the engine's token masks (eval/schema_bench.h). */
#include "eval/schema_bench.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/errf.h"
#include "formats/json_write.h" /* pf_json_write: json.dumps's escapes and separators */
#include "grammar/close_budget.h"
#include "grammar/matcher.h"
#include "grammar/schema.h"

const double pf_sb_pct[PF_SB_N_PCT] = {25, 50, 75, 90, 95, 99, 99.9};

/* ---- json.dumps(ensure_ascii=False) ---- */

/* repr(float): the shortest digits that read back as d, fixed notation for a decimal exponent in
 * [-4, 16), else d.ddde+XX (CPython's float_repr_style 'short'). */
static void py_float(pf_sbuf *b, double d) {
    char e[40], out[64];
    if (d == 0) {
        pf_sbuf_put(b, signbit(d) ? "-0.0" : "0.0", signbit(d) ? 4 : 3);
        return;
    }
    if (isinf(d) || isnan(d)) {
        const char *t = isnan(d) ? "NaN" : d < 0 ? "-Infinity" : "Infinity";
        pf_sbuf_put(b, t, strlen(t));
        return;
    }
    for (int p = 0; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p, d);
        if (strtod(e, NULL) == d) break;
    }
    /* e: [-]D[.DDD]e[+-]XX */
    const char *q = e;
    int neg = *q == '-';
    if (neg) q++;
    char dig[24];
    int nd = 0;
    for (; *q && *q != 'e'; q++)
        if (*q != '.') dig[nd++] = *q;
    int exp10 = atoi(q + 1);
    while (nd > 1 && dig[nd - 1] == '0') nd--;
    int k = 0;
    if (neg) out[k++] = '-';
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            out[k++] = '0', out[k++] = '.';
            for (int i = 0; i < -exp10 - 1; i++) out[k++] = '0';
            for (int i = 0; i < nd; i++) out[k++] = dig[i];
        } else {
            for (int i = 0; i <= exp10; i++) out[k++] = i < nd ? dig[i] : '0';
            out[k++] = '.';
            if (nd > exp10 + 1)
                for (int i = exp10 + 1; i < nd; i++) out[k++] = dig[i];
            else out[k++] = '0';
        }
        pf_sbuf_put(b, out, (size_t)k);
        return;
    }
    out[k++] = dig[0];
    if (nd > 1) {
        out[k++] = '.';
        for (int i = 1; i < nd; i++) out[k++] = dig[i];
    }
    k += snprintf(out + k, sizeof out - (size_t)k, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    pf_sbuf_put(b, out, (size_t)k);
}

/* A number as Python's json reads and writes it: an int (no '.', 'e', 'E') keeps its digits
 * ("-0" is 0), anything else is a float. */
static void py_number(pf_sbuf *b, const pf_json *v, const char *src, size_t src_len) {
    size_t i = v->offset, end = i;
    int is_float = 0;
    while (end < src_len && src[end] && strchr("+-.eE0123456789", src[end])) {
        if (strchr(".eE", src[end])) is_float = 1;
        end++;
    }
    if (is_float) {
        py_float(b, v->u.num.d);
    } else if (end - i == 2 && !memcmp(src + i, "-0", 2)) {
        pf_sbuf_put(b, "0", 1);
    } else {
        pf_sbuf_put(b, src + i, end - i);
    }
}

void pf_sb_py_dumps(pf_sbuf *b, const pf_json *v, const char *src, size_t src_len) {
    pf_json_write(b, v, src, src_len, &(pf_json_style){", ", ": ", py_number, true});
}

/* ---- the file list ---- */

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void pf_sb_list_free(char **paths, int n) {
    for (int i = 0; paths && i < n; i++) free(paths[i]);
    free(paths);
}

pf_rc pf_sb_list(const char *dir, int sample, unsigned long long seed, char ***paths, int *n, char err[PF_ERR_LEN]) {
    *paths = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return pf_err_rc(err, errno == ENOMEM ? PF_RC_OOM : PF_RC_IO, "%s: cannot open the folder: %s", dir, strerror(errno));
    char **p = NULL;
    size_t cap = 0, k = 0;
    struct dirent *e;
    int oom = 0;
    while (!oom && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json")) continue;
        char **q = pf_grow(p, &cap, k + 1, sizeof *p, 1024);
        char *s = q ? malloc(strlen(dir) + l + 2) : NULL;
        if (!s) {
            if (q) p = q;
            oom = 1;
            break;
        }
        p = q;
        sprintf(s, "%s/%s", dir, e->d_name);
        p[k++] = s;
    }
    closedir(d);
    if (oom) {
        pf_sb_list_free(p, (int)k);
        return pf_err_rc(err, PF_RC_OOM, "%s: out of memory listing the folder", dir);
    }
    qsort(p, k, sizeof *p, str_cmp);
    if (sample > 0 && (size_t)sample < k) {
        uint64_t s = seed;
        for (size_t i = 0; i < (size_t)sample; i++) { /* a partial Fisher-Yates shuffle */
            size_t j = i + (size_t)(splitmix(&s) % (k - i));
            char *t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        for (size_t i = (size_t)sample; i < k; i++) free(p[i]);
        k = (size_t)sample;
        qsort(p, k, sizeof *p, str_cmp);
    }
    *paths = p;
    *n = (int)k;
    return PF_RC_OK;
}

/* ---- the walk ---- */

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void add_sample(pf_sb_result *r, float **x, size_t *n, size_t *cap, double v) {
    float *p = pf_grow(*x, cap, *n + 1, sizeof *p, 4096);
    if (!p) {
        r->oom = 1;
        return;
    }
    *x = p;
    p[(*n)++] = (float)v;
}

static void add_reason(pf_sb_result *r, pf_sb_reason **list, int *n, const char *why) {
    for (int i = 0; i < *n; i++)
        if (!strcmp((*list)[i].why, why)) {
            (*list)[i].n++;
            return;
        }
    pf_sb_reason *l = realloc(*list, (size_t)(*n + 1) * sizeof *l);
    char *s = strdup(why);
    if (!l || !s) {
        if (l) *list = l;
        free(s);
        r->oom = 1;
        return;
    }
    *list = l;
    l[(*n)++] = (pf_sb_reason){s, 1};
}

static void add_failure(pf_sb_result *r, const char *file, pf_sb_outcome o, const char *why) {
    pf_sb_failure *f = pf_grow(r->failures, &r->cap_failures, r->n_failures + 1, sizeof *f, 256);
    if (!f) {
        r->oom = 1;
        return;
    }
    r->failures = f;
    const char *base = strrchr(file, '/');
    f[r->n_failures] = (pf_sb_failure){strdup(base ? base + 1 : file), strdup(why), o};
    if (!f[r->n_failures].file || !f[r->n_failures].why) {
        free(f[r->n_failures].file);
        free(f[r->n_failures].why);
        r->oom = 1;
        return;
    }
    r->n_failures++;
}

/* The keyword a compile error names ("keyword 'x'", "'x' combined with ..."), else the message
 * without its path. */
static void compile_reason(const char *err, char *out, size_t n) {
    const char *k = strstr(err, "keyword '");
    if (k) {
        k += 9;
        const char *e = strchr(k, '\'');
        snprintf(out, n, "%.*s", e ? (int)(e - k) : 60, k);
        return;
    }
    const char *c = strstr(err, "' combined with ");
    if (c) {
        const char *s = c;
        while (s > err && s[-1] != '\'') s--;
        const char *w = c + 16, *we = w;
        while (*we && *we != ' ') we++;
        snprintf(out, n, "%.*s beside %.*s", (int)(c - s), s, (int)(we - w), w);
        return;
    }
    const char *m = strstr(err, "json schema: ");
    if (m) {
        m += 13;
        const char *colon = strstr(m, ": ");
        if (colon) m = colon + 2;
    } else {
        m = err;
    }
    snprintf(out, n, "%.60s", m);
    /* the message's own detail after a ':' varies by schema; keep the kind */
    char *cut = strchr(out, ':');
    if (cut && cut != out) *cut = 0;
}

/* The MaskBench features of a file (its meta.features), for failures the compiler did not name. */
static void feature_reasons(pf_sb_result *r, const pf_json *root, pf_sb_reason **list, int *n) {
    const pf_json *f = pf_json_get(pf_json_get(root, "meta"), "features");
    int any = 0;
    for (size_t i = 0; f && f->type == PF_JSON_ARRAY && i < f->u.arr.n; i++)
        if (f->u.arr.items[i].type == PF_JSON_STRING) {
            add_reason(r, list, n, f->u.arr.items[i].u.str.s);
            any = 1;
        }
    if (!any) add_reason(r, list, n, "(no listed feature)");
}

typedef struct {
    const pf_tokenizer *tok;
    const pf_token_masker *tm;
    int32_t end[2];
    uint32_t *bits;
    pf_sb_result *r;
    const char *file; /* the file and instance being walked (for the slowest masks) */
    int test;
    pf_close *cl;        /* the schema's closing distances under a budget (r->max_tokens > 0), else NULL */
} walker;

/* A mask of us microseconds taken after text[0..at) kept among the slowest when it is one. */
static void note_slow(walker *w, double us, const char *text, size_t at) {
    pf_sb_result *r = w->r;
    if (r->want_slow <= 0 || (r->n_slow == r->want_slow && us <= r->slow[r->n_slow - 1].us)) return;
    if (!r->slow && !(r->slow = calloc((size_t)r->want_slow, sizeof *r->slow))) {
        r->oom = 1;
        return;
    }
    int i = r->n_slow < r->want_slow ? r->n_slow++ : r->n_slow - 1;
    for (; i > 0 && r->slow[i - 1].us < us; i--) r->slow[i] = r->slow[i - 1];
    pf_sb_slow *e = &r->slow[i];
    const char *base = strrchr(w->file, '/');
    size_t from = at > sizeof e->ctx - 1 ? at - (sizeof e->ctx - 1) : 0;
    e->us = (float)us;
    snprintf(e->file, sizeof e->file, "%s", base ? base + 1 : w->file);
    e->test = w->test;
    e->at = at;
    memcpy(e->ctx, text + from, at - from);
    e->ctx[at - from] = 0;
}

/* The mask after `done` tokens of an instance: within the budget's tokens left, as generation
 * takes it (engine/constraint.c), or without a budget. */
static void mask_at(walker *w, pf_mask_cache *cache, pf_matcher *m, size_t done) {
    int fits;
    if (w->cl) pf_token_mask_budget(w->tm, cache, m, w->cl, w->r->max_tokens - (int64_t)done, w->bits, &fits);
    else pf_token_mask(w->tm, cache, m, w->bits);
}

static int end_allowed(const walker *w) {
    for (int i = 0; i < 2; i++)
        if (w->end[i] >= 0 && pf_mask_has(w->bits, w->end[i])) return 1;
    return 0;
}

/* 1 when the masks accept text[0..n) as a whole document; 0 refused (*at: the bytes accepted
 * before the refused token, n when the end was refused); -1 out of memory or a text the tokenizer
 * refuses. *first_us (when not NULL) gets the first mask's time. */
static int walk(walker *w, pf_matcher *m, const char *text, size_t n, double *first_us, size_t *at) {
    int32_t *ids = NULL;
    size_t n_ids = 0;
    char err[PF_ERR_LEN];
    if (pf_tokenize(w->tok, text, n, false, &ids, &n_ids, err) != PF_RC_OK) return -1;
    pf_mask_cache *cache = pf_mask_cache_new(w->tm);
    if (!cache) {
        free(ids);
        return -1;
    }
    pf_matcher_reset(m);
    double t0 = now_us();
    mask_at(w, cache, m, 0);
    if (first_us) *first_us = now_us() - t0;
    int ok = 1;
    *at = 0;
    for (size_t i = 0; i < n_ids && ok; i++) {
        if (!pf_mask_has(w->bits, ids[i])) {
            ok = 0;
            break;
        }
        uint32_t len;
        const uint8_t *b = pf_token_masker_bytes(w->tm, ids[i], &len);
        if (pf_matcher_push_bytes(m, b, len) != 1) { /* the mask allowed it: never happens */
            ok = 0;
            break;
        }
        *at += len;
        w->r->tokens++;
        t0 = now_us();
        mask_at(w, cache, m, i + 1);
        double us = now_us() - t0;
        add_sample(w->r, &w->r->tbm_us, &w->r->n_tbm, &w->r->cap_tbm, us);
        note_slow(w, us, text, *at);
    }
    if (ok) ok = end_allowed(w);
    pf_mask_cache_free(cache);
    free(ids);
    return ok;
}

/* The whole file at path, NUL room after it; NULL when it cannot be read. */
static char *read_whole(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    char *src = NULL;
    *len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (*len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (src = malloc((size_t)*len + 1)) && fread(src, 1, (size_t)*len, f) != (size_t)*len)
        *len = -1;
    if (f) fclose(f);
    if (*len < 0) {
        free(src);
        return NULL;
    }
    return src;
}

/* The schema compiled (as Python's json.dumps spells it), its matcher and, under a budget, its
 * closing distances (w->cl, built as a generation builds them) into *s / *m, the time into *us;
 * false (the failure recorded) when it does not compile. */
static bool compile_schema(walker *w, const char *path, const pf_json *schema, const char *src, size_t len,
                           pf_schema **s, pf_matcher **m, double *us) {
    pf_sb_result *r = w->r;
    char err[PF_ERR_LEN], why[300];
    pf_sbuf text = {0};
    pf_sb_py_dumps(&text, schema, src, len);
    double t0 = now_us();
    pf_schema_status st = text.oom ? PF_SCHEMA_NO_MEMORY : pf_schema_compile(text.p, text.n, s, err);
    w->cl = *s && r->max_tokens > 0 ? pf_close_new(*s) : NULL;
    *us = now_us() - t0;
    free(text.p);
    *m = *s ? pf_matcher_new(*s) : NULL;
    if (st == PF_SCHEMA_NO_MEMORY || (*s && !*m) || (*s && r->max_tokens > 0 && !w->cl)) r->oom = 1;
    if (*m) return true;
    r->compile_error++;
    compile_reason(err, why, sizeof why);
    add_reason(r, &r->compile_why, &r->n_compile_why, why);
    add_failure(r, path, PF_SB_COMPILE_ERROR, err);
    return false;
}

/* What a file's tests gave: valid instances refused, invalid ones accepted, the first of either
 * described, and the first mask's time. */
typedef struct {
    int refused, accepted;
    char first_bad[200];
    double first_us;
} test_tally;

/* Where test i's document doc went wrong (ok: the matcher's verdict, at: where it stopped). */
static void describe_bad(test_tally *t, size_t i, const pf_sbuf *doc, int ok, size_t at) {
    size_t from = at > 40 ? at - 40 : 0;
    if (ok) snprintf(t->first_bad, sizeof t->first_bad, "test %zu: %.120s", i, doc->p);
    else if (at == doc->n) snprintf(t->first_bad, sizeof t->first_bad, "test %zu: may not end after ...%.60s", i, doc->p + from);
    else snprintf(t->first_bad, sizeof t->first_bad, "test %zu: refused after ...%.*s at %.20s", i, (int)(at - from), doc->p + from, doc->p + at);
}

/* Each test instance walked through the matcher m and counted into w->r and *t. */
static void run_tests(walker *w, pf_matcher *m, const pf_json *tests, const char *src, size_t len, test_tally *t) {
    pf_sb_result *r = w->r;
    for (size_t i = 0; i < tests->u.arr.n; i++) {
        const pf_json *e = &tests->u.arr.items[i], *valid = pf_json_get(e, "valid"), *data = pf_json_get(e, "data");
        if (!valid || valid->type != PF_JSON_BOOL || !data) continue;
        pf_sbuf doc = {0};
        pf_sb_py_dumps(&doc, data, src, len);
        size_t at = 0;
        w->test = (int)i;
        int ok = doc.oom ? -1 : walk(w, m, doc.p ? doc.p : "", doc.n, i == 0 ? &t->first_us : NULL, &at);
        if (!t->first_bad[0] && ok >= 0 && ok != valid->u.b) describe_bad(t, i, &doc, ok, at);
        free(doc.p);
        if (ok < 0) {
            r->oom = 1;
            continue;
        }
        if (valid->u.b) {
            r->valid_tests++;
            if (!ok) r->valid_refused++, t->refused++;
        } else {
            r->invalid_tests++;
            if (ok) r->invalid_accepted++, t->accepted++;
        }
    }
}

/* The first mask's time of a schema without tests (it still counts toward TTFM). */
static double first_mask_us(walker *w, pf_matcher *m) {
    pf_mask_cache *c = pf_mask_cache_new(w->tm);
    pf_matcher_reset(m);
    double t0 = now_us();
    if (c) mask_at(w, c, m, 0);
    double us = now_us() - t0;
    pf_mask_cache_free(c);
    return us;
}

/* The file's verdict from its tally: an invalid instance accepted, else a valid one refused, else passing. */
static void record_outcome(pf_sb_result *r, const char *path, const pf_json *root, const test_tally *t) {
    char why[300];
    if (t->accepted) {
        r->invalidation_error++;
        feature_reasons(r, root, &r->invalidation_why, &r->n_invalidation_why);
        snprintf(why, sizeof why, "%d invalid instance(s) accepted, e.g. %s", t->accepted, t->first_bad);
        add_failure(r, path, PF_SB_INVALIDATION_ERROR, why);
    } else if (t->refused) {
        r->validation_error++;
        feature_reasons(r, root, &r->validation_why, &r->n_validation_why);
        snprintf(why, sizeof why, "%d valid instance(s) refused, e.g. %s", t->refused, t->first_bad);
        add_failure(r, path, PF_SB_VALIDATION_ERROR, why);
    } else {
        r->passing++;
    }
}

/* One schema file: its outcome into r. */
static void run_file(walker *w, const char *path) {
    pf_sb_result *r = w->r;
    char err[PF_ERR_LEN] = "";
    r->schemas++;
    long len;
    char *src = read_whole(path, &len);
    pf_json_doc *d = src ? pf_json_parse(src, (size_t)len, err) : NULL;
    const pf_json *root = d ? pf_json_root(d) : NULL, *schema = pf_json_get(root, "schema");
    if (!schema) {
        r->compile_error++;
        add_reason(r, &r->compile_why, &r->n_compile_why, "(the file does not parse)");
        add_failure(r, path, PF_SB_COMPILE_ERROR, d ? "no \"schema\"" : err);
        pf_json_free(d);
        free(src);
        return;
    }
    pf_schema *s = NULL;
    pf_matcher *m = NULL;
    double t_compile = 0;
    if (compile_schema(w, path, schema, src, (size_t)len, &s, &m, &t_compile)) {
        const pf_json *tests = pf_json_get(root, "tests");
        test_tally t = {0};
        if (tests && tests->type == PF_JSON_ARRAY && tests->u.arr.n) {
            run_tests(w, m, tests, src, (size_t)len, &t);
        } else {
            t.first_us = first_mask_us(w, m);
            r->no_tests++;
        }
        add_sample(r, &r->ttfm_us, &r->n_ttfm, &r->cap_ttfm, t_compile + t.first_us);
        record_outcome(r, path, root, &t);
    }
    pf_close_free(w->cl);
    w->cl = NULL;
    pf_matcher_free(m);
    pf_schema_free(s);
    pf_json_free(d);
    free(src);
}

int pf_sb_run(const pf_tokenizer *tok, const pf_token_masker *tm, char *const *paths, int n, pf_sb_result *r) {
    walker w = {tok, tm, {pf_tokenizer_eos(tok), pf_tokenizer_eot(tok)}, NULL, r, "", 0, NULL};
    w.bits = malloc((size_t)pf_token_masker_words(tm) * sizeof *w.bits);
    if (!w.bits) return r->oom = 1, -1;
    for (int i = 0; i < n && !r->oom; i++) w.file = paths[i], run_file(&w, paths[i]);
    free(w.bits);
    return r->oom ? -1 : 0;
}

static int float_cmp(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

double pf_sb_percentile(float *x, size_t n, double p) {
    if (!n) return 0;
    qsort(x, n, sizeof *x, float_cmp);
    size_t k = (size_t)ceil(p / 100.0 * (double)n);
    return x[k ? k - 1 : 0];
}

static void free_reasons(pf_sb_reason *l, int n) {
    for (int i = 0; i < n; i++) free(l[i].why);
    free(l);
}

void pf_sb_result_free(pf_sb_result *r) {
    free(r->tbm_us);
    free(r->ttfm_us);
    free_reasons(r->compile_why, r->n_compile_why);
    free_reasons(r->validation_why, r->n_validation_why);
    free_reasons(r->invalidation_why, r->n_invalidation_why);
    for (size_t i = 0; i < r->n_failures; i++) {
        free(r->failures[i].file);
        free(r->failures[i].why);
    }
    free(r->failures);
    free(r->slow);
    memset(r, 0, sizeof *r);
}
