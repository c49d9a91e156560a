/* Building the sorted literal sets of a compiled schema (grammar/schema.h); their texts are JSON
 * values in their compact form (formats/json_write.h: the form the matcher accepts for enum and
 * const). */
#ifndef PF_LIT_SET_H
#define PF_LIT_SET_H

#include "formats/grow.h"
#include "formats/json.h"
#include "formats/json_write.h"
#include "grammar/schema.h"

/* Take the n strings (malloc'd, owned from now on) and sort them, dropping duplicates; -1 when out
 * of memory (the strings are freed). */
int pf_lit_set_take(pf_lit_set *set, char **s, uint32_t *len, int n);
void pf_lit_set_free(pf_lit_set *set);

#endif
