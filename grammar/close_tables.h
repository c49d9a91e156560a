/* The closing tables (grammar/close_budget.h) as their two files share them: close_budget.c builds
 * them and walks a state's stacks, close_reach.c bounds every state's distance. Private to
 * grammar/. */
#ifndef PF_CLOSE_TABLES_H
#define PF_CLOSE_TABLES_H

#include <stdint.h>

#include "grammar/close_budget.h"
#include "grammar/schema.h"

struct pf_close {
    const pf_schema *s;
    int64_t *doc;      /* per node: its shortest document */
    int64_t **re_dist; /* per string node with a pattern: bytes from each automaton state to its end */
    int64_t reach;     /* at least the distance of every state the matcher reaches (pf_close_reach) */
};

/* Sums and products that stay at PF_CLOSE_INF once there. */
static inline int64_t close_add(int64_t a, int64_t b) {
    return a >= PF_CLOSE_INF || b >= PF_CLOSE_INF || a + b >= PF_CLOSE_INF ? PF_CLOSE_INF : a + b;
}
static inline int64_t close_mul(int64_t a, int64_t k) {
    return k == 0 ? 0 : a >= PF_CLOSE_INF || k >= PF_CLOSE_INF || a > PF_CLOSE_INF / k ? PF_CLOSE_INF : a * k;
}
static inline int64_t close_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* Object node nd: the value node of another key (the cheapest where patterns choose it), and
 * another key with its value (`"":` and that value's shortest document); PF_CLOSE_INF when none. */
int64_t pf_close_other_value_doc(const pf_close *c, const pf_schema_node *nd);
int64_t pf_close_other_cost(const pf_close *c, const pf_schema_node *nd);

/* The bound pf_close_reach returns, computed from the tables (doc and re_dist filled). */
int64_t pf_close_reach_bound(const pf_close *c);

#endif
