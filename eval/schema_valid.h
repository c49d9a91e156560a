/* A JSON Schema validator of the structured-output subset (docs/structured-output.md), written from
 * the keywords' meaning and independent of the compiler in grammar/: bench checks every document
 * generated under a schema with it, and the tests check the compiler's documents. */
#ifndef PF_SCHEMA_VALID_H
#define PF_SCHEMA_VALID_H

#include <stddef.h>

#include "formats/json.h"

/* v is valid against schema (both parsed JSON, the schema within the subset; a $ref names a JSON
 * pointer into schema). */
int pf_schema_valid(const pf_json *schema, const pf_json *v);
/* text[0..n) parses as JSON and is valid against the schema text (NUL-terminated). */
int pf_schema_valid_text(const char *schema, const char *text, size_t n);

#endif
