/* Batched proposals (pf_dflash_propose_batch): the blocks of several states in one pass of the
 * draft's layers and one head matmul, then each state's drafts from its own rows. */
#include "draft/dflash_impl.h"

#include <assert.h>

#include "draft/block.h"

struct pf_dflash_batch {
    const pf_dflash *d;
    int rows, n_seq; /* capacity */
    pf_layer_scratch *sc;
    float *cu, *dyn;
    float *hn;     /* every row's final norm */
    float *hc;     /* rows 1..B-1 of every block, side by side: the head's input */
    float *logits; /* the head's rows, n_vocab columns at most */
    float *g;      /* DFlash2: selector_hidden of the head's rows */
    dflash_seq *seq;
    int *nv; /* each block's head columns */
};

static void free_rows(pf_dflash_batch *b) {
    pf_layer_scratch_free(b->sc);
    free(b->cu), free(b->dyn), free(b->hn), free(b->hc), free(b->logits), free(b->g), free(b->seq), free(b->nv);
    b->sc = NULL;
    b->cu = b->dyn = b->hn = b->hc = b->logits = b->g = NULL;
    b->seq = NULL;
    b->nv = NULL;
    b->rows = b->n_seq = 0;
}

/* Room for R rows of n sequences. */
static pf_rc ensure(pf_dflash_batch *b, int R, int n, char err[PF_ERR_LEN]) {
    if (R <= b->rows && n <= b->n_seq) return PF_RC_OK;
    const pf_dflash *d = b->d;
    if (R < b->rows) R = b->rows;
    if (n < b->n_seq) n = b->n_seq;
    free_rows(b);
    const size_t r = (size_t)R, H = (size_t)d->hp.n_embd;
    b->sc = pf_layer_scratch_new(&d->hp, R, d->act_max);
    b->cu = malloc(r * H * sizeof(float));
    b->hn = malloc(r * H * sizeof(float));
    b->hc = malloc(r * H * sizeof(float));
    b->logits = malloc(r * (size_t)d->hp.n_vocab * sizeof(float));
    b->seq = malloc((size_t)n * sizeof *b->seq);
    b->nv = malloc((size_t)n * sizeof *b->nv);
    int ok = b->sc && b->cu && b->hn && b->hc && b->logits && b->seq && b->nv;
    if (d->version == 2) {
        b->dyn = malloc(r * 2 * d->conv_k * d->conv_groups * sizeof(float));
        b->g = malloc(r * (size_t)d->sel_rank * sizeof(float));
        ok = ok && b->dyn && b->g;
    }
    if (!ok) {
        free_rows(b);
        snprintf(err, PF_ERR_LEN, "dflash: out of memory for a batch of %d rows", R);
        return PF_RC_OOM;
    }
    b->rows = R, b->n_seq = n;
    return PF_RC_OK;
}

pf_dflash_batch *pf_dflash_batch_new(const pf_dflash *d) {
    pf_dflash_batch *b = calloc(1, sizeof *b);
    if (b) b->d = d;
    return b;
}

void pf_dflash_batch_free(pf_dflash_batch *b) {
    if (!b) return;
    free_rows(b);
    free(b);
}

/* Every block checked as pf_dflash_propose checks it, each state's own scratch sized for it; the
 * rows of all blocks into *R. */
static pf_rc check_blocks(const pf_dflash_batch *b, const pf_dflash_block *blk, int n, int *R, char err[PF_ERR_LEN]) {
    *R = 0;
    for (int i = 0; i < n; i++) {
        pf_dflash_state *s = blk[i].s;
        assert(blk[i].B >= 2 && blk[i].B <= PF_MAX_BLOCK);
        if (s->d != b->d || s->k != blk[0].s->k) {
            snprintf(err, PF_ERR_LEN, "dflash: batched block %d belongs to another draft or kernel level", i);
            return PF_RC_ARG;
        }
        pf_rc rc = dflash_check_propose(s, blk[i].bonus, blk[i].B, blk[i].samp && blk[i].samp->temp > 0, blk[i].rng,
                                        blk[i].q, err);
        if (rc == PF_RC_OK) rc = dflash_ensure_rows(s, blk[i].B, err);
        if (rc != PF_RC_OK) return rc;
        *R += blk[i].B;
    }
    return PF_RC_OK;
}

/* The head over every block's rows 1..B-1 (in b->hc): one matmul for each run of states that
 * score with the same head; each state's logits then go to its own scratch. */
static void batch_head(pf_dflash_batch *b, const dflash_pass *p, const pf_dflash_block *blk, int n, int *NV) {
    const int H = b->d->hp.n_embd;
    for (int i = 0, row = 0; i < n;) {
        int nv;
        const pf_weight *W = dflash_state_head(blk[i].s, &nv);
        int j = i, rows = 0;
        for (int nj; j < n && dflash_state_head(blk[j].s, &nj) == W; j++) rows += blk[j].B - 1;
        dflash_head_logits(p, W, b->hc + (size_t)row * H, rows, b->logits, nv);
        for (size_t off = 0; i < j; i++) {
            size_t len = (size_t)(blk[i].B - 1) * nv;
            memcpy(blk[i].s->logits, b->logits + off, len * sizeof(float));
            off += len;
            NV[i] = nv;
        }
        row += rows;
    }
}

pf_rc pf_dflash_propose_batch(pf_dflash_batch *b, const pf_dflash_block *blk, int n, char err[PF_ERR_LEN]) {
    if (n == 1)
        return pf_dflash_propose(blk[0].s, blk[0].bonus, blk[0].B, blk[0].samp, blk[0].rng, blk[0].draft, blk[0].q,
                                 blk[0].hidden, err);
    if (n < 1) return PF_RC_OK;
    int R;
    pf_rc rc = check_blocks(b, blk, n, &R, err);
    if (rc == PF_RC_OK) rc = ensure(b, R, n, err);
    if (rc != PF_RC_OK) return rc;
    const pf_dflash *d = b->d;
    const int H = d->hp.n_embd;
    for (int i = 0, r0 = 0; i < n; r0 += blk[i++].B) {
        blk[i].s->last_B = 0;
        dflash_embed_block(d, blk[i].bonus, blk[i].B, b->sc->x + (size_t)r0 * H);
        b->seq[i] = (dflash_seq){.kv = blk[i].s->kv, .pos0 = blk[i].s->kv->len, .r0 = r0, .B = blk[i].B};
    }
    const dflash_pass p = {.d = d, .k = blk[0].s->k, .pool = blk[0].s->pool, .sc = b->sc, .cu = b->cu, .dyn = b->dyn,
                           .seq = b->seq, .n_seq = n, .rows = R};
    dflash_pass_rows(&p, b->hn);
    int rows = 0; /* the head's rows: every block's rows 1..B-1, side by side */
    for (int i = 0; i < n; i++) {
        const float *hn = b->hn + (size_t)b->seq[i].r0 * H;
        const size_t len = (size_t)blk[i].B * H;
        memcpy(blk[i].s->hn, hn, len * sizeof(float));
        if (blk[i].hidden) memcpy(blk[i].hidden, hn, len * sizeof(float));
        memcpy(b->hc + (size_t)rows * H, hn + H, (len - H) * sizeof(float));
        rows += blk[i].B - 1;
    }
    batch_head(b, &p, blk, n, b->nv);
    if (d->version == 2) {
        pf_linear(p.k, p.pool, p.sc->act, &d->sel_hidden, b->hc, H, rows, b->g, d->sel_rank, 0);
        for (int i = 0, row = 0; i < n; row += blk[i++].B - 1)
            memcpy(blk[i].s->g, b->g + (size_t)row * d->sel_rank, (size_t)(blk[i].B - 1) * d->sel_rank * sizeof(float));
    }
    for (int i = 0; i < n; i++)
        dflash_propose_rows(blk[i].s, blk[i].bonus, blk[i].B, b->nv[i], blk[i].samp, blk[i].rng, blk[i].draft, blk[i].q);
    return PF_RC_OK;
}
