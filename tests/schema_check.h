/* Test helpers for structured output: a JSON Schema validator of the subset written from the
 * keywords' meaning (independent of the compiler in grammar/), random schemas of the subset, and a
 * small vocabulary of byte strings for the matcher and mask tests. */
#ifndef PF_TEST_SCHEMA_CHECK_H
#define PF_TEST_SCHEMA_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "formats/json.h"

/* v is valid against schema (both parsed JSON). */
int schema_valid(const pf_json *schema, const pf_json *v);
/* text[0..n) parses as JSON and is valid against the schema text. */
int schema_valid_text(const char *schema, const char *text, size_t n);
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

#endif
