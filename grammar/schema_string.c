/* Strings (grammar/schema_cc.h): minLength, maxLength, pattern, format and not over patterns. */
#include "grammar/schema_cc.h"

#include <string.h>

#include "grammar/regex.h"
#include "grammar/string_format.h"

/* A string `not` over patterns takes only printable ASCII, where every engine reads a pattern
 * alike (Python's `\d`, `\w`, `\s` and `$` reach past ASCII and before a final newline): one it
 * does not match there is matched by none. */
static const char k_printable[] = "^[ -~]*$";

/* pattern, format and the patterns `not` is over (sc_not_patterns) as one automaton (the first
 * two must match, none of the others; grammar/regex.h) into *out, NULL when none asserts anything;
 * *hi tightened by the format's cap. 0, FAIL or UNSAT. */
static int32_t string_regex(cctx *c, const pf_json *v, int64_t lo, int64_t *hi, const char *path, pf_regex **out) {
    const pf_json *pat = pf_json_get(v, "pattern"), *fmt = pf_json_get(v, "format");
    const char *pats[PF_REGEX_MAX_PATTERNS];
    size_t lens[PF_REGEX_MAX_PATTERNS];
    int n = 0, n_not = 0;
    *out = NULL;
    if (pat && pat->type != PF_JSON_STRING) return sc_fail(c, path, "pattern: not a string");
    if (fmt && fmt->type != PF_JSON_STRING) return sc_fail(c, path, "format: not a string");
    if (pat) pats[n] = pat->u.str.s, lens[n++] = pat->u.str.len;
    if (fmt) {
        int64_t cap;
        pf_format_kind k = pf_format_lookup(fmt->u.str.s, fmt->u.str.len, &pats[n], &cap);
        if (k == PF_FORMAT_UNSUPPORTED) return sc_fail(c, path, "format: '%.40s' is not supported", fmt->u.str.s);
        if (k == PF_FORMAT_PATTERN) {
            lens[n] = strlen(pats[n]);
            n++;
            if (cap < *hi) *hi = cap;
        }
    }
    int must = n, room = PF_REGEX_MAX_PATTERNS - 1 - must;
    if (sc_not_patterns(v, pats + must + 1, lens + must + 1, &n_not, room) && n_not > room)
        return sc_fail(c, path, "keyword 'not' is not supported over more than %d patterns", room);
    if (n_not) pats[n] = k_printable, lens[n] = strlen(k_printable), n += 1 + n_not, must++;
    if (!n) return 0;
    if (lo > *hi) return UNSAT;
    char err[PF_ERR_LEN];
    int oom;
    pf_regex *re = pf_regex_compile(pats, lens, n, err, &oom);
    if (!re) return oom ? sc_fail_oom(c, path) : sc_fail(c, path, "%s", err);
    const uint32_t *masks;
    uint8_t ok[PF_REGEX_MAX_STATES];
    int m = pf_regex_masks(re, &masks);
    uint32_t all = (1u << must) - 1;
    for (int i = 0; i < m; i++) ok[i] = (masks[i] & all) == all && !(masks[i] >> must);
    if (pf_regex_accept(re, ok, lo, *hi, err) < 0) {
        pf_regex_free(re);
        return sc_fail(c, path, "%s", err);
    }
    if (pf_regex_start(re) < 0 || !pf_regex_ok(re, pf_regex_start(re), 0)) {
        pf_regex_free(re);
        return UNSAT;
    }
    *out = re;
    return 0;
}

/* minLength / maxLength: the characters of the decoded string (grammar/matcher.c counts them);
 * pattern and format. */
int32_t sc_compile_string(cctx *c, const pf_json *v, const char *path) {
    int64_t lo = 0, hi = INT64_MAX;
    if (sc_read_count(c, v, "minLength", &lo, path) < 0 || sc_read_count(c, v, "maxLength", &hi, path) < 0) return FAIL;
    pf_regex *re;
    int32_t rc = string_regex(c, v, lo, &hi, path, &re);
    if (rc < 0) return rc;
    if (lo > hi) return UNSAT;
    if (!re && lo == 0 && hi == INT64_MAX) return PF_SN_ID_ANY_STRING;
    int32_t id = sc_new_node(c, PF_SN_STRING);
    if (id < 0) {
        pf_regex_free(re);
        return FAIL;
    }
    c->s->nodes[id].min_len = lo;
    c->s->nodes[id].max_len = hi;
    c->s->nodes[id].re = re;
    return id;
}
