/* Strings (grammar/schema_cc.h): minLength, maxLength, pattern and format. */
#include "grammar/schema_cc.h"

#include <string.h>

#include "grammar/regex.h"
#include "grammar/string_format.h"

/* pattern and format as one automaton (both must match; grammar/regex.h) into *out, NULL when
 * neither asserts anything; *hi tightened by the format's cap. 0, FAIL or UNSAT. */
static int32_t string_regex(cctx *c, const pf_json *v, int64_t lo, int64_t *hi, const char *path, pf_regex **out) {
    const pf_json *pat = pf_json_get(v, "pattern"), *fmt = pf_json_get(v, "format");
    const char *pats[2];
    size_t lens[2];
    int n = 0;
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
    if (!n) return 0;
    if (lo > *hi) return UNSAT;
    char err[PF_ERR_LEN];
    int oom;
    pf_regex *re = pf_regex_compile(pats, lens, n, err, &oom);
    if (!re) return oom ? sc_fail_oom(c, path) : sc_fail(c, path, "%s", err);
    const uint32_t *masks;
    uint8_t ok[PF_REGEX_MAX_STATES];
    int m = pf_regex_masks(re, &masks);
    for (int i = 0; i < m; i++) ok[i] = masks[i] == (1u << n) - 1;
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
