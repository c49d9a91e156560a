/* bench-model: the target's cost regime on this device, measured in ONE run with every
 * configuration interleaved and repeated (median and spread), so a noisy shared machine drifts all
 * of them alike: prefill, plain decode at several depths, c(B) = t(B rows) / t(1 row) at one depth,
 * memory read bandwidth, the bandwidth ceiling, the compute throughput (probe.h) and peak resident
 * memory. */
#include "eval/bench_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "engine/batch.h"
#include "engine/forward.h"
#include "engine/op_timing.h"
#include "engine/weight_pack.h"
#include "engine/clock.h"
#include "eval/probe.h"

/* Put the cache at context depth d (<= the filled depth). pf_kv_truncate only shrinks, and a timed
 * forward at a shallower depth shortens the cache, so the length is set back here: rows below the
 * filled depth still hold the fill, since every timed forward rewrites rows d.. with the tokens
 * they were filled with, which by batch invariance gives bitwise the same K/V rows. */
static void at_depth(pf_ctx *c, int d, int filled) {
    if (d > filled) d = filled;
    c->kv->len = d;
}

static pf_rc forward_rows(pf_ctx *c, const int32_t *toks, int n, float *logits, char *err) {
    pf_batch b = {.tokens = toks, .n = n, .logits_mode = PF_LOGITS_ALL, .logits = logits};
    return pf_forward(c, &b, err);
}

/* One bench-model run: the context, the token ids it forwards and the times of every repetition. */
typedef struct {
    pf_ctx *c;
    const pf_bench_model_opts *o;
    int max_depth;
    int32_t *toks;
    float *logits;
    double *t_decode, *t_block, *t_prefill; /* [depth or block][rep], [rep] */
    double *bw, *cp;                         /* GB/s, compute probe, [rep] */
    uint64_t *bw_array;
    size_t bw_words, bw_map;
} bench_run;

/* real-looking ids spread over the vocabulary (never one repeated token) */
static void fill_tokens(int32_t *toks, int64_t n, int V) {
    uint64_t x = 0x243f6a8885a308d3ull;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        toks[i] = (int32_t)(x % (uint64_t)(V > 256 ? V - 64 : V));
    }
}

/* The fastest of o->inner forwards of n rows at depth d: several in a row, so a single descheduling
 * does not dominate. */
static pf_rc fastest_forward(bench_run *b, int d, int n, double *best, char *err) {
    *best = 1e9;
    for (int k = 0; k < b->o->inner; k++) {
        at_depth(b->c, d, b->max_depth);
        double t0 = pf_now_s();
        pf_rc rc = forward_rows(b->c, b->toks + d, n, b->logits, err);
        if (rc != PF_RC_OK) return rc;
        double t = pf_now_s() - t0;
        if (t < *best) *best = t;
    }
    return PF_RC_OK;
}

/* Repetition rep of every measurement, interleaved: bandwidth, compute, decode at each depth (a
 * decode step = one row with all logits), each block at the c(B) depth, prefill. */
static pf_rc time_repetition(bench_run *b, int rep, char *err) {
    const pf_bench_model_opts *o = b->o;
    if (b->bw_array) b->bw[rep] = pf_probe_bandwidth(b->c->pool, b->bw_array, b->bw_words, 2);
    b->cp[rep] = pf_probe_compute(b->c->k, b->c->pool, 3);
    pf_rc rc = PF_RC_OK;
    for (int i = 0; rc == PF_RC_OK && i < o->n_depths; i++)
        rc = fastest_forward(b, o->depths[i], 1, &b->t_decode[i * o->reps + rep], err);
    for (int i = 0; rc == PF_RC_OK && i < o->n_blocks; i++)
        rc = fastest_forward(b, o->cb_depth, o->blocks[i], &b->t_block[i * o->reps + rep], err);
    if (rc != PF_RC_OK) return rc;
    if (o->prefill_tokens > 0) {
        /* prefill writes rows 0..P-1: refill the deep rows afterwards is unnecessary for timing */
        pf_kv_truncate(b->c->kv, 0);
        double t0 = pf_now_s();
        pf_batch pb = {.tokens = b->toks, .n = o->prefill_tokens, .logits_mode = PF_LOGITS_LAST, .logits = b->logits};
        if ((rc = pf_forward(b->c, &pb, err)) != PF_RC_OK) return rc;
        b->t_prefill[rep] = pf_now_s() - t0;
    }
    return PF_RC_OK;
}

/* c(B) per repetition (same repetition's B=1 time), then the median over repetitions; the block,
 * decode and prefill times as medians too. */
static void summarize_times(const bench_run *b, pf_bench_model_result *r) {
    const pf_bench_model_opts *o = b->o;
    const int n = o->reps < 256 ? o->reps : 256;
    double v[256];
    int one = -1;
    for (int i = 0; i < o->n_blocks; i++)
        if (o->blocks[i] == 1) one = i;
    for (int i = 0; i < o->n_blocks; i++) {
        for (int rep = 0; rep < n; rep++)
            v[rep] = one >= 0 ? b->t_block[i * o->reps + rep] / b->t_block[one * o->reps + rep] : 0;
        pf_stat_summarize(v, n, &r->c[i]);
        for (int rep = 0; rep < n; rep++) v[rep] = b->t_block[i * o->reps + rep] * 1e3;
        pf_stat_summarize(v, n, &r->block_ms[i]);
    }
    for (int i = 0; i < o->n_depths; i++) {
        for (int rep = 0; rep < n; rep++) v[rep] = 1.0 / b->t_decode[i * o->reps + rep];
        pf_stat_summarize(v, n, &r->decode_tok_s[i]);
    }
    if (o->prefill_tokens > 0) {
        for (int rep = 0; rep < n; rep++) v[rep] = o->prefill_tokens / b->t_prefill[rep];
        pf_stat_summarize(v, n, &r->prefill_tok_s);
    }
}

/* A separate pass with the forward's op timers on (their clock reads would otherwise be in the
 * times above), blocks interleaved as above; per block the breakdown of its fastest forward is
 * kept, like the fastest-of-inner times above. */
static pf_rc time_ops(bench_run *b, pf_bench_model_result *r, char *err) {
    const pf_bench_model_opts *o = b->o;
    double best[PF_BENCH_MAX];
    for (int i = 0; i < o->n_blocks; i++) best[i] = 1e30;
    if (o->progress) fprintf(stderr, "bench-model: timing operations...\n");
    for (int rep = 0; rep < o->reps * o->inner; rep++)
        for (int i = 0; i < o->n_blocks; i++) {
            double op_s[PF_OP_COUNT] = {0}, tot = 0;
            at_depth(b->c, o->cb_depth, b->max_depth);
            b->c->op_s = op_s;
            pf_rc rc = forward_rows(b->c, b->toks + o->cb_depth, o->blocks[i], b->logits, err);
            b->c->op_s = NULL;
            if (rc != PF_RC_OK) return rc;
            for (int p = 0; p < PF_OP_COUNT; p++) tot += op_s[p];
            if (tot < best[i]) {
                best[i] = tot;
                for (int p = 0; p < PF_OP_COUNT; p++) r->op_ms[i][p] = op_s[p] * 1e3;
            }
        }
    return PF_RC_OK;
}

/* The bandwidth, the ceiling it gives and the decode's fraction of it; the compute probe. */
static void summarize_machine(bench_run *b, const pf_model *m, pf_bench_model_result *r) {
    const pf_bench_model_opts *o = b->o;
    r->bytes_per_token = pf_model_weight_bytes(m);
    if (b->bw_array) {
        int n = o->reps < 256 ? o->reps : 256;
        if (o->n_depths > 0) {
            /* decode at the first depth over the ceiling of the same repetition, then the median */
            double frac[256];
            for (int rep = 0; rep < n; rep++)
                frac[rep] = (1.0 / b->t_decode[rep]) / (b->bw[rep] * 1e9 / (double)r->bytes_per_token);
            pf_stat_summarize(frac, n, &r->decode_fraction);
        }
        pf_stat_summarize(b->bw, n, &r->bandwidth); /* sorts bw: after the fractions */
        r->bandwidth_gb_s = r->bandwidth.median;
    }
    r->ceiling_tok_s = r->bandwidth_gb_s * 1e9 / (double)r->bytes_per_token;
    pf_stat_summarize(b->cp, o->reps, &r->compute);
}

/* Fills the cache to the deepest depth once (timed rows overwrite rows past their depth only),
 * warms up one forward of each block, records the peak memory of the model work (it allocates
 * nothing more) and then allocates the bandwidth array. */
static pf_rc prepare(bench_run *b, pf_bench_model_result *r, char *err) {
    const pf_bench_model_opts *o = b->o;
    if (o->progress) fprintf(stderr, "bench-model: filling the cache to %d tokens...\n", b->max_depth);
    pf_kv_truncate(b->c->kv, 0);
    pf_batch fill = {.tokens = b->toks, .n = b->max_depth, .logits_mode = PF_LOGITS_NONE};
    pf_rc rc = b->max_depth > 0 ? pf_forward(b->c, &fill, err) : PF_RC_OK;
    for (int i = 0; rc == PF_RC_OK && i < o->n_blocks; i++) {
        at_depth(b->c, o->cb_depth, b->max_depth);
        rc = forward_rows(b->c, b->toks + o->cb_depth, o->blocks[i], b->logits, err);
    }
    if (rc != PF_RC_OK) return rc;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r->peak_rss_mb = (double)ru.ru_maxrss / 1024.0;
    if (o->bandwidth_mib > 0) {
        /* the same kind of memory as the packed weights (huge pages where the kernel gives them);
         * read once per repetition, next to the decode measurements, since this machine's
         * bandwidth drifts between runs */
        b->bw_array = pf_weights_alloc(b->bw_words * sizeof *b->bw_array, b->c->model->opts.hugepages, &b->bw_map);
        if (!b->bw_array) {
            snprintf(err, PF_ERR_LEN, "out of memory for the %d MiB bandwidth array", o->bandwidth_mib);
            return PF_RC_OOM;
        }
        for (size_t i = 0; i < b->bw_words; i++) b->bw_array[i] = i;
    }
    return PF_RC_OK;
}

static int max_of(const int *v, int n, int floor) {
    for (int i = 0; i < n; i++)
        if (v[i] > floor) floor = v[i];
    return floor;
}

pf_rc pf_bench_model(const pf_model *m, const pf_bench_model_opts *o, pf_bench_model_result *r, char err[PF_ERR_LEN]) {
    memset(r, 0, sizeof *r);
    const int V = m->hp.n_vocab;
    int max_depth = max_of(o->depths, o->n_depths, 0);
    if (o->cb_depth > max_depth) max_depth = o->cb_depth;
    const int max_b = max_of(o->blocks, o->n_blocks, 1);
    int64_t n_ctx = (int64_t)max_depth + (o->prefill_tokens > max_b ? o->prefill_tokens : max_b) + 8;
    bench_run b = {.o = o, .max_depth = max_depth, .bw_words = (size_t)o->bandwidth_mib << 17}; /* MiB / 8 bytes */
    b.c = pf_ctx_new(m, n_ctx, o->threads, NULL, err);
    if (!b.c) return PF_RC_OOM; /* its only failure */
    if (o->kv_q8) {
        pf_rc rc = pf_kv_q8_usable(b.c->k, err) ? pf_ctx_set_kv_type(b.c, PF_KV_Q8, err) : PF_RC_ARG;
        if (rc != PF_RC_OK) {
            pf_ctx_free(b.c);
            return rc;
        }
    }
    b.toks = malloc((size_t)n_ctx * sizeof *b.toks);
    b.logits = malloc((size_t)(max_b > 0 ? max_b : 1) * V * sizeof(float));
    b.t_decode = calloc((size_t)o->n_depths * o->reps, sizeof(double));
    b.t_block = calloc((size_t)o->n_blocks * o->reps, sizeof(double));
    b.t_prefill = calloc((size_t)o->reps, sizeof(double));
    b.bw = calloc((size_t)o->reps, sizeof(double));
    b.cp = calloc((size_t)o->reps, sizeof(double));
    pf_rc rc = PF_RC_OOM;
    if (!b.toks || !b.logits || !b.t_decode || !b.t_block || !b.t_prefill || !b.bw || !b.cp) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        goto done;
    }
    fill_tokens(b.toks, n_ctx, V);
    if ((rc = prepare(&b, r, err)) != PF_RC_OK) goto done;
    for (int rep = 0; rep < o->reps; rep++) {
        if (o->progress) fprintf(stderr, "\rbench-model: repetition %d/%d", rep + 1, o->reps);
        if ((rc = time_repetition(&b, rep, err)) != PF_RC_OK) goto done;
    }
    if (o->progress) fprintf(stderr, "\n");
    summarize_times(&b, r);
    if (o->ops && (rc = time_ops(&b, r, err)) != PF_RC_OK) goto done;
    summarize_machine(&b, m, r);
done:
    pf_ctx_free(b.c);
    free(b.toks);
    free(b.logits);
    free(b.t_decode);
    free(b.t_block);
    free(b.t_prefill);
    free(b.bw);
    free(b.cp);
    pf_weights_free(b.bw_array, b.bw_map);
    return rc;
}
