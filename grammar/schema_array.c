/* Arrays (grammar/schema_cc.h): items, minItems, maxItems, uniqueItems, contains and minContains. */
#include "grammar/schema_cc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* contains on array node id (items of JSON schema it, NULL when absent): the items that count are
 * those of items merged with the contains schema (an error naming contains where that merge is not
 * exact); the matcher parses each item as their union and counts the first alternative's. id,
 * UNSAT (no array holds enough of them) or FAIL. */
static int32_t compile_contains(cctx *c, int32_t id, const pf_json *v, const pf_json *it, int unique, int depth,
                                const char *path) {
    const pf_json *has = pf_json_get(v, "contains");
    int64_t least = 1;
    if (!has) return id;
    if (sc_read_count(c, v, "minContains", &least, path) < 0) return FAIL;
    if (least == 0) return id; /* asks nothing */
    if (least > c->s->nodes[id].max_items) return UNSAT;
    if (unique) return sc_fail(c, path, "keyword 'contains' is not supported beside uniqueItems");
    char sub[256];
    snprintf(sub, sizeof sub, "%s/contains", path);
    const pf_json *both = it ? sc_merge_schemas(c, it, has, depth + 1, sub) : has;
    if (!both) {
        char why[PF_ERR_LEN];
        snprintf(why, sizeof why, "%s", c->err);
        return c->oom ? FAIL : sc_fail(c, path, "keyword 'contains' is not supported with these items (%s)", why);
    }
    int32_t cn = sc_compile(c, both, depth + 1, sub);
    if (cn == FAIL || cn == UNSAT) return cn;
    int32_t u = sc_new_node(c, PF_SN_UNION); /* made here: sc_union_node may fold the alternatives */
    int32_t *alts = u < 0 ? NULL : malloc(2 * sizeof *alts);
    if (u < 0) return FAIL;
    if (!alts) return sc_fail_oom(c, path);
    alts[0] = cn;
    alts[1] = c->s->nodes[id].items;
    c->s->nodes[u].alts = alts;
    c->s->nodes[u].n_alts = 2;
    pf_schema_node *nd = &c->s->nodes[id];
    nd->contains = cn, nd->contains_items = u, nd->min_contains = least;
    return id;
}

int32_t sc_compile_array(cctx *c, const pf_json *v, int depth, const char *path) {
    int64_t lo = 0, hi = INT64_MAX;
    if (sc_read_count(c, v, "minItems", &lo, path) < 0 || sc_read_count(c, v, "maxItems", &hi, path) < 0) return FAIL;
    const pf_json *it = pf_json_get(v, "items");
    if (it && it->type == PF_JSON_ARRAY) return sc_fail(c, path, "items: a list of schemas (tuple form) is not supported");
    char sub[256];
    snprintf(sub, sizeof sub, "%s/items", path);
    int32_t items = it ? sc_compile(c, it, depth + 1, sub) : PF_SN_ID_ANY;
    if (items == FAIL) return FAIL;
    if (items == UNSAT) hi = 0;
    if (lo > hi) return UNSAT;
    const pf_json *u = pf_json_get(v, "uniqueItems");
    int unique = u && u->type == PF_JSON_BOOL && u->u.b;
    if (!it && lo == 0 && hi == INT64_MAX && !unique && !pf_json_get(v, "contains")) return PF_SN_ID_ANY_ARRAY;
    int32_t id = sc_new_node(c, PF_SN_ARRAY);
    if (id < 0) return FAIL;
    c->s->nodes[id].items = items == UNSAT ? PF_SN_ID_ANY : items;
    c->s->nodes[id].min_items = lo;
    c->s->nodes[id].max_items = hi;
    if ((id = compile_contains(c, id, v, it, unique, depth, path)) < 0) return id;
    return unique ? sc_unique_items(c, id, path) : id;
}
