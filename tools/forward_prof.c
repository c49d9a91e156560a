/* Where a B-row forward's matmul time goes (docs/performance.md "Where the 256-bit gemm time goes
 * in the forward"; not part of the build). For each row count: forwards at a context depth with the
 * matmul profile on (kernels.h pf_matmul_prof), per weight shape: the caller's activation
 * quantization, the pooled matmul's wall time, each thread's time inside gemm calls; then the same
 * gemms once more on ONE core with no pool (the level's gemm over every layer's matrix of that shape
 * in turn, so the weights stream as in the forward). The pooled wall time against half the one-core
 * time splits into: quantization (serial), thread time above the one-core time (the two cores
 * sharing memory and caches), and idle time inside the run (imbalance, wake-up, completion).
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I. -Iinclude tools/forward_prof.c libpocketflash.a -lzstd -lxxhash -lm -pthread
 *   PF_KERNELS=avxvnni a.out MODEL.gguf [DEPTH [REPS]]   (2 threads, B = 1, 4, 8, 16; the fastest rep) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/clock.h"
#include "engine/batch.h"
#include "engine/forward.h"
#include "engine/op_timing.h"
#include "kernels/matmul_prof.h"

enum { THREADS = 2, NB = 4 };
static const int Bs[NB] = {1, 4, 8, 16};

/* Every layer's weight of this shape (rows, cols; parts > 1: the first of a shared-input group). */
static int layer_weights(const pf_model *m, const pf_prof_shape *s, const pf_weight **out) {
    int n = 0;
    for (int l = 0; l < m->hp.n_layer; l++) {
        const pf_layer *L = &m->layers[l];
        const pf_weight *c[] = {&L->attn_q, &L->attn_k, &L->attn_v, &L->attn_o, &L->ffn_gate, &L->ffn_up, &L->ffn_down};
        int from = s->parts == 3 ? 0 : s->parts == 2 ? 4 : 3, to = s->parts == 3 ? 3 : 7;
        for (int i = from; i < to; i++)
            if (c[i]->rows == s->rows && c[i]->cols == s->cols) {
                /* parts > 1: every weight of the group, not just the first */
                for (int p = 0; p < (s->parts > 1 ? s->parts : 1); p++) out[n++] = c[i + p];
                break;
            }
    }
    if (n == 0 && m->output.rows == s->rows && m->output.cols == s->cols) out[n++] = &m->output;
    return n;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [DEPTH [REPS]]\n", argv[0]);
        return 2;
    }
    int depth = argc > 2 ? atoi(argv[2]) : 512, reps = argc > 3 ? atoi(argv[3]) : 5;
    char err[PF_ERR_LEN];
    pf_model *m = pf_model_load(argv[1], err);
    if (!m) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    pf_ctx *c = pf_ctx_new(m, depth + 32, THREADS, NULL, err);
    if (!c) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const int V = m->hp.n_vocab;
    int32_t *toks = malloc((size_t)(depth + 32) * sizeof *toks);
    float *logits = malloc((size_t)16 * V * sizeof(float));
    for (int i = 0; i < depth + 32; i++) toks[i] = (int32_t)((i * 2654435761u) % (unsigned)(V - 64));
    pf_batch fill = {.tokens = toks, .n = depth, .logits_mode = PF_LOGITS_NONE};
    if (depth > 0 && pf_forward(c, &fill, err) != PF_RC_OK) return 1;
    printf("%s, %d threads, depth %d, the fastest of %d forwards after one warm-up\n", c->k->name, THREADS, depth, reps);
    for (int bi = 0; bi < NB; bi++) {
        int B = Bs[bi];
        pf_batch b = {.tokens = toks + depth, .n = B, .logits_mode = PF_LOGITS_ALL, .logits = logits};
        c->kv->len = depth;
        pf_forward(c, &b, err); /* warm-up */
        /* the fastest forward's profile (a shared machine deschedules a thread now and then) */
        static pf_matmul_prof prof, cur;
        double op_s[PF_OP_COUNT] = {0}, cur_op[PF_OP_COUNT], t = 1e30;
        for (int r = 0; r < reps; r++) {
            memset(&cur, 0, sizeof cur);
            memset(cur_op, 0, sizeof cur_op);
            c->kv->len = depth;
            c->op_s = cur_op;
            pf_matmul_prof_on = &cur;
            double t0 = pf_now_s();
            pf_forward(c, &b, err);
            double dt = pf_now_s() - t0;
            pf_matmul_prof_on = NULL;
            c->op_s = NULL;
            if (dt < t) t = dt, prof = cur, memcpy(op_s, cur_op, sizeof op_s);
        }
        double f = 1e3;
        printf("\nB=%d: forward %.2f ms (attention %.2f, elementwise %.2f)\n", B, t * f,
               op_s[PF_OP_ATTENTION] * f, op_s[PF_OP_ELEMENT] * f);
        printf("  %-16s %6s %7s %7s %7s %7s %7s %7s %9s %9s\n", "shape", "calls", "wall", "1core/2", "quant",
               "busy0", "busy1", "idle", "ns/blk2t", "ns/blk1c");
        double sum[7] = {0};
        for (int i = 0; i < prof.n; i++) {
            const pf_prof_shape *s = &prof.s[i];
            /* the same gemms on one core, no pool: every layer's weights of this shape in turn */
            const pf_weight *ws[256];
            int nw = layer_weights(m, s, ws);
            double one = 0;
            if (nw > 0) {
                size_t ab = pf_act_row_bytes(ws[0]->type, ws[0]->cols);
                void *act = malloc(ab * (size_t)B);
                float *y = malloc((size_t)B * (size_t)ws[0]->rows * sizeof(float));
                float *x = calloc((size_t)B * (size_t)ws[0]->cols, sizeof(float));
                for (int64_t j = 0; j < B * ws[0]->cols; j++) x[j] = (float)((j * 7919) % 201 - 100) / 100.0f;
                pf_act_prepare(c->k, ws[0]->type, x, ws[0]->cols, B, ws[0]->cols, act);
                double calls_per_fwd = (double)s->calls;
                one = 1e30;
                for (int r = 0; r < reps; r++) {
                    double t0 = pf_now_s();
                    /* as many matmuls as one forward makes (the head: once per forward) */
                    for (int q = 0; q < (int)(calls_per_fwd + 0.5); q++) {
                        for (int p = 0; p < (s->parts > 1 ? s->parts : 1); p++) {
                            const pf_weight *w = ws[(q * (s->parts > 1 ? s->parts : 1) + p) % nw];
                            c->k->gemm[w->type](w, act, ab, B, y, w->rows, 0, w->rows);
                        }
                    }
                    double dt = pf_now_s() - t0;
                    if (dt < one) one = dt;
                }
                free(act), free(y), free(x);
            }
            double idle = 2 * s->matmul_s - s->busy_s[0] - s->busy_s[1];
            char name[40];
            snprintf(name, sizeof name, "%lldx%lld%s", (long long)s->rows, (long long)s->cols,
                     s->parts == 3 ? " qkv" : s->parts == 2 ? " g/u" : "");
            double v[7] = {s->matmul_s, one / 2, s->prepare_s, s->busy_s[0], s->busy_s[1], idle / 2, 0};
            printf("  %-16s %6.0f", name, (double)s->calls);
            for (int j = 0; j < 6; j++) printf(" %7.3f", v[j] * f), sum[j] += v[j];
            printf(" %9.3f %9.3f\n", (s->busy_s[0] + s->busy_s[1]) * 1e9 / s->blocks, one * 1e9 / s->blocks);
        }
        printf("  %-16s %6s", "all", "");
        for (int j = 0; j < 6; j++) printf(" %7.3f", sum[j] * f);
        printf("\n");
    }
    printf("\nms per forward. wall: the pooled matmuls; 1core/2: the same gemms on one core, halved; quant:\n"
           "the caller's activation quantization, before the run (not in wall); busy0/1: each thread inside\n"
           "gemm calls; idle: wall - busy, mean of the two threads; ns/blk: thread time per output block,\n"
           "pooled (busy) and one core.\n");
    free(toks), free(logits);
    pf_ctx_free(c);
    pf_model_free(m);
    return 0;
}
