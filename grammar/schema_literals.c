/* enum and const (grammar/schema_cc.h): the compact texts of the values, every spelling of a
 * number among them. */
#include "grammar/schema_cc.h"

#include <stdlib.h>
#include <string.h>

#include "formats/grow.h"
#include "grammar/lit_set.h"
#include "grammar/num_spell.h"

static int member_cmp(const void *a, const void *b) {
    const pf_json_member *x = *(const pf_json_member *const *)a, *y = *(const pf_json_member *const *)b;
    int r = memcmp(x->key, y->key, x->key_len < y->key_len ? x->key_len : y->key_len);
    return r ? r : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* A key that an object within v holds twice, NULL when none (*oom: out of memory). Such a value
 * means different things to different readers (the first or the last of the two), so a document
 * written as it is would be equal to it for some and not for others. */
static const char *key_twice(const pf_json *v, int *oom) {
    if (v->type == PF_JSON_ARRAY) {
        for (size_t i = 0; i < v->u.arr.n; i++) {
            const char *k = key_twice(&v->u.arr.items[i], oom);
            if (k || *oom) return k;
        }
        return NULL;
    }
    if (v->type != PF_JSON_OBJECT) return NULL;
    const char *k = NULL;
    size_t n = v->u.obj.n;
    for (size_t i = 0; i < n && !k && !*oom; i++) k = key_twice(&v->u.obj.members[i].val, oom);
    if (k || *oom || n < 2) return k;
    const pf_json_member **m = malloc(n * sizeof *m);
    if (!m) return *oom = 1, NULL;
    for (size_t i = 0; i < n; i++) m[i] = &v->u.obj.members[i];
    qsort(m, n, sizeof *m, member_cmp);
    for (size_t i = 1; i < n && !k; i++)
        if (!member_cmp(&m[i - 1], &m[i])) k = m[i]->key;
    free(m);
    return k;
}

/* enum / const (cands: the member holding the values, v's own or an allOf branch's): the compact
 * texts of the values that meet every keyword of v (sc_eval), so any keyword may stand beside them. */
int32_t sc_compile_literals(cctx *c, const pf_json *v, const pf_json_member *cands, const char *path) {
    const pf_json *e = cands->key[0] == 'e' ? &cands->val : NULL, *k = e ? NULL : &cands->val;
    if (e && e->type != PF_JSON_ARRAY) return sc_fail(c, path, "enum: not an array");
    int types = pf_json_get(v, "type") ? sc_type_set(c, v, path) : 0;
    if (types < 0) return FAIL;
    int twice_oom = 0;
    const char *twice = key_twice(e ? e : k, &twice_oom);
    if (twice_oom) return sc_fail_oom(c, path);
    if (twice) return sc_fail(c, path, "%s: an object in it has the key '%.60s' twice", e ? "enum" : "const", twice);
    size_t n = e ? e->u.arr.n : 1, cap = n * (1 + PF_NUM_SPELL_MAX);
    char **s = calloc(cap ? cap : 1, sizeof *s);
    uint32_t *len = calloc(cap ? cap : 1, sizeof *len);
    int m = 0, oom = !s || !len, failed = 0;
    for (size_t i = 0; !oom && !failed && i < n; i++) {
        const pf_json *x = e ? &e->u.arr.items[i] : k;
        int meets = sc_eval(c, v, x, path);
        failed = meets == FAIL;
        if (meets != 1) continue;
        pf_sbuf b = {0};
        pf_json_compact(&b, x, c->src, c->src_len);
        oom = b.oom || !b.p || b.n > UINT32_MAX;
        if (oom) {
            free(b.p);
            break;
        }
        s[m] = b.p;
        len[m++] = (uint32_t)b.n;
        /* a number equals every number of its value: its other spellings too */
        char sp[PF_NUM_SPELL_MAX][PF_NUM_SPELL_LEN];
        int ns = x->type == PF_JSON_NUMBER ? pf_num_spellings(b.p, b.n, sp) : 0;
        int int_only = types && !(types & T_NUM); /* an integer type: no fraction or exponent written */
        for (int j = 0; j < ns && !oom; j++) {
            if (int_only && strpbrk(sp[j], ".eE")) continue;
            s[m] = strdup(sp[j]);
            oom = !s[m];
            if (!oom) len[m] = (uint32_t)strlen(sp[j]), m++;
        }
    }
    int32_t id;
    if (oom || failed) {
        for (int i = 0; i < m; i++) free(s[i]);
        id = failed ? FAIL : sc_fail_oom(c, path);
    } else {
        id = m ? sc_literal_node(c, s, len, m) : UNSAT;
    }
    free(s);
    free(len);
    return id;
}
