/* The draft's forward pieces: context injection (fc -> per-layer K/V cache) and one block layer
 * (attention over context + block, the DFlash2 sublayer conv, SwiGLU). */
#include "draft/dflash_impl.h"

/* ---------------------------------------------------------------- forward pieces */

void dflash_linear(pf_dflash_state *s, const pf_weight *W, const float *x, int64_t ldx, int B, float *y, int64_t ldy) {
    pf_linear(s->k, s->pool, s->sc->act, W, x, ldx, B, y, ldy, 0);
}

static void pass_linear(const dflash_pass *p, const pf_weight *W, const float *x, int64_t ldx, float *y, int64_t ldy) {
    pf_linear(p->k, p->pool, p->sc->act, W, x, ldx, p->rows, y, ldy, 0);
}

dflash_pass dflash_state_pass(pf_dflash_state *s, dflash_seq *one, int B, int64_t pos0) {
    *one = (dflash_seq){.kv = s->kv, .pos0 = pos0, .r0 = 0, .B = B};
    return (dflash_pass){.d = s->d, .k = s->k, .pool = s->pool, .sc = s->sc, .cu = s->cu, .dyn = s->dyn, .seq = one,
                         .n_seq = 1, .rows = B};
}

void dflash_pass_rope(const dflash_pass *p) {
    const pf_hparams *hp = &p->d->hp;
    for (int i = 0; i < p->n_seq; i++) {
        const dflash_seq *q = &p->seq[i];
        for (int r = 0; r < q->B; r++)
            pf_rope_angles(hp->head_dim, q->pos0 + r, hp->rope_theta, p->sc->rope + (size_t)(q->r0 + r) * hp->head_dim);
    }
}

/* Layer l's attention inputs from the pass's input rows `in` (ctx rows for a context, block rows
 * otherwise): K/V rows QK-normed, roped at their sequence's pos0 + r (the angles in sc->rope) and
 * stored at that position of its cache; with q, the block's query rows too (projected with them
 * from the same prepared rows, normed, roped). */
static void attn_inputs(const dflash_pass *p, int l, const float *in, float *q) {
    const pf_dflash *d = p->d;
    const pf_hparams *hp = &d->hp;
    const dflash_layer *L = &d->layers[l];
    pf_layer_scratch *sc = p->sc;
    const int H = hp->n_embd, hd = hp->head_dim, first = q ? 0 : 1;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_head_kv * hd;
    const pf_weight *W[3] = {&L->attn_q, &L->attn_k, &L->attn_v};
    float *y[3] = {q, sc->kbuf, sc->vbuf};
    const int64_t ldy[3] = {qd, kvd, kvd};
    pf_linear_n(p->k, p->pool, sc->act, 3 - first, W + first, in, H, p->rows, y + first, ldy + first, 0);
    for (int i = 0; i < p->n_seq; i++) {
        const dflash_seq *sq = &p->seq[i];
        for (int j = 0; j < sq->B; j++) {
            size_t r = (size_t)(sq->r0 + j);
            pf_layer_qk_row(p->k, hp, L->q_norm, L->k_norm, sq->kv, l, sq->pos0 + j, sc->rope + r * hd,
                            q ? q + r * qd : NULL, sc->kbuf + r * kvd, sc->vbuf + r * kvd);
        }
    }
}

pf_rc pf_dflash_append_context(pf_dflash_state *s, const float *taps, int n, char err[PF_ERR_LEN]) {
    const pf_dflash *d = s->d;
    const pf_hparams *hp = &d->hp;
    const int H = hp->n_embd;
    if (n < 0 || (n > 0 && !taps)) {
        snprintf(err, PF_ERR_LEN, "dflash: append_context: bad rows (%d)", n);
        return PF_RC_ARG;
    }
    pf_kv_cache *kv = s->kv;
    if (kv->len + n > kv->n_ctx) {
        snprintf(err, PF_ERR_LEN, "dflash: context full: %lld + %d rows exceed the draft context of %lld",
                 (long long)kv->len, n, (long long)kv->n_ctx);
        return PF_RC_CONTEXT;
    }
    pf_rc rc = dflash_ensure_rows(s, PF_CHUNK_ROWS, err);
    if (rc != PF_RC_OK) return rc;
    const int64_t feat = d->fc.cols;
    for (int r0 = 0; r0 < n; r0 += PF_CHUNK_ROWS) {
        int R = n - r0 < PF_CHUNK_ROWS ? n - r0 : PF_CHUNK_ROWS;
        float *xn = s->sc->xn;
        dflash_linear(s, &d->fc, taps + (size_t)r0 * feat, feat, R, xn, H);
        for (int r = 0; r < R; r++) s->k->rmsnorm(xn + (size_t)r * H, d->enc_norm, H, hp->rms_eps, xn + (size_t)r * H);
        dflash_seq one;
        const dflash_pass p = dflash_state_pass(s, &one, R, kv->len);
        dflash_pass_rope(&p);
        for (int l = 0; l < hp->n_layer; l++) attn_inputs(&p, l, xn, NULL);
        kv->len += R;
    }
    return PF_RC_OK;
}

/* DFlash2 conv over the B rows of the block (taps never reach before row 0):
 * out[t][c] = sum_tap (base[side][tap][c] + dyn[t][side][tap][c / group]) * z[t - tap][c]. */
static void conv_rows(const pf_dflash *d, const float *z, int B, const float *base, const float *dyn, int side,
                      float *out) {
    const int H = d->hp.n_embd, K = d->conv_k, G = d->conv_groups, gs = d->conv_group;
    for (int t = 0; t < B; t++) {
        const float *dy = dyn + ((size_t)t * 2 + side) * K * G;
        float *o = out + (size_t)t * H;
        for (int c = 0; c < H; c++) {
            float acc = (base[(size_t)side * K * H + c] + dy[c / gs]) * z[(size_t)t * H + c];
            for (int tap = 1; tap < K && tap <= t; tap++)
                acc += (base[((size_t)side * K + tap) * H + c] + dy[tap * G + c / gs]) * z[(size_t)(t - tap) * H + c];
            o[c] = acc;
        }
    }
}

static void add_rows(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

/* conv_rows of every sequence of the pass over its own rows (a sequence's taps stay within it). */
static void conv_pass(const dflash_pass *p, const float *z, const float *base, int side, float *out) {
    const int64_t H = p->d->hp.n_embd, dynw = 2 * (int64_t)p->d->conv_k * p->d->conv_groups;
    for (int i = 0; i < p->n_seq; i++) {
        const size_t r0 = (size_t)p->seq[i].r0;
        conv_rows(p->d, z + r0 * H, p->seq[i].B, base, p->dyn + r0 * dynw, side, out + r0 * H);
    }
}

void dflash_block_layer(const dflash_pass *p, int l) {
    const pf_dflash *d = p->d;
    const pf_hparams *hp = &d->hp;
    const dflash_layer *L = &d->layers[l];
    const pf_kernels *k = p->k;
    pf_layer_scratch *sc = p->sc;
    const int H = hp->n_embd, hd = hp->head_dim, v2 = d->version == 2, B = p->rows;
    const int64_t qd = (int64_t)hp->n_head * hd;
    const size_t BH = (size_t)B * H;
    const int64_t dynw = 2 * (int64_t)d->conv_k * d->conv_groups;

    /* attention: x += [conv1 o] attn([conv0] rmsnorm(x)) */
    for (int r = 0; r < B; r++) k->rmsnorm(sc->x + (size_t)r * H, L->attn_norm, H, hp->rms_eps, sc->xn + (size_t)r * H);
    const float *in = sc->xn;
    if (v2) {
        pass_linear(p, &L->attn_conv_proj, sc->xn, H, p->dyn, dynw);
        conv_pass(p, sc->xn, L->attn_conv_base, 0, p->cu);
        in = p->cu;
    }
    attn_inputs(p, l, in, sc->q); /* K/V after each context; dropped when the block is done */
    /* a block's rows see their context and their whole block (unless the draft is causal), within
     * the layer's window */
    for (int i = 0; i < p->n_seq; i++) {
        const dflash_seq *sq = &p->seq[i];
        const size_t r0 = (size_t)sq->r0;
        const pf_attn_rows rows = {.q = sc->q + r0 * qd, .ldq = qd, .B = sq->B, .n_head = hp->n_head,
                                   .pos0 = sq->pos0, .n_keys = sq->pos0 + sq->B, .causal = d->causal,
                                   .window = L->window, .out = sc->att + r0 * qd, .ldo = qd};
        pf_kv_attend(k, p->pool, sq->kv, l, &rows);
    }
    pass_linear(p, &L->attn_o, sc->att, qd, sc->tmp, H);
    if (v2) {
        conv_pass(p, sc->tmp, L->attn_conv_base, 1, p->cu);
        add_rows(sc->x, p->cu, BH);
    } else {
        add_rows(sc->x, sc->tmp, BH);
    }

    /* MLP: x += [conv1 o] swiglu([conv0] rmsnorm(x)) */
    for (int r = 0; r < B; r++) k->rmsnorm(sc->x + (size_t)r * H, L->ffn_norm, H, hp->rms_eps, sc->xn + (size_t)r * H);
    in = sc->xn;
    if (v2) {
        pass_linear(p, &L->ffn_conv_proj, sc->xn, H, p->dyn, dynw);
        conv_pass(p, sc->xn, L->ffn_conv_base, 0, p->cu);
        in = p->cu;
    }
    const pf_weight *W[2] = {&L->ffn_gate, &L->ffn_up};
    float *y[2] = {sc->gate, sc->up};
    const int64_t ldy[2] = {hp->n_ff, hp->n_ff};
    pf_linear_n(k, p->pool, sc->act, 2, W, in, H, B, y, ldy, 0);
    pf_swiglu_rows(k, sc->gate, sc->up, B, hp->n_ff);
    pass_linear(p, &L->ffn_down, sc->gate, hp->n_ff, sc->tmp, H);
    if (v2) {
        conv_pass(p, sc->tmp, L->ffn_conv_base, 1, p->cu);
        add_rows(sc->x, p->cu, BH);
    } else {
        add_rows(sc->x, sc->tmp, BH);
    }
}
