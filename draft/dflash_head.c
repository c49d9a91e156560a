/* A draft's head vocabulary: the target's output rows of the tokens the draft scores (the default
 * head built at load, a state's own with pf_dflash_set_head). */
#include "draft/dflash_impl.h"
#include "draft/drafter.h"
#include "engine/weight_pack.h"

void dflash_head_free(head_subset *h) {
    free(h->ids);
    free(h->rows);
    pf_weights_free(h->packed, h->map);
    memset(h, 0, sizeof *h);
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int dflash_head_rows(head_subset *h, const pf_weight *out, const int32_t *src_rows, const int32_t *ids, int n,
                     const pf_load_opts *o, char err[PF_ERR_LEN]) {
    memset(h, 0, sizeof *h);
    h->ids = malloc((size_t)n * sizeof *h->ids);
    h->rows = malloc((size_t)n * out->row_bytes);
    if (!h->ids || !h->rows) {
        dflash_head_free(h);
        snprintf(err, PF_ERR_LEN, "out of memory for a draft head of %d tokens", n);
        return -1;
    }
    memcpy(h->ids, ids, (size_t)n * sizeof *h->ids);
    for (int i = 0; i < n; i++)
        memcpy(h->rows + (size_t)i * out->row_bytes,
               (const uint8_t *)out->data + (size_t)(src_rows ? src_rows[i] : i) * out->row_bytes, out->row_bytes);
    h->w = (pf_weight){h->rows, out->type, n, out->cols, out->row_bytes, NULL};
    pf_weight *w = &h->w;
    bool rel = false;
    if (pf_weights_pack(&w, &rel, 1, o, &h->packed, &h->map, err) < 0) {
        dflash_head_free(h);
        return -1;
    }
    h->n = n;
    return 0;
}

/* The head over d's n most frequent tokens (1 <= n <= n_head_rank), ids ascending so that ties
 * resolve as in the full head. */
int dflash_head_build(head_subset *h, const pf_dflash *d, int n, char err[PF_ERR_LEN]) {
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) {
        snprintf(err, PF_ERR_LEN, "out of memory for a draft head of %d tokens", n);
        return -1;
    }
    memcpy(ids, d->head_rank, (size_t)n * sizeof *ids);
    qsort(ids, (size_t)n, sizeof *ids, cmp_i32);
    int rc = dflash_head_rows(h, &d->target->output, ids, ids, n, &d->target->opts, err);
    free(ids);
    return rc;
}

void dflash_state_head_free(pf_dflash_state *s) {
    dflash_head_free(&s->own_head);
    s->sub = s->d->base_head.n ? &s->d->base_head : NULL; /* "the whole vocabulary" is the draft's own head */
}

int pf_dflash_head_default(const pf_dflash *d) { return d->head_rank ? d->head_default : 0; }
int pf_dflash_head_ranked(const pf_dflash *d) { return d->n_head_rank; }

pf_rc pf_dflash_set_head(pf_dflash_state *s, int n, char err[PF_ERR_LEN]) {
    const pf_dflash *d = s->d;
    if (n < 0) n = pf_dflash_head_default(d);
    dflash_state_head_free(s);
    if (n == 0) return PF_RC_OK;
    if (n > d->n_head_rank) {
        snprintf(err, PF_ERR_LEN, "draft head of %d tokens: the draft ranks %d (dflash.head_tokens)", n, d->n_head_rank);
        return PF_RC_ARG;
    }
    if (d->version == 2 && n < d->sel_top_k) {
        snprintf(err, PF_ERR_LEN, "draft head of %d tokens: the DFlash2 selector takes the top %d", n, d->sel_top_k);
        return PF_RC_ARG;
    }
    if (n == d->def_head.n) { /* the default: built once with the draft */
        s->sub = &d->def_head;
        return PF_RC_OK;
    }
    if (dflash_head_build(&s->own_head, d, n, err) < 0) return PF_RC_OOM; /* its only failure: allocation */
    s->sub = &s->own_head;
    return PF_RC_OK;
}

int pf_dflash_head(const pf_dflash_state *s, const int32_t **ids) {
    if (ids) *ids = s->sub ? s->sub->ids : NULL;
    return s->sub ? s->sub->n : 0;
}
