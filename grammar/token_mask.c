#include "grammar/token_mask.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "grammar/class_trie.h"
#include "grammar/close_budget.h"
#include "grammar/plain_walk.h"
#include "grammar/token_vocab.h"
#include "grammar/vocab_trie.h"

enum {
    CACHE_SLOTS = 256,
    PATTERN_PATH = 256, /* bytes of a token walked without the matcher */
    PATTERN_SLOTS = 512,
    CLASS_SLOTS = 4,
};


typedef struct {
    uint64_t hash;
    void *key;
    size_t len;
    int64_t limit; /* the closing distance a token may leave (INT64_MAX: no budget) */
    uint32_t *bits;
    int count;
    int64_t max_next, min_next; /* closing distances after the accepted tokens; -1: not measured */
} slot;

typedef pf_walk_ctx walk_ctx;

/* The plain content tokens a pattern string's automaton takes whole from one of its states, and
 * the distinct states they leave it in. */
typedef struct {
    int32_t pattern, state; /* the string's pattern_id (grammar/schema.h); bits NULL: empty */
    uint32_t *bits;
    pf_plain_ends ends;
} pattern_slot;

/* A pattern string's plain tokens by class string (grammar/class_trie.h), built once the byte
 * walks of its pattern's states have cost as much as building it would (so a string met in
 * few states keeps the walk, and one met in many pays at most twice what the trie alone would). */
typedef struct {
    int32_t pattern; /* the string's pattern_id; -1: empty */
    int64_t spent, cost; /* the walks' steps so far; the trie's */
    pf_class_trie *ct;
} class_slot;

struct pf_mask_cache {
    int n_words;
    uint32_t *scratch; /* one mask's words, for a parse stack's plain tokens */
    slot s[CACHE_SLOTS];
    pattern_slot p[PATTERN_SLOTS];
    class_slot c[CLASS_SLOTS];
    int next_class;
};

pf_mask_cache *pf_mask_cache_new(const pf_token_masker *tm) {
    pf_mask_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->n_words = tm->n_words;
    for (int i = 0; i < CLASS_SLOTS; i++) c->c[i].pattern = -1;
    return c;
}

void pf_mask_cache_free(pf_mask_cache *c) {
    if (!c) return;
    for (int i = 0; i < CACHE_SLOTS; i++) {
        free(c->s[i].key);
        free(c->s[i].bits);
    }
    for (int i = 0; i < PATTERN_SLOTS; i++) free(c->p[i].bits);
    for (int i = 0; i < CLASS_SLOTS; i++) pf_class_trie_free(c->c[i].ct);
    free(c->scratch);
    free(c);
}

/* The tokens spelled by trie node c, whose bytes the matcher accepts (m after them, or cur: the
 * pattern string's frame after them), within the walk's limit. */
static void take(walk_ctx *w, const pf_vocab_trie *t, int32_t c, const pf_matcher *m, const pf_frame *cur) {
    if (!t->nodes[c].tok_n) return;
    if (w->cl) {
        int64_t d = cur ? pf_close_dist_cursor(w->cl, m, cur) : pf_close_dist(w->cl, m);
        if (d > w->max_next) w->max_next = d;
        if (d < w->min_next) w->min_next = d;
        if (d > w->limit) return;
    }
    for (int32_t k = 0; k < t->nodes[c].tok_n; k++) pf_token_vocab_set(w->bits, t->ids[t->nodes[c].tok_lo + k]);
}

/* Every token below trie node i whose bytes the matcher accepts. */
static void walk(const pf_vocab_trie *t, int32_t i, pf_matcher *m, walk_ctx *w) {
    size_t pos = pf_matcher_pos(m);
    for (int32_t c = i + 1; c < t->nodes[i].end; c = t->nodes[c].end) {
        if (pf_matcher_push(m, t->nodes[c].byte) != 1) continue;
        take(w, t, c, m, NULL);
        if (t->nodes[c].end > c + 1) walk(t, c, m, w);
        pf_matcher_rollback(m, pos);
    }
}

/* Inside a pattern string: the bytes below trie node i step the string's automaton alone (cur)
 * while they are its content; a byte that is not ('"', '\\', a control byte: the string may close
 * or escape there) hands that subtree to the matcher, with the path's bytes (path[0..depth))
 * pushed first. Every token is allowed exactly when the matcher would take its bytes. */
static void walk_pattern(const pf_vocab_trie *t, int32_t i, pf_matcher *m, const pf_frame *cur, uint8_t *path,
                         int depth, walk_ctx *w) {
    for (int32_t c = i + 1; c < t->nodes[i].end; c = t->nodes[c].end) {
        uint8_t b = t->nodes[c].byte;
        pf_frame next = *cur;
        if (b == '"' || b == '\\' || b < 0x20) {
            size_t pos = pf_matcher_pos(m);
            if (pf_matcher_push_bytes(m, path, (size_t)depth) == 1 && pf_matcher_push(m, b) == 1) {
                take(w, t, c, m, NULL);
                if (t->nodes[c].end > c + 1) walk(t, c, m, w);
            }
            pf_matcher_rollback(m, pos);
            continue;
        }
        if (!pf_matcher_pattern_feed(m, &next, b)) continue;
        take(w, t, c, m, &next);
        if (t->nodes[c].end > c + 1 && depth < PATTERN_PATH) {
            path[depth] = b;
            walk_pattern(t, c, m, &next, path, depth + 1, w);
        } else if (t->nodes[c].end > c + 1) { /* a path longer than the buffer: the matcher's way */
            size_t pos = pf_matcher_pos(m);
            if (pf_matcher_push_bytes(m, path, (size_t)depth) == 1 && pf_matcher_push(m, b) == 1) walk(t, c, m, w);
            pf_matcher_rollback(m, pos);
        }
    }
}

/* The class slot of string node nd's pattern (taken over when absent). */
static class_slot *class_slot_of(const pf_token_masker *tm, pf_mask_cache *cache, const pf_schema_node *nd) {
    for (int i = 0; i < CLASS_SLOTS; i++)
        if (cache->c[i].pattern == nd->pattern_id) return &cache->c[i];
    class_slot *c = &cache->c[cache->next_class];
    cache->next_class = (cache->next_class + 1) % CLASS_SLOTS;
    pf_class_trie_free(c->ct);
    *c = (class_slot){nd->pattern_id, 0, pf_class_trie_cost(tm, nd->re), NULL};
    return c;
}

/* The cache's slot of cursor cur's string and automaton state, walked when not held; NULL when
 * memory is short. */
static const pattern_slot *pattern_plain(const pf_token_masker *tm, pf_mask_cache *cache, const pf_matcher *m,
                                         const pf_frame *cur) {
    const pf_schema_node *nd = &pf_matcher_schema(m)->nodes[cur->node];
    uint64_t h = ((uint64_t)(uint32_t)nd->pattern_id * 0x9E3779B97F4A7C15ull) ^ (uint32_t)cur->hi;
    pattern_slot *p = &cache->p[(h ^ h >> 29) % PATTERN_SLOTS];
    if (p->bits && p->pattern == nd->pattern_id && p->state == cur->hi) return p;
    if (!p->bits && !(p->bits = malloc((size_t)tm->n_words * sizeof *p->bits))) return NULL;
    memset(p->bits, 0, (size_t)tm->n_words * sizeof *p->bits);
    p->pattern = nd->pattern_id, p->state = cur->hi, p->ends.n = 0;
    class_slot *c = class_slot_of(tm, cache, nd);
    if (!c->ct && c->spent >= c->cost) c->ct = pf_class_trie_new(tm, nd->re);
    walk_ctx w = {p->bits, NULL, INT64_MAX, -1, INT64_MAX, 0};
    if (c->ct) pf_class_trie_walk(c->ct, cur->hi, pf_matcher_pattern_used(m, cur), p->bits, &p->ends);
    else pf_plain_walk(tm, m, cur, &w, &p->ends);
    c->spent += w.steps;
    return p;
}

/* Inside a pattern string whose length no longer matters (or, without a budget, does not for the
 * longest plain token: pf_matcher_pattern_far): the plain content tokens from the per-state cache
 * when, under a closing distance, every state they leave fits the limit; the other tokens walked.
 * 0 when the cache cannot say (the caller walks every token). */
static int walk_pattern_cached(const pf_token_masker *tm, pf_mask_cache *cache, pf_matcher *m, const pf_frame *cur,
                               uint8_t *path, walk_ctx *w) {
    const pattern_slot *p = pattern_plain(tm, cache, m, cur);
    if (!p) return 0;
    int64_t most = -1, least = INT64_MAX;
    if (w->cl) {
        if (p->ends.n > PF_PLAIN_ENDS) return 0;
        for (int e = 0; e < p->ends.n; e++) {
            pf_frame after = *cur;
            after.hi = p->ends.s[e];
            int64_t d = pf_close_dist_cursor(w->cl, m, &after);
            most = d > most ? d : most;
            least = d < least ? d : least;
        }
        if (most > w->limit) return 0;
        if (most > w->max_next) w->max_next = most;
        if (least < w->min_next) w->min_next = least;
    }
    memcpy(w->bits, p->bits, (size_t)tm->n_words * sizeof *w->bits);
    walk_pattern(&tm->special, 0, m, cur, path, 0, w);
    return 1;
}

/* Below trie node i, the tokens whose bytes go on with a listed key's text (the matcher still in
 * the key after each byte); a subtree that leaves the listed texts is left to the callers' other
 * walks (plain content by the key's pattern, the rest by the special trie). */
static void walk_listed(const pf_vocab_trie *t, int32_t i, pf_matcher *m, walk_ctx *w) {
    size_t pos = pf_matcher_pos(m);
    for (int32_t c = i + 1; c < t->nodes[i].end; c = t->nodes[c].end) {
        if (pf_matcher_push(m, t->nodes[c].byte) == 1 && pf_matcher_in_key(m)) {
            take(w, t, c, m, NULL);
            if (t->nodes[c].end > c + 1) walk_listed(t, c, m, w);
        }
        pf_matcher_rollback(m, pos);
    }
}

/* Without a budget, where every parse stack is inside a string or a key between characters
 * (pf_matcher_stack_plain): the plain content tokens some stack takes, each stack's set apart
 * (a pattern's from the per-state cache, a plain string's by its room), those that go on with a
 * listed key's text walked down the listed texts alone, and the other tokens walked. 0 where that
 * does not apply or memory is short (the caller walks). Under a budget the closing distance after
 * a key's text is not the pattern string's, so these states are walked there. */
static int walk_stacks_plain(const pf_token_masker *tm, pf_mask_cache *cache, pf_matcher *m, walk_ctx *w) {
    int n = pf_matcher_n_stacks(m), keys = 0;
    if (w->cl || !cache || n < 1) return 0;
    size_t words = (size_t)tm->n_words * sizeof *w->bits;
    if (!cache->scratch && !(cache->scratch = malloc(words))) return 0;
    memset(w->bits, 0, words);
    for (int i = 0; i < n; i++) {
        pf_frame cur;
        int64_t room;
        int kind = pf_matcher_stack_plain(m, i, &cur, &room);
        if (n == 1 && kind == PF_PLAIN_ROOM) return 0; /* walk_string's, without the copies */
        const uint32_t *add = cache->scratch;
        if (kind == PF_PLAIN_ROOM) {
            pf_token_vocab_plain_within(tm, room, cache->scratch);
        } else if (kind && (pf_matcher_pattern_unbounded(m, &cur) || pf_matcher_pattern_far(m, &cur, tm->plain_chars))) {
            const pattern_slot *p = pattern_plain(tm, cache, m, &cur);
            if (!p) return 0;
            add = p->bits;
            keys |= kind == PF_PLAIN_PATTERN_KEY;
        } else {
            return 0;
        }
        for (int k = 0; k < tm->n_words; k++) w->bits[k] |= add[k];
    }
    walk(&tm->special, 0, m, w);
    if (keys) walk_listed(&tm->all, 0, m, w);
    return 1;
}

/* Bits set, counted in registers: without -mpopcnt __builtin_popcount is a library call per word. */
static int count_bits(const uint32_t *bits, int n_words) {
    int n = 0;
    for (int i = 0; i < n_words; i++) {
        uint32_t x = bits[i] - (bits[i] >> 1 & 0x55555555u);
        x = (x & 0x33333333u) + (x >> 2 & 0x33333333u);
        n += (int)(((x + (x >> 4)) & 0x0F0F0F0Fu) * 0x01010101u >> 24);
    }
    return n;
}

/* Inside strings without a pattern, plain content tokens of at most `room` characters (what each
 * stack's maxLength leaves) leave each parse stack's closing distance as it is, or shorten it by a
 * character where every stack's minLength still wants one: all of them are allowed, none (the
 * other tokens walked), or, where they differ, every token is walked. Inside a key where any key may be written, plain content is taken too, the distance
 * after it bounded from above. */
static void walk_string(const pf_token_masker *tm, pf_matcher *m, int64_t room, walk_ctx *w) {
    size_t words = (size_t)tm->n_words * sizeof *w->bits;
    int plain = 1, all = 0;
    if (pf_matcher_in_key(m)) {
        /* a key's text: plain content is taken, but the distance after it depends on the text;
         * under a limit it may exceed, each token is walked (the least distance then exact too) */
        int64_t up = w->cl ? pf_close_dist_after_plain(w->cl, m) : 0;
        if (up > w->limit) {
            memset(w->bits, 0, words);
            walk(&tm->all, 0, m, w);
            return;
        }
        if (up > w->max_next) w->max_next = up;
        pf_token_vocab_plain_within(tm, room, w->bits);
        walk(&tm->special, 0, m, w);
        return;
    }
    if (w->cl) {
        int64_t d = pf_close_dist(w->cl, m);
        int needs = pf_close_string_needs(w->cl, m);
        if (d > w->max_next) w->max_next = d;
        if (d - needs < w->min_next) w->min_next = d - needs;
        plain = d <= w->limit || (needs && d - 1 <= w->limit);
        all = !plain && needs;
    }
    if (all) {
        memset(w->bits, 0, words);
        walk(&tm->all, 0, m, w);
        return;
    }
    pf_token_vocab_plain_within(tm, plain ? room : -1, w->bits);
    walk(&tm->special, 0, m, w);
}

static int compute(const pf_token_masker *tm, pf_mask_cache *cache, pf_matcher *m, walk_ctx *w) {
    uint32_t *bits = w->bits;
    size_t words = (size_t)tm->n_words * sizeof *bits;
    pf_frame cur;
    uint8_t path[PATTERN_PATH];
    int64_t room;
    if (pf_matcher_pattern_cursor(m, &cur)) {
        /* far from a maxLength the state alone tells the plain tokens too, but the closing
         * distance after them is not the cursor's, so only without a budget */
        int alone = pf_matcher_pattern_unbounded(m, &cur) || (!w->cl && pf_matcher_pattern_far(m, &cur, tm->plain_chars));
        if (!cache || !alone || !walk_pattern_cached(tm, cache, m, &cur, path, w)) {
            memset(bits, 0, words);
            pf_plain_walk(tm, m, &cur, w, NULL);
            walk_pattern(&tm->special, 0, m, &cur, path, 0, w);
        }
    } else if (!walk_stacks_plain(tm, cache, m, w)) {
        if ((room = pf_matcher_string_room(m)) >= tm->plain_chars ||
            (room >= 0 && pf_matcher_string_room_most(m) == room)) {
            walk_string(tm, m, room, w); /* a plain token of more characters than room fits no stack */
        } else {
            memset(bits, 0, words);
            walk(&tm->all, 0, m, w);
        }
    }
    if (pf_matcher_can_end(m))
        for (int i = 0; i < tm->n_words; i++) bits[i] |= tm->end_bits[i];
    return count_bits(bits, tm->n_words);
}

/* The cache's slot for m's state and limit when it holds them, else NULL (*h its hash). */
static slot *lookup(pf_mask_cache *cache, const pf_matcher *m, int64_t limit, uint64_t *h) {
    size_t len;
    const void *key = pf_matcher_state(m, &len);
    *h = XXH3_64bits_withSeed(key, len, (uint64_t)limit);
    slot *s = &cache->s[*h % CACHE_SLOTS];
    return s->bits && s->hash == *h && s->limit == limit && s->len == len && !memcmp(s->key, key, len) ? s : NULL;
}

/* Remember a walk's result in its slot (when memory allows). */
static void store(pf_mask_cache *cache, const pf_matcher *m, uint64_t h, const walk_ctx *w, int n) {
    size_t len, words = (size_t)cache->n_words * sizeof *w->bits;
    const void *key = pf_matcher_state(m, &len); /* the walk may have moved the arena */
    slot *s = &cache->s[h % CACHE_SLOTS];
    void *k = malloc(len);
    uint32_t *b = s->bits ? s->bits : malloc(words);
    if (!k || !b) {
        free(k);
        if (!s->bits) free(b);
        return; /* not remembered */
    }
    memcpy(k, key, len);
    memcpy(b, w->bits, words);
    free(s->key);
    *s = (slot){h, k, len, w->limit, b, n, w->cl ? w->max_next : -1, w->cl ? w->min_next : -1};
}

/* The mask of m's state under w's limit, from the cache or walked (and remembered). */
static int cached(const pf_token_masker *tm, pf_mask_cache *cache, pf_matcher *m, walk_ctx *w) {
    uint64_t h = 0;
    const slot *s = cache ? lookup(cache, m, w->limit, &h) : NULL;
    if (s && (!w->cl || s->max_next >= 0)) {
        memcpy(w->bits, s->bits, (size_t)tm->n_words * sizeof *w->bits);
        w->max_next = s->max_next, w->min_next = s->min_next;
        return s->count;
    }
    int n = compute(tm, cache, m, w);
    if (cache) store(cache, m, h, w, n);
    return n;
}

int pf_token_mask(const pf_token_masker *tm, pf_mask_cache *cache, pf_matcher *m, uint32_t *bits) {
    walk_ctx w = {bits, NULL, INT64_MAX, -1, -1, 0};
    return cached(tm, cache, m, &w);
}

int pf_token_mask_budget(const pf_token_masker *tm, pf_mask_cache *cache, pf_matcher *m, const pf_close *cl,
                         int64_t left, uint32_t *bits, int *fits) {
    *fits = 1;
    /* far from the limit (every state's distance within what the budget closes) the budget
     * refuses nothing: the unbudgeted mask, with every shortcut */
    if (!cl || left - 1 >= pf_close_reach(cl)) return pf_token_mask(tm, cache, m, bits);
    walk_ctx w = {bits, cl, INT64_MAX, -1, INT64_MAX, 0};
    int n = cached(tm, cache, m, &w);
    if (w.max_next <= left - 1) return n; /* no token can leave more than the budget closes */
    w = (walk_ctx){bits, cl, left - 1, -1, INT64_MAX, 0};
    n = cached(tm, cache, m, &w);
    int64_t least = w.min_next; /* this walk's: a key's plain content counted only under no limit */
    if (n > 0 || least == INT64_MAX) return n;
    *fits = 0;
    /* none fits (a distance that is only an estimate, docs/structured-output.md): the tokens that
     * close soonest */
    w = (walk_ctx){bits, cl, least, -1, INT64_MAX, 0};
    return cached(tm, cache, m, &w);
}

void pf_mask_apply(const uint32_t *bits, int n, float *logits) {
    int w = 0;
    for (; (w + 1) * 32 <= n; w++) {
        uint32_t m = bits[w];
        float *l = logits + (size_t)w * 32;
        if (m == UINT32_MAX) continue;
        if (!m) {
            for (int b = 0; b < 32; b++) l[b] = -INFINITY;
            continue;
        }
        for (uint32_t z = ~m; z; z &= z - 1) l[__builtin_ctz(z)] = -INFINITY;
    }
    for (int id = w * 32; id < n; id++)
        if (!pf_mask_has(bits, id)) logits[id] = -INFINITY;
}


int32_t pf_token_masker_allowed_prefix(const pf_token_masker *tm, const uint32_t *bits, int32_t id) {
    int32_t a = id >= 0 && id < tm->n_vocab ? tm->parent[id] : -1;
    while (a >= 0 && !pf_mask_has(bits, a)) a = tm->parent[a];
    return a;
}

/* The highest of 32 logits, in four independent chains. */
static float max32(const float *l) {
    float m[4] = {l[0], l[1], l[2], l[3]};
    for (int b = 4; b < 32; b += 4)
        for (int k = 0; k < 4; k++) m[k] = l[b + k] > m[k] ? l[b + k] : m[k];
    float a = m[0] > m[1] ? m[0] : m[1], c = m[2] > m[3] ? m[2] : m[3];
    return a > c ? a : c;
}

/* The refused token scoring highest (the lowest such id) when it scores above every allowed one,
 * else -1. */
static int32_t top_refused(const uint32_t *bits, int n, const float *logits) {
    float a = -INFINITY, r = -INFINITY;
    int32_t rw = -1; /* the first word holding r */
    for (int w = 0; w * 32 < n; w++) {
        const float *l = logits + (size_t)w * 32;
        uint32_t m = bits[w];
        if (w * 32 + 32 <= n && (m == UINT32_MAX || !m)) {
            float v = max32(l);
            if (m) a = v > a ? v : a;
            else if (v > r) r = v, rw = w;
            continue;
        }
        for (int b = 0; b < 32 && w * 32 + b < n; b++) {
            if (m >> b & 1) a = l[b] > a ? l[b] : a;
            else if (l[b] > r) r = l[b], rw = w;
        }
    }
    if (rw < 0 || !(r > a)) return -1;
    for (int b = 0; b < 32; b++)
        if (!(bits[rw] >> b & 1) && logits[(size_t)rw * 32 + b] == r) return rw * 32 + b;
    return -1;
}

void pf_mask_apply_aligned(const pf_token_masker *tm, const uint32_t *bits, int n, float *logits) {
    int32_t top = top_refused(bits, n, logits);
    int32_t a = top >= 0 ? pf_token_masker_allowed_prefix(tm, bits, top) : -1;
    if (a >= 0) logits[a] = logits[top];
    pf_mask_apply(bits, n, logits);
}
