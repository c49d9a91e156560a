/* Small helpers for the subcommands' flag parsing: every failure prints one line
 * "pocketflash CMD: ..." on stderr and the command exits with status 1. */
#ifndef PF_CLI_ARGS_H
#define PF_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "api/status.h" /* pf_api_status: an eval or engine code as the status it is */
#include "formats/atomic_file.h"
#include "include/pocketflash.h"

/* Print "pocketflash: <msg>" (one line) to stderr; returns 1 for `return cli_fail(...)`. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The exit status of a library failure (docs/cli.md#exit-status): 1 bad input (a flag, an
 * argument, a prompt over the context or not UTF-8), 2 a file that cannot be read, 3 a bad file,
 * 4 out of memory, 5 an internal error, 130 cancelled; 0 for PF_OK. */
int cli_exit_status(pf_status st);
/* cli_fail("%s", msg) with st's exit status. */
int cli_fail_status(pf_status st, const char *msg);
/* cli_fail(fmt, ...) with st's exit status: what every command that loads a model or generates
 * returns for a library failure (`return cli_fail_kind(st, "bench: %s", err)`). */
int cli_fail_kind(pf_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Value of flag argv[*i] (advances *i); NULL (after printing an error) if missing. */
const char *cli_value(int argc, char **argv, int *i);
bool cli_int(const char *flag, const char *s, long long lo, long long hi, long long *out);
bool cli_float(const char *flag, const char *s, double lo, double hi, double *out);
/* --draft-head N|full: *out = N (1..65536) or -1 for "full" (the whole vocabulary). */
bool cli_draft_head(const char *flag, const char *s, int *out);
/* --kv f16|q8: *q8 = 0 or 1. */
bool cli_kv(const char *flag, const char *s, int *q8);
/* on|off: *out = 1 or -1 (pf_load_params' toggles). */
bool cli_on_off(const char *flag, const char *s, int *out);
/* --kernels LEVEL: a kernel level this build has (pf_level_name's names). */
bool cli_kernels(const char *flag, const char *s, const char **out);
/* The flag name a command knows for FLAG: llama.cpp's one-to-one spellings (--model, -md,
 * --n-predict, --ctx-size, --threads, -s, --draft, ...) map to ours, anything else is returned as is. */
const char *cli_alias(const char *flag);
/* --block B: rows verified per round (pf_block_check's range). */
bool cli_block(const char *flag, const char *s, int *block);
/* --draft-max N (llama.cpp: tokens drafted per round): *block = N + 1 rows verified. */
bool cli_draft_max(const char *flag, const char *s, int *block);
/* Read a whole file into *text (NUL-terminated, *len bytes before the NUL): 0, or after a one-line
 * error naming path the exit status of its kind (2 it cannot be opened or read, 4 out of memory). */
int cli_read_file(const char *path, char **text, size_t *len);
/* An output written whole or not at all (formats/atomic_file.h): cli_create opens the temporary
 * beside path (write through af->fp), cli_finish flushes, closes and renames it over path (on
 * failure the temporary is removed). 0, or after a one-line error naming path and the reason the
 * exit status of its kind (2 it cannot be created or written, 4 out of memory). */
int cli_create(const char *path, atomic_file *af);
int cli_finish(atomic_file *af, const char *path);
/* cli_create's check alone, for an output written after a long measurement: the temporary is
 * created and removed again, so an output that cannot be written fails before the run, not after
 * it, and nothing is left behind if the run is stopped. 0, or cli_create's exit status. */
int cli_can_create(const char *path);

/* One command's flags as a table: each entry names a flag and where its value goes (the union
 * member is the destination's type, so the compiler checks it), and cli_parse walks argv once.
 * Integer kinds take [lo, hi]; float kinds [flo, fhi]. */
typedef enum {
    CLI_ARG_STR,        /* const char *            */
    CLI_ARG_INT,        /* int, in lo..hi          */
    CLI_ARG_LL,         /* long long, in lo..hi    */
    CLI_ARG_I64,        /* int64_t, in lo..hi      */
    CLI_ARG_U64,        /* uint64_t, in lo..hi     */
    CLI_ARG_SIZE,       /* size_t, in lo..hi       */
    CLI_ARG_FLOAT,      /* float, in flo..fhi      */
    CLI_ARG_DOUBLE,     /* double, in flo..fhi     */
    CLI_ARG_ON,         /* bool set true, no value */
    CLI_ARG_OFF,        /* bool set false, no value */
    CLI_ARG_ON_INT,     /* int set 1, no value     */
    CLI_ARG_BLOCK,      /* int: cli_block          */
    CLI_ARG_DRAFT_MAX,  /* int: cli_draft_max      */
    CLI_ARG_DRAFT_HEAD, /* int: cli_draft_head     */
    CLI_ARG_KV,         /* int: cli_kv             */
    CLI_ARG_ON_OFF,     /* int: cli_on_off         */
    CLI_ARG_KERNELS,    /* const char *: cli_kernels */
    CLI_ARG_POS,        /* const char *[hi]: the arguments that are not flags, in order */
    CLI_ARG_LIST,       /* const char *[hi]: a flag given up to hi times, its values in order */
} cli_arg_kind;

typedef struct {
    const char *flag; /* NULL ends the table */
    cli_arg_kind kind;
    union {
        const char **s;
        int *i;
        long long *ll;
        int64_t *i64;
        uint64_t *u64;
        size_t *z;
        float *f;
        double *d;
        bool *b;
    } to;
    long long lo, hi;
    double flo, fhi;
} cli_arg;

#define CLI_STR(flag, p) {(flag), CLI_ARG_STR, {.s = (p)}, 0, 0, 0, 0}
#define CLI_INT(flag, p, lo, hi) {(flag), CLI_ARG_INT, {.i = (p)}, (lo), (hi), 0, 0}
#define CLI_LL(flag, p, lo, hi) {(flag), CLI_ARG_LL, {.ll = (p)}, (lo), (hi), 0, 0}
#define CLI_I64(flag, p, lo, hi) {(flag), CLI_ARG_I64, {.i64 = (p)}, (lo), (hi), 0, 0}
#define CLI_U64(flag, p, lo, hi) {(flag), CLI_ARG_U64, {.u64 = (p)}, (lo), (hi), 0, 0}
#define CLI_SIZE(flag, p, lo, hi) {(flag), CLI_ARG_SIZE, {.z = (p)}, (lo), (hi), 0, 0}
#define CLI_FLOAT(flag, p, lo, hi) {(flag), CLI_ARG_FLOAT, {.f = (p)}, 0, 0, (lo), (hi)}
#define CLI_DOUBLE(flag, p, lo, hi) {(flag), CLI_ARG_DOUBLE, {.d = (p)}, 0, 0, (lo), (hi)}
#define CLI_ON(flag, p) {(flag), CLI_ARG_ON, {.b = (p)}, 0, 0, 0, 0}
#define CLI_OFF(flag, p) {(flag), CLI_ARG_OFF, {.b = (p)}, 0, 0, 0, 0}
#define CLI_ON_INT(flag, p) {(flag), CLI_ARG_ON_INT, {.i = (p)}, 0, 0, 0, 0}
#define CLI_BLOCK(flag, p) {(flag), CLI_ARG_BLOCK, {.i = (p)}, 0, 0, 0, 0}
#define CLI_DRAFT_MAX(flag, p) {(flag), CLI_ARG_DRAFT_MAX, {.i = (p)}, 0, 0, 0, 0}
#define CLI_DRAFT_HEAD(flag, p) {(flag), CLI_ARG_DRAFT_HEAD, {.i = (p)}, 0, 0, 0, 0}
#define CLI_KV(flag, p) {(flag), CLI_ARG_KV, {.i = (p)}, 0, 0, 0, 0}
#define CLI_ON_OFF(flag, p) {(flag), CLI_ARG_ON_OFF, {.i = (p)}, 0, 0, 0, 0}
#define CLI_KERNELS(flag, p) {(flag), CLI_ARG_KERNELS, {.s = (p)}, 0, 0, 0, 0}
/* The flags of every command that loads a model, into a pf_load_params *lp (docs/cli.md#loading):
 * --kernels LEVEL, --repack on|off, --hugepages on|off. */
#define CLI_LOAD_USAGE                                                                                   \
    "  --kernels LEVEL  the most capable kernel level to use (scalar, avx2, avxvnni, avx512; ARM64:\n"  \
    "                 neon, dotprod, i8mm), at most what the CPU has (default: PF_KERNELS, else the best)\n" \
    "  --repack on|off  packed copies of the quantized matrices for the kernels that read them\n"          \
    "                 (default on; PF_REPACK=0: off)\n"                                                  \
    "  --hugepages on|off  the packed copies in transparent huge pages (default on; PF_HUGEPAGES=0: off)\n"
#define CLI_LOAD(lp) CLI_KERNELS("--kernels", &(lp)->kernels), CLI_ON_OFF("--repack", &(lp)->repack), \
                     CLI_ON_OFF("--hugepages", &(lp)->hugepages)
/* Positional arguments into arr[0..max) (NULL-initialised by the caller); one more is an error. */
#define CLI_POS(arr, max) {"", CLI_ARG_POS, {.s = (arr)}, 0, (max), 0, 0}
/* A repeatable flag's values into arr[0..max) (NULL-initialised by the caller). */
#define CLI_LIST(flag, arr, max) {(flag), CLI_ARG_LIST, {.s = (arr)}, 0, (max), 0, 0}
#define CLI_END {NULL, CLI_ARG_STR, {.s = NULL}, 0, 0, 0, 0}

enum { CLI_PARSE_ALIASES = 1 }; /* flags: llama.cpp's spellings through cli_alias */
/* Parse argv[1..] by the table. 0: done; 1: a one-line error naming cmd was printed (exit status 1);
 * -1: -h / --help was given (the caller prints its usage and exits 0). An argument that does not
 * start with '-' (or is "-" alone) is positional: an error ("unexpected argument", or "too many
 * arguments" past a CLI_POS's room) unless the table has a CLI_POS with room. */
int cli_parse(const char *cmd, int argc, char **argv, const cli_arg *args, unsigned flags);

#endif
