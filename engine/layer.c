/* The layer pieces the target's and the draft's forwards share (layer.h). */
#include <stdlib.h>

#include "engine/layer.h"

void pf_layer_scratch_free(pf_layer_scratch *s) {
    if (!s) return;
    free(s->x); free(s->xn); free(s->q); free(s->kbuf); free(s->vbuf); free(s->att); free(s->tmp);
    free(s->gate); free(s->up); free(s->rope); free(s->act); free(s->head);
    free(s);
}

pf_layer_scratch *pf_layer_scratch_new(const pf_hparams *hp, int rows, size_t act_row) {
    size_t R = (size_t)rows, H = (size_t)hp->n_embd, F = (size_t)hp->n_ff;
    size_t qd = (size_t)hp->n_head * hp->head_dim, kvd = (size_t)hp->n_head_kv * hp->head_dim;
    pf_layer_scratch *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->rows = rows;
    s->x = malloc(R * H * sizeof(float));
    s->xn = malloc(R * H * sizeof(float));
    s->tmp = malloc(R * H * sizeof(float));
    s->q = malloc(R * qd * sizeof(float));
    s->att = malloc(R * qd * sizeof(float));
    s->kbuf = malloc(R * kvd * sizeof(float));
    s->vbuf = malloc(R * kvd * sizeof(float));
    s->gate = malloc(R * F * sizeof(float));
    s->up = malloc(R * F * sizeof(float));
    s->rope = malloc(R * (size_t)hp->head_dim * sizeof(float));
    s->act = malloc(R * act_row);
    if (s->x && s->xn && s->tmp && s->q && s->att && s->kbuf && s->vbuf && s->gate && s->up && s->rope && s->act)
        return s;
    pf_layer_scratch_free(s);
    return NULL;
}

const pf_weight *pf_shared_input(int n, const pf_weight *const *W) {
    for (int i = 1; i < n; i++)
        if (W[i]->type != W[0]->type || W[i]->cols != W[0]->cols) return NULL;
    return W[0];
}

void pf_linear(const pf_kernels *k, pf_pool *pool, void *act, const pf_weight *W, const float *x, int64_t ldx, int B,
               float *y, int64_t ldy, int prepared) {
    if (!prepared) pf_act_prepare(k, W->type, x, ldx, B, W->cols, act);
    pf_matmul(k, pool, W, act, B, y, ldy);
}

void pf_linear_n(const pf_kernels *k, pf_pool *pool, void *act, int n, const pf_weight *const *W, const float *x,
                 int64_t ldx, int B, float *const *y, const int64_t *ldy, int prepared) {
    if (!pf_shared_input(n, W)) {
        for (int i = 0; i < n; i++) pf_linear(k, pool, act, W[i], x, ldx, B, y[i], ldy[i], 0);
        return;
    }
    if (!prepared) pf_act_prepare(k, W[0]->type, x, ldx, B, W[0]->cols, act);
    pf_matmul_n(k, pool, n, W, act, B, y, ldy);
}

void pf_layer_rope_table(pf_layer_scratch *s, const pf_hparams *hp, int64_t pos0, int B) {
    for (int r = 0; r < B; r++)
        pf_rope_angles(hp->head_dim, pos0 + r, hp->rope_theta, s->rope + (size_t)r * hp->head_dim);
}

void pf_layer_qk_row(const pf_kernels *k, const pf_hparams *hp, const float *q_norm, const float *k_norm,
                     pf_kv_cache *kv, int l, int64_t pos, const float *cs, float *q, float *kr, const float *vr) {
    const int hd = hp->head_dim;
    if (q) pf_rmsnorm_heads(k, q, hp->n_head, hd, q_norm, hp->rms_eps);
    pf_rmsnorm_heads(k, kr, hp->n_head_kv, hd, k_norm, hp->rms_eps);
    if (q) pf_rope_neox_cs(q, hp->n_head, hd, cs);
    pf_rope_neox_cs(kr, hp->n_head_kv, hd, cs);
    pf_kv_write(k, kv, l, pos, kr, vr);
}

void pf_swiglu_rows(const pf_kernels *k, float *gate, const float *up, int B, int n_ff) {
    for (int r = 0; r < B; r++) {
        float *g = gate + (size_t)r * n_ff;
        k->swiglu(g, up + (size_t)r * n_ff, g, n_ff);
    }
}
