/* Proposing a block: the one-pass block forward, the target's head over its rows, and the DFlash2
 * candidate-selector walk over each row's top-k. */
#include "draft/dflash_impl.h"

#include <assert.h>

#include "draft/block.h"
#include "draft/drafter.h"
#include "grammar/token_mask.h"

/* The k largest logits, by decreasing value (ties: lower index first), in one pass. Once k are
 * held, only values above the k-th can enter, so the scan jumps to the next such value (kernel
 * first_above); the entries and their order are those of the plain loop. */
static void top_k(const pf_kernels *kn, const float *logits, int n, int k, int32_t *cand, float *unary) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m == k) {
            i += (int)kn->first_above(logits + i, n - i, unary[k - 1]);
            if (i >= n) break;
        }
        float v = logits[i];
        int p = m < k ? m : k - 1; /* slot freed at the end */
        while (p > 0 && v > unary[p - 1]) {
            unary[p] = unary[p - 1];
            cand[p] = cand[p - 1];
            p--;
        }
        unary[p] = v;
        cand[p] = i;
        if (m < k) m++;
    }
}

static float dot_f32(const float *a, const float *b, int n) {
    float acc = 0;
    for (int i = 0; i < n; i++) acc += a[i] * b[i];
    return acc;
}

static void weight_row(const pf_weight *w, int64_t row, float *out) {
    pf_dequantize_row(w->type, (const char *)w->data + (size_t)row * w->row_bytes, out, w->cols);
}

/* softmax(score / T) over the candidates, listed by decreasing score (ties: candidate order);
 * entries whose probability rounds to 0 are left out so a draw never lands on one. */
static void selector_dist(const float *score, const int32_t *cand, int k, float temp, pf_dist *out) {
    int idx[1024];
    for (int j = 0; j < k; j++) idx[j] = j;
    for (int j = 1; j < k; j++) { /* insertion sort: k is small and the order must be stable */
        int v = idx[j], p = j;
        while (p > 0 && score[v] > score[idx[p - 1]]) {
            idx[p] = idx[p - 1];
            p--;
        }
        idx[p] = v;
    }
    double mx = score[idx[0]], sum = 0;
    double e[1024];
    for (int j = 0; j < k; j++) sum += e[j] = exp(((double)score[idx[j]] - mx) / temp);
    int m = 0;
    for (int j = 0; j < k; j++) {
        float p = (float)(e[j] / sum);
        if (p > 0) {
            out->ids[m] = cand[idx[j]];
            out->p[m++] = p;
        }
    }
    out->n = m;
}

void pf_dflash_set_filter(pf_dflash_state *s, const pf_draft_filter *f) { s->filter = f; }
int pf_dflash_n_proposed(const pf_dflash_state *s) { return s->n_proposed; }


/* A row's logits (NV of them, head-subset indices) restricted to the filter's tokens; 0 when none
 * is allowed. */
static int filter_logits(const pf_dflash_state *s, float *logits, int NV) {
    const uint32_t *bits = s->filter->mask(s->filter->ctx);
    int n = 0;
    for (int i = 0; i < NV; i++) {
        if (pf_mask_has(bits, s->sub ? s->sub->ids[i] : i)) n++;
        else logits[i] = -INFINITY;
    }
    return n;
}

/* DFlash: each row's token from its logits (restricted by the filter). Returns the drafts made. */
static int propose_v1(pf_dflash_state *s, int B, int NV, const pf_sampling *samp, pf_rng *rng, int32_t *draft,
                      pf_dist *q) {
    pf_sampling greedy = {0, 0, 1};
    const int sampled = samp && samp->temp > 0;
    for (int t = 1; t < B; t++) {
        float *row = s->logits + (size_t)(t - 1) * NV;
        if (s->filter && !filter_logits(s, row, NV)) return t - 1;
        pf_dist *dist = q ? &q[t - 1] : &s->dist;
        pf_sampling_probs(sampled ? samp : &greedy, row, NV, dist);
        if (s->sub)
            for (int i = 0; i < dist->n; i++) dist->ids[i] = s->sub->ids[dist->ids[i]];
        draft[t - 1] = pf_dist_sample(dist, rng);
        if (s->filter && s->filter->take(s->filter->ctx, draft[t - 1])) return t;
    }
    return B - 1;
}

/* The arguments pf_dflash_propose cannot work with, reported. */
pf_rc dflash_check_propose(const pf_dflash_state *s, int32_t bonus, int B, int sampled, const pf_rng *rng,
                            const pf_dist *q, char err[PF_ERR_LEN]) {
    const pf_dflash *d = s->d;
    const int V = d->hp.n_vocab, need = d->version == 2 ? d->sel_top_k : V;
    if (s->kv->len + B > s->kv->n_ctx) {
        snprintf(err, PF_ERR_LEN, "dflash: context full: %lld context rows + a block of %d exceed %lld",
                 (long long)s->kv->len, B, (long long)s->kv->n_ctx);
        return PF_RC_CONTEXT;
    }
    if (bonus < 0 || bonus >= V) {
        snprintf(err, PF_ERR_LEN, "dflash: bonus token %d is outside the vocabulary (%d)", bonus, V);
        return PF_RC_ARG;
    }
    if (sampled && !rng) {
        snprintf(err, PF_ERR_LEN, "dflash: sampling needs an rng");
        return PF_RC_ARG;
    }
    for (int i = 0; q && i < B - 1; i++)
        if (q[i].cap < need) {
            snprintf(err, PF_ERR_LEN, "dflash: q[%d] holds %d entries, needs %d", i, q[i].cap, need);
            return PF_RC_ARG;
        }
    return PF_RC_OK;
}

/* The embedding rows of a block [bonus, MASK x (B-1)] into x (B rows). */
void dflash_embed_block(const pf_dflash *d, int32_t bonus, int B, float *x) {
    const int H = d->hp.n_embd;
    const pf_weight *emb = d->own_embd.data ? &d->own_embd : &d->target->tok_embd;
    for (int r = 0; r < B; r++) {
        float *xr = x + (size_t)r * H;
        pf_dequantize_row(emb->type, (const char *)emb->data + (size_t)(r ? d->mask : bonus) * emb->row_bytes, xr, H);
        if (d->embd_scale != 1.0f)
            for (int i = 0; i < H; i++) xr[i] *= d->embd_scale;
    }
}

/* The head s scores with (its subset's rows or the target's output) and its columns. */
const pf_weight *dflash_state_head(const pf_dflash_state *s, int *NV) {
    *NV = s->sub ? s->sub->n : s->d->hp.n_vocab;
    return s->sub ? &s->sub->w : &s->d->target->output;
}

/* logits (n rows of NV) = the trained output transform of W . hn rows, as llama.cpp applies it. */
void dflash_head_logits(const dflash_pass *p, const pf_weight *W, const float *hn, int n, float *logits, int NV) {
    const pf_dflash *d = p->d;
    pf_linear(p->k, p->pool, p->sc->act, W, hn, d->hp.n_embd, n, logits, NV, 0);
    if (d->logit_scale != 1.0f || d->softcap > 0)
        for (size_t i = 0; i < (size_t)n * NV; i++) {
            float z = logits[i] * d->logit_scale;
            logits[i] = d->softcap > 0 ? d->softcap * tanhf(z / d->softcap) : z;
        }
}

/* The pass's layers over its rows (embedded in sc->x) and the final norm into hn. */
void dflash_pass_rows(const dflash_pass *p, float *hn) {
    const pf_hparams *hp = &p->d->hp;
    const int H = hp->n_embd;
    dflash_pass_rope(p);
    for (int l = 0; l < hp->n_layer; l++) dflash_block_layer(p, l);
    for (int r = 0; r < p->rows; r++)
        p->k->rmsnorm(p->sc->x + (size_t)r * H, p->d->output_norm, H, hp->rms_eps, hn + (size_t)r * H);
}

/* The block forward: rows [bonus, MASK, ...] through the layers and the final norm (copied to
 * hidden when given), then the head over rows 1..B-1. Row k predicts the token at start + k (mask
 * filling, no shift); row 0 is discarded. With a head subset the logits are those of its NV
 * tokens (the same values the whole head gives them), and indices map back to token ids through
 * sub->ids. Returns NV. */
static int block_logits(pf_dflash_state *s, int32_t bonus, int B, float *hidden) {
    const int H = s->d->hp.n_embd;
    dflash_embed_block(s->d, bonus, B, s->sc->x);
    dflash_seq one;
    const dflash_pass p = dflash_state_pass(s, &one, B, s->kv->len);
    dflash_pass_rows(&p, s->hn);
    if (hidden) memcpy(hidden, s->hn, (size_t)B * H * sizeof(float));
    int NV;
    const pf_weight *W = dflash_state_head(s, &NV);
    dflash_head_logits(&p, W, s->hn + H, B - 1, s->logits, NV);
    return NV;
}

/* DFlash2's selector, for every row in parallel once g_t = selector_hidden @ h_t is in s->g: its
 * candidates (top-k of its logits) and their successor rows. */
static void selector_rows(pf_dflash_state *s, int B, int NV) {
    const pf_dflash *d = s->d;
    const int kk = d->sel_top_k, R = d->sel_rank;
    for (int t = 1; t < B; t++) {
        int32_t *cand = s->cand + (size_t)(t - 1) * kk;
        top_k(s->k, s->logits + (size_t)(t - 1) * NV, NV, kk, cand, s->unary + (size_t)(t - 1) * kk);
        if (s->sub)
            for (int j = 0; j < kk; j++) cand[j] = s->sub->ids[cand[j]];
        for (int j = 0; j < kk; j++) weight_row(&d->sel_succ, cand[j], s->succ + ((size_t)(t - 1) * kk + j) * R);
    }
}

/* DFlash2: then the walk from the bonus, score_t(prev, j) = unary_t[j] + <A[prev] * g_t, Bsucc[cand_t[j]]>,
 * over the candidates the filter allows. Returns the drafts made. */
static int propose_v2(pf_dflash_state *s, int32_t bonus, int B, const pf_sampling *samp, pf_rng *rng, int32_t *draft,
                      pf_dist *q) {
    const pf_dflash *d = s->d;
    const int kk = d->sel_top_k, R = d->sel_rank, sampled = samp && samp->temp > 0;
    int32_t prev = bonus;
    for (int t = 1; t < B; t++) {
        const size_t o = (size_t)(t - 1) * kk;
        const float *g = s->g + (size_t)(t - 1) * R;
        weight_row(&d->sel_pred, prev, s->pred_row);
        for (int r = 0; r < R; r++) s->ag[r] = s->pred_row[r] * g[r];
        float *score = s->score + o;
        const uint32_t *bits = s->filter ? s->filter->mask(s->filter->ctx) : NULL;
        int best = -1;
        int32_t aligned = -1; /* greedy: a refused candidate's allowed prefix, scoring above best */
        float aligned_score = -INFINITY;
        for (int j = 0; j < kk; j++) {
            score[j] = s->unary[o + j] + dot_f32(s->ag, s->succ + (o + j) * R, R);
            if (bits && !pf_mask_has(bits, s->cand[o + j])) {
                if (!sampled && s->filter->align && score[j] > aligned_score) {
                    int32_t a = s->filter->align(s->filter->ctx, s->cand[o + j]);
                    if (a >= 0) aligned = a, aligned_score = score[j];
                }
                score[j] = -INFINITY; /* the walk skips it */
            } else if (best < 0 || score[j] > score[best]) best = j;
        }
        if (best < 0 && aligned < 0) return t - 1; /* no candidate is allowed here: the block ends */
        int32_t tok;
        if (sampled) {
            pf_dist *dist = q ? &q[t - 1] : &s->dist;
            selector_dist(score, s->cand + o, kk, samp->temp, dist);
            tok = pf_dist_sample(dist, rng);
        } else {
            tok = best >= 0 && !(aligned_score > score[best]) ? s->cand[o + best] : aligned;
            if (q) {
                q[t - 1].ids[0] = tok;
                q[t - 1].p[0] = 1.0f;
                q[t - 1].n = 1;
            }
        }
        draft[t - 1] = tok;
        prev = tok;
        if (s->filter && s->filter->take(s->filter->ctx, tok)) return t;
    }
    return B - 1;
}

/* The drafts from a block's logits (and DFlash2's g rows) in s: v1 per row, v2 the selector walk. */
void dflash_propose_rows(pf_dflash_state *s, int32_t bonus, int B, int NV, const pf_sampling *samp, pf_rng *rng,
                         int32_t *draft, pf_dist *q) {
    s->last_B = B;
    s->n_proposed = B - 1;
    if (s->d->version != 2) {
        s->n_proposed = propose_v1(s, B, NV, samp, rng, draft, q);
        return;
    }
    selector_rows(s, B, NV);
    s->n_proposed = propose_v2(s, bonus, B, samp, rng, draft, q);
}

pf_rc pf_dflash_propose(pf_dflash_state *s, int32_t bonus, int B, const pf_sampling *samp, pf_rng *rng,
                        int32_t *draft, pf_dist *q, float *hidden, char err[PF_ERR_LEN]) {
    assert(B >= 2 && B <= PF_MAX_BLOCK); /* a plan's block (verify/plan.h), or less at the context's end */
    pf_rc rc = dflash_check_propose(s, bonus, B, samp && samp->temp > 0, rng, q, err);
    if (rc == PF_RC_OK) rc = dflash_ensure_rows(s, B, err);
    if (rc != PF_RC_OK) return rc;
    s->last_B = 0;
    const int NV = block_logits(s, bonus, B, hidden);
    if (s->d->version == 2)
        dflash_linear(s, &s->d->sel_hidden, s->hn + s->d->hp.n_embd, s->d->hp.n_embd, B - 1, s->g, s->d->sel_rank);
    dflash_propose_rows(s, bonus, B, NV, samp, rng, draft, q);
    return PF_RC_OK;
}
