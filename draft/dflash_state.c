/* A draft's context state: its K/V cache and the scratch of a block. */
#include "draft/dflash_impl.h"

static void free_scratch(pf_dflash_state *s) {
    pf_layer_scratch_free(s->sc);
    free(s->cu); free(s->dyn); free(s->hn); free(s->logits);
    free(s->g); free(s->unary); free(s->score); free(s->succ); free(s->ag); free(s->pred_row); free(s->cand);
    s->sc = NULL;
    s->cu = s->dyn = s->hn = s->logits = s->g = s->unary = s->score = s->succ = s->ag = s->pred_row = NULL;
    s->cand = NULL;
    s->rows = 0;
}

/* Scratch for R rows (R >= the internal chunk; grows for larger blocks). */
pf_rc dflash_ensure_rows(pf_dflash_state *s, int R, char *err) {
    if (R <= s->rows) return PF_RC_OK;
    const pf_dflash *d = s->d;
    const pf_hparams *hp = &d->hp;
    free_scratch(s);
    size_t r = (size_t)R, H = (size_t)hp->n_embd;
    size_t V = (size_t)hp->n_vocab, kk = (size_t)d->sel_top_k, rank = (size_t)d->sel_rank;
    s->sc = pf_layer_scratch_new(hp, R, d->act_max);
    s->cu = malloc(r * H * sizeof(float));
    s->hn = malloc(r * H * sizeof(float));
    s->logits = malloc(r * V * sizeof(float));
    int ok = s->sc && s->cu && s->hn && s->logits;
    if (d->version == 2) {
        s->dyn = malloc(r * 2 * d->conv_k * d->conv_groups * sizeof(float));
        s->g = malloc(r * rank * sizeof(float));
        s->unary = malloc(r * kk * sizeof(float));
        s->score = malloc(r * kk * sizeof(float));
        s->cand = malloc(r * kk * sizeof(int32_t));
        s->succ = malloc(r * kk * rank * sizeof(float));
        s->ag = malloc(rank * sizeof(float));
        s->pred_row = malloc(rank * sizeof(float));
        ok = ok && s->dyn && s->g && s->unary && s->score && s->cand && s->succ && s->ag && s->pred_row;
    }
    if (!ok) {
        free_scratch(s);
        snprintf(err, PF_ERR_LEN, "dflash: out of memory for a block of %d rows", R);
        return PF_RC_OOM;
    }
    s->rows = R;
    return PF_RC_OK;
}

pf_dflash_state *pf_dflash_state_new(const pf_dflash *d, int64_t n_ctx, pf_pool *pool, const pf_kernels *k,
                                     char err[PF_ERR_LEN]) {
    if (n_ctx < 2) {
        snprintf(err, PF_ERR_LEN, "dflash: context of %lld positions is too small", (long long)n_ctx);
        return NULL;
    }
    pf_dflash_state *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->d = d;
    s->sub = d->base_head.n ? &d->base_head : NULL;
    s->k = k ? k : pf_kernels_get(d->target->opts.level);
    s->pool = pool;
    s->kv = pf_kv_new(&d->hp, n_ctx, PF_KV_F16);
    if (!s->kv || pf_dist_init(&s->dist, d->hp.n_vocab) < 0) goto oom;
    int R = d->block_size > PF_CHUNK_ROWS ? d->block_size : PF_CHUNK_ROWS;
    if (dflash_ensure_rows(s, R, err) != PF_RC_OK) goto fail;
    return s;
oom:
    snprintf(err, PF_ERR_LEN, "dflash: out of memory for a draft context of %lld positions", (long long)n_ctx);
fail:
    pf_dflash_state_free(s);
    return NULL;
}

void pf_dflash_state_free(pf_dflash_state *s) {
    if (!s) return;
    free_scratch(s);
    dflash_state_head_free(s);
    pf_kv_free(s->kv);
    pf_dist_free(&s->dist);
    free(s);
}

void pf_dflash_reset(pf_dflash_state *s) { s->kv->len = 0; }
int64_t pf_dflash_context_len(const pf_dflash_state *s) { return s->kv->len; }
void pf_dflash_truncate(pf_dflash_state *s, int64_t len) {
    if (len >= 0) pf_kv_truncate(s->kv, len);
}

void pf_dflash_cache_row(const pf_dflash_state *s, int layer, int keys, int64_t pos, pf_half *row) {
    const pf_kv_view v = pf_kv_layer(s->kv, layer);
    pf_kv_row_get(keys ? v.k : v.v, keys, v.head_stride, v.n_kv_head, v.head_dim, pos, row);
}

const float *pf_dflash_last_logits(const pf_dflash_state *s, int *n_rows) {
    if (n_rows) *n_rows = s->last_B > 0 ? s->last_B - 1 : 0;
    return s->last_B > 0 ? s->logits : NULL;
}

int pf_dflash_last_selector(const pf_dflash_state *s, const int32_t **cand, const float **score) {
    if (s->d->version != 2 || s->last_B <= 0) return 0;
    if (cand) *cand = s->cand;
    if (score) *score = s->score;
    return s->d->sel_top_k;
}
