/* Building the sorted literal sets of a compiled schema (grammar/schema.h) and spelling JSON
 * values in their compact form (the form the matcher accepts for enum and const). */
#ifndef PF_LIT_SET_H
#define PF_LIT_SET_H

#include "formats/grow.h"
#include "formats/json.h"
#include "grammar/schema.h"

/* How pf_json_write spells a value: the separators, the numbers (NULL: as written in src) and
 * whether an object's repeated key keeps its first place and its last value (a Python dict). */
typedef struct {
    const char *comma, *colon;
    void (*number)(pf_sbuf *b, const pf_json *v, const char *src, size_t src_len);
    bool dict_keys;
} pf_json_style;
/* v (parsed from src[0..src_len)) in that style, strings escaped minimally. */
void pf_json_write(pf_sbuf *b, const pf_json *v, const char *src, size_t src_len, const pf_json_style *st);
/* v in compact JSON: strings escaped minimally, numbers as written in src (the schema text). */
void pf_json_compact(pf_sbuf *b, const pf_json *v, const char *src, size_t src_len);
/* The same with a space after each ',' and ':' (Python's json.dumps, the chat templates' tojson). */
void pf_json_spaced(pf_sbuf *b, const pf_json *v, const char *src, size_t src_len);
/* A JSON string literal of s[0..n) (quotes included). */
void pf_json_quote(pf_sbuf *b, const char *s, size_t n);

/* Take the n strings (malloc'd, owned from now on) and sort them, dropping duplicates; -1 when out
 * of memory (the strings are freed). */
int pf_lit_set_take(pf_lit_set *set, char **s, uint32_t *len, int n);
void pf_lit_set_free(pf_lit_set *set);

#endif
