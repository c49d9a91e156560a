/* The Qwen3 forward over B rows (docs/target.md). Reads like the math; kernels do the heavy lifting.
 * Rows are processed in chunks of ctx->max_rows; every per-row step uses the same code whatever
 * the chunk size, so a B-row forward equals B one-row forwards bit for bit. The rows may belong to
 * several sequences (pf_forward_seqs): the matmuls take the chunk's rows together, whoever they
 * belong to, while RoPE, the cache writes, attention and the taps go by each row's sequence; a
 * chunk may hold the end of one sequence's rows and the start of the next. */
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
    c->k = k ? k : pf_kernels_get(m->opts.level);
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

pf_rc pf_ctx_set_kv_type(pf_ctx *c, pf_kv_type type, char err[PF_ERR_LEN]) {
    if (c->kv->type == type) return PF_RC_OK;
    int hd = c->model->hp.head_dim;
    if (type == PF_KV_Q8 && (hd % 4 || hd > PF_KV_Q8_MAX_HD)) {
        snprintf(err, PF_ERR_LEN, "the 8-bit KV cache needs a head dimension that is a multiple of 4 up to %d (this "
                 "model's: %d)", PF_KV_Q8_MAX_HD, hd);
        return PF_RC_ARG;
    }
    if (c->kv->len) {
        snprintf(err, PF_ERR_LEN, "the KV cache type can only change while the cache is empty");
        return PF_RC_ARG;
    }
    pf_kv_cache *kv = pf_kv_new(&c->model->hp, c->kv->n_ctx, type);
    if (!kv) {
        snprintf(err, PF_ERR_LEN, "out of memory for a KV cache of %lld tokens", (long long)c->kv->n_ctx);
        return PF_RC_OOM;
    }
    pf_kv_free(c->kv);
    c->kv = kv;
    return PF_RC_OK;
}

/* The per-row steps between matmuls. From ROWS_POOL_MIN rows they are split over the pool by rows
 * (the gain is in docs/performance.md); below, the pool's wake-up costs about what it saves. Each
 * row's arithmetic is the same either way. A step whose output feeds a matmul also prepares the
 * row's activation for it, so the threads quantize their own rows instead of the caller all of
 * them while the others wait. */
#define ROWS_POOL_MIN 4

/* One chunk of rows on its way through the model, and the clock its operations are timed by. Row r
 * is row idx[r] of sequence seq[r] (seqs[seq[r]]), at position pos[r] of that sequence's cache kv[r];
 * a sequence's rows in a chunk are consecutive. */
typedef struct {
    pf_ctx *c;
    const pf_batch *seqs;
    int B;
    int seq[PF_CHUNK_ROWS], idx[PF_CHUNK_ROWS];
    int64_t pos[PF_CHUNK_ROWS];
    pf_kv_cache *kv[PF_CHUNK_ROWS];
    pf_op_clock clk;
} chunk;

typedef struct rows_job rows_job;
struct rows_job {
    const chunk *ch;
    int l;
    void (*row)(const rows_job *j, int r);
    const float *norm;    /* the norm weight of a norm step */
    const pf_weight *mat; /* the matmul the step's output feeds (NULL: none) */
    int prepare;          /* whether the rows prepare mat's activation */
    int next;             /* the next row a pool thread claims */
};

static float *row_of(float *base, int r, int64_t width) { return base + (size_t)r * (size_t)width; }

static void prepare_row(const rows_job *j, const float *y, int r) {
    const pf_weight *W = j->mat;
    if (j->prepare)
        pf_act_prepare_row(j->ch->c->k, W->type, y, W->cols,
                           (char *)j->ch->c->sc->act + (size_t)r * pf_act_row_bytes(W->type, W->cols));
}

/* xn = rmsnorm(x) * norm */
static void row_norm(const rows_job *j, int r) {
    const pf_ctx *c = j->ch->c;
    const int H = c->model->hp.n_embd;
    float *xn = row_of(c->sc->xn, r, H);
    c->k->rmsnorm(row_of(c->sc->x, r, H), j->norm, H, c->model->hp.rms_eps, xn);
    prepare_row(j, xn, r);
}

/* q, k = per-head rmsnorm, rope_neox; k, v into the layer's cache */
static void row_qk(const rows_job *j, int r) {
    const pf_ctx *c = j->ch->c;
    const pf_hparams *hp = &c->model->hp;
    const pf_layer *L = &c->model->layers[j->l];
    const int64_t qd = (int64_t)hp->n_head * hp->head_dim, kvd = (int64_t)hp->n_head_kv * hp->head_dim;
    pf_layer_scratch *sc = c->sc;
    pf_layer_qk_row(c->k, hp, L->q_norm, L->k_norm, j->ch->kv[r], j->l, j->ch->pos[r], row_of(sc->rope, r, hp->head_dim),
                    row_of(sc->q, r, qd), row_of(sc->kbuf, r, kvd), row_of(sc->vbuf, r, kvd));
}

/* x += tmp (the o or down projection's output) */
static void add_residual(const pf_ctx *c, int r) {
    const int H = c->model->hp.n_embd;
    float *x = row_of(c->sc->x, r, H), *t = row_of(c->sc->tmp, r, H);
    for (int i = 0; i < H; i++) x[i] += t[i];
}

/* x += a @ attn_output; xn = rmsnorm(x) * ffn_norm */
static void row_residual_norm(const rows_job *j, int r) {
    add_residual(j->ch->c, r);
    row_norm(j, r);
}

/* gate = silu(gate) * up */
static void row_swiglu(const rows_job *j, int r) {
    const pf_ctx *c = j->ch->c;
    const int F = c->model->hp.n_ff;
    float *g = row_of(c->sc->gate, r, F);
    pf_swiglu_rows(c->k, g, row_of(c->sc->up, r, F), 1, F);
    prepare_row(j, g, r);
}

/* x += ffn @ ffn_down; the rows the batch taps after this layer */
static void row_residual(const rows_job *j, int r) {
    const pf_ctx *c = j->ch->c;
    const pf_batch *b = &j->ch->seqs[j->ch->seq[r]];
    const int H = c->model->hp.n_embd;
    add_residual(c, r);
    for (int t = 0; t < b->n_taps; t++)
        if (b->tap_layers[t] == j->l)
            memcpy(b->taps + ((size_t)j->ch->idx[r] * b->n_taps + t) * H, row_of(c->sc->x, r, H),
                   (size_t)H * sizeof(float));
}

/* Threads claim runs of consecutive rows, one thread's share of the pool at a time (adjacent rows'
 * prepared activations share cache lines), until none are left. */
static void rows_worker(void *arg, int ith, int nth) {
    (void)ith;
    rows_job *j = arg;
    const int B = j->ch->B, run = (B + nth - 1) / nth;
    for (int r0; (r0 = __atomic_fetch_add(&j->next, run, __ATOMIC_RELAXED)) < B;)
        for (int r = r0; r < r0 + run && r < B; r++) j->row(j, r);
}

/* Runs a per-row step of layer l over the chunk (norm: its weight; mat: the matmul its output feeds,
 * or NULL); returns whether the rows prepared mat's activation (only when split over the pool:
 * below ROWS_POOL_MIN rows the matmul prepares them). Timed as elementwise. */
static int rows(chunk *ch, int l, void (*row)(const rows_job *, int), const float *norm, const pf_weight *mat) {
    rows_job j = {ch, l, row, norm, mat, 0, 0};
    if (ch->B >= ROWS_POOL_MIN && pf_pool_size(ch->c->pool) > 1) {
        j.prepare = mat != NULL;
        pf_pool_run(ch->c->pool, rows_worker, &j);
    } else {
        for (int r = 0; r < ch->B; r++) row(&j, r);
    }
    pf_op_mark(&ch->clk, PF_OP_ELEMENT);
    return j.prepare;
}

/* y[i] rows = x rows @ W[i] for n weights reading the same rows (prepared: a row step prepared
 * them already), timed as op. */
static void project(chunk *ch, int op, int n, const pf_weight *const *W, const float *x, int64_t ldx,
                    float *const *y, const int64_t *ldy, int prepared) {
    pf_ctx *c = ch->c;
    if (n == 1)
        pf_linear(c->k, c->pool, c->sc->act, W[0], x, ldx, ch->B, y[0], ldy[0], prepared);
    else
        pf_linear_n(c->k, c->pool, c->sc->act, n, W, x, ldx, ch->B, y, ldy, prepared);
    pf_op_mark(&ch->clk, op);
}

/* Rows r0..r1-1 (one sequence's) over layer l of its cache; pool NULL: on this thread. */
static void attend_rows(const chunk *ch, int l, int r0, int r1, pf_pool *pool) {
    const pf_ctx *c = ch->c;
    const pf_hparams *hp = &c->model->hp;
    const int64_t qd = (int64_t)hp->n_head * hp->head_dim;
    const pf_attn_rows rows = {.q = row_of(c->sc->q, r0, qd), .ldq = qd, .B = r1 - r0, .n_head = hp->n_head,
                               .pos0 = ch->pos[r0], .n_keys = ch->pos[r0] + (r1 - r0), .causal = 1,
                               .out = row_of(c->sc->att, r0, qd), .ldo = qd};
    pf_kv_attend(c->k, pool, ch->kv[r0], l, &rows);
}

/* The chunk's sequences as tasks of one pool run: each thread takes the next sequence and runs
 * its rows itself. */
typedef struct {
    const chunk *ch;
    int l, n_seg;
    int seg[PF_CHUNK_ROWS + 1]; /* sequence i's rows: seg[i] .. seg[i+1]-1 */
    int next;
} seqs_attn_job;

static void seqs_attn_worker(void *arg, int ith, int nth) {
    (void)ith, (void)nth;
    seqs_attn_job *j = arg;
    for (int t; (t = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->n_seg;)
        attend_rows(j->ch, j->l, j->seg[t], j->seg[t + 1], NULL);
}

/* Sequences per thread from which a chunk's attention runs them as tasks of one pool run rather
 * than one pool run each (split over its rows and KV heads): many short calls cost more in wake-ups
 * than an uneven split of whole sequences loses. */
#define SEQS_PER_THREAD_MIN 2

/* a = softmax(q k^T / sqrt(hd) + causal mask) v over layer l's cache, timed: each sequence's rows
 * over its own cache (a row's arithmetic does not depend on the call's other rows or thread,
 * kernels.h) */
static void attend(chunk *ch, int l) {
    pf_ctx *c = ch->c;
    seqs_attn_job j = {.ch = ch, .l = l};
    for (int r = 0; r < ch->B; r++)
        if (r == 0 || ch->seq[r] != ch->seq[r - 1]) j.seg[j.n_seg++] = r;
    j.seg[j.n_seg] = ch->B;
    if (pf_pool_size(c->pool) > 1 && j.n_seg >= SEQS_PER_THREAD_MIN * pf_pool_size(c->pool))
        pf_pool_run(c->pool, seqs_attn_worker, &j);
    else
        for (int i = 0; i < j.n_seg; i++) attend_rows(ch, l, j.seg[i], j.seg[i + 1], c->pool);
    pf_op_mark(&ch->clk, PF_OP_ATTENTION);
}

/* One pre-norm layer over the chunk's rows, top to bottom as docs/target.md writes it. The helpers
 * time their own step (rows: elementwise, project: its op, attend), so no mark is in here. */
static void layer_forward(chunk *ch, int l) {
    const pf_hparams *hp = &ch->c->model->hp;
    const pf_layer *L = &ch->c->model->layers[l];
    pf_layer_scratch *sc = ch->c->sc;
    const int64_t H = hp->n_embd, F = hp->n_ff;
    const int64_t qd = (int64_t)hp->n_head * hp->head_dim, kvd = (int64_t)hp->n_head_kv * hp->head_dim;
    const pf_weight *qkv[3] = {&L->attn_q, &L->attn_k, &L->attn_v}, *gate_up[2] = {&L->ffn_gate, &L->ffn_up};
    const pf_weight *o = &L->attn_o, *down = &L->ffn_down;

    /* u = rmsnorm(x) * attn_norm; q, k, v = u @ attn_q, attn_k, attn_v */
    int prepared = rows(ch, l, row_norm, L->attn_norm, pf_shared_input(3, qkv));
    project(ch, PF_OP_QKV, 3, qkv, sc->xn, H, (float *[]){sc->q, sc->kbuf, sc->vbuf}, (int64_t[]){qd, kvd, kvd},
            prepared);
    /* q, k = QK-norm, RoPE; k, v into the cache; a = attention over it */
    rows(ch, l, row_qk, NULL, NULL);
    attend(ch, l);
    /* x = x + a @ attn_output; u = rmsnorm(x) * ffn_norm */
    project(ch, PF_OP_O, 1, &o, sc->att, qd, &sc->tmp, &H, 0);
    prepared = rows(ch, l, row_residual_norm, L->ffn_norm, pf_shared_input(2, gate_up));
    /* x = x + (silu(u @ ffn_gate) * (u @ ffn_up)) @ ffn_down */
    project(ch, PF_OP_GATE_UP, 2, gate_up, sc->xn, H, (float *[]){sc->gate, sc->up}, (int64_t[]){F, F}, prepared);
    prepared = rows(ch, l, row_swiglu, NULL, down);
    project(ch, PF_OP_DOWN, 1, &down, sc->gate, F, &sc->tmp, &H, prepared);
    rows(ch, l, row_residual, NULL, NULL);
}

/* Where row r's logits go (NULL: its sequence does not want them). */
static float *logits_dest(const chunk *ch, int r) {
    const pf_batch *b = &ch->seqs[ch->seq[r]];
    const int V = ch->c->model->hp.n_vocab;
    if (b->logits_mode == PF_LOGITS_ALL) return b->logits + (size_t)ch->idx[r] * V;
    if (b->logits_mode == PF_LOGITS_LAST && ch->idx[r] == b->n - 1) return b->logits;
    return NULL;
}

/* Room for n logits rows in the scratch's head buffer (0: none could be had). */
static int head_room(pf_layer_scratch *sc, int n, int V) {
    size_t need = (size_t)n * V;
    if (need <= sc->head_cap) return 1;
    float *h = realloc(sc->head, need * sizeof *h);
    if (!h) return 0;
    sc->head = h, sc->head_cap = need;
    return 1;
}

/* logits = rmsnorm(x) * output_norm @ output, for the rows the sequences want: their normed rows
 * side by side, then one matmul over all of them (the head's weights, the largest matrix of a
 * small model, read once), straight into the logits when they are consecutive in memory, else
 * through the scratch into each row's buffer (several sequences' verify rows); without room for
 * that, one matmul for each run of consecutive ones. */
static void output_head(chunk *ch) {
    pf_ctx *c = ch->c;
    const pf_model *m = c->model;
    const int H = m->hp.n_embd, V = m->hp.n_vocab;
    float *dest[PF_CHUNK_ROWS];
    int n = 0, runs = 0;
    for (int r = 0; r < ch->B; r++) {
        if (!(dest[n] = logits_dest(ch, r))) continue;
        c->k->rmsnorm(row_of(c->sc->x, r, H), m->output_norm, H, m->hp.rms_eps, row_of(c->sc->xn, n, H));
        runs += n == 0 || dest[n] != dest[n - 1] + V;
        n++;
    }
    if (!n) return;
    if (runs > 1 && head_room(c->sc, n, V)) {
        pf_linear(c->k, c->pool, c->sc->act, &m->output, c->sc->xn, H, n, c->sc->head, V, 0);
        for (int i = 0; i < n; i++) memcpy(dest[i], c->sc->head + (size_t)i * V, (size_t)V * sizeof(float));
        pf_op_mark(&ch->clk, PF_OP_HEAD);
        return;
    }
    for (int i0 = 0, i1; i0 < n; i0 = i1) {
        for (i1 = i0 + 1; i1 < n && dest[i1] == dest[i1 - 1] + V; i1++) {}
        pf_linear(c->k, c->pool, c->sc->act, &m->output, row_of(c->sc->xn, i0, H), H, i1 - i0, dest[i0], V, 0);
    }
    pf_op_mark(&ch->clk, PF_OP_HEAD);
}

static pf_kv_cache *seq_kv(const pf_ctx *c, const pf_batch *b) { return b->kv ? b->kv : c->kv; }

/* The chunk's rows: B rows from row `at` of sequence `s` on, through the following sequences. */
static void chunk_rows(chunk *ch, int s, int at) {
    for (int r = 0; r < ch->B; r++, at++) {
        while (at == ch->seqs[s].n) s++, at = 0;
        pf_kv_cache *kv = seq_kv(ch->c, &ch->seqs[s]);
        ch->seq[r] = s, ch->idx[r] = at, ch->kv[r] = kv, ch->pos[r] = kv->len + at;
    }
}

static void forward_chunk(pf_ctx *c, const pf_batch *seqs, int s, int at, int B) {
    const pf_model *m = c->model;
    const int H = m->hp.n_embd;
    chunk ch = {.c = c, .seqs = seqs, .B = B, .clk = pf_op_clock_start(c->op_s)};
    chunk_rows(&ch, s, at);
    for (int r = 0; r < B; r++) { /* x = token_embd[token]; the row's RoPE angles, once for all layers */
        pf_dequantize_row(m->tok_embd.type, (const char *)m->tok_embd.data +
                          (size_t)seqs[ch.seq[r]].tokens[ch.idx[r]] * m->tok_embd.row_bytes, row_of(c->sc->x, r, H), H);
        pf_rope_angles(m->hp.head_dim, ch.pos[r], m->hp.rope_theta, row_of(c->sc->rope, r, m->hp.head_dim));
    }
    for (int l = 0; l < m->hp.n_layer; l++) layer_forward(&ch, l);
    output_head(&ch);
}

/* A sequence's rows against the model and its cache: PF_RC_OK, or the kind with err. */
static pf_rc check_seq(const pf_ctx *c, const pf_batch *b, int i, char err[PF_ERR_LEN]) {
    const pf_hparams *hp = &c->model->hp;
    const pf_kv_cache *kv = seq_kv(c, b);
    if (b->n < 1) {
        snprintf(err, PF_ERR_LEN, "forward: no rows (sequence %d)", i);
        return PF_RC_ARG;
    }
    if (kv->n_layer != hp->n_layer || kv->head_dim != hp->head_dim || kv->n_kv_head != hp->n_head_kv) {
        snprintf(err, PF_ERR_LEN, "forward: sequence %d's KV cache is not of this model's shape", i);
        return PF_RC_ARG;
    }
    if (kv->len + b->n > kv->n_ctx) {
        snprintf(err, PF_ERR_LEN, "context full: %lld + %d tokens exceed the context of %lld",
                 (long long)kv->len, b->n, (long long)kv->n_ctx);
        return PF_RC_CONTEXT;
    }
    for (int j = 0; j < b->n; j++)
        if (b->tokens[j] < 0 || b->tokens[j] >= hp->n_vocab) {
            snprintf(err, PF_ERR_LEN, "token id %d is outside the vocabulary (%d)", b->tokens[j], hp->n_vocab);
            return PF_RC_ARG;
        }
    for (int t = 0; t < b->n_taps; t++)
        if (b->tap_layers[t] < 0 || b->tap_layers[t] >= hp->n_layer) {
            snprintf(err, PF_ERR_LEN, "tap layer %d is outside 0..%d", b->tap_layers[t], hp->n_layer - 1);
            return PF_RC_ARG;
        }
    return PF_RC_OK;
}

pf_rc pf_forward_seqs(pf_ctx *c, const pf_batch *seqs, int n_seq, char err[PF_ERR_LEN]) {
    if (n_seq < 1) {
        snprintf(err, PF_ERR_LEN, "forward: no sequences");
        return PF_RC_ARG;
    }
    int64_t total = 0;
    for (int i = 0; i < n_seq; i++) {
        pf_rc rc = check_seq(c, &seqs[i], i, err);
        if (rc != PF_RC_OK) return rc;
        for (int j = 0; j < i; j++)
            if (seq_kv(c, &seqs[j]) == seq_kv(c, &seqs[i])) {
                snprintf(err, PF_ERR_LEN, "forward: sequences %d and %d share a KV cache", j, i);
                return PF_RC_ARG;
            }
        total += seqs[i].n;
    }
    /* chunks of max_rows rows in sequence order; a sequence's cache grows once all its rows ran */
    int s = 0, at = 0;
    for (int64_t row0 = 0; row0 < total; row0 += c->max_rows) {
        int B = total - row0 < c->max_rows ? (int)(total - row0) : c->max_rows;
        forward_chunk(c, seqs, s, at, B);
        for (int left = B; left > 0;) { /* past the chunk's rows */
            int take = seqs[s].n - at < left ? seqs[s].n - at : left;
            at += take, left -= take;
            if (at == seqs[s].n && s + 1 < n_seq) s++, at = 0;
        }
    }
    for (int i = 0; i < n_seq; i++) seq_kv(c, &seqs[i])->len += seqs[i].n;
    return PF_RC_OK;
}

pf_rc pf_forward(pf_ctx *c, const pf_batch *b, char err[PF_ERR_LEN]) { return pf_forward_seqs(c, b, 1, err); }
