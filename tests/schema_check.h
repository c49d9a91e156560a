/* Test helpers for structured output: random schemas of the subset and a small vocabulary of byte
 * strings for the matcher and mask tests (the validator is eval/schema_valid.h). */
#ifndef PF_TEST_SCHEMA_CHECK_H
#define PF_TEST_SCHEMA_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "eval/schema_valid.h"

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
