#include "grammar/class_trie.h"

#include <stdlib.h>
#include <string.h>

/* A class string's node: children linked (first child, next sibling; -1 none), and the tokens
 * spelled by exactly this class string, ids[tok_lo..+tok_n). */
typedef struct {
    int32_t child, sibling, tok_lo, tok_n;
    uint8_t cls;
} cnode;

struct pf_class_trie {
    const pf_regex *re;
    uint8_t rep[256]; /* per class, one of its bytes */
    cnode *nodes;
    int32_t n_nodes, cap_nodes;
    int32_t *ids; /* after the nodes, in their block (gather) */
};

typedef struct {
    int32_t node, id;
} placed;

typedef struct {
    pf_class_trie *ct;
    const pf_token_masker *tm;
    uint8_t live[256]; /* per class: some state steps on it */
    placed *tok;
    int32_t n_tok, cap_tok;
    int oom;
} builder;

/* Parent's child of class cls, added when absent (-1 when memory is short). */
static int32_t child_of(builder *b, int32_t parent, uint8_t cls) {
    pf_class_trie *ct = b->ct;
    for (int32_t x = ct->nodes[parent].child; x >= 0; x = ct->nodes[x].sibling)
        if (ct->nodes[x].cls == cls) return x;
    if (ct->n_nodes == ct->cap_nodes) {
        int32_t cap = ct->cap_nodes ? 2 * ct->cap_nodes : 256;
        cnode *n = realloc(ct->nodes, (size_t)cap * sizeof *n);
        if (!n) return b->oom = 1, -1;
        ct->nodes = n, ct->cap_nodes = cap;
    }
    int32_t x = ct->n_nodes++;
    ct->nodes[x] = (cnode){-1, ct->nodes[parent].child, 0, 0, cls};
    ct->nodes[parent].child = x;
    return x;
}

static void place(builder *b, int32_t node, int32_t id) {
    if (b->n_tok == b->cap_tok) {
        int32_t cap = b->cap_tok ? 2 * b->cap_tok : 4096;
        placed *t = realloc(b->tok, (size_t)cap * sizeof *t);
        if (!t) {
            b->oom = 1;
            return;
        }
        b->tok = t, b->cap_tok = cap;
    }
    b->tok[b->n_tok++] = (placed){node, id};
    b->ct->nodes[node].tok_n++;
}

/* The plain tokens below vocabulary node i, whose path's class string is class node cn. */
static void build_below(builder *b, int32_t i, int32_t cn) {
    const pf_vocab_trie *t = &b->tm->all;
    for (int32_t c = i + 1; c < t->nodes[i].end && !b->oom; c = t->nodes[c].end) {
        uint8_t byte = t->nodes[c].byte;
        int cls = pf_regex_class(b->ct->re, byte);
        if (byte == '"' || byte == '\\' || byte < 0x20 || !b->live[cls]) continue;
        int32_t x = -1;
        for (int32_t k = 0; k < t->nodes[c].tok_n && !b->oom; k++) {
            int32_t id = t->ids[t->nodes[c].tok_lo + k];
            if (!pf_token_vocab_has(b->tm->plain_bits, id)) continue;
            if (x < 0 && (x = child_of(b, cn, (uint8_t)cls)) < 0) return;
            place(b, x, id);
        }
        const pf_plain_below *g = &b->tm->below[c];
        if (!g->lo && !g->hi) continue;
        if (x < 0 && (x = child_of(b, cn, (uint8_t)cls)) < 0) return;
        build_below(b, c, x);
    }
}

/* Each node's tokens together in ids (a counting sort of the placed tokens by node), held in the
 * nodes' block, trimmed to the nodes built: one block for the trie. */
static int gather(builder *b) {
    pf_class_trie *ct = b->ct;
    size_t nodes = (size_t)ct->n_nodes * sizeof *ct->nodes;
    cnode *n = realloc(ct->nodes, nodes + ((size_t)b->n_tok + 1) * sizeof *ct->ids);
    if (!n) return -1;
    ct->nodes = n, ct->cap_nodes = ct->n_nodes;
    ct->ids = (int32_t *)((char *)n + nodes);
    int32_t at = 0;
    for (int32_t x = 0; x < ct->n_nodes; x++) ct->nodes[x].tok_lo = at, at += ct->nodes[x].tok_n, ct->nodes[x].tok_n = 0;
    for (int32_t k = 0; k < b->n_tok; k++) {
        cnode *x = &ct->nodes[b->tok[k].node];
        ct->ids[x->tok_lo + x->tok_n++] = b->tok[k].id;
    }
    return 0;
}

/* rep[] and live[]: a byte of each class, and the classes some state steps on. */
static void classes(const pf_regex *re, uint8_t *rep, uint8_t *live) {
    uint8_t seen[256] = {0};
    int n = pf_regex_states(re);
    for (int byte = 0; byte < 256; byte++) {
        int cls = pf_regex_class(re, (uint8_t)byte);
        if (seen[cls]) continue;
        seen[cls] = 1;
        rep[cls] = (uint8_t)byte;
        for (int32_t q = 0; q < n && !live[cls]; q++) live[cls] = pf_regex_step(re, q, (uint8_t)byte) >= 0;
    }
}

int64_t pf_class_trie_cost(const pf_token_masker *tm, const pf_regex *re) {
    uint8_t rep[256], live[256] = {0};
    classes(re, rep, live);
    const pf_vocab_trie *t = &tm->all;
    int64_t n = 0;
    for (int32_t c = 1; c < t->nodes[0].end; c = t->nodes[c].end)
        if (live[pf_regex_class(re, t->nodes[c].byte)]) n += t->nodes[c].end - c;
    return n;
}

pf_class_trie *pf_class_trie_new(const pf_token_masker *tm, const pf_regex *re) {
    pf_class_trie *ct = calloc(1, sizeof *ct);
    builder b = {.ct = ct, .tm = tm};
    if (!ct) return NULL;
    ct->re = re;
    classes(re, ct->rep, b.live);
    ct->cap_nodes = 256;
    if ((ct->nodes = malloc((size_t)ct->cap_nodes * sizeof *ct->nodes))) {
        ct->nodes[ct->n_nodes++] = (cnode){-1, -1, 0, 0, 0};
        build_below(&b, 0, 0);
    }
    if (!ct->nodes || b.oom || gather(&b) < 0) {
        free(b.tok);
        pf_class_trie_free(ct);
        return NULL;
    }
    free(b.tok);
    return ct;
}

void pf_class_trie_free(pf_class_trie *ct) {
    if (!ct) return;
    free(ct->nodes); /* ids lie in the same block */
    free(ct);
}

typedef struct {
    const pf_class_trie *ct;
    int64_t used;
    uint32_t *bits;
    pf_plain_ends *ends;
    uint64_t seen[PF_REGEX_MAX_STATES / 64];
} walker;

static void walk(walker *w, int32_t cn, int32_t state) {
    const pf_class_trie *ct = w->ct;
    for (int32_t x = ct->nodes[cn].child; x >= 0; x = ct->nodes[x].sibling) {
        const cnode *nd = &ct->nodes[x];
        int32_t r = pf_regex_step(ct->re, state, ct->rep[nd->cls]);
        if (r < 0 || !pf_regex_ok(ct->re, r, w->used)) continue;
        if (nd->tok_n) pf_plain_ends_add(w->ends, w->seen, r);
        for (int32_t k = 0; k < nd->tok_n; k++) pf_token_vocab_set(w->bits, ct->ids[nd->tok_lo + k]);
        if (nd->child >= 0) walk(w, x, r);
    }
}

void pf_class_trie_walk(const pf_class_trie *ct, int32_t state, int64_t used, uint32_t *bits, pf_plain_ends *ends) {
    walker w = {.ct = ct, .used = used, .bits = bits, .ends = ends};
    walk(&w, 0, state);
}
