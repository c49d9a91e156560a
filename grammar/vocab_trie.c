#include "grammar/vocab_trie.h"
#include "grammar/bytes_order.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    uint32_t len;
    int32_t id;
} spelled;

static int spelled_cmp(const void *a, const void *b) {
    const spelled *x = a, *y = b;
    int c = pf_bytes_cmp(x->p, x->len, y->p, y->len);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int32_t add_node(pf_vocab_trie *t, uint8_t byte) {
    t->nodes[t->n_nodes] = (pf_trie_node){.byte = byte, .end = -1, .tok_lo = -1};
    return t->n_nodes++;
}

/* Tokens in byte order share their prefixes with the one before: each adds the nodes past the
 * common prefix; a node's subtree ends when a later token leaves it. */
static void insert_sorted(pf_vocab_trie *t, const spelled *s, int n, int32_t *path) {
    uint32_t depth = 0; /* path[0..depth] open, path[0] the root */
    const spelled *prev = NULL;
    for (int k = 0; k < n; k++) {
        uint32_t common = 0;
        while (prev && common < prev->len && common < s[k].len && prev->p[common] == s[k].p[common]) common++;
        if (prev && common > depth) common = depth;
        for (; depth > common; depth--) t->nodes[path[depth]].end = t->n_nodes;
        for (; depth < s[k].len; depth++) path[depth + 1] = add_node(t, s[k].p[depth]);
        pf_trie_node *nd = &t->nodes[path[depth]];
        if (nd->tok_lo < 0) nd->tok_lo = k;
        nd->tok_n++;
        t->ids[k] = s[k].id;
        prev = &s[k];
    }
    for (; depth > 0; depth--) t->nodes[path[depth]].end = t->n_nodes;
    t->nodes[0].end = t->n_nodes;
}

int pf_vocab_trie_build(pf_vocab_trie *t, const int32_t *ids, int n, const uint8_t *const *bytes, const uint32_t *lens) {
    memset(t, 0, sizeof *t);
    spelled *s = malloc((size_t)(n ? n : 1) * sizeof *s);
    size_t total = 1;
    uint32_t longest = 0;
    for (int i = 0; s && i < n; i++) {
        s[i] = (spelled){bytes[ids[i]], lens[ids[i]], ids[i]};
        total += s[i].len;
        if (s[i].len > longest) longest = s[i].len;
    }
    int32_t *path = malloc(((size_t)longest + 1) * sizeof *path);
    t->nodes = malloc(total * sizeof *t->nodes);
    t->ids = malloc((size_t)(n ? n : 1) * sizeof *t->ids);
    if (!s || !path || !t->nodes || !t->ids || total > INT32_MAX) {
        free(s);
        free(path);
        pf_vocab_trie_free(t);
        return -1;
    }
    qsort(s, (size_t)n, sizeof *s, spelled_cmp);
    path[0] = add_node(t, 0);
    insert_sorted(t, s, n, path);
    free(s);
    free(path);
    return 0;
}

void pf_vocab_trie_free(pf_vocab_trie *t) {
    free(t->nodes);
    free(t->ids);
    memset(t, 0, sizeof *t);
}
