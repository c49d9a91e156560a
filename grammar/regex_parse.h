/* The syntax tree of one pattern (grammar/regex.h): its parser, and the sets of code points its
 * classes stand for. Internal to grammar/regex.c. */
#ifndef PF_REGEX_PARSE_H
#define PF_REGEX_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "formats/errf.h" /* PF_ERR_LEN */

typedef enum { RX_SET, RX_CAT, RX_ALT, RX_REP, RX_BOL, RX_EOL } rx_kind;

/* A code point range, both ends included. */
typedef struct {
    uint32_t lo, hi;
} rx_range;

typedef struct {
    rx_kind kind;
    int32_t child, next; /* CAT, ALT: the first child (-1: none, the empty string); siblings */
    int32_t min, max;    /* REP of child: max -1 when unbounded */
    int32_t set_off, set_n; /* SET: ranges[set_off..+set_n), sorted, disjoint, no surrogates */
} rx_node;

typedef struct {
    rx_node *nodes;
    size_t n_nodes, cap_nodes;
    rx_range *ranges;
    size_t n_ranges, cap_ranges;
    int oom;
} rx_tree;

#define RX_MAX_NODES 20000 /* syntax nodes of one pattern */
#define RX_MAX_REPEAT 1000 /* the largest bound of {n,m} */

/* The root node of pattern p[0..n), or -1 with a one-line error in err. */
int32_t rx_parse(rx_tree *t, const char *p, size_t n, char err[PF_ERR_LEN]);
void rx_tree_free(rx_tree *t);

#endif
