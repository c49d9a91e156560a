/* Arrays (grammar/schema_cc.h): items, minItems, maxItems and uniqueItems. */
#include "grammar/schema_cc.h"

#include <stdio.h>

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
    if (!it && lo == 0 && hi == INT64_MAX && !unique) return PF_SN_ID_ANY_ARRAY;
    int32_t id = sc_new_node(c, PF_SN_ARRAY);
    if (id < 0) return FAIL;
    c->s->nodes[id].items = items == UNSAT ? PF_SN_ID_ANY : items;
    c->s->nodes[id].min_items = lo;
    c->s->nodes[id].max_items = hi;
    return unique ? sc_unique_items(c, id, path) : id;
}
