/* The Qwen3 forward over B rows (target.md). Reads like the math; kernels do the heavy lifting.
 * Rows are processed in chunks of ctx->max_rows; every per-row step uses the same code whatever
 * the chunk size, so a B-row forward equals B one-row forwards bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model.h"
#include "formats/quant.h"
#include "engine/clock.h"

#define CHUNK_ROWS 32

const char *const pf_op_names[PF_OP_COUNT] = {"q/k/v", "attention", "o", "gate/up", "down", "head", "elementwise"};

/* Op timing: the time since the previous mark goes to op (nothing when timing is off). */
static void op_mark(pf_ctx *c, int op, double *t) {
    if (!c->op_s) return;
    double n = pf_now_s();
    c->op_s[op] += n - *t;
    *t = n;
}

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

pf_ctx *pf_ctx_new(const pf_model *m, int64_t n_ctx, int n_threads, const pf_kernels *k, char err[PF_ERR_LEN]) {
    const pf_hparams *hp = &m->hp;
    pf_ctx *c = calloc(1, sizeof *c);
    if (!c) goto oom;
    c->model = m;
    c->k = k ? k : pf_kernels_best();
    c->max_rows = CHUNK_ROWS;
    c->pool = pf_pool_create(n_threads < 1 ? 1 : n_threads);
    c->kv = pf_kv_new(hp, n_ctx);
    size_t R = (size_t)c->max_rows;
    size_t qd = (size_t)hp->n_head * hp->head_dim, kvd = (size_t)hp->n_head_kv * hp->head_dim;
    c->x = malloc(R * hp->n_embd * sizeof(float));
    c->xn = malloc(R * hp->n_embd * sizeof(float));
    c->tmp = malloc(R * hp->n_embd * sizeof(float));
    c->q = malloc(R * qd * sizeof(float));
    c->att = malloc(R * qd * sizeof(float));
    c->kbuf = malloc(R * kvd * sizeof(float));
    c->vbuf = malloc(R * kvd * sizeof(float));
    c->gate = malloc(R * hp->n_ff * sizeof(float));
    c->up = malloc(R * hp->n_ff * sizeof(float));
    c->logit_row = malloc((size_t)hp->n_vocab * sizeof(float));
    size_t act = 0;
    const pf_layer *L = &m->layers[0];
    const pf_weight *ws[] = {&L->attn_q, &L->attn_o, &L->ffn_down, &m->output};
    for (int i = 0; i < 4; i++) act = max_sz(act, pf_act_row_bytes(ws[i]->type, ws[i]->cols));
    /* layers may mix types: size for the widest format at both widths */
    act = max_sz(act, max_sz(pf_act_row_bytes(PF_TYPE_F32, hp->n_ff), pf_act_row_bytes(PF_TYPE_F32, (int64_t)qd)));
    act = max_sz(act, pf_act_row_bytes(PF_TYPE_F32, hp->n_embd));
    c->act = malloc(R * act);
    if (!c->pool || !c->kv || !c->x || !c->xn || !c->tmp || !c->q || !c->att || !c->kbuf || !c->vbuf ||
        !c->gate || !c->up || !c->logit_row || !c->act)
        goto oom;
    return c;
oom:
    snprintf(err, PF_ERR_LEN, "out of memory for a context of %lld tokens", (long long)n_ctx);
    pf_ctx_free(c);
    return NULL;
}

void pf_ctx_free(pf_ctx *c) {
    if (!c) return;
    if (c->pool) pf_pool_destroy(c->pool);
    pf_kv_free(c->kv);
    free(c->x); free(c->xn); free(c->tmp); free(c->q); free(c->att); free(c->kbuf); free(c->vbuf);
    free(c->gate); free(c->up); free(c->logit_row); free(c->act);
    free(c);
}

/* y rows (ldy) = W . x rows (ldx): activations prepared once, then one pooled matmul. */
static void linear(pf_ctx *c, const pf_weight *W, const float *x, int64_t ldx, int B, float *y, int64_t ldy) {
    pf_act_prepare(c->k, W->type, x, ldx, B, W->cols, c->act);
    pf_matmul(c->k, c->pool, W, c->act, B, y, ldy);
}

/* Several weights reading the same rows (q/k/v, gate/up): when all take the same activation
 * format and width, the rows are prepared once and the matmuls share one pool run (the results
 * are the same bytes either way); otherwise one linear each. */
static void linear_n(pf_ctx *c, int n, const pf_weight *const *W, const float *x, int64_t ldx, int B,
                     float *const *y, const int64_t *ldy) {
    int same = 1;
    for (int i = 1; i < n; i++)
        if (W[i]->type != W[0]->type || W[i]->cols != W[0]->cols) same = 0;
    if (!same) {
        for (int i = 0; i < n; i++) linear(c, W[i], x, ldx, B, y[i], ldy[i]);
        return;
    }
    pf_act_prepare(c->k, W[0]->type, x, ldx, B, W[0]->cols, c->act);
    pf_matmul_n(c->k, c->pool, n, W, c->act, B, y, ldy);
}

static void forward_chunk(pf_ctx *c, const int32_t *tokens, int B, const pf_batch *b, int row0) {
    const pf_model *m = c->model;
    const pf_hparams *hp = &m->hp;
    const pf_kernels *k = c->k;
    pf_kv_cache *kv = c->kv;
    const int H = hp->n_embd, hd = hp->head_dim;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_head_kv * hd;
    const int64_t pos0 = kv->len;
    double tm = c->op_s ? pf_now_s() : 0;

    for (int r = 0; r < B; r++) pf_dequantize_row(m->tok_embd.type,
        (const char *)m->tok_embd.data + (size_t)tokens[r] * m->tok_embd.row_bytes, c->x + (size_t)r * H, H);

    /* RoPE angles of the chunk's positions, once for all layers (hd <= 256: else per call) */
    float rope_cs[CHUNK_ROWS * 256];
    const int rope_tab = hd <= 256 && B <= CHUNK_ROWS;
    if (rope_tab)
        for (int r = 0; r < B; r++) pf_rope_angles(hd, pos0 + r, hp->rope_theta, rope_cs + (size_t)r * hd);

    for (int l = 0; l < hp->n_layer; l++) {
        const pf_layer *L = &m->layers[l];
        for (int r = 0; r < B; r++) k->rmsnorm(c->x + (size_t)r * H, L->attn_norm, H, hp->rms_eps, c->xn + (size_t)r * H);
        op_mark(c, PF_OP_ELEMENT, &tm);
        {
            const pf_weight *W[3] = {&L->attn_q, &L->attn_k, &L->attn_v};
            float *y[3] = {c->q, c->kbuf, c->vbuf};
            const int64_t ldy[3] = {qd, kvd, kvd};
            linear_n(c, 3, W, c->xn, H, B, y, ldy);
        }
        op_mark(c, PF_OP_QKV, &tm);
        pf_half *Kc = kv->k + (size_t)l * kv->layer_stride, *Vc = kv->v + (size_t)l * kv->layer_stride;
        for (int r = 0; r < B; r++) {
            float *q = c->q + (size_t)r * qd, *kr = c->kbuf + (size_t)r * kvd, *vr = c->vbuf + (size_t)r * kvd;
            pf_rmsnorm_heads(k, q, hp->n_head, hd, L->q_norm, hp->rms_eps);
            pf_rmsnorm_heads(k, kr, hp->n_head_kv, hd, L->k_norm, hp->rms_eps);
            if (rope_tab) {
                pf_rope_neox_cs(q, hp->n_head, hd, rope_cs + (size_t)r * hd);
                pf_rope_neox_cs(kr, hp->n_head_kv, hd, rope_cs + (size_t)r * hd);
            } else {
                pf_rope_neox(q, hp->n_head, hd, pos0 + r, hp->rope_theta);
                pf_rope_neox(kr, hp->n_head_kv, hd, pos0 + r, hp->rope_theta);
            }
            pf_kv_store(k, Kc, Vc, kv->head_stride, hp->n_head_kv, hd, pos0 + r, kr, vr);
        }
        op_mark(c, PF_OP_ELEMENT, &tm);
        pf_attention(k, c->pool, c->q, qd, B, hp->n_head, hp->n_head_kv, hd, Kc, Vc, kv->head_stride, pos0, pos0 + B, 1, 0,
                     c->att, qd);
        op_mark(c, PF_OP_ATTENTION, &tm);
        linear(c, &L->attn_o, c->att, qd, B, c->tmp, H);
        op_mark(c, PF_OP_O, &tm);
        for (int64_t i = 0; i < (int64_t)B * H; i++) c->x[i] += c->tmp[i];

        for (int r = 0; r < B; r++) k->rmsnorm(c->x + (size_t)r * H, L->ffn_norm, H, hp->rms_eps, c->xn + (size_t)r * H);
        op_mark(c, PF_OP_ELEMENT, &tm);
        {
            const pf_weight *W[2] = {&L->ffn_gate, &L->ffn_up};
            float *y[2] = {c->gate, c->up};
            const int64_t ldy[2] = {hp->n_ff, hp->n_ff};
            linear_n(c, 2, W, c->xn, H, B, y, ldy);
        }
        op_mark(c, PF_OP_GATE_UP, &tm);
        for (int r = 0; r < B; r++)
            k->swiglu(c->gate + (size_t)r * hp->n_ff, c->up + (size_t)r * hp->n_ff, c->gate + (size_t)r * hp->n_ff, hp->n_ff);
        op_mark(c, PF_OP_ELEMENT, &tm);
        linear(c, &L->ffn_down, c->gate, hp->n_ff, B, c->tmp, H);
        op_mark(c, PF_OP_DOWN, &tm);
        for (int64_t i = 0; i < (int64_t)B * H; i++) c->x[i] += c->tmp[i];

        for (int t = 0; t < b->n_taps; t++)
            if (b->tap_layers[t] == l)
                for (int r = 0; r < B; r++)
                    memcpy(b->taps + ((size_t)(row0 + r) * b->n_taps + t) * H, c->x + (size_t)r * H, (size_t)H * sizeof(float));
        op_mark(c, PF_OP_ELEMENT, &tm);
    }
    kv->len = pos0 + B;

    if (b->logits_mode == PF_LOGITS_NONE) return;
    int first = 0;
    if (b->logits_mode == PF_LOGITS_LAST) {
        if (row0 + B != b->n) return; /* the last row is in a later chunk */
        first = B - 1;
    }
    int nr = B - first;
    for (int r = first; r < B; r++)
        k->rmsnorm(c->x + (size_t)r * H, m->output_norm, H, hp->rms_eps, c->xn + (size_t)(r - first) * H);
    float *out = b->logits_mode == PF_LOGITS_ALL ? b->logits + (size_t)row0 * hp->n_vocab : b->logits;
    linear(c, &m->output, c->xn, H, nr, out, hp->n_vocab);
    op_mark(c, PF_OP_HEAD, &tm);
}

int pf_forward(pf_ctx *c, const pf_batch *b, char err[PF_ERR_LEN]) {
    const pf_hparams *hp = &c->model->hp;
    if (b->n < 1) {
        snprintf(err, PF_ERR_LEN, "forward: no rows");
        return -1;
    }
    if (c->kv->len + b->n > c->kv->n_ctx) {
        snprintf(err, PF_ERR_LEN, "context full: %lld + %d tokens exceed the context of %lld",
                 (long long)c->kv->len, b->n, (long long)c->kv->n_ctx);
        return -1;
    }
    for (int i = 0; i < b->n; i++)
        if (b->tokens[i] < 0 || b->tokens[i] >= hp->n_vocab) {
            snprintf(err, PF_ERR_LEN, "token id %d is outside the vocabulary (%d)", b->tokens[i], hp->n_vocab);
            return -1;
        }
    for (int t = 0; t < b->n_taps; t++)
        if (b->tap_layers[t] < 0 || b->tap_layers[t] >= hp->n_layer) {
            snprintf(err, PF_ERR_LEN, "tap layer %d is outside 0..%d", b->tap_layers[t], hp->n_layer - 1);
            return -1;
        }
    for (int row0 = 0; row0 < b->n; row0 += c->max_rows) {
        int B = b->n - row0 < c->max_rows ? b->n - row0 : c->max_rows;
        forward_chunk(c, b->tokens + row0, B, b, row0);
    }
    return 0;
}
