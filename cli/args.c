#include "cli/args.h"

#include "draft/block.h"
#include "kernels/cpu.h"
#include "verify/kind.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one-line error every command prints. */
static void print_error(const char *fmt, va_list ap) {
    fputs("pocketflash: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int cli_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    print_error(fmt, ap);
    va_end(ap);
    return 1;
}

int cli_exit_status(pf_status st) {
    switch (st) {
    case PF_OK: return 0;
    case PF_ERR_IO: return 2;
    case PF_ERR_FORMAT: return 3;
    case PF_ERR_OOM: return 4;
    case PF_ERR_INTERNAL: return 5;
    case PF_ERR_CANCELLED: return 130; /* the shell's status of a command stopped by SIGINT */
    default: return 1;                 /* bad input: an argument, the context, UTF-8 */
    }
}

int cli_fail_status(pf_status st, const char *msg) { return cli_fail_kind(st, "%s", msg); }

int cli_fail_kind(pf_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    print_error(fmt, ap);
    va_end(ap);
    return cli_exit_status(st);
}

const char *cli_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        cli_fail("flag %s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

bool cli_int(const char *flag, const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        cli_fail("%s: '%s' is not an integer in %lld..%lld", flag, s, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

bool cli_float(const char *flag, const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
        cli_fail("%s: '%s' is not a number in %g..%g", flag, s, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

int cli_read_file(const char *path, char **text, size_t *len) {
    *text = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return cli_fail_kind(PF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap) break;
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf) return cli_fail_kind(PF_ERR_OOM, "%s: out of memory", path);
    if (bad) {
        free(buf);
        return cli_fail_kind(PF_ERR_IO, "%s: read failed", path);
    }
    buf[n] = 0;
    *len = n;
    *text = buf;
    return 0;
}

bool cli_draft_head(const char *flag, const char *s, int *out) {
    if (!strcmp(s, "full")) {
        *out = -1;
        return true;
    }
    long long v;
    if (!cli_int(flag, s, 1, 1 << 24, &v)) return false;
    *out = (int)v;
    return true;
}

/* Which of the two words s is: 0, 1, or -1 for neither. */
static int word_of_two(const char *s, const char *w0, const char *w1) {
    return !strcmp(s, w0) ? 0 : !strcmp(s, w1) ? 1 : -1;
}

bool cli_on_off(const char *flag, const char *s, int *out) {
    int w = word_of_two(s, "on", "off");
    if (w >= 0) *out = w == 0 ? 1 : -1;
    else cli_fail("%s: '%s' is not on or off", flag, s);
    return w >= 0;
}

bool cli_kernels(const char *flag, const char *s, const char **out) {
    if (pf_level_parse(s) >= 0) {
        *out = s;
        return true;
    }
    char names[64];
    pf_level_names(names, sizeof names);
    cli_fail("%s: '%s' is not one of this build's kernel levels (%s)", flag, s, names);
    return false;
}

bool cli_kv(const char *flag, const char *s, int *q8) {
    int w = word_of_two(s, "f16", "q8");
    if (w >= 0) *q8 = w;
    else cli_fail("%s: unknown KV cache type '%s' (f16 or q8)", flag, s);
    return w >= 0;
}

const char *cli_alias(const char *flag) {
    /* llama.cpp's spellings (common/arg.cpp) that mean exactly one of ours */
    static const char *const map[][2] = {
        {"--model", "-m"},        {"--prompt", "-p"},        {"--file", "-f"},
        {"--predict", "-n"},      {"--n-predict", "-n"},     {"--ctx-size", "-c"},
        {"--threads", "-t"},      {"-s", "--seed"},          {"-md", "-d"},
        {"--model-draft", "-d"},  {"--draft", "--draft-max"}, {"--draft-n", "--draft-max"},
        {"-sys", "--system"},     {"--system-prompt", "--system"}, {"-np", "--parallel"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(flag, map[i][0])) return map[i][1];
    return flag;
}

/* s as an integer, then (plus add) as a block: pf_block_check is the one range check. */
static bool block_value(const char *flag, const char *s, int add, int *block, char err[PF_ERR_LEN]) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) {
        cli_fail("%s: '%s' is not an integer", flag, s);
        return false;
    }
    long long b = v < LLONG_MAX ? v + add : v;
    if (pf_block_check(flag, b, err) < 0) return false;
    *block = (int)b;
    return true;
}

bool cli_block(const char *flag, const char *s, int *block) {
    char err[PF_ERR_LEN] = "";
    if (block_value(flag, s, 0, block, err)) return true;
    if (*err) cli_fail("%s", err);
    return false;
}

bool cli_draft_max(const char *flag, const char *s, int *block) {
    char err[PF_ERR_LEN] = "";
    /* N drafted tokens are verified with the bonus row: B = N + 1; the message speaks of N */
    if (block_value(flag, s, 1, block, err)) return true;
    if (*err) cli_fail("%s: '%s' is not an integer in 1..%d", flag, s, PF_MAX_BLOCK - 1);
    return false;
}

/* errno of a failed create or write as its kind: memory, else the file. */
static pf_status errno_status(int e) { return e == ENOMEM ? PF_ERR_OOM : PF_ERR_IO; }

int cli_create(const char *path, atomic_file *af) {
    if (atomic_file_open(af, path, "wb")) return 0;
    return cli_fail_kind(errno_status(af->err), "%s: cannot create: %s", path, strerror(af->err));
}

int cli_finish(atomic_file *af, const char *path) {
    if (atomic_file_commit(af, path, 0) == 0) return 0;
    int e = errno;
    return cli_fail_kind(errno_status(e), "%s: write failed: %s", path, strerror(e));
}

int cli_can_create(const char *path) {
    atomic_file af;
    int rc = cli_create(path, &af);
    atomic_file_abort(&af);
    return rc;
}

/* v into the first free slot of a NULL-initialised array of e->hi; false when it is full. */
static bool append(const cli_arg *e, const char *v) {
    for (long long k = 0; k < e->hi; k++)
        if (!e->to.s[k]) {
            e->to.s[k] = v;
            return true;
        }
    return false;
}

/* One value for entry e; argv_flag is the spelling the user gave (for --draft-max's message). */
static bool take_value(const cli_arg *e, const char *flag, const char *argv_flag, const char *v) {
    long long iv;
    double fv;
    switch (e->kind) {
    case CLI_ARG_STR: *e->to.s = v; return true;
    case CLI_ARG_LIST:
        if (append(e, v)) return true;
        cli_fail("%s: at most %lld times", flag, e->hi);
        return false;
    case CLI_ARG_BLOCK: return cli_block(flag, v, e->to.i);
    case CLI_ARG_DRAFT_MAX: return cli_draft_max(argv_flag, v, e->to.i);
    case CLI_ARG_DRAFT_HEAD: return cli_draft_head(flag, v, e->to.i);
    case CLI_ARG_KV: return cli_kv(flag, v, e->to.i);
    case CLI_ARG_ON_OFF: return cli_on_off(flag, v, e->to.i);
    case CLI_ARG_KERNELS: return cli_kernels(flag, v, e->to.s);
    case CLI_ARG_FLOAT:
    case CLI_ARG_DOUBLE:
        if (!cli_float(flag, v, e->flo, e->fhi, &fv)) return false;
        if (e->kind == CLI_ARG_FLOAT) *e->to.f = (float)fv;
        else *e->to.d = fv;
        return true;
    default:
        if (!cli_int(flag, v, e->lo, e->hi, &iv)) return false;
        if (e->kind == CLI_ARG_INT) *e->to.i = (int)iv;
        else if (e->kind == CLI_ARG_LL) *e->to.ll = iv;
        else if (e->kind == CLI_ARG_I64) *e->to.i64 = (int64_t)iv;
        else if (e->kind == CLI_ARG_U64) *e->to.u64 = (uint64_t)iv;
        else *e->to.z = (size_t)iv;
        return true;
    }
}

int cli_parse(const char *cmd, int argc, char **argv, const cli_arg *args, unsigned flags) {
    for (int i = 1; i < argc; i++) {
        const char *a = flags & CLI_PARSE_ALIASES ? cli_alias(argv[i]) : argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return -1;
        const cli_arg *e = args;
        if (a[0] != '-' || !a[1]) {
            while (e->flag && e->kind != CLI_ARG_POS) e++;
            if (!e->flag) return cli_fail("%s: unexpected argument '%s' (try --help)", cmd, argv[i]);
            if (!append(e, argv[i])) return cli_fail("%s: too many arguments ('%s'; at most %lld)", cmd, argv[i], e->hi);
            continue;
        }
        while (e->flag && (e->kind == CLI_ARG_POS || strcmp(e->flag, a))) e++;
        if (!e->flag) return cli_fail("%s: unknown flag '%s' (try --help)", cmd, argv[i]);
        if (e->kind == CLI_ARG_ON || e->kind == CLI_ARG_OFF) {
            *e->to.b = e->kind == CLI_ARG_ON;
            continue;
        }
        if (e->kind == CLI_ARG_ON_INT) {
            *e->to.i = 1;
            continue;
        }
        const char *v = cli_value(argc, argv, &i);
        if (!v || !take_value(e, a, argv[i - 1], v)) return 1;
    }
    return 0;
}
