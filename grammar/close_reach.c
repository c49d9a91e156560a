/* A bound on the closing distance of every state the matcher can reach (pf_close_reach). A
 * state's distance is the least over its parse stacks of what each stack's frames still need
 * (close_budget.c, stack_rest), so a bound on every stack's sum bounds it. Per node, m[id] bounds
 * the sum of the frames of one value of the node, its own and those above it while it is written,
 * every phase of each frame taken at its most: each frame's share is bounded by what
 * close_budget.c counts for it over every set of keys given and every count of items, and a
 * container's child by the child's bound one frame less. Nesting is bounded by
 * PF_MATCHER_MAX_FRAMES, so a recursive schema has a finite bound too: the bounds are computed
 * level by level, a value with h frames of room from its children's with h - 1. */
#include <stdlib.h>
#include <string.h>

#include "grammar/close_tables.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"

#define INF PF_CLOSE_INF

/* A number's text is at most a sign, PF_MATCHER_MAX_DIGITS digits in each of its three parts, a
 * point, an 'e' and the exponent's sign: what is left of one is never more. */
#define NUM_MOST (3 * PF_MATCHER_MAX_DIGITS + 4)

static int64_t key_cost(const pf_close *c, const pf_schema_node *nd, int i) {
    return close_add(nd->keys.len[i], c->doc[nd->prop_node[i]]);
}

/* A value of node id is never started: it has no finite document (the matcher's depth check). */
static int never(const pf_close *c, int32_t id) { return c->s->nodes[id].min_depth >= PF_SCHEMA_NO_DOC; }

/* Object node nd: at least obj_close for any keys given (between keys, to the closing brace). The
 * keys needed are among the required ones and those any key requires, each at most once; the
 * keys minProperties asks for beyond them each cost at most the dearest key obj_close may pick;
 * the commas at most one per key added, and `}`. */
static int64_t obj_close_most(const pf_close *c, const pf_schema_node *nd) {
    int64_t other = pf_close_other_cost(c, nd), keys = 0, dearest = 0, live = 0;
    pf_keys needable = nd->free_keys ? 0 : nd->required;
    for (int i = 0; nd->deps && !nd->free_keys && i < nd->n_props; i++) needable |= nd->deps[i];
    for (int i = 0; i < nd->n_props; i++) {
        if (pf_keys_has(needable, i)) keys = close_add(keys, key_cost(c, nd, i));
        if (!nd->free_keys && !never(c, nd->prop_node[i])) dearest = close_max(dearest, key_cost(c, nd, i)), live++;
    }
    /* another key is picked when it is cheaper than every listed key left, or none is left; with
     * no other keys, obj_close picks among the listed keys that have a document while they
     * suffice for minProperties */
    if (nd->free_keys || other < INF || nd->min_props > live) dearest = close_max(dearest, other);
    int64_t extra = close_mul(dearest, nd->min_props);
    return close_add(close_add(keys, extra), close_add(close_add(nd->n_props, nd->min_props), 1));
}

/* The dearest key that may come next (listed or another), its text and value's shortest doc. */
static int64_t next_key_most(const pf_close *c, const pf_schema_node *nd) {
    int64_t most = 0;
    for (int i = 0; i < nd->n_props; i++)
        if (!never(c, nd->prop_node[i])) most = close_max(most, key_cost(c, nd, i));
    if (nd->extra >= 0 || nd->key_node >= 0) most = close_max(most, pf_close_other_cost(c, nd));
    return most;
}

/* A string node: S_OPEN its doc; in its text at most 4 bytes of a character or escape under way,
 * then a pattern's longest way to an end (5 more inside an escape) or the characters minLength
 * still needs, and the quote. */
static int64_t str_most(const pf_close *c, int32_t id) {
    const pf_schema_node *nd = &c->s->nodes[id];
    int64_t body = close_add(4, nd->min_len);
    if (nd->re) {
        const int64_t *d = c->re_dist[id];
        int64_t far = 0;
        for (int q = 0; d && q < pf_regex_states(nd->re); q++)
            if (d[q] < INF) far = close_max(far, d[q]);
        body = close_max(close_add(far, 5), nd->min_len);
    }
    return close_max(c->doc[id], close_add(body, 1));
}

static int64_t lits_most(const pf_lit_set *set) {
    int64_t most = 0;
    for (int i = 0; i < set->n; i++) most = close_max(most, set->len[i]);
    return most;
}

/* The child bound prev[id] of a value that may be started. */
static int64_t child(const pf_close *c, int32_t id, const int64_t *prev) { return never(c, id) ? 0 : prev[id]; }

/* The most of the child bounds prev[] over a container's value nodes. */
static int64_t children_most(const pf_close *c, const pf_schema_node *nd, const int64_t *prev) {
    if (nd->kind == PF_SN_ARRAY)
        return nd->contains < 0 ? child(c, nd->items, prev) : close_max(child(c, nd->items, prev), child(c, nd->contains, prev));
    int64_t most = nd->extra >= 0 ? child(c, nd->extra, prev) : 0;
    for (int i = 0; i < nd->n_props; i++) most = close_max(most, child(c, nd->prop_node[i], prev));
    if (nd->key_node >= 0) {
        const uint32_t *masks;
        int k = pf_regex_masks(c->s->nodes[nd->key_node].re, &masks);
        for (int i = 0; i < k; i++)
            if (nd->key_vals[i] >= 0) most = close_max(most, child(c, nd->key_vals[i], prev));
    }
    return most;
}

/* An object's frame and what is above it but a value: between keys; after a comma (a key to
 * come); a listed key's text (counted with the object: the key's text left, its value, the rest);
 * another key's string above the object waiting for its colon. *below: what the object adds to a
 * value above it (between keys). */
static int64_t obj_own(const pf_close *c, int32_t id, int64_t *below) {
    const pf_schema_node *nd = &c->s->nodes[id];
    int64_t close = obj_close_most(c, nd), ovd = pf_close_other_value_doc(c, nd);
    int64_t most = close_max(c->doc[id], close_add(next_key_most(c, nd), close));
    if (nd->extra >= 0 || nd->key_node >= 0) most = close_max(most, close_add(close_add(3, ovd), close));
    int32_t key = nd->key_node >= 0 ? nd->key_node : nd->free_keys ? PF_SN_ID_ANY_STRING : PF_SN_ID_KEY_STRING;
    if (nd->free_keys || nd->extra >= 0 || nd->key_node >= 0)
        most = close_max(most, close_add(close_add(close_add(1, ovd), close), str_most(c, key)));
    *below = close;
    return most;
}

/* An array's frame alone, and (*below) what it adds to an item above it (with contains, the items
 * minContains asks count as the dearer kind). A unique array's items
 * are counted with it: at most every class's shortest value, a comma each and `]` (the matcher
 * keeps as many classes left as the items still need), beside the item under way. */
static int64_t arr_own(const pf_close *c, int32_t id, int64_t *below) {
    const pf_schema_node *nd = &c->s->nodes[id];
    int64_t item = c->doc[nd->items], mi = nd->min_items;
    if (nd->n_uniq) {
        if (mi > nd->n_uniq) return *below = INF;
        int64_t all = 0;
        for (int k = 0; k < nd->n_uniq; k++) all = close_add(all, nd->uniq_len[k]);
        *below = close_add(all, nd->n_uniq + 2);
        return close_max(c->doc[id], close_add(*below, lits_most(&c->s->nodes[nd->uniq_lit].lits)));
    }
    if (nd->contains >= 0) { /* an item that counts is never shorter than the others (it narrows them) */
        item = close_max(item, c->doc[nd->contains]);
        if (nd->min_contains > mi) mi = nd->min_contains;
    }
    *below = close_add(close_mul(close_add(1, item), mi), 1); /* the items minItems asks, `]` */
    if (never(c, nd->items) && mi == 0) return close_max(c->doc[id], 1); /* only `[]` */
    return close_max(c->doc[id], close_add(*below, item));
}

/* One node's own bound, what holds whatever is above it (*below: what it adds to a child's bound,
 * -1 for a node without children). ANY and UNION: their frame becomes an alternative's. */
static int64_t node_own(const pf_close *c, int32_t id, int64_t *below) {
    const pf_schema_node *nd = &c->s->nodes[id];
    *below = -1;
    switch (nd->kind) {
    case PF_SN_OBJECT: return obj_own(c, id, below);
    case PF_SN_ARRAY: return arr_own(c, id, below);
    case PF_SN_STRING: return str_most(c, id);
    case PF_SN_NUMBER:
    case PF_SN_INTEGER: {
        int bounded = nd->num_lo != INT64_MIN || nd->num_hi != INT64_MAX || nd->mult;
        return close_max(c->doc[id], bounded ? NUM_MOST : 1);
    }
    case PF_SN_LITERALS: return close_max(c->doc[id], lits_most(&nd->lits));
    default: return c->doc[id];
    }
}

/* A value of ANY or a union takes the frame of one of its alternatives: the most of theirs on the
 * same level, to the fixpoint (unions may name unions). */
static void unions_most(const pf_close *c, int64_t *cur) {
    static const int32_t k_any[] = {PF_SN_ID_ANY_OBJECT, PF_SN_ID_ANY_ARRAY, PF_SN_ID_ANY_STRING, PF_SN_ID_ANY_NUMBER,
                                    PF_SN_ID_ANY_WORD};
    for (int changed = 1, pass = 0; changed && pass <= c->s->n_nodes; pass++) {
        changed = 0;
        for (int32_t id = 0; id < c->s->n_nodes; id++) {
            const pf_schema_node *nd = &c->s->nodes[id];
            int64_t v = cur[id];
            if (nd->kind == PF_SN_ANY)
                for (int i = 0; i < 5; i++) v = close_max(v, cur[k_any[i]]);
            if (nd->kind == PF_SN_UNION)
                for (int i = 0; i < nd->n_alts; i++) v = close_max(v, never(c, nd->alts[i]) ? 0 : cur[nd->alts[i]]);
            if (v != cur[id]) cur[id] = v, changed = 1;
        }
    }
}

/* A wrap's stack, bottom first its suffix, its value, its prefix: each bounded alone. */
static int64_t wrap_most(const int64_t *m, const pf_schema_wrap *w) {
    return close_add(close_add(w->prefix ? m[w->prefix] : 0, m[w->node]), w->suffix ? m[w->suffix] : 0);
}

int64_t pf_close_reach_bound(const pf_close *c) {
    const pf_schema *s = c->s;
    size_t n = (size_t)s->n_nodes;
    int64_t *own = malloc(n * sizeof *own), *below = malloc(n * sizeof *below);
    int64_t *prev = calloc(n, sizeof *prev), *cur = malloc(n * sizeof *cur), most = INF;
    if (own && below && prev && cur) {
        for (int32_t id = 0; id < s->n_nodes; id++) own[id] = node_own(c, id, &below[id]);
        for (int h = 1; h <= PF_MATCHER_MAX_FRAMES; h++) { /* prev: one frame of room less (none at first) */
            for (int32_t id = 0; id < s->n_nodes; id++)
                cur[id] = below[id] < 0 ? own[id]
                                        : close_max(own[id], close_add(below[id], children_most(c, &s->nodes[id], prev)));
            unions_most(c, cur);
            int changed = memcmp(cur, prev, n * sizeof *cur) != 0;
            int64_t *t = prev;
            prev = cur, cur = t;
            if (!changed) break; /* no deeper value adds to any bound */
        }
        pf_schema_wrap plain = {0, s->root, 0};
        most = 0;
        for (int i = 0; i < (s->n_wraps ? s->n_wraps : 1); i++)
            most = close_max(most, wrap_most(prev, s->n_wraps ? &s->wraps[i] : &plain));
    }
    free(own);
    free(below);
    free(prev);
    free(cur);
    return most;
}
