/* The Qwen3 forward over B rows (docs/target.md). Reads like the math; kernels do the heavy lifting.
 * Rows are processed in chunks of ctx->max_rows; every per-row step uses the same code whatever
 * the chunk size, so a B-row forward equals B one-row forwards bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/forward.h"

#include "engine/batch.h"
#include "engine/layer.h"
#include "engine/op_timing.h"
#include "formats/quant.h"

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

void pf_ctx_free(pf_ctx *c) {
    if (!c) return;
    if (c->pool) pf_pool_destroy(c->pool);
    pf_kv_free(c->kv);
    pf_layer_scratch_free(c->sc);
    free(c);
}

pf_ctx *pf_ctx_new(const pf_model *m, int64_t n_ctx, int n_threads, const pf_kernels *k, char err[PF_ERR_LEN]) {
    const pf_hparams *hp = &m->hp;
    pf_ctx *c = calloc(1, sizeof *c);
    if (!c) goto oom;
    c->model = m;
    c->k = k ? k : pf_kernels_best();
    c->max_rows = PF_CHUNK_ROWS;
    c->pool = pf_pool_create(n_threads < 1 ? 1 : n_threads);
    c->kv = pf_kv_new(hp, n_ctx, PF_KV_F16);
    size_t qd = (size_t)hp->n_head * hp->head_dim;
    size_t act = 0;
    const pf_layer *L = &m->layers[0];
    const pf_weight *ws[] = {&L->attn_q, &L->attn_o, &L->ffn_down, &m->output};
    for (int i = 0; i < 4; i++) act = max_sz(act, pf_act_row_bytes(ws[i]->type, ws[i]->cols));
    /* layers may mix types: size for the widest format at both widths */
    act = max_sz(act, max_sz(pf_act_row_bytes(PF_TYPE_F32, hp->n_ff), pf_act_row_bytes(PF_TYPE_F32, (int64_t)qd)));
    act = max_sz(act, pf_act_row_bytes(PF_TYPE_F32, hp->n_embd));
    c->sc = pf_layer_scratch_new(hp, c->max_rows, act);
    if (!c->pool || !c->kv || !c->sc) goto oom;
    return c;
oom:
    snprintf(err, PF_ERR_LEN, "out of memory for a context of %lld tokens", (long long)n_ctx);
    pf_ctx_free(c);
    return NULL;
}

int pf_ctx_set_kv_type(pf_ctx *c, pf_kv_type type, char err[PF_ERR_LEN]) {
    if (c->kv->type == type) return 0;
    int hd = c->model->hp.head_dim;
    if (type == PF_KV_Q8 && (hd % 4 || hd > PF_KV_Q8_MAX_HD)) {
        snprintf(err, PF_ERR_LEN, "the 8-bit KV cache needs a head dimension that is a multiple of 4 up to %d (this "
                 "model's: %d)", PF_KV_Q8_MAX_HD, hd);
        return -1;
    }
    if (c->kv->len) {
        snprintf(err, PF_ERR_LEN, "the KV cache type can only change while the cache is empty");
        return -1;
    }
    pf_kv_cache *kv = pf_kv_new(&c->model->hp, c->kv->n_ctx, type);
    if (!kv) {
        snprintf(err, PF_ERR_LEN, "out of memory for a KV cache of %lld tokens", (long long)c->kv->n_ctx);
        return -1;
    }
    pf_kv_free(c->kv);
    c->kv = kv;
    return 0;
}

/* pf_shared_input of a layer's q/k/v projections. */
static const pf_weight *qkv_input(const pf_layer *L) {
    const pf_weight *W[3] = {&L->attn_q, &L->attn_k, &L->attn_v};
    return pf_shared_input(3, W);
}

/* pf_linear through the context's scratch. */
static void linear(pf_ctx *c, const pf_weight *W, const float *x, int64_t ldx, int B, float *y, int64_t ldy,
                   int prepared) {
    pf_linear(c->k, c->pool, c->sc->act, W, x, ldx, B, y, ldy, prepared);
}

/* The per-row steps between matmuls. From ROWS_POOL_MIN rows they are split over the pool by rows
 * (the gain is in docs/performance.md); below, the pool's wake-up costs about what it saves. Each
 * row's arithmetic is the same either way. A step whose output feeds a matmul also prepares the
 * row's activation for it (prep: that matmul's weight, NULL for none), so the threads quantize
 * their own rows instead of the caller all of them while the others wait. */
#define ROWS_POOL_MIN 4

typedef enum {
    ROWS_ATTN_NORM, /* xn = rmsnorm(x, attn_norm) (first layer) */
    ROWS_QK,        /* q/k head norms, RoPE, k and v into the cache */
    ROWS_O_OUT,     /* x += o output; xn = rmsnorm(x, ffn_norm) */
    ROWS_SWIGLU,    /* gate = swiglu(gate, up) */
    ROWS_DOWN_OUT,  /* x += down output; taps; xn = rmsnorm(x, next layer's attn_norm) */
} rows_step;

typedef struct {
    pf_ctx *c;
    const pf_batch *b;
    int l, B, row0;
    int64_t pos0;
    rows_step step;
    const pf_weight *prep;
} rows_job;

static void prep_row(const rows_job *j, const float *x, int r) {
    const pf_weight *W = j->prep;
    if (W)
        pf_act_prepare_row(j->c->k, W->type, x, W->cols,
                           (char *)j->c->sc->act + (size_t)r * pf_act_row_bytes(W->type, W->cols));
}

static void row_step(const rows_job *j, int r) {
    pf_ctx *c = j->c;
    const pf_kernels *k = c->k;
    const pf_model *m = c->model;
    const pf_hparams *hp = &m->hp;
    const pf_layer *L = &m->layers[j->l];
    const int H = hp->n_embd, hd = hp->head_dim;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_head_kv * hd;
    pf_layer_scratch *sc = c->sc;
    float *x = sc->x + (size_t)r * H, *xn = sc->xn + (size_t)r * H, *t = sc->tmp + (size_t)r * H;
    switch (j->step) {
    case ROWS_ATTN_NORM:
        k->rmsnorm(x, L->attn_norm, H, hp->rms_eps, xn);
        prep_row(j, xn, r);
        break;
    case ROWS_QK:
        pf_layer_qk_row(k, hp, L->q_norm, L->k_norm, c->kv, j->l, j->pos0 + r,
                        sc->rope + (size_t)r * hd, sc->q + (size_t)r * qd,
                        sc->kbuf + (size_t)r * kvd, sc->vbuf + (size_t)r * kvd);
        break;
    case ROWS_O_OUT:
        for (int i = 0; i < H; i++) x[i] += t[i];
        k->rmsnorm(x, L->ffn_norm, H, hp->rms_eps, xn);
        prep_row(j, xn, r);
        break;
    case ROWS_SWIGLU: {
        float *g = sc->gate + (size_t)r * hp->n_ff;
        pf_swiglu_rows(k, g, sc->up + (size_t)r * hp->n_ff, 1, hp->n_ff);
        prep_row(j, g, r);
        break;
    }
    case ROWS_DOWN_OUT: {
        const pf_batch *b = j->b;
        for (int i = 0; i < H; i++) x[i] += t[i];
        for (int ti = 0; ti < b->n_taps; ti++)
            if (b->tap_layers[ti] == j->l)
                memcpy(b->taps + ((size_t)(j->row0 + r) * b->n_taps + ti) * H, x, (size_t)H * sizeof(float));
        if (j->l + 1 < hp->n_layer) {
            k->rmsnorm(x, m->layers[j->l + 1].attn_norm, H, hp->rms_eps, xn);
            prep_row(j, xn, r);
        }
        break;
    }
    }
}

static void rows_worker(void *arg, int ith, int nth) {
    const rows_job *j = arg;
    for (int r = j->B * ith / nth; r < j->B * (ith + 1) / nth; r++) row_step(j, r);
}

/* Runs a step; returns whether it prepared the activations for prep (only when split over the
 * pool: below ROWS_POOL_MIN rows the matmul prepares them as before). */
static int rows_run(rows_job *j, rows_step step, const pf_weight *prep) {
    j->step = step;
    if (j->B >= ROWS_POOL_MIN && pf_pool_size(j->c->pool) > 1) {
        j->prep = prep;
        pf_pool_run(j->c->pool, rows_worker, j);
        return prep != NULL;
    }
    j->prep = NULL;
    for (int r = 0; r < j->B; r++) row_step(j, r);
    return 0;
}

static void forward_chunk(pf_ctx *c, const int32_t *tokens, int B, const pf_batch *b, int row0) {
    const pf_model *m = c->model;
    const pf_hparams *hp = &m->hp;
    const pf_kernels *k = c->k;
    pf_kv_cache *kv = c->kv;
    const int H = hp->n_embd, hd = hp->head_dim;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_head_kv * hd;
    const int64_t pos0 = kv->len;
    pf_op_clock clk = pf_op_clock_start(c->op_s);

    for (int r = 0; r < B; r++) pf_dequantize_row(m->tok_embd.type,
        (const char *)m->tok_embd.data + (size_t)tokens[r] * m->tok_embd.row_bytes, c->sc->x + (size_t)r * H, H);

    pf_layer_rope_table(c->sc, hp, pos0, B); /* the chunk's RoPE angles, once for all layers */

    rows_job rj = {c, b, 0, B, row0, pos0, ROWS_ATTN_NORM, NULL};
    int prepared = rows_run(&rj, ROWS_ATTN_NORM, qkv_input(&m->layers[0]));
    for (int l = 0; l < hp->n_layer; l++) {
        const pf_layer *L = &m->layers[l];
        rj.l = l;
        pf_op_mark(&clk, PF_OP_ELEMENT);
        {
            const pf_weight *W[3] = {&L->attn_q, &L->attn_k, &L->attn_v};
            float *y[3] = {c->sc->q, c->sc->kbuf, c->sc->vbuf};
            const int64_t ldy[3] = {qd, kvd, kvd};
            pf_linear_n(k, c->pool, c->sc->act, 3, W, c->sc->xn, H, B, y, ldy, prepared);
        }
        pf_op_mark(&clk, PF_OP_QKV);
        rows_run(&rj, ROWS_QK, NULL);
        pf_op_mark(&clk, PF_OP_ELEMENT);
        const pf_attn_rows rows = {.q = c->sc->q, .ldq = qd, .B = B, .n_head = hp->n_head, .pos0 = pos0,
                                   .n_keys = pos0 + B, .causal = 1, .out = c->sc->att, .ldo = qd};
        pf_kv_attend(k, c->pool, kv, l, &rows);
        pf_op_mark(&clk, PF_OP_ATTENTION);
        linear(c, &L->attn_o, c->sc->att, qd, B, c->sc->tmp, H, 0);
        pf_op_mark(&clk, PF_OP_O);
        const pf_weight *W[2] = {&L->ffn_gate, &L->ffn_up};
        prepared = rows_run(&rj, ROWS_O_OUT, pf_shared_input(2, W));
        pf_op_mark(&clk, PF_OP_ELEMENT);
        {
            float *y[2] = {c->sc->gate, c->sc->up};
            const int64_t ldy[2] = {hp->n_ff, hp->n_ff};
            pf_linear_n(k, c->pool, c->sc->act, 2, W, c->sc->xn, H, B, y, ldy, prepared);
        }
        pf_op_mark(&clk, PF_OP_GATE_UP);
        prepared = rows_run(&rj, ROWS_SWIGLU, &L->ffn_down);
        pf_op_mark(&clk, PF_OP_ELEMENT);
        linear(c, &L->ffn_down, c->sc->gate, hp->n_ff, B, c->sc->tmp, H, prepared);
        pf_op_mark(&clk, PF_OP_DOWN);
        prepared = rows_run(&rj, ROWS_DOWN_OUT, l + 1 < hp->n_layer ? qkv_input(&m->layers[l + 1]) : NULL);
        pf_op_mark(&clk, PF_OP_ELEMENT);
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
        k->rmsnorm(c->sc->x + (size_t)r * H, m->output_norm, H, hp->rms_eps, c->sc->xn + (size_t)(r - first) * H);
    float *out = b->logits_mode == PF_LOGITS_ALL ? b->logits + (size_t)row0 * hp->n_vocab : b->logits;
    linear(c, &m->output, c->sc->xn, H, nr, out, hp->n_vocab, 0);
    pf_op_mark(&clk, PF_OP_HEAD);
}

pf_rc pf_forward(pf_ctx *c, const pf_batch *b, char err[PF_ERR_LEN]) {
    const pf_hparams *hp = &c->model->hp;
    if (b->n < 1) {
        snprintf(err, PF_ERR_LEN, "forward: no rows");
        return PF_RC_ARG;
    }
    if (c->kv->len + b->n > c->kv->n_ctx) {
        snprintf(err, PF_ERR_LEN, "context full: %lld + %d tokens exceed the context of %lld",
                 (long long)c->kv->len, b->n, (long long)c->kv->n_ctx);
        return PF_RC_CONTEXT;
    }
    for (int i = 0; i < b->n; i++)
        if (b->tokens[i] < 0 || b->tokens[i] >= hp->n_vocab) {
            snprintf(err, PF_ERR_LEN, "token id %d is outside the vocabulary (%d)", b->tokens[i], hp->n_vocab);
            return PF_RC_ARG;
        }
    for (int t = 0; t < b->n_taps; t++)
        if (b->tap_layers[t] < 0 || b->tap_layers[t] >= hp->n_layer) {
            snprintf(err, PF_ERR_LEN, "tap layer %d is outside 0..%d", b->tap_layers[t], hp->n_layer - 1);
            return PF_RC_ARG;
        }
    for (int row0 = 0; row0 < b->n; row0 += c->max_rows) {
        int B = b->n - row0 < c->max_rows ? b->n - row0 : c->max_rows;
        forward_chunk(c, b->tokens + row0, B, b, row0);
    }
    return PF_RC_OK;
}
