/* Small helpers for the subcommands' flag parsing: every failure prints one line
 * "pocketflash CMD: ..." on stderr and the command exits with status 1. */
#ifndef PF_CLI_ARGS_H
#define PF_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "formats/atomic_file.h"

/* Print "pocketflash: <msg>" (one line) to stderr; returns 1 for `return cli_fail(...)`. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Value of flag argv[*i] (advances *i); NULL (after printing an error) if missing. */
const char *cli_value(int argc, char **argv, int *i);
bool cli_int(const char *flag, const char *s, long long lo, long long hi, long long *out);
bool cli_float(const char *flag, const char *s, double lo, double hi, double *out);
/* --draft-head N|full: *out = N (1..65536) or -1 for "full" (the whole vocabulary). */
bool cli_draft_head(const char *flag, const char *s, int *out);
/* --kv f16|q8: *q8 = 0 or 1. */
bool cli_kv(const char *flag, const char *s, int *q8);
/* The flag name a command knows for FLAG: llama.cpp's one-to-one spellings (--model, -md,
 * --n-predict, --ctx-size, --threads, -s, --draft, ...) map to ours, anything else is returned as is. */
const char *cli_alias(const char *flag);
/* --block B: rows verified per round (pf_block_check's range). */
bool cli_block(const char *flag, const char *s, int *block);
/* --draft-max N (llama.cpp: tokens drafted per round): *block = N + 1 rows verified. */
bool cli_draft_max(const char *flag, const char *s, int *block);
/* Read a whole file; NULL (after printing an error) on failure. */
char *cli_read_file(const char *path, size_t *len);
/* flag is one of names (NULL-terminated). */
bool cli_known(const char *flag, const char *const *names);
/* An output written whole or not at all (formats/atomic_file.h): cli_create opens the temporary
 * beside path, cli_finish flushes, closes and renames it over path (on failure the temporary is
 * removed). NULL / 1 after a one-line error naming path and the reason. */
FILE *cli_create(const char *path, atomic_file *af);
int cli_finish(atomic_file *af, const char *path);

#endif
