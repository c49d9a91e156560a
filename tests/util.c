/* Helpers several test files share (see util.h). */
#include "api/strategy.h"
#include "util.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "convert/dflash_synth.h"
#include "engine/chat.h"
#include "engine/generate.h"
#include "engine/tokenizer.h"
#include "formats/quant.h"
#include "kernels/cpu.h"
#include "test.h"
#include "engine/batch.h"

/* ---- kernel levels ---- */

const char *test_level_missing(int level) {
    static char why[96];
    pf_level l = (pf_level)level;
    if (!pf_level_built(l)) return "not in this build";
    if (!pf_level_supported(l)) return "this CPU lacks it";
    /* the levels a build holds are ordered: a supported one above the best is capped */
    if (l > pf_best_level()) {
        snprintf(why, sizeof why, "capped by PF_KERNELS=%s", getenv("PF_KERNELS") ? getenv("PF_KERNELS") : "");
        return why;
    }
    return "";
}

const pf_kernels *test_kernels(int level) {
    if (!pf_level_built((pf_level)level)) return NULL;
    const char *why = test_level_missing(level);
    if (*why) {
        pf_test_skip_part(pf_level_name((pf_level)level), why);
        return NULL;
    }
    return pf_kernels_get((pf_level)level);
}

/* ---- environment ---- */

void test_env_save(test_env *e, const char *name) {
    const char *v = getenv(name);
    e->name = name;
    e->was_set = v != NULL;
    snprintf(e->value, sizeof e->value, "%s", v ? v : "");
}

void test_env_restore(const test_env *e) {
    if (e->was_set) setenv(e->name, e->value, 1);
    else unsetenv(e->name);
}

/* ---- commands ---- */

const char *test_cli(void) {
    const char *c = getenv("PF_CLI");
    return c ? c : "./pocketflash";
}

int test_sh(const char *cmd) {
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The file's first n - 1 bytes into buf, NUL-terminated (empty when it cannot be read). */
static void read_into(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "rb");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = 0;
    if (f) fclose(f);
}

int test_run(const char *cmd, char *out, size_t n_out, char *err, size_t n_err) {
    static int serial;
    char po[300], pe[300];
    size_t n_full = strlen(cmd) + 2 * sizeof po + 40;
    char *full = malloc(n_full);
    snprintf(po, sizeof po, "%s/run-%d.out", pf_test_tmpdir(), serial);
    snprintf(pe, sizeof pe, "%s/run-%d.err", pf_test_tmpdir(), serial++);
    if (err) snprintf(full, n_full, "( %s ) >%s 2>%s </dev/null", cmd, po, pe);
    else snprintf(full, n_full, "( %s ) >%s 2>&1 </dev/null", cmd, po);
    int rc = test_sh(full);
    free(full);
    read_into(po, out, n_out);
    if (err) read_into(pe, err, n_err);
    return rc;
}

int test_cli_synth_tiny(const char *type, const char *name, char *path, size_t n) {
    snprintf(path, n, "%s/%s", pf_test_tmpdir(), name);
    char cmd[600], o[4096], e[4096];
    snprintf(cmd, sizeof cmd, "synth --shape tiny --type %s -o %s", type, path);
    if (RUN_CLI(cmd, o, e) == 0) return 0;
    printf("    synth failed: %s\n", e);
    return -1;
}

int test_run_cli(const char *args, char *out, size_t n_out, char *err, size_t n_err) {
    size_t n = strlen(args) + strlen(test_cli()) + 2;
    char *cmd = malloc(n);
    snprintf(cmd, n, "%s %s", test_cli(), args);
    int rc = test_run(cmd, out, n_out, err, n_err);
    free(cmd);
    return rc;
}

/* ---- files ---- */

void test_tmp_path(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", pf_test_tmpdir(), name); }

void test_capture_begin(test_capture *c, int fd) {
    test_tmp_path(c->path, sizeof c->path, fd == 1 ? "capture-stdout.txt" : "capture-stderr.txt");
    fflush(fd == 1 ? stdout : stderr);
    c->fd = fd;
    c->saved = dup(fd);
    int to = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(to, fd);
    close(to);
}

void test_capture_end(test_capture *c, char *buf, size_t n) {
    fflush(c->fd == 1 ? stdout : stderr);
    dup2(c->saved, c->fd);
    close(c->saved);
    FILE *f = fopen(c->path, "rb");
    size_t k = f ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = 0;
    if (f) fclose(f);
}

char *test_slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = NULL;
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)len + 1)) &&
        fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[len] = 0;
        if (n) *n = (size_t)len;
    }
    return b;
}

int test_write_file(const char *path, const void *data, size_t n) {
    if (n == (size_t)-1) n = strlen(data);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    return (fclose(f) == 0 && w == n) ? 0 : -1;
}

int test_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

int test_count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* ---- token sequences ---- */

int test_seq_push(void *u, int32_t tok) {
    test_seq *s = u;
    if (s->n < (int)(sizeof s->toks / sizeof s->toks[0])) s->toks[s->n++] = tok;
    return 0;
}

int test_seq_same(const test_seq *a, const test_seq *b) {
    return a->n == b->n && !memcmp(a->toks, b->toks, sizeof a->toks[0] * (size_t)a->n);
}

pf_gen_params test_gen_fixed(int max_tokens) {
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.max_tokens = max_tokens;
    gp.stop_at_eot = false;
    return gp;
}

/* ---- models ---- */

/* A synthetic target of shape (its seed) written to path and loaded; NULL, the failing step printed. */
static pf_model *synth_load(const pf_synth_shape *shape, uint32_t type, bool untied, uint64_t seed, const char *path) {
    char err[PF_ERR_LEN];
    if (pf_synth_write(shape, type, untied, seed, path, err) < 0) {
        printf("    synth: %s\n", err);
        return NULL;
    }
    pf_model *m = pf_model_load(path, err);
    if (!m) printf("    load: %s\n", err);
    return m;
}

pf_model *test_synth_model(const pf_synth_shape *shape, uint32_t type, bool untied, const char *path) {
    return synth_load(shape, type, untied, 7, path);
}

int test_tiny_open(test_tiny *t, uint32_t type, uint64_t seed, int threads, int n_ctx) {
    char path[300], err[PF_ERR_LEN];
    snprintf(path, sizeof path, "%s/tiny-%s-%llu.gguf", pf_test_tmpdir(), pf_type_info(type)->name,
             (unsigned long long)seed);
    t->s = NULL;
    if (!(t->m = synth_load(pf_synth_shape_find("tiny"), type, false, seed, path))) return -1;
    pf_session_params sp = {.n_threads = threads, .n_ctx = n_ctx};
    if (pf_session_new(t->m, threads ? &sp : NULL, &t->s, err) != PF_OK) {
        printf("    tiny session: %s\n", err);
        return -1;
    }
    return 0;
}

void test_tiny_close(test_tiny *t) {
    pf_session_free(t->s);
    pf_model_free(t->m);
    t->s = NULL;
    t->m = NULL;
}

float *test_target_taps(const pf_model *m, const pf_dflash *d, const int32_t *toks, int n) {
    char err[PF_ERR_LEN];
    int n_taps;
    const int *tl = pf_dflash_tap_layers(d, &n_taps);
    float *taps = malloc((size_t)n * n_taps * m->hp.n_embd * sizeof(float));
    pf_ctx *c = pf_ctx_new(m, n > 256 ? n : 256, 1, NULL, err);
    pf_batch b = {.tokens = toks, .n = n, .tap_layers = tl, .n_taps = n_taps, .taps = taps};
    if (!c || pf_forward(c, &b, err) != PF_RC_OK) {
        printf("    target forward: %s\n", err);
        free(taps);
        taps = NULL;
    }
    pf_ctx_free(c);
    return taps;
}

int test_synth_target_draft(const char *prefix, uint64_t target_seed, int draft_layers, char *target, char *draft,
                            size_t n, char *err) {
    snprintf(target, n, "%s/%s-target.gguf", pf_test_tmpdir(), prefix);
    snprintf(draft, n, "%s/%s-draft.gguf", pf_test_tmpdir(), prefix);
    if (pf_synth_write(pf_synth_shape_find("tiny"), PF_TYPE_Q8_0, false, target_seed, target, err) < 0) return -1;
    return pf_dflash_synth(target, 1, draft_layers, 8, NULL, 0, 3, false, draft, err) != PF_RC_OK ? -1 : 0;
}

int test_chat_tokens(const pf_model *m, const char *user, int32_t **ids, size_t *n, char *err) {
    char *text = pf_chat_format(NULL, user);
    int rc = pf_tokenize(m->tok, text, strlen(text), true, ids, n, err);
    free(text);
    return rc;
}

/* ---- sampled distributions ---- */

pf_spec *test_library_spec(pf_session *s, const pf_draft *d, pf_spec_kind spec, int block, char *err) {
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.draft = d;
    gp.spec = spec;
    gp.block = block;
    api_choice c;
    pf_api_use_strategy(s, NULL);
    return pf_api_strategy(s, &gp, &c, err) == PF_OK ? c.spec : NULL;
}

/* Pushes tokens and stops generation once n_pos + 1 are in (a schema's run has a budget its whole
 * document fits, docs/structured-output.md; the positions counted are the first ones). */
typedef struct {
    test_seq seq;
    int want;
} seq_until;

static int push_until(void *u, int32_t tok) {
    seq_until *s = u;
    test_seq_push(&s->seq, tok);
    return s->seq.n >= s->want;
}

int *test_sample_counts(const test_sampling *t, char *err) {
    int *cnt = calloc((size_t)2 * t->n_pos * t->n_vocab, sizeof(int));
    if (!cnt) return NULL;
    for (int run = 0; run < t->runs; run++)
        for (int w = t->strategy_only; w < 2; w++) {
            pf_gen_params gp;
            pf_gen_params_default(&gp);
            gp.max_tokens = t->json_schema ? 64 : t->n_pos + 1;
            gp.temp = 1.0f;
            gp.top_k = 4;
            gp.seed = (uint64_t)(run * 2 + w) * t->seed_mul + t->seed_add;
            gp.stop_at_eot = false;
            pf_api_use_strategy(t->s, w ? t->strategy : NULL);
            gp.json_schema = t->json_schema;
            seq_until until = {.seq = {.n = 0}, .want = t->n_pos + 1};
            const test_seq *gotp = &until.seq;
            if (pf_generate_tokens(t->s, t->prompt, t->n_prompt, &gp, push_until, &until, NULL, err) != PF_OK ||
                gotp->n < t->n_pos + 1) {
                if (gotp->n < t->n_pos + 1) snprintf(err, PF_ERR_LEN, "run %d: %d tokens, fewer than %d", run, gotp->n, t->n_pos + 1);
                free(cnt);
                return NULL;
            }
            for (int p = 0; p < t->n_pos; p++) cnt[((size_t)w * t->n_pos + p) * t->n_vocab + gotp->toks[p + 1]]++;
            if (w && t->after) t->after(t->u);
        }
    return cnt;
}

/* ---- float64 reference pieces ---- */

void ref_matvec_d(const double *W, int rows, int cols, const double *x, double *y) {
    for (int o = 0; o < rows; o++) {
        double s = 0;
        for (int i = 0; i < cols; i++) s += W[(size_t)o * cols + i] * x[i];
        y[o] = s;
    }
}

void ref_rmsnorm(const double *x, const double *w, int n, double eps, double *out) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double sc = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) out[i] = x[i] * sc * w[i];
}

void ref_rope(double *x, int nh, int hd, int64_t pos, double theta) {
    for (int h = 0; h < nh; h++)
        for (int i = 0; i < hd / 2; i++) {
            double a = (double)pos * pow(theta, -2.0 * i / hd), c = cos(a), s = sin(a);
            double *p = x + h * hd, x0 = p[i], x1 = p[i + hd / 2];
            p[i] = x0 * c - x1 * s;
            p[i + hd / 2] = x0 * s + x1 * c;
        }
}

double ref_f16(double x) { return pf_fp16_to_fp32(pf_fp32_to_fp16((float)x)); }

int test_pair_open(test_pair *p) {
    char err[PF_ERR_LEN];
    pf_session_params sp = {.n_threads = 2, .n_ctx = 1024};
    memset(p, 0, sizeof *p);
    p->m = pf_model_load("models/pf-target-f16.gguf", err);
    if (p->m) pf_session_new(p->m, &sp, &p->s, err);
    if (p->s) pf_load_draft(p->m, "models/pf-draft-dflash2.gguf", &p->draft, err);
    if (!p->draft) fprintf(stderr, "%s\n", err);
    return p->draft ? 0 : -1;
}

void test_pair_close(test_pair *p) {
    pf_session_free(p->s);
    pf_free_draft(p->draft);
    pf_model_free(p->m);
}

pf_status test_pair_generate(test_pair *p, pf_strategy *strat, const char *prompt, const pf_gen_params *gp,
                             test_seq *seq, pf_gen_stats *st, char err[PF_ERR_LEN]) {
    pf_api_use_strategy(p->s, strat);
    pf_session_reset(p->s);
    seq->n = 0;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (pf_tokenize(p->m->tok, prompt, strlen(prompt), true, &ids, &n_ids, err) != PF_RC_OK) return PF_ERR_ARG;
    pf_status rc = pf_generate_tokens(p->s, ids, (int)n_ids, gp, test_seq_push, seq, st, err);
    free(ids);
    return rc;
}

size_t test_seq_text(const pf_model *m, const test_seq *seq, char *text, size_t cap) {
    size_t n = 0;
    for (int i = 0; i < seq->n; i++) {
        size_t len = 0;
        const char *b = pf_token_bytes(m->tok, seq->toks[i], &len);
        if (!b || n + len >= cap) return (size_t)-1;
        memcpy(text + n, b, len);
        n += len;
    }
    return n;
}

const pf_kind test_spec_kinds[TEST_N_SPEC_KINDS] = {PF_KIND_DFLASH, PF_KIND_DEC, PF_KIND_ADAPTIVE, PF_KIND_NGRAM,
                                                    PF_KIND_HYBRID};
