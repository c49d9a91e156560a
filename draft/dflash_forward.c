/* The draft's forward pieces: context injection (fc -> per-layer K/V cache) and one block layer
 * (attention over context + block, the DFlash2 sublayer conv, SwiGLU). */
#include "draft/dflash_impl.h"

/* ---------------------------------------------------------------- forward pieces */

void dflash_linear(pf_dflash_state *s, const pf_weight *W, const float *x, int64_t ldx, int B, float *y, int64_t ldy) {
    pf_linear(s->k, s->pool, s->sc->act, W, x, ldx, B, y, ldy, 0);
}

/* Layer l's attention inputs from its input rows `in` (ctx rows for the context, block rows
 * otherwise): K/V rows QK-normed, roped at pos0 + r (the angles in sc->rope) and stored at cache
 * position pos0 + r; with q, the block's query rows too (projected with them from the same
 * prepared rows, normed, roped). */
static void attn_inputs(pf_dflash_state *s, int l, const float *in, int B, int64_t pos0, float *q) {
    const pf_dflash *d = s->d;
    const pf_hparams *hp = &d->hp;
    const dflash_layer *L = &d->layers[l];
    pf_layer_scratch *sc = s->sc;
    const int H = hp->n_embd, hd = hp->head_dim, first = q ? 0 : 1;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_head_kv * hd;
    const pf_weight *W[3] = {&L->attn_q, &L->attn_k, &L->attn_v};
    float *y[3] = {q, sc->kbuf, sc->vbuf};
    const int64_t ldy[3] = {qd, kvd, kvd};
    pf_linear_n(s->k, s->pool, sc->act, 3 - first, W + first, in, H, B, y + first, ldy + first, 0);
    for (int r = 0; r < B; r++)
        pf_layer_qk_row(s->k, hp, L->q_norm, L->k_norm, s->kv, l, pos0 + r, sc->rope + (size_t)r * hd,
                        q ? q + (size_t)r * qd : NULL, sc->kbuf + (size_t)r * kvd, sc->vbuf + (size_t)r * kvd);
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
        pf_layer_rope_table(s->sc, hp, kv->len, R);
        for (int l = 0; l < hp->n_layer; l++) attn_inputs(s, l, xn, R, kv->len, NULL);
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

/* One draft layer over the B block rows at positions pos0.. (the context is already cached, the
 * rows' RoPE angles are in sc->rope). */
void dflash_block_layer(pf_dflash_state *s, int l, int B, int64_t pos0) {
    const pf_dflash *d = s->d;
    const pf_hparams *hp = &d->hp;
    const dflash_layer *L = &d->layers[l];
    const pf_kernels *k = s->k;
    pf_layer_scratch *sc = s->sc;
    const int H = hp->n_embd, hd = hp->head_dim, v2 = d->version == 2;
    const int64_t qd = (int64_t)hp->n_head * hd;
    const size_t BH = (size_t)B * H;
    const int64_t dynw = 2 * (int64_t)d->conv_k * d->conv_groups;

    /* attention: x += [conv1 o] attn([conv0] rmsnorm(x)) */
    for (int r = 0; r < B; r++) k->rmsnorm(sc->x + (size_t)r * H, L->attn_norm, H, hp->rms_eps, sc->xn + (size_t)r * H);
    const float *in = sc->xn;
    if (v2) {
        dflash_linear(s, &L->attn_conv_proj, sc->xn, H, B, s->dyn, dynw);
        conv_rows(d, sc->xn, B, L->attn_conv_base, s->dyn, 0, s->cu);
        in = s->cu;
    }
    attn_inputs(s, l, in, B, pos0, sc->q); /* K/V after the context; dropped when the block is done */
    /* the block's rows see the context and the whole block (unless the draft is causal), within
     * the layer's window */
    const pf_attn_rows rows = {.q = sc->q, .ldq = qd, .B = B, .n_head = hp->n_head, .pos0 = pos0, .n_keys = pos0 + B,
                               .causal = d->causal, .window = L->window, .out = sc->att, .ldo = qd};
    pf_kv_attend(k, s->pool, s->kv, l, &rows);
    dflash_linear(s, &L->attn_o, sc->att, qd, B, sc->tmp, H);
    if (v2) {
        conv_rows(d, sc->tmp, B, L->attn_conv_base, s->dyn, 1, s->cu);
        add_rows(sc->x, s->cu, BH);
    } else {
        add_rows(sc->x, sc->tmp, BH);
    }

    /* MLP: x += [conv1 o] swiglu([conv0] rmsnorm(x)) */
    for (int r = 0; r < B; r++) k->rmsnorm(sc->x + (size_t)r * H, L->ffn_norm, H, hp->rms_eps, sc->xn + (size_t)r * H);
    in = sc->xn;
    if (v2) {
        dflash_linear(s, &L->ffn_conv_proj, sc->xn, H, B, s->dyn, dynw);
        conv_rows(d, sc->xn, B, L->ffn_conv_base, s->dyn, 0, s->cu);
        in = s->cu;
    }
    const pf_weight *W[2] = {&L->ffn_gate, &L->ffn_up};
    float *y[2] = {sc->gate, sc->up};
    const int64_t ldy[2] = {hp->n_ff, hp->n_ff};
    pf_linear_n(k, s->pool, sc->act, 2, W, in, H, B, y, ldy, 0);
    pf_swiglu_rows(k, sc->gate, sc->up, B, hp->n_ff);
    dflash_linear(s, &L->ffn_down, sc->gate, hp->n_ff, B, sc->tmp, H);
    if (v2) {
        conv_rows(d, sc->tmp, B, L->ffn_conv_base, s->dyn, 1, s->cu);
        add_rows(sc->x, s->cu, BH);
    } else {
        add_rows(sc->x, sc->tmp, BH);
    }
}
