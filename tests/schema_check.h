/* Test helpers for structured output: random schemas of the subset and a small vocabulary of byte
 * strings for the matcher and mask tests (the validator is eval/schema_valid.h). */
#ifndef PF_TEST_SCHEMA_CHECK_H
#define PF_TEST_SCHEMA_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/schema_valid.h"
#include "grammar/close_budget.h"
#include "grammar/matcher.h"
#include "grammar/schema.h"
#include "grammar/token_mask.h"

/* A random schema of the subset (malloc'd text), from the state *seed. */
char *schema_random(uint64_t *seed, int depth);
uint64_t schema_rand(uint64_t *seed);

/* The test vocabulary: every single byte, then multi-byte pieces (JSON punctuation runs, words,
 * split UTF-8), then one end token without bytes. */
typedef struct {
    int n;
    const uint8_t **bytes;
    uint32_t *lens;
    int32_t end;
} schema_vocab;
void schema_vocab_make(schema_vocab *v);
void schema_vocab_free(schema_vocab *v);
/* The id of the token spelled s (NUL-terminated), -1 when absent. */
int32_t schema_vocab_find(const schema_vocab *v, const char *s);

/* A schema compiled over the test vocabulary with its masker, matcher, mask cache and, when asked
 * for, its closing tables (cl); bits has room for one mask. */
typedef struct {
    schema_vocab v;
    pf_token_masker *tm;
    pf_schema *s;
    pf_matcher *m;
    pf_close *cl;
    pf_mask_cache *cache;
    uint32_t bits[64];
} schema_fx;
/* schema (NULL: JSON mode), with the closing tables when close: 0, or -1 (a schema that does not
 * compile says why on stderr). schema_fx_close it either way. */
int schema_fx_open(schema_fx *f, bool close, const char *schema);
void schema_fx_close(schema_fx *f);

/* Compiled random schemas one after another: n drawn by draw from *seed (one stream for the
 * schemas and what the caller draws between them), each compiled over the test vocabulary (with
 * the closing tables when close); one that does not compile is passed over. */
typedef struct {
    schema_fx f;    /* the current schema, compiled */
    char *schema;   /* its text */
    int k;          /* its draw, 0 .. n-1 */
    int compiled;   /* how many have compiled, the current one counted */
    uint64_t *seed;
    int n;
    bool close;
    char *(*draw)(uint64_t *seed, int depth);
} schema_draws;
void schema_draws_start(schema_draws *d, uint64_t *seed, int n, bool close, char *(*draw)(uint64_t *seed, int depth));
/* Closes the current schema and moves to the next that compiles: true, or false after the n-th
 * draw (nothing is left open then). */
bool schema_draws_next(schema_draws *d);
/* Closes the current schema, for a loop that leaves before schema_draws_next returns false. */
void schema_draws_stop(schema_draws *d);

/* A test check: schema does not compile, with a one-line error that contains needle. */
void schema_expect_error(const char *schema, const char *needle);

/* An object schema of n integer properties "p0".."p{n-1}" (sorted as texts: "p70" is the 69th,
 * "p99" the last of 100), `more` inside its braces after them (malloc'd text). */
char *schema_wide_object(int n, const char *more);

/* 40 random walks through the masks per schema (each mask checked against the scan of the
 * vocabulary), the documents completed checked by Python's jsonschema (the draft its $schema names,
 * 2020-12 otherwise; with its format checker; numbers read as decimals); at least min_complete
 * complete. name names the temporary files. A test check; skipped without python3-jsonschema. */
void schema_walks_validate(const char *const *schemas, int n, const char *name, int min_complete);

#endif
