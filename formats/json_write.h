/* Writing parsed JSON values (formats/json.h) back as text: compact, spaced as Python's json.dumps
 * spaces it, or in a caller's style. */
#ifndef PF_JSON_WRITE_H
#define PF_JSON_WRITE_H

#include <stdbool.h>
#include <stddef.h>

#include "formats/grow.h"
#include "formats/json.h"

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

#endif
