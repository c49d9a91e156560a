#include "batch_feed.h"

int bf_collect(void *u, int32_t t) {
    bf_outcome *o = u;
    if (o->n < BF_MAX_TOK) o->toks[o->n] = t;
    o->n++;
    return o->stop_after && o->n >= o->stop_after;
}

int bf_feed_next(void *u, pf_seq_request *r, char err[PF_ERR_LEN]) {
    (void)err;
    bf_requests *q = u;
    if (q->next == q->n) return 0;
    int i = q->next++;
    q->out[i] = (bf_outcome){.stop_after = q->stop_after ? q->stop_after[i] : 0};
    *r = (pf_seq_request){.prompt = q->ids[i], .n_prompt = q->n_ids[i], .p = q->p[i], .on_token = bf_collect,
                          .user = &q->out[i]};
    return 1;
}

void bf_feed_done(void *u, const pf_seq_request *r, pf_rc rc, const pf_decode_stats *st, const char *err) {
    (void)u, (void)err;
    bf_outcome *o = r->user;
    o->rc = rc, o->st = *st, o->ended++;
}
