#include "verify/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verify/accept.h"

struct pf_spec {
    pf_session *s;
    pf_drafter *d;
    pf_strategy strat;
    int block;
    pf_spec_stats st;
    int32_t *rows;  /* [bonus, d1..] */
    float *logits;  /* block * n_vocab */
    float *taps;    /* block * n_taps * n_embd */
    pf_dist *q;     /* block proposal distributions */
    pf_dist p, resid;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int spec_begin(void *state, pf_session *s, const int32_t *prompt, int n_prompt, const float *taps,
                      char err[PF_ERR_LEN]) {
    pf_spec *sp = state;
    (void)s;
    memset(&sp->st, 0, sizeof sp->st);
    double t0 = now_s();
    int r = sp->d->begin ? sp->d->begin(sp->d->state, prompt, n_prompt, taps, err) : 0;
    sp->st.t_ctx += now_s() - t0;
    return r;
}

static int spec_step(void *state, pf_session *s, int32_t last, int32_t *out, int cap, char err[PF_ERR_LEN]) {
    pf_spec *sp = state;
    pf_spec_stats *st = &sp->st;
    pf_ctx *c = s->ctx;
    const int V = s->model->hp.n_vocab;
    double t0 = now_s(), t1, t2, t3, t4;
    int B = sp->block;
    if (B > cap) B = cap; /* length limit and room left in the context */
    int64_t start = c->kv->len;
    int greedy = s->sampling.temp <= 0;
    int nd = 0;
    if (B >= 2) {
        nd = sp->d->propose(sp->d->state, last, start, B, greedy ? NULL : &s->sampling, &s->rng, sp->rows + 1,
                            greedy || sp->d->deterministic ? NULL : sp->q, err);
        if (nd < 0) return -1;
        if (nd > B - 1) nd = B - 1;
    }
    t1 = now_s();
    sp->rows[0] = last;
    pf_batch b = {.tokens = sp->rows, .n = nd + 1, .logits_mode = PF_LOGITS_ALL, .logits = sp->logits,
                  .tap_layers = sp->d->tap_layers, .n_taps = sp->d->n_taps, .taps = sp->taps};
    if (pf_forward(c, &b, err) < 0) return -1;
    t2 = now_s();
    int32_t bonus;
    int a = greedy ? pf_accept_greedy(sp->logits, V, sp->rows + 1, nd, &bonus)
                   : pf_accept_sampled(sp->logits, V, sp->rows + 1, sp->q, nd, sp->d->deterministic,
                                       &s->sampling, &s->rng, &sp->p, &sp->resid, &bonus);
    pf_kv_truncate(c->kv, start + a + 1);
    memcpy(out, sp->rows + 1, (size_t)a * sizeof *out);
    out[a] = bonus;
    t3 = now_s();
    if (sp->d->commit && sp->d->commit(sp->d->state, sp->rows, a + 1, sp->taps, err) < 0) return -1;
    t4 = now_s();
    st->rounds++;
    st->tokens += a + 1;
    st->hist[a]++;
    st->drafted += nd;
    for (int k = 0; k < nd; k++) st->pos_tried[k]++;
    for (int k = 0; k < a; k++) st->pos_accepted[k]++;
    st->t_draft += t1 - t0;
    st->t_verify += t2 - t1;
    st->t_accept += t3 - t2;
    st->t_ctx += t4 - t3;
    st->t_total += now_s() - t0;
    return a + 1;
}

pf_spec *pf_spec_new(pf_session *s, pf_drafter *d, int block, char err[PF_ERR_LEN]) {
    if (block < 2 || block > PF_MAX_BLOCK) {
        snprintf(err, PF_ERR_LEN, "block size %d is outside 2..%d", block, PF_MAX_BLOCK);
        return NULL;
    }
    const pf_hparams *hp = &s->model->hp;
    pf_spec *sp = calloc(1, sizeof *sp);
    if (!sp) goto oom;
    sp->s = s;
    sp->d = d;
    sp->block = block;
    sp->rows = malloc((size_t)block * sizeof *sp->rows);
    sp->logits = malloc((size_t)block * hp->n_vocab * sizeof(float));
    sp->taps = d->n_taps ? malloc((size_t)block * d->n_taps * hp->n_embd * sizeof(float)) : NULL;
    sp->q = calloc((size_t)block, sizeof *sp->q);
    if (!sp->rows || !sp->logits || (d->n_taps && !sp->taps) || !sp->q) goto oom;
    if (!d->deterministic)
        for (int k = 0; k < block; k++)
            if (pf_dist_init(&sp->q[k], hp->n_vocab) < 0) goto oom;
    if (pf_dist_init(&sp->p, hp->n_vocab) < 0 || pf_dist_init(&sp->resid, hp->n_vocab) < 0) goto oom;
    sp->strat = (pf_strategy){.name = d->name, .state = sp, .tap_layers = d->tap_layers, .n_taps = d->n_taps,
                              .begin = spec_begin, .step = spec_step};
    return sp;
oom:
    snprintf(err, PF_ERR_LEN, "out of memory");
    pf_spec_free(sp);
    return NULL;
}

void pf_spec_free(pf_spec *sp) {
    if (!sp) return;
    if (sp->q)
        for (int k = 0; k < sp->block; k++) pf_dist_free(&sp->q[k]);
    free(sp->q);
    pf_dist_free(&sp->p);
    pf_dist_free(&sp->resid);
    free(sp->rows);
    free(sp->logits);
    free(sp->taps);
    free(sp);
}

pf_strategy *pf_spec_strategy(pf_spec *sp) { return &sp->strat; }
const pf_spec_stats *pf_spec_stats_get(const pf_spec *sp) { return &sp->st; }

double pf_spec_tau(const pf_spec_stats *st) { return st->rounds ? (double)st->tokens / (double)st->rounds : 0.0; }

void pf_spec_stats_print(const pf_spec_stats *st, int block, void *file) {
    FILE *f = file;
    fprintf(f, "speculation: %lld rounds, %lld tokens, tau %.2f tokens/round (block %d), %lld drafted, acceptance %.1f%%\n",
            (long long)st->rounds, (long long)st->tokens, pf_spec_tau(st), block, (long long)st->drafted,
            st->drafted ? 100.0 * (double)(st->tokens - st->rounds) / (double)st->drafted : 0.0);
    fprintf(f, "accepted drafts per round:");
    for (int a = 0; a < block; a++) fprintf(f, " %d:%lld", a, (long long)st->hist[a]);
    fprintf(f, "\nacceptance by block position:");
    for (int k = 0; k < block - 1; k++) {
        if (st->pos_tried[k]) fprintf(f, " %d:%.0f%%", k + 1, 100.0 * (double)st->pos_accepted[k] / (double)st->pos_tried[k]);
        else fprintf(f, " %d:-", k + 1);
    }
    double other = st->t_total - st->t_draft - st->t_verify - st->t_accept - st->t_ctx;
    if (other < 0) other = 0;
    double T = st->t_total > 0 ? st->t_total : 1;
    fprintf(f, "\ntime in rounds %.3f s: draft %.1f%%, context %.1f%%, verify %.1f%%, accept/sample %.1f%%, other %.1f%%\n",
            st->t_total, 100 * st->t_draft / T, 100 * st->t_ctx / T, 100 * st->t_verify / T, 100 * st->t_accept / T,
            100 * other / T);
}
