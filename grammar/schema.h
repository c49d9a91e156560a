/* JSON Schema compiled for constrained generation (docs/structured-output.md). The subset: `type`
 * (object, array, string, number, integer, boolean, null, or a list of them), `properties`,
 * `required`, `additionalProperties` (true, false or a schema), `minProperties`, `maxProperties`,
 * `dependencies` / `dependentRequired` / `dependentSchemas` (a key requiring others or a schema),
 * `items`, `minItems`, `maxItems`, `uniqueItems` (over literal items, or at most one), `contains` and
 * `minContains` (where items and the contains schema merge), `minLength`,
 * `maxLength` (characters), `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (both
 * draft forms, exact from the decimal text), `multipleOf`, `enum`, `const`, `anyOf`, `allOf` (merged where exact),
 * `oneOf` (disjoint branches), `pattern`, `format` and `patternProperties` (grammar/regex.h,
 * grammar/string_format.h), `$ref` to a JSON pointer into
 * the same document (`#/$defs/x`, `#/definitions/x`, `#`, ...; recursion included; keywords beside
 * it apply too, unless `$schema` names a draft before 2019-09, which ignores them), nested to
 * PF_SCHEMA_MAX_DEPTH. Annotations (title, description, default, examples, readOnly, ...) and
 * keywords JSON Schema does not define (x-..., id, self, ...) are ignored, as the spec says; beside
 * `enum` / `const` any keyword holds (each value checked exactly, grammar/schema_eval.c); any
 * other validation keyword (not over a pattern, maxContains, ...) is an error naming it and its path:
 * a schema is never compiled looser than it reads.
 *
 * The compiled schema describes the documents the matcher (grammar/matcher.h) lets a model write:
 * compact JSON (no whitespace between tokens), an object with `properties` holds only those keys
 * (each at most once, in any order, every required one), enum and const values spelled in their
 * compact form. Every such document validates against the schema; a schema that admits no value
 * is refused at compile time, so every prefix the matcher accepts can be completed. */
#ifndef PF_SCHEMA_H
#define PF_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "formats/errf.h" /* PF_ERR_LEN */

struct pf_regex;

#define PF_SCHEMA_MAX_DEPTH 32 /* nested schemas (properties, items, anyOf) */
#define PF_SCHEMA_MAX_PROPS 128 /* properties of one object: the bits of a key set */

/* A set of an object's listed keys, bit i for key i (its place among the sorted key texts). */
typedef unsigned __int128 pf_keys;
static inline pf_keys pf_key_bit(int i) {
    return (pf_keys)1 << i;
}
static inline int pf_keys_count(pf_keys k) {
    return __builtin_popcountll((uint64_t)k) + __builtin_popcountll((uint64_t)(k >> 64));
}
static inline int pf_keys_has(pf_keys k, int i) {
    return (int)(k >> i & 1);
}

typedef enum {
    PF_SN_ANY,      /* any JSON value */
    PF_SN_OBJECT,   /* free (any keys, any values) or the listed properties */
    PF_SN_ARRAY,
    PF_SN_STRING,
    PF_SN_NUMBER,
    PF_SN_INTEGER,
    PF_SN_LITERALS, /* one of a sorted set of compact JSON texts (enum, const, true/false/null) */
    PF_SN_UNION,    /* any of the alternatives (anyOf, a list of types) */
} pf_schema_kind;

/* A sorted set of distinct byte strings. */
typedef struct {
    char **s;
    uint32_t *len;
    int n;
} pf_lit_set;

typedef struct {
    pf_schema_kind kind;
    /* OBJECT: free_keys (any keys, their values of node `extra`) or n_props keys (the set `"key":`,
     * sorted) with their value nodes, and other keys too when extra >= 0 (additionalProperties as a
     * schema: their values of node extra); min_props / max_props count every key */
    int free_keys, n_props;
    int32_t extra;
    int64_t min_props, max_props;
    pf_lit_set keys;
    int32_t *prop_node;
    pf_keys required;      /* bit i: key i must appear */
    pf_keys *deps;         /* NULL, or per listed key the keys its presence requires (dependencies,
                              dependentRequired; followed through) */
    /* ARRAY */
    int32_t items;
    int64_t min_items, max_items;
    /* ARRAY with contains: at least min_contains items (> 0) of node contains (items merged with
     * the contains schema); each item is a value of contains_items, the union of contains (its
     * first alternative: the item counts) and items (-1, -1: no contains) */
    int32_t contains, contains_items;
    int64_t min_contains;
    /* ARRAY with uniqueItems over items of literal node uniq_lit: n_uniq classes of equal values
     * (at most 64; 0: no uniqueItems), uniq_class[i] the class of its text i, uniq_len[k] the
     * k-th shortest class's shortest text and uniq_order[k] that class */
    int32_t uniq_lit;
    int n_uniq;
    uint8_t *uniq_class, *uniq_order;
    uint32_t *uniq_len;
    /* STRING: characters (code points of the decoded string), max_len INT64_MAX when unbounded */
    int64_t min_len, max_len;
    uint8_t implied_type; /* its type came from its keywords, not `type`: the schema itself also
                             holds for every other type (oneOf's disjointness must know) */
    uint8_t raw;       /* LITERALS: text outside JSON (a wrap, pf_schema_wrap): no space after ',' or ':' */
    uint8_t no_escape; /* STRING: only the short escapes, no \u or \/ (an object's other keys: such
                          an escape could spell a listed key another way) */
    /* STRING: the automaton of `pattern` and `format` (grammar/regex.h; NULL: any text), over the
     * decoded characters; such a string takes only the escapes JSON requires (of '"', '\\' and
     * control characters) */
    struct pf_regex *re;
    /* STRING with re: strings of one pattern id step alike (the same automaton, lengths and
     * escapes; the lowest such node's index), so the token masks' caches key on it; -1 otherwise */
    int32_t pattern_id;
    /* OBJECT with patternProperties: the keys other than the listed ones are strings of node
     * key_node (-1: none such), whose automaton's mask says which patterns a key matches; their
     * values of node key_vals[i] for the automaton's i-th mask (pf_regex_masks) */
    int32_t key_node;
    int32_t *key_vals;
    /* NUMBER, INTEGER: bounds on the value, each num_lo + lo_frac / PF_SCHEMA_FRAC_ONE (num_lo its
     * floor, 0 <= lo_frac < PF_SCHEMA_FRAC_ONE; num_lo INT64_MIN, num_hi INT64_MAX when none);
     * lo_open / hi_open: exclusive (an INTEGER's are closed integers) */
    int64_t num_lo, num_hi, lo_frac, hi_frac;
    uint8_t lo_open, hi_open;
    /* NUMBER, INTEGER: multipleOf mult * 10^-mult_k (mult 0: none; an INTEGER's mult_k is 0) */
    uint64_t mult;
    uint8_t mult_k;
    /* LITERALS */
    pf_lit_set lits;
    /* UNION (also a $ref's node, whose one alternative is the referenced schema) */
    int32_t *alts;
    int n_alts;
    /* The fewest containers nested in a document of this node (0 for a scalar, 1 for `{}`),
     * PF_SCHEMA_NO_DOC when it admits no finite document (a recursion that never ends). The
     * matcher starts a value only where its shortest document fits under its depth bound. */
    int32_t min_depth;
} pf_schema_node;

#define PF_SCHEMA_NO_DOC (INT32_MAX / 2)
/* A bound's fraction in units of 1e-16: the 16 fraction digits a number may be written with
 * (PF_MATCHER_MAX_DIGITS), so a bound rounded inward to them is exact for every number written. */
#define PF_SCHEMA_FRAC_ONE 10000000000000000LL

/* Fixed nodes of every schema. */
enum { PF_SN_ID_ANY = 0, PF_SN_ID_ANY_ARRAY, PF_SN_ID_ANY_OBJECT, PF_SN_ID_ANY_WORD, PF_SN_ID_ANY_STRING,
       PF_SN_ID_ANY_NUMBER, PF_SN_ID_KEY_STRING, PF_SN_N_FIXED };

typedef struct {
    pf_schema_node *nodes;
    int n_nodes;
    size_t cap_nodes;
    int32_t root;
    /* Documents wrapped in literal text (pf_schema_add_wrap): when there are any, a document is one
     * of them (its prefix, a value of its node, its suffix) instead of a value of root. */
    struct pf_schema_wrap *wraps;
    int n_wraps;
} pf_schema;

/* prefix and suffix: raw literal nodes (0: none); node: the value between them. */
typedef struct pf_schema_wrap {
    int32_t prefix, node, suffix;
} pf_schema_wrap;

#define PF_SCHEMA_MAX_WRAPS 16 /* the matcher's parse stacks (PF_MATCHER_MAX_THREADS) */

/* What compiling gives: a schema, text that is not a schema of the supported subset (or not JSON),
 * or no memory. Callers pass it up as their own status; they never read it from the message. */
typedef enum { PF_SCHEMA_OK = 0, PF_SCHEMA_INVALID, PF_SCHEMA_NO_MEMORY } pf_schema_status;

/* Compile schema text[0..len) into *out; otherwise *out NULL and a one-line error naming the
 * keyword or the problem. */
pf_schema_status pf_schema_compile(const char *text, size_t len, pf_schema **out, char err[PF_ERR_LEN]);
/* Plain JSON mode: any JSON object. */
pf_schema_status pf_schema_json_object(pf_schema **out, char err[PF_ERR_LEN]);
void pf_schema_free(pf_schema *s);
/* One more form of the document: prefix (byte for byte; NULL or "" for none), a value of node, then
 * suffix; complete only after the suffix. Once a schema has wraps, its documents are those of its
 * wraps (each its own parse stack at the start: at most PF_SCHEMA_MAX_WRAPS, distinct prefixes
 * keep them apart). PF_SCHEMA_OK, PF_SCHEMA_INVALID (too many) or PF_SCHEMA_NO_MEMORY. */
pf_schema_status pf_schema_add_wrap(pf_schema *s, const char *prefix, int32_t node, const char *suffix,
                                    char err[PF_ERR_LEN]);
/* The value node of listed property key of object node obj, -1 when it has none such. */
int32_t pf_schema_property(const pf_schema *s, int32_t obj, const char *key);

/* The listed keys object node nd needs once the keys in used are given: its required ones and
 * those the given ones require (dependencies). */
static inline pf_keys pf_schema_keys_needed(const pf_schema_node *nd, pf_keys used) {
    pf_keys need = nd->required;
    if (!nd->deps) return need;
    for (uint64_t u = (uint64_t)used; u; u &= u - 1) need |= nd->deps[__builtin_ctzll(u)];
    for (uint64_t u = (uint64_t)(used >> 64); u; u &= u - 1) need |= nd->deps[64 + __builtin_ctzll(u)];
    return need;
}

/* The fewest bytes k more items of unique array node nd take (their texts, no commas), none of
 * the classes in used: the k shortest classes left; INT64_MAX when fewer are left. */
int64_t pf_schema_unique_least(const pf_schema_node *nd, uint64_t used, int64_t k);

/* Index range [*lo, *hi) of set entries whose byte `off` is c, within [*lo, *hi) (entries there
 * share their first `off` bytes). */
void pf_lit_narrow(const pf_lit_set *set, int32_t *lo, int32_t *hi, int32_t off, uint8_t c);

#endif
