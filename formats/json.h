/* Strict, bounded JSON (RFC 8259) parser into a read-only tree, enough for tokenizer.json and
 * tokenizer_config.json. Rejects anything RFC 8259 rejects (trailing commas, comments, leading
 * zeros, control characters or invalid UTF-8 in strings, lone surrogate escapes, trailing data),
 * limits nesting to PF_JSON_MAX_DEPTH, and reports the first problem as "byte N: what". Never reads
 * outside the buffer it is given, which need not be NUL-terminated. */
#ifndef PF_JSON_H
#define PF_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/errf.h" /* PF_ERR_LEN */
#include "formats/status.h"

#define PF_JSON_MAX_DEPTH 128

typedef enum {
    PF_JSON_NULL,
    PF_JSON_BOOL,
    PF_JSON_NUMBER,
    PF_JSON_STRING,
    PF_JSON_ARRAY,
    PF_JSON_OBJECT,
} pf_json_type;

typedef struct pf_json pf_json;
typedef struct pf_json_member pf_json_member;

struct pf_json {
    pf_json_type type;
    size_t offset; /* byte offset of the value in the input, for messages */
    union {
        bool b; /* BOOL */
        struct {
            double d;
            int64_t i;   /* valid when is_int */
            bool is_int; /* written without fraction or exponent and fits int64 */
        } num;
        struct {
            const char *s; /* decoded UTF-8, NUL-terminated (may also contain \u0000) */
            size_t len;
        } str;
        struct {
            pf_json *items;
            size_t n;
        } arr;
        struct {
            pf_json_member *members; /* in document order; duplicate keys are kept */
            size_t n;
        } obj;
    } u;
};

struct pf_json_member {
    const char *key; /* decoded, NUL-terminated */
    size_t key_len;
    pf_json val;
};

typedef struct pf_json_doc pf_json_doc;

/* Parses buf into *doc: PF_RC_OK, PF_RC_FORMAT (malformed) or PF_RC_OOM, with err. */
pf_rc pf_json_read(const char *buf, size_t len, pf_json_doc **doc, char err[PF_ERR_LEN]);
/* pf_json_read for callers that need no kind: the document, or NULL with err. */
pf_json_doc *pf_json_parse(const char *buf, size_t len, char err[PF_ERR_LEN]);
/* Reads and parses a file into *doc; messages are prefixed with the path. PF_RC_OK, PF_RC_IO (it
 * cannot be opened or read), PF_RC_FORMAT (malformed, truncated, over 2 GiB) or PF_RC_OOM. */
pf_rc pf_json_load(const char *path, pf_json_doc **doc, char err[PF_ERR_LEN]);
/* pf_json_load for callers that need no kind: the document, or NULL with err. */
pf_json_doc *pf_json_parse_file(const char *path, char err[PF_ERR_LEN]);
const pf_json *pf_json_root(const pf_json_doc *d);
void pf_json_free(pf_json_doc *d);

/* First member named key (exact bytes) of an object; NULL if v is not an object or lacks it. */
const pf_json *pf_json_get(const pf_json *v, const char *key);
/* v is a string equal to s. */
bool pf_json_str_eq(const pf_json *v, const char *s);
const char *pf_json_type_name(pf_json_type t);

#endif
