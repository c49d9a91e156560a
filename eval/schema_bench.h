/* MaskBench's protocol (the JSONSchemaBench paper's mask benchmark) over the engine's token masks:
 * each schema file {"schema": ..., "tests": [{"valid": ..., "data": ...}]} is compiled, each test's
 * data serialized as Python's json.dumps(data, ensure_ascii=False) writes it (", " and ": ", keys in
 * file order, non-ASCII as UTF-8), tokenized with the model's tokenizer (no special tokens) and walked
 * token by token through the masks: a valid instance must have every token allowed and an end token
 * allowed after the last; an invalid one must be refused at some token or not allowed to end. */
#ifndef PF_SCHEMA_BENCH_H
#define PF_SCHEMA_BENCH_H

#include <stddef.h>

#include "engine/tokenizer.h"
#include "formats/grow.h"
#include "formats/json.h"
#include "grammar/token_mask.h"

/* What a schema came to: a schema counts once, under the first of these that applies. */
typedef enum {
    PF_SB_PASS = 0,
    PF_SB_COMPILE_ERROR,      /* the engine refused the schema (or the file does not parse) */
    PF_SB_INVALIDATION_ERROR, /* an invalid instance accepted: under-constraining, a plain bug */
    PF_SB_VALIDATION_ERROR,   /* a valid instance refused: over-constraining */
} pf_sb_outcome;

/* Percentiles reported (MaskBench's columns). */
#define PF_SB_N_PCT 7
extern const double pf_sb_pct[PF_SB_N_PCT]; /* 25, 50, 75, 90, 95, 99, 99.9 */

/* A reason and how many schemas it failed. */
typedef struct {
    char *why;
    int n;
} pf_sb_reason;

typedef struct {
    char *file, *why;
    pf_sb_outcome outcome;
} pf_sb_failure;

/* One of the slowest masks: where it was taken (the text before it, its last bytes in ctx). */
typedef struct {
    float us;
    char file[96];
    int test;        /* the instance's index in the file's tests */
    size_t at;       /* bytes of the instance accepted before this mask */
    char ctx[48];    /* the instance's bytes just before that point */
} pf_sb_slow;

typedef struct {
    int schemas, passing, compile_error, validation_error, invalidation_error;
    int no_tests;                   /* compiled schemas without tests (passing, as MaskBench counts them) */
    long valid_tests, invalid_tests; /* instances walked */
    long valid_refused, invalid_accepted;
    long tokens;
    float *tbm_us, *ttfm_us; /* samples: every mask after a token; compile + first mask per schema */
    size_t n_tbm, cap_tbm, n_ttfm, cap_ttfm;
    pf_sb_reason *compile_why, *validation_why, *invalidation_why; /* by keyword (or feature) */
    int n_compile_why, n_validation_why, n_invalidation_why;
    pf_sb_failure *failures;
    size_t n_failures, cap_failures;
    pf_sb_slow *slow; /* the n_slow slowest masks after a token, slowest first (want_slow asked) */
    int n_slow, want_slow;
    long long max_tokens; /* > 0 (set before): every mask within that token budget, as generation
                           * takes it (pf_token_mask_budget, the budget counting down per token) */
    int oom;
} pf_sb_result;

/* Python's json.dumps(v, ensure_ascii=False) of v parsed from src[0..src_len) (numbers are
 * re-read there: an integer as written, a float as repr() writes it). */
void pf_sb_py_dumps(pf_sbuf *b, const pf_json *v, const char *src, size_t src_len);

/* The *.json files of dir sorted by name into *paths (*n of them, malloc'd); sample > 0 keeps a
 * fixed-seed sample of that many (the same files for the same seed). PF_RC_OK, or with err
 * PF_RC_IO (the folder cannot be read) / PF_RC_OOM. */
pf_rc pf_sb_list(const char *dir, int sample, unsigned long long seed, char ***paths, int *n, char err[PF_ERR_LEN]);
void pf_sb_list_free(char **paths, int n);

/* Run the protocol over the files with tm (the vocabulary masker of tok's vocabulary); with
 * r->want_slow > 0 (set before) the slowest that many masks are kept in r->slow. 0, or -1
 * when out of memory. A file that does not parse counts as a compile error. */
int pf_sb_run(const pf_tokenizer *tok, const pf_token_masker *tm, char *const *paths, int n, pf_sb_result *r);
/* Percentile p (0..100) of samples (sorted in place). */
double pf_sb_percentile(float *x, size_t n, double p);
void pf_sb_result_free(pf_sb_result *r);

#endif
