#include "grammar/token_mask.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "grammar/close_budget.h"
#include "grammar/vocab_trie.h"

enum { CACHE_SLOTS = 256, PATTERN_PATH = 256 /* bytes of a token walked without the matcher */ };

struct pf_token_masker {
    int n_vocab, n_words;
    uint8_t *store; /* every token's bytes */
    const uint8_t **bytes;
    uint32_t *lens;
    uint32_t *end_bits, *plain_bits; /* end tokens; plain string content */
    int64_t plain_chars;             /* the most characters a plain content token holds */
    int32_t *parent;                 /* the token spelling the longest proper prefix, else -1 */
    pf_vocab_trie all, unplain;      /* every spelled token; those that are not plain content */
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

/* One walk: the bits it sets and, with closing distances (cl), the tokens' limit and the range
 * of distances after the tokens the matcher accepts. */
typedef struct {
    uint32_t *bits;
    const pf_close *cl;
    int64_t limit, max_next, min_next;
} walk_ctx;

struct pf_mask_cache {
    int n_words;
    slot s[CACHE_SLOTS];
};

/* Whole UTF-8 characters without '"', '\\' or control bytes: a string stays a string. */
static int plain_content(const uint8_t *p, uint32_t n) {
    for (uint32_t i = 0; i < n;) {
        uint8_t c = p[i];
        if (c < 0x20 || c == '"' || c == '\\') return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        uint32_t k = c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : 0;
        if (!k || i + k >= n) return 0; /* a partial character */
        uint8_t lo = 0x80, hi = 0xBF;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
        if (p[i + 1] < lo || p[i + 1] > hi) return 0;
        for (uint32_t j = 2; j <= k; j++)
            if (p[i + j] < 0x80 || p[i + j] > 0xBF) return 0;
        i += k + 1;
    }
    return 1;
}

static void set_bit(uint32_t *bits, int32_t id) { bits[id >> 5] |= 1u << (id & 31); }

/* The spelled tokens (unplain_only: only those that are not plain string content) into a trie. */
static int build_trie(pf_token_masker *tm, pf_vocab_trie *t, int unplain_only) {
    int32_t *ids = malloc((size_t)tm->n_vocab * sizeof *ids);
    int n = 0;
    if (!ids) return -1;
    for (int32_t id = 0; id < tm->n_vocab; id++)
        if (tm->lens[id] && (!unplain_only || !pf_mask_has(tm->plain_bits, id))) ids[n++] = id;
    int rc = pf_vocab_trie_build(t, ids, n, tm->bytes, tm->lens);
    free(ids);
    return rc;
}

static int copy_vocab(pf_token_masker *tm, const uint8_t *const *bytes, const uint32_t *lens) {
    size_t total = 0;
    for (int i = 0; i < tm->n_vocab; i++) total += bytes[i] ? lens[i] : 0;
    tm->store = malloc(total ? total : 1);
    tm->bytes = calloc((size_t)tm->n_vocab, sizeof *tm->bytes);
    tm->lens = calloc((size_t)tm->n_vocab, sizeof *tm->lens);
    if (!tm->store || !tm->bytes || !tm->lens) return -1;
    size_t off = 0;
    for (int i = 0; i < tm->n_vocab; i++) {
        if (!bytes[i] || !lens[i]) continue;
        memcpy(tm->store + off, bytes[i], lens[i]);
        tm->bytes[i] = tm->store + off;
        tm->lens[i] = lens[i];
        off += lens[i];
        if (!plain_content(tm->bytes[i], lens[i])) continue;
        set_bit(tm->plain_bits, i);
        int64_t chars = 0;
        for (uint32_t k = 0; k < lens[i]; k++) chars += (tm->bytes[i][k] & 0xC0) != 0x80;
        if (chars > tm->plain_chars) tm->plain_chars = chars;
    }
    return 0;
}

/* parent[id] over the trie of every spelled token, in its depth-first order: a stack of the open
 * nodes' subtree ends, each with the nearest token on the path down to it (of tokens spelled alike,
 * the lowest id, which the trie lists first). */
static int build_parents(pf_token_masker *tm) {
    const pf_vocab_trie *t = &tm->all;
    tm->parent = malloc((size_t)tm->n_vocab * sizeof *tm->parent);
    int32_t *end = malloc((size_t)t->n_nodes * sizeof *end), *near = malloc((size_t)t->n_nodes * sizeof *near);
    if (!tm->parent || !end || !near) {
        free(end);
        free(near);
        return -1;
    }
    for (int id = 0; id < tm->n_vocab; id++) tm->parent[id] = -1;
    int top = 0;
    for (int32_t i = 1; i < t->n_nodes; i++) {
        while (top && end[top - 1] <= i) top--;
        int32_t above = top ? near[top - 1] : -1;
        const pf_trie_node *nd = &t->nodes[i];
        for (int32_t k = 0; k < nd->tok_n; k++) tm->parent[t->ids[nd->tok_lo + k]] = above;
        end[top] = nd->end;
        near[top++] = nd->tok_n ? t->ids[nd->tok_lo] : above;
    }
    free(end);
    free(near);
    return 0;
}

pf_token_masker *pf_token_masker_new(int n_vocab, const uint8_t *const *bytes, const uint32_t *lens,
                                     const int32_t *end_ids, int n_end, char err[PF_ERR_LEN]) {
    pf_token_masker *tm = calloc(1, sizeof *tm);
    if (!tm || n_vocab < 1) {
        snprintf(err, PF_ERR_LEN, tm ? "token masks: empty vocabulary" : "out of memory");
        free(tm);
        return NULL;
    }
    tm->n_vocab = n_vocab;
    tm->n_words = (n_vocab + 31) / 32;
    tm->end_bits = calloc((size_t)tm->n_words, sizeof *tm->end_bits);
    tm->plain_bits = calloc((size_t)tm->n_words, sizeof *tm->plain_bits);
    if (!tm->end_bits || !tm->plain_bits || copy_vocab(tm, bytes, lens) < 0 || build_trie(tm, &tm->all, 0) < 0 ||
        build_trie(tm, &tm->unplain, 1) < 0 || build_parents(tm) < 0) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        pf_token_masker_free(tm);
        return NULL;
    }
    for (int i = 0; i < n_end; i++)
        if (end_ids[i] >= 0 && end_ids[i] < n_vocab) set_bit(tm->end_bits, end_ids[i]);
    return tm;
}

void pf_token_masker_free(pf_token_masker *tm) {
    if (!tm) return;
    pf_vocab_trie_free(&tm->all);
    pf_vocab_trie_free(&tm->unplain);
    free(tm->store);
    free(tm->bytes);
    free(tm->lens);
    free(tm->end_bits);
    free(tm->plain_bits);
    free(tm->parent);
    free(tm);
}

int pf_token_masker_words(const pf_token_masker *tm) { return tm->n_words; }

const uint8_t *pf_token_masker_bytes(const pf_token_masker *tm, int32_t id, uint32_t *len) {
    *len = id >= 0 && id < tm->n_vocab ? tm->lens[id] : 0;
    return *len ? tm->bytes[id] : NULL;
}

int pf_token_masker_is_end(const pf_token_masker *tm, int32_t id) {
    return id >= 0 && id < tm->n_vocab && pf_mask_has(tm->end_bits, id);
}

pf_mask_cache *pf_mask_cache_new(const pf_token_masker *tm) {
    pf_mask_cache *c = calloc(1, sizeof *c);
    if (c) c->n_words = tm->n_words;
    return c;
}

void pf_mask_cache_free(pf_mask_cache *c) {
    if (!c) return;
    for (int i = 0; i < CACHE_SLOTS; i++) {
        free(c->s[i].key);
        free(c->s[i].bits);
    }
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
    for (int32_t k = 0; k < t->nodes[c].tok_n; k++) set_bit(w->bits, t->ids[t->nodes[c].tok_lo + k]);
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

static int count_bits(const uint32_t *bits, int n_words) {
    int n = 0;
    for (int i = 0; i < n_words; i++) n += __builtin_popcount(bits[i]);
    return n;
}

/* Inside strings without a pattern, plain content tokens leave each parse stack's closing
 * distance as it is, or shorten it by a character where every stack's minLength still wants one:
 * all of them are allowed, none (the other tokens walked), or, where they differ, every token
 * is walked. */
static void walk_string(const pf_token_masker *tm, pf_matcher *m, walk_ctx *w) {
    size_t words = (size_t)tm->n_words * sizeof *w->bits;
    int plain = 1, all = 0;
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
    if (plain) memcpy(w->bits, tm->plain_bits, words);
    else memset(w->bits, 0, words);
    walk(&tm->unplain, 0, m, w);
}

static int compute(const pf_token_masker *tm, pf_matcher *m, walk_ctx *w) {
    uint32_t *bits = w->bits;
    size_t words = (size_t)tm->n_words * sizeof *bits;
    pf_frame cur;
    uint8_t path[PATTERN_PATH];
    if (pf_matcher_pattern_cursor(m, &cur)) {
        memset(bits, 0, words);
        walk_pattern(&tm->all, 0, m, &cur, path, 0, w);
    } else if (pf_matcher_string_room(m) >= tm->plain_chars) {
        walk_string(tm, m, w);
    } else {
        memset(bits, 0, words);
        walk(&tm->all, 0, m, w);
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
    uint64_t h;
    const slot *s = cache ? lookup(cache, m, w->limit, &h) : NULL;
    if (s && (!w->cl || s->max_next >= 0)) {
        memcpy(w->bits, s->bits, (size_t)tm->n_words * sizeof *w->bits);
        w->max_next = s->max_next, w->min_next = s->min_next;
        return s->count;
    }
    int n = compute(tm, m, w);
    if (cache) store(cache, m, h, w, n);
    return n;
}

int pf_token_mask(const pf_token_masker *tm, pf_mask_cache *cache, pf_matcher *m, uint32_t *bits) {
    walk_ctx w = {bits, NULL, INT64_MAX, -1, -1};
    return cached(tm, cache, m, &w);
}

int pf_token_mask_budget(const pf_token_masker *tm, pf_mask_cache *cache, pf_matcher *m, const pf_close *cl,
                         int64_t left, uint32_t *bits, int *fits) {
    *fits = 1;
    if (!cl) return pf_token_mask(tm, cache, m, bits);
    walk_ctx w = {bits, cl, INT64_MAX, -1, INT64_MAX};
    int n = cached(tm, cache, m, &w);
    if (w.max_next <= left - 1) return n; /* no token can leave more than the budget closes */
    int64_t least = w.min_next;
    w = (walk_ctx){bits, cl, left - 1, -1, INT64_MAX};
    n = cached(tm, cache, m, &w);
    if (n > 0 || least == INT64_MAX) return n;
    *fits = 0;
    /* none fits (a distance that is only an estimate, docs/structured-output.md): the tokens that
     * close soonest */
    w = (walk_ctx){bits, cl, least, -1, INT64_MAX};
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
