/* The JSON Schema compiler's inside (grammar/schema.h is its outside): the compile context and
 * what the schema_*.c files share. Node results: an id >= 0, UNSAT (the schema admits no value)
 * or FAIL (the context's err says why). Not for use outside grammar/schema*.c. */
#ifndef PF_SCHEMA_CC_H
#define PF_SCHEMA_CC_H

#include <stddef.h>
#include <stdint.h>

#include "formats/json.h"
#include "grammar/schema.h"

enum { UNSAT = -2, FAIL = -1 };
enum { T_OBJ = 1, T_ARR = 2, T_STR = 4, T_NUM = 8, T_INT = 16, T_BOOL = 32, T_NULL = 64 };

/* A schema a $ref names: its node once compiled; while it is being compiled, a reference to it
 * (a recursion) gets a placeholder union filled with the node when it is done. */
typedef struct {
    const pf_json *target;
    int32_t node, placeholder;
    int done;
} ref_entry;

typedef struct {
    pf_schema *s;
    const char *src;
    size_t src_len;
    char *err;
    int oom; /* the failure was out of memory */
    const pf_json *root;
    ref_entry *refs;
    size_t n_refs, cap_refs;
    void **made;  /* what merged schemas are made of, freed when compiling ends */
    size_t n_made, cap_made;
    int n_merges;
    int ref_draft; /* -1 not looked for yet; 1: $schema names a draft that ignores $ref's siblings */
    char *src_own; /* src copied with numbers made while compiling appended (sc_count), or NULL */
    size_t src_cap;
} cctx;

/* The keywords compiled (schema_keywords.c); K_ names the ones looked up by place. */
extern const char *const sc_keywords[];
enum { K_TYPE = 0, K_ENUM = 7, K_CONST = 8, K_ANY_OF = 9, K_MINIMUM = 12 };

/* building blocks */
int32_t sc_fail(cctx *c, const char *path, const char *fmt, ...);
int32_t sc_fail_oom(cctx *c, const char *path);
int32_t sc_new_node(cctx *c, pf_schema_kind kind);
int32_t sc_literal_node(cctx *c, char **s, uint32_t *len, int n);
int32_t sc_words_node(cctx *c, const char *const *w, int n);
int32_t sc_union_node(cctx *c, const int32_t *alts_in, int n);
void *sc_scratch(cctx *c, size_t n);
int sc_read_count(cctx *c, const pf_json *v, const char *key, int64_t *out, const char *path);
const pf_json *sc_without(cctx *c, const pf_json *v, const char *key, const char *path);
/* The number n as a JSON value whose text is in src (numbers are read from it); NULL when out of memory. */
pf_json *sc_count(cctx *c, int64_t n);
/* x and y spell the same JSON text (numbers as written). */
int sc_same_text(cctx *c, const pf_json *x, const pf_json *y);
/* keywords and types */
int sc_keyword_index(const pf_json_member *m);
int sc_validation_keyword(const pf_json_member *m);
int sc_unsupported(const pf_json *v, const pf_json_member *m);
int sc_check_keywords(cctx *c, const pf_json *v, const char *path);
int sc_type_set(cctx *c, const pf_json *v, const char *path);
/* the driver: any schema to its node */
int32_t sc_compile(cctx *c, const pf_json *v, int depth, const char *path);
/* one file per kind of schema */
int32_t sc_compile_literals(cctx *c, const pf_json *v, const pf_json_member *cands, const char *path);
/* Value v meets schema s (grammar/schema_eval.c): 1, 0, or FAIL where it cannot be told exactly. */
int sc_eval(cctx *c, const pf_json *s, const pf_json *v, const char *path);
int32_t sc_compile_object(cctx *c, const pf_json *v, int depth, const char *path);
int32_t sc_compile_string(cctx *c, const pf_json *v, const char *path);
int32_t sc_compile_number(cctx *c, const pf_json *v, pf_schema_kind kind, const char *path);
int32_t sc_compile_array(cctx *c, const pf_json *v, int depth, const char *path);
/* uniqueItems: true on array node id (grammar/schema_unique.c): id, UNSAT or FAIL. */
int32_t sc_unique_items(cctx *c, int32_t id, const char *path);
int32_t sc_compile_any_of(cctx *c, const pf_json *v, const char *key, int depth, const char *path);
/* combinators and references */
const pf_json *sc_merge_schemas(cctx *c, const pf_json *a, const pf_json *b, int depth, const char *path);
const pf_json *sc_fold_all_of(cctx *c, const pf_json *v, int depth, const char *path);
const pf_json *sc_fold_not(cctx *c, const pf_json *v, int depth, const char *path);
/* v's `not` is over patterns alone (`{"pattern": P}`, or an anyOf of such: a string matching none
 * of them), which a string's automaton takes: 1 with the patterns in pats/lens (up to cap; *n counts
 * them all), else 0. */
int sc_not_patterns(const pf_json *v, const char **pats, size_t *lens, int *n, int cap);
/* v is a string schema whose `not` is over patterns alone: compiled as it stands, never folded. */
int sc_not_pattern_string(cctx *c, const pf_json *v);
/* v with the schema form of dependencies and dependentSchemas as allOf branches (v itself when it
 * has none); NULL after a failure. */
const pf_json *sc_fold_dependencies(cctx *c, const pf_json *v, const char *path);
/* {key: val}, made for this compile. NULL when out of memory. */
pf_json *sc_object1(cctx *c, const char *key, pf_json val);
int32_t sc_compile_target(cctx *c, const pf_json *target, int depth, const char *path);
const pf_json *sc_ref_target(cctx *c, const pf_json *v, const char *path);
/* The schema $ref value r names (no keyword checks); NULL after a failure. */
const pf_json *sc_ref_resolve(cctx *c, const pf_json *r, const char *path);
/* The root's $schema names a draft that ignores the keywords beside a $ref. */
int sc_ref_siblings_ignored(cctx *c);
/* v holds a $ref and keywords beside it that the document's draft applies */
int sc_ref_siblings(cctx *c, const pf_json *v);
const pf_json *sc_ref_with_siblings(cctx *c, const pf_json *v, int depth, const char *path);
int32_t sc_compile_ref(cctx *c, const pf_json *v, int depth, const char *path);

#endif
