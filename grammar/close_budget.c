/* Closing distances (grammar/close_budget.h): per node, the shortest document the matcher writes
 * (compact, no optional key or item beyond what the schema requires); per parse stack, what its
 * frames still need, top first. */
#include "grammar/close_budget.h"

#include <stdlib.h>
#include <string.h>

#include "grammar/close_tables.h"
#include "grammar/matcher_frames.h"
#include "grammar/regex.h"

#define INF PF_CLOSE_INF
#define add close_add
#define mul close_mul

static int64_t min2(int64_t a, int64_t b) { return a < b ? a : b; }

/* Bytes byte b takes inside a pattern string: the escapes JSON requires ("\"", "\\", "\n", ...,
 * "\u00XX" for the other control characters). */
static int64_t written(int b) {
    if (b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t') return 2;
    return b < 0x20 ? 6 : 1;
}

/* dist[q]: the fewest written bytes from automaton state q to an accepting one (lengths aside). */
static int64_t *pattern_dist(const pf_regex *re) {
    int n = pf_regex_states(re);
    int64_t *d = malloc((size_t)(n ? n : 1) * sizeof *d);
    int32_t *next = malloc((size_t)(n ? n : 1) * 256 * sizeof *next);
    if (!d || !next) {
        free(d);
        free(next);
        return NULL;
    }
    for (int q = 0; q < n; q++) {
        d[q] = pf_regex_final(re, q) ? 0 : INF;
        for (int b = 0; b < 256; b++) next[(size_t)q * 256 + b] = pf_regex_step(re, q, (uint8_t)b);
    }
    for (int changed = 1; changed;) { /* Bellman-Ford: the paths are short, the passes few */
        changed = 0;
        for (int q = 0; q < n; q++)
            for (int b = 0; b < 256; b++) {
                int32_t s = next[(size_t)q * 256 + b];
                if (s >= 0 && d[s] < INF && d[s] + written(b) < d[q]) d[q] = d[s] + written(b), changed = 1;
            }
    }
    free(next);
    return d;
}

/* ---- objects ---- */

static int64_t key_cost(const pf_close *c, const pf_schema_node *nd, int i) {
    return add(nd->keys.len[i], c->doc[nd->prop_node[i]]);
}

/* The value node of another key, the cheapest where patterns choose it. */
int64_t pf_close_other_value_doc(const pf_close *c, const pf_schema_node *nd) {
    if (nd->key_node < 0) return nd->extra >= 0 ? c->doc[nd->extra] : INF;
    const uint32_t *masks;
    int k = pf_regex_masks(c->s->nodes[nd->key_node].re, &masks);
    int64_t best = INF;
    for (int i = 0; i < k; i++)
        if (nd->key_vals[i] >= 0) best = min2(best, c->doc[nd->key_vals[i]]);
    return best;
}

/* The text of the shortest other key, its quotes included. */
static int64_t other_key_text(const pf_close *c, const pf_schema_node *nd) {
    if (nd->key_node >= 0) {
        const int64_t *d = c->re_dist[nd->key_node];
        int32_t q = pf_regex_start(c->s->nodes[nd->key_node].re);
        return d && q >= 0 ? add(2, d[q]) : INF;
    }
    for (int i = 0; i < nd->n_props; i++)
        if (nd->keys.len[i] == 3) return 3; /* `"":` is listed: `"a"` */
    return 2;
}

/* Another key with its value: `"":` and the value's shortest document. */
int64_t pf_close_other_cost(const pf_close *c, const pf_schema_node *nd) {
    if (nd->extra < 0 && nd->key_node < 0) return INF;
    return add(add(other_key_text(c, nd), 1), pf_close_other_value_doc(c, nd));
}

/* One more key fits with k keys so far (used: the listed ones given, the new one among them when
 * listed): maxProperties leaves room for it and every key needed and not given yet. */
static int key_room(const pf_schema_node *nd, pf_keys used, int64_t k) {
    if (nd->max_props == INT64_MAX) return 1;
    return k + 1 + pf_keys_count(pf_schema_keys_needed(nd, used) & ~used) <= nd->max_props;
}

static int listed_room(const pf_schema_node *nd, pf_keys used, int64_t k, int i) {
    return key_room(nd, used | pf_key_bit(i), k);
}

/* From between keys (first: none yet) to the closing brace: the required keys not given, the
 * cheapest others minProperties still asks for, their commas, and `}`. */
static int64_t obj_close(const pf_close *c, const pf_schema_node *nd, pf_keys used, int64_t k, int first) {
    pf_keys req = nd->free_keys ? 0 : pf_schema_keys_needed(nd, used) & ~used;
    int64_t cost = 0, n_add = pf_keys_count(req);
    for (int i = 0; i < nd->n_props; i++)
        if (pf_keys_has(req, i)) cost = add(cost, key_cost(c, nd, i));
    int64_t need = nd->min_props - k - n_add, other = pf_close_other_cost(c, nd);
    pf_keys taken = used | req;
    for (; need > 0 && cost < INF; need--, n_add++) {
        int best = -1;
        for (int i = 0; i < nd->n_props && !nd->free_keys; i++)
            if (!pf_keys_has(taken, i) && (best < 0 || key_cost(c, nd, i) < key_cost(c, nd, best))) best = i;
        if (best >= 0 && key_cost(c, nd, best) <= other) {
            cost = add(cost, key_cost(c, nd, best));
            taken |= pf_key_bit(best);
        } else {
            cost = add(cost, other);
        }
    }
    int64_t commas = first ? (n_add ? n_add - 1 : 0) : n_add;
    return add(add(cost, commas), 1);
}

/* Keys so far (the object frame's count, as the matcher keeps it). */
static int64_t obj_keys(const pf_frame *o) { return pf_keys_count(pf_frame_keys(o)) + o->off; }

/* After a comma: one key at least, then on to the closing brace. */
static int64_t obj_after_comma(const pf_close *c, const pf_schema_node *nd, const pf_frame *o) {
    int64_t k = obj_keys(o), best = INF;
    pf_keys used = pf_frame_keys(o);
    if (key_room(nd, used, k)) best = add(pf_close_other_cost(c, nd), obj_close(c, nd, used, k + 1, 0));
    for (int i = 0; i < nd->n_props && !nd->free_keys; i++)
        if (!pf_keys_has(used, i) && listed_room(nd, used, k, i))
            best = min2(best, add(key_cost(c, nd, i), obj_close(c, nd, used | pf_key_bit(i), k + 1, 0)));
    return best;
}

static int64_t obj_rest(const pf_close *c, const pf_frame *t) {
    const pf_schema_node *nd = &c->s->nodes[t->node];
    switch (t->phase) {
    case O_FIRST: return obj_close(c, nd, pf_frame_keys(t), obj_keys(t), 1);
    case O_NEXT: return obj_close(c, nd, pf_frame_keys(t), obj_keys(t), 0);
    case O_KEY:
    case O_KEY_SPACED: return obj_after_comma(c, nd, t);
    case O_COLON: /* another key's string under way or closed: its colon, value, the rest */
        return add(add(1, pf_close_other_value_doc(c, nd)), obj_close(c, nd, pf_frame_keys(t), obj_keys(t) + 1, 0));
    default: return c->doc[t->node];
    }
}

/* A listed key's text under way (t over object frame o): finish one of the candidates, or (where
 * other keys are allowed) close the text here as another key. */
static int64_t key_rest(const pf_close *c, const pf_frame *t, const pf_frame *o) {
    const pf_schema_node *nd = &c->s->nodes[o->node];
    int64_t k = obj_keys(o), best = INF;
    pf_keys used = pf_frame_keys(o);
    int quote_next = 0;
    for (int32_t i = t->lo; i < t->hi; i++) {
        if ((uint32_t)t->off < nd->keys.len[i] && nd->keys.s[i][t->off] == '"') quote_next = 1;
        if (pf_keys_has(used, i) || !listed_room(nd, used, k, i)) continue;
        int64_t r = add(add(nd->keys.len[i] - t->off, c->doc[nd->prop_node[i]]),
                        obj_close(c, nd, used | pf_key_bit(i), k + 1, 0));
        best = min2(best, r);
    }
    if ((nd->extra >= 0 || nd->key_node >= 0) && key_room(nd, used, k)) {
        int64_t r = add(add(quote_next ? 2 : 1, 1), pf_close_other_value_doc(c, nd));
        best = min2(best, add(r, obj_close(c, nd, used, k + 1, 0)));
    }
    return best;
}

/* ---- the other frames ---- */

/* After `have` items (cnt of them counting for contains), to the closing bracket: the items
 * minItems and minContains still ask, the ones that count of the contains node, a comma before
 * each, and `]`. */
static int64_t items_rest(const pf_close *c, const pf_schema_node *nd, int64_t have, int64_t cnt) {
    int64_t need_c = nd->contains >= 0 && nd->min_contains > cnt ? nd->min_contains - cnt : 0;
    int64_t need = nd->min_items > have ? nd->min_items - have : 0;
    if (need < need_c) need = need_c;
    int64_t r = need_c ? mul(add(1, c->doc[nd->contains]), need_c) : 0;
    return add(add(r, mul(add(1, c->doc[nd->items]), need - need_c)), 1);
}

/* From before the first item (cnt counting) to the closing bracket: no comma before the first. */
static int64_t first_items_rest(const pf_close *c, const pf_schema_node *nd, int64_t cnt) {
    int64_t r = items_rest(c, nd, 0, cnt);
    return r > 1 && r < INF ? r - 1 : r;
}

/* An item to come after `have` items (cnt counting) and the rest: one that counts, or (while the
 * items left can still hold the ones that must) one that does not. */
static int64_t item_and_rest(const pf_close *c, const pf_schema_node *nd, int64_t have, int64_t cnt) {
    int64_t best = add(c->doc[nd->items], items_rest(c, nd, have + 1, cnt));
    if (nd->contains < 0) return best;
    int64_t r = add(c->doc[nd->contains], items_rest(c, nd, have + 1, cnt + 1));
    return nd->max_items - (have + 1) >= nd->min_contains - cnt ? min2(best, r) : r;
}

/* k more items of a unique array and what closes it: their shortest distinct values, k - 1 commas
 * before them when none is written yet (first), k otherwise, and `]`. */
static int64_t unique_items_rest(const pf_schema_node *nd, uint64_t used, int64_t k, int first) {
    return add(add(pf_schema_unique_least(nd, used, k), first && k ? k - 1 : k), 1);
}

static int64_t arr_rest(const pf_close *c, const pf_frame *t) {
    const pf_schema_node *nd = &c->s->nodes[t->node];
    if (nd->n_uniq && t->phase != A_OPEN) {
        int64_t have = t->phase == A_ITEM ? t->lo + 1 : t->phase == A_NEXT ? t->lo : 0;
        int64_t need = nd->min_items > have ? nd->min_items - have : 0;
        return t->phase == A_ITEM ? unique_items_rest(nd, t->used, need + 1, 1) : unique_items_rest(nd, t->used, need, t->phase == A_FIRST);
    }
    switch (t->phase) {
    case A_FIRST: return first_items_rest(c, nd, t->off);
    case A_NEXT: return items_rest(c, nd, t->lo, t->off);
    case A_ITEM: return item_and_rest(c, nd, t->lo, t->off);
    default: return c->doc[t->node];
    }
}

/* A pattern string inside an escape: the escapes that can go on, then the rest to its end. */
static int64_t pattern_escape_rest(const pf_close *c, const pf_frame *t, const int64_t *d) {
    const pf_regex *re = c->s->nodes[t->node].re;
    static const char k_short[] = "\"\\/\b\f\n\r\t";
    int64_t best = INF;
    if (t->phase == S_ESC) {
        for (int i = 0; i < 8; i++) {
            int32_t q = pf_regex_step(re, t->hi, (uint8_t)k_short[i]);
            if (q >= 0) best = min2(best, add(1, d[q]));
        }
        for (int ch = 0; ch < 0x20; ch++) { /* \u00XX */
            int32_t q = pf_regex_step(re, t->hi, (uint8_t)ch);
            if (q >= 0) best = min2(best, add(5, d[q]));
        }
        return best;
    }
    int left = 4 - t->off; /* S_HEX: off digits read, their value lo */
    for (int ch = 0; ch < 0x20; ch++) {
        if (ch >> (4 * left) != t->lo) continue;
        int32_t q = pf_regex_step(re, t->hi, (uint8_t)ch);
        if (q >= 0) best = min2(best, add(left, d[q]));
    }
    return best;
}

static int64_t str_rest(const pf_close *c, const pf_frame *t) {
    const pf_schema_node *nd = &c->s->nodes[t->node];
    int64_t need = nd->min_len > (int64_t)t->used ? nd->min_len - (int64_t)t->used : 0;
    if (t->phase == S_OPEN) return c->doc[t->node];
    if (!nd->re) {
        int64_t here = t->phase == S_BODY ? t->u8_need : t->phase == S_ESC ? 1 : 4 - t->off;
        return here + need + 1;
    }
    const int64_t *d = c->re_dist[t->node];
    if (!d) return INF;
    int64_t r = t->phase == S_BODY ? d[t->hi] : pattern_escape_rest(c, t, d);
    return add(r > need ? r : need, 1);
}

/* An item's literal text under way (t) and the rest of its unique array (frame a): for each value
 * it can still become, its shortest text left and the shortest distinct values after it. */
static int64_t unique_lit_rest(const pf_close *c, const pf_frame *t, const pf_frame *a) {
    const pf_schema_node *nd = &c->s->nodes[a->node];
    const pf_lit_set *set = &c->s->nodes[t->node].lits;
    int64_t need = nd->min_items > a->lo ? nd->min_items - a->lo : 0, best = INF;
    for (int32_t i = t->lo; i < t->hi; i++) {
        uint64_t bit = 1ull << nd->uniq_class[i];
        if (!(a->used & bit))
            best = min2(best, add((int64_t)set->len[i] - t->off, unique_items_rest(nd, a->used | bit, need, 0)));
    }
    return best;
}

static int64_t lit_rest(const pf_close *c, const pf_frame *t) {
    const pf_lit_set *set = &c->s->nodes[t->node].lits;
    if (t->lo == 0 && t->hi == set->n) return c->doc[t->node] - t->off;
    int64_t best = INF;
    for (int32_t i = t->lo; i < t->hi; i++) best = min2(best, (int64_t)set->len[i] - t->off);
    return best;
}

/* The most a key's text under way (t over object frame o) can still need after plain string
 * content (no '"', '\\' or control byte): the text left a listed key's or stayed one, and the
 * other keys' way is open from either (a quote next would spell a listed key: one character
 * more). */
static int64_t key_rest_after_plain(const pf_close *c, const pf_frame *o) {
    const pf_schema_node *nd = &c->s->nodes[o->node];
    return add(add(3, pf_close_other_value_doc(c, nd)), obj_close(c, nd, pf_frame_keys(o), obj_keys(o) + 1, 0));
}

typedef struct {
    const pf_close *c;
    const pf_frame *top; /* replaces the stack's top frame when set */
    int after_plain;     /* a key's text on top: the most it needs after plain content */
} walk_ctx;

/* What stack f[0..n) still needs, top first: a key's text is settled with its object's frame. */
static int64_t stack_rest(const void *ctx, const pf_frame *f, int n) {
    const walk_ctx *w = ctx;
    const pf_close *c = w->c;
    int64_t total = 0;
    for (int i = n - 1; i >= 0 && total < INF; i--) {
        const pf_frame *t = i == n - 1 && w->top ? w->top : &f[i];
        const pf_schema_node *below = i > 0 && f[i - 1].kind == K_ARR ? &c->s->nodes[f[i - 1].node] : NULL;
        if (below && below->n_uniq && (t->kind == K_VALUE || (t->kind == K_LIT && t->node == below->uniq_lit))) {
            /* an item of a unique array: it and the items after it take distinct values */
            int64_t need = below->min_items > f[i - 1].lo ? below->min_items - f[i - 1].lo : 0;
            total = add(total, t->kind == K_LIT ? unique_lit_rest(c, t, &f[i - 1])
                                                : unique_items_rest(below, f[i - 1].used, need + 1, 1));
            i--;
            continue;
        }
        switch (t->kind) {
        case K_VALUE: total = add(total, c->doc[t->node]); break;
        case K_STR: total = add(total, str_rest(c, t)); break;
        case K_NUM: total = add(total, pf_matcher_num_rest(&c->s->nodes[t->node], t)); break;
        case K_LIT: total = add(total, lit_rest(c, t)); break;
        case K_ARR: total = add(total, arr_rest(c, t)); break;
        case K_OBJ: total = add(total, obj_rest(c, t)); break;
        case K_KEY:
            if (i == 0) return INF;
            total = add(total, w->after_plain && i == n - 1 ? key_rest_after_plain(c, &f[i - 1]) : key_rest(c, t, &f[i - 1]));
            i--;
            break;
        default: return INF;
        }
    }
    return total;
}

int64_t pf_close_dist(const pf_close *c, const pf_matcher *m) {
    walk_ctx w = {c, NULL, 0};
    return pf_matcher_min_stacks(m, stack_rest, &w);
}

int64_t pf_close_dist_after_plain(const pf_close *c, const pf_matcher *m) {
    walk_ctx w = {c, NULL, 1};
    return pf_matcher_min_stacks(m, stack_rest, &w);
}

int64_t pf_close_dist_cursor(const pf_close *c, const pf_matcher *m, const pf_frame *cur) {
    walk_ctx w = {c, cur, 0};
    return pf_matcher_min_stacks(m, stack_rest, &w);
}

static int64_t string_lacks(const void *ctx, const pf_frame *f, int n) {
    const pf_close *c = ((const walk_ctx *)ctx)->c;
    if (n == 0) return 0;
    const pf_frame *t = &f[n - 1];
    const pf_schema_node *nd = &c->s->nodes[t->node];
    return t->kind == K_STR && t->phase == S_BODY && !t->u8_need && !nd->re && (int64_t)t->used < nd->min_len;
}

/* A stack's distance after one more plain character: one less where its string lacks characters. */
static int64_t rest_after_char(const void *ctx, const pf_frame *f, int n) {
    int64_t r = stack_rest(ctx, f, n);
    return r >= INF ? r : r - string_lacks(ctx, f, n);
}

/* Every plain character shortens the state's distance by one: some stack whose distance is the
 * least (or one short of it) lacks characters (stacks of one string under a union may differ). */
int pf_close_string_needs(const pf_close *c, const pf_matcher *m) {
    walk_ctx w = {c, NULL, 0};
    int64_t d = pf_matcher_min_stacks(m, stack_rest, &w);
    return d < INF && pf_matcher_min_stacks(m, rest_after_char, &w) < d;
}

/* ---- the schema's tables ---- */

static int64_t node_doc(const pf_close *c, const pf_schema_node *nd) {
    switch (nd->kind) {
    case PF_SN_ANY: return 1; /* `0` */
    case PF_SN_OBJECT: return add(1, obj_close(c, nd, 0, 0, 1));
    case PF_SN_ARRAY:
        if (nd->n_uniq) return add(1, unique_items_rest(nd, 0, nd->min_items, 1));
        return add(1, first_items_rest(c, nd, 0));
    case PF_SN_STRING: {
        if (!nd->re) return add(2, nd->min_len);
        const int64_t *d = c->re_dist[nd - c->s->nodes];
        int32_t q = pf_regex_start(nd->re);
        if (!d || q < 0) return INF;
        return add(2, d[q] > nd->min_len ? d[q] : nd->min_len);
    }
    case PF_SN_NUMBER:
    case PF_SN_INTEGER: {
        pf_frame f;
        memset(&f, 0, sizeof f);
        f.kind = K_NUM;
        f.phase = N_START;
        int64_t r = pf_matcher_num_rest(nd, &f);
        return r == INT64_MAX ? INF : r;
    }
    case PF_SN_LITERALS: {
        int64_t best = INF;
        for (int i = 0; i < nd->lits.n; i++) best = min2(best, nd->lits.len[i]);
        return best;
    }
    case PF_SN_UNION: {
        int64_t best = INF;
        for (int i = 0; i < nd->n_alts; i++) best = min2(best, c->doc[nd->alts[i]]);
        return best;
    }
    }
    return INF;
}

pf_close *pf_close_new(const pf_schema *s) {
    pf_close *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->s = s;
    c->doc = malloc((size_t)s->n_nodes * sizeof *c->doc);
    c->re_dist = calloc((size_t)s->n_nodes, sizeof *c->re_dist);
    if (!c->doc || !c->re_dist) {
        pf_close_free(c);
        return NULL;
    }
    for (int i = 0; i < s->n_nodes; i++) {
        c->doc[i] = INF;
        if (s->nodes[i].kind == PF_SN_STRING && s->nodes[i].re && !(c->re_dist[i] = pattern_dist(s->nodes[i].re))) {
            pf_close_free(c);
            return NULL;
        }
    }
    for (int changed = 1; changed;) { /* to the fixpoint: recursion makes the graph cyclic */
        changed = 0;
        for (int i = 0; i < s->n_nodes; i++) {
            int64_t d = node_doc(c, &s->nodes[i]);
            if (d < c->doc[i]) c->doc[i] = d, changed = 1;
        }
    }
    c->reach = pf_close_reach_bound(c);
    return c;
}

void pf_close_free(pf_close *c) {
    if (!c) return;
    for (int i = 0; c->re_dist && i < c->s->n_nodes; i++) free(c->re_dist[i]);
    free(c->re_dist);
    free(c->doc);
    free(c);
}

int64_t pf_close_doc(const pf_close *c) { return c->doc[c->s->root]; }

int64_t pf_close_reach(const pf_close *c) { return c->reach; }
