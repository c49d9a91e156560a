/* Test requests for the batched engine (engine/generate_batch.h): a feed over prepared prompts
 * and parameters, and each request's tokens, stop and statistics kept to compare with its run
 * alone. */
#ifndef PF_TEST_BATCH_FEED_H
#define PF_TEST_BATCH_FEED_H

#include "engine/generate_batch.h"

enum { BF_MAX_REQ = 8, BF_MAX_TOK = 200 };

typedef struct {
    int32_t toks[BF_MAX_TOK]; /* the first BF_MAX_TOK tokens */
    int n, stop_after;        /* tokens seen; the callback stops the request at stop_after (0: never) */
    pf_rc rc;
    pf_decode_stats st;
    int ended; /* times the feed heard of its end: exactly once */
} bf_outcome;

/* The token callback: keeps the token in the bf_outcome u, stops at its stop_after. */
int bf_collect(void *u, int32_t t);

typedef struct {
    int32_t *ids[BF_MAX_REQ];
    int n_ids[BF_MAX_REQ];
    pf_decode_params p[BF_MAX_REQ];
    bf_outcome out[BF_MAX_REQ];
    const int *stop_after; /* per request, or NULL */
    int n, next;           /* requests, and the next to hand out */
} bf_requests;

/* pf_seq_feed's callbacks over a bf_requests. */
int bf_feed_next(void *u, pf_seq_request *r, char err[PF_ERR_LEN]);
void bf_feed_done(void *u, const pf_seq_request *r, pf_rc rc, const pf_decode_stats *st, const char *err);

#endif
