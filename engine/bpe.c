/* Byte-level BPE encoding: special-token split, pre-tokenizer pieces, merges by lowest rank
 * (tokenizer.h has the contract). */
#include "engine/tokenizer_impl.h"
#include "formats/grow.h"

#include <stdlib.h>
#include <string.h>

#include "engine/unicode.h"

typedef struct {
    int32_t id, prev, next;
    uint32_t len; /* bytes covered; 0 once merged into its left neighbour */
} bpe_sym;

typedef struct {
    int32_t rank, left, right, result;
    uint32_t llen, rlen; /* symbol lengths when queued: a mismatch means the pair is stale */
} bpe_cand;

typedef struct {
    int32_t *ids;
    size_t n, cap;
    bpe_sym *sym;
    bpe_cand *heap;
    size_t sym_cap, heap_cap, n_heap;
} encode_ctx;

static bool push_id(encode_ctx *c, int32_t id) {
    int32_t *p = pf_grow(c->ids, &c->cap, c->n + 1, sizeof *p, 64);
    if (!p) return false;
    c->ids = p;
    c->ids[c->n++] = id;
    return true;
}

static bool cand_less(const bpe_cand *a, const bpe_cand *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->left < b->left;
}

static void heap_push(encode_ctx *c, bpe_cand e) {
    size_t i = c->n_heap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_less(&e, &c->heap[p])) break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = e;
}

static bpe_cand heap_pop(encode_ctx *c) {
    bpe_cand top = c->heap[0], last = c->heap[--c->n_heap];
    size_t i = 0, n = c->n_heap;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const bpe_cand *best = &last;
        if (l < n && cand_less(&c->heap[l], best)) {
            m = l;
            best = &c->heap[l];
        }
        if (l + 1 < n && cand_less(&c->heap[l + 1], best)) m = l + 1;
        if (m == i) break;
        c->heap[i] = c->heap[m];
        i = m;
    }
    if (n) c->heap[i] = last;
    return top;
}

static void try_pair(const pf_tokenizer *t, encode_ctx *c, int32_t l, int32_t r) {
    const merge_slot *m = tok_merge_find(t, c->sym[l].id, c->sym[r].id);
    if (!m) return;
    bpe_cand e = {m->rank, l, r, m->result, c->sym[l].len, c->sym[r].len};
    heap_push(c, e);
}

static int bpe_piece(const pf_tokenizer *t, encode_ctx *c, const char *p, size_t n,
                     size_t base, char err[PF_ERR_LEN]) {
    if (n > (size_t)INT32_MAX / 4) {
        tok_err(err, NULL, "piece at byte %zu too long (%zu bytes)", base, n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (t->byte_id[(uint8_t)p[i]] < 0) {
            tok_err(err, NULL, "byte 0x%02X at byte %zu has no token in this vocabulary",
                    (uint8_t)p[i], base + i);
            return -1;
        }
    }
    if (n == 1) return push_id(c, t->byte_id[(uint8_t)p[0]]) ? 0 : -2;
    if (n > c->sym_cap) {
        bpe_sym *s = realloc(c->sym, n * 2 * sizeof *s);
        if (!s) return -2;
        c->sym = s;
        c->sym_cap = n * 2;
    }
    /* Heap bound: n - 1 initial pairs plus at most 2 per merge (<= n - 1 merges): 3n. */
    if (3 * n > c->heap_cap) {
        bpe_cand *h = realloc(c->heap, 6 * n * sizeof *h);
        if (!h) return -2;
        c->heap = h;
        c->heap_cap = 6 * n;
    }
    for (size_t i = 0; i < n; i++) {
        c->sym[i].id = t->byte_id[(uint8_t)p[i]];
        c->sym[i].prev = (int32_t)i - 1;
        c->sym[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
        c->sym[i].len = 1;
    }
    c->n_heap = 0;
    for (size_t i = 0; i + 1 < n; i++) try_pair(t, c, (int32_t)i, (int32_t)i + 1);
    while (c->n_heap) {
        bpe_cand e = heap_pop(c);
        bpe_sym *L = &c->sym[e.left], *R = &c->sym[e.right];
        if (L->len != e.llen || R->len != e.rlen || L->next != e.right) continue;
        L->id = e.result;
        L->len += R->len;
        L->next = R->next;
        if (R->next >= 0) c->sym[R->next].prev = e.left;
        R->len = 0;
        if (L->prev >= 0) try_pair(t, c, L->prev, e.left);
        if (L->next >= 0) try_pair(t, c, e.left, L->next);
    }
    for (int32_t i = 0; i >= 0; i = c->sym[i].next)
        if (!push_id(c, c->sym[i].id)) return -2;
    return 0;
}

static int encode_span(const pf_tokenizer *t, encode_ctx *c, const char *s, size_t start,
                       size_t end, char err[PF_ERR_LEN]) {
    size_t i = start;
    while (i < end) {
        size_t j = t->pretok(s, i, end);
        int rc = bpe_piece(t, c, s + i, j - i, i, err);
        if (rc) return rc;
        i = j;
    }
    return 0;
}

pf_rc pf_tokenize(const pf_tokenizer *t, const char *text, size_t len, bool parse_special,
                  int32_t **ids, size_t *n_ids, char err[PF_ERR_LEN]) {
    *ids = NULL;
    *n_ids = 0;
    size_t bad = pf_utf8_first_invalid(text, len);
    if (bad != len) {
        tok_err(err, NULL, "invalid UTF-8 at byte %zu", bad);
        return PF_RC_UTF8;
    }
    encode_ctx c = {0};
    int rc = 0;
    size_t span = 0, i = 0;
    while (i < len && rc == 0) {
        uint8_t b = (uint8_t)text[i];
        int32_t hit = -1;
        size_t hit_len = 0;
        for (uint32_t k = t->special_first[b]; k < t->special_first[b + 1]; k++) {
            int32_t id = t->specials[k];
            if (!parse_special && t->type[id] == PF_TOKEN_CONTROL) continue;
            size_t l = tok_piece_len(t, id);
            if (l <= len - i && memcmp(text + i, t->text + t->text_off[id], l) == 0) {
                hit = id;
                hit_len = l;
                break; /* candidates are sorted longest first */
            }
        }
        if (hit < 0) {
            i++;
            continue;
        }
        rc = encode_span(t, &c, text, span, i, err);
        if (rc == 0 && !push_id(&c, hit)) rc = -2;
        i += hit_len;
        span = i;
    }
    if (rc == 0) rc = encode_span(t, &c, text, span, len, err);
    free(c.sym);
    free(c.heap);
    if (rc != 0) { /* -2: an allocation; -1: text this vocabulary cannot encode (a byte without a token) */
        if (rc == -2) tok_err(err, NULL, "tokenize: out of memory");
        free(c.ids);
        return rc == -2 ? PF_RC_OOM : PF_RC_ARG;
    }
    *ids = c.ids;
    *n_ids = c.n;
    return PF_RC_OK;
}
