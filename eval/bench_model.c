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

#include "engine/model.h"
#include "engine/clock.h"
#include "eval/probe.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void pf_stat_summarize(double *v, int n, pf_stat *out) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    out->median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    out->lo = v[0];
    out->hi = v[n - 1];
}

/* Put the cache at context depth d (<= the filled depth). pf_kv_truncate only shrinks, and a timed
 * forward at a shallower depth shortens the cache, so the length is set back here: rows below the
 * filled depth still hold the fill, since every timed forward rewrites rows d.. with the tokens
 * they were filled with, which by batch invariance gives bitwise the same K/V rows. */
static void at_depth(pf_ctx *c, int d, int filled) {
    if (d > filled) d = filled;
    c->kv->len = d;
}

static int forward_rows(pf_ctx *c, const int32_t *toks, int n, float *logits, char *err) {
    pf_batch b = {.tokens = toks, .n = n, .logits_mode = PF_LOGITS_ALL, .logits = logits};
    return pf_forward(c, &b, err);
}

int pf_bench_model(const pf_model *m, const pf_bench_model_opts *o, pf_bench_model_result *r, char err[PF_ERR_LEN]) {
    memset(r, 0, sizeof *r);
    const int V = m->hp.n_vocab;
    int max_depth = 0;
    for (int i = 0; i < o->n_depths; i++)
        if (o->depths[i] > max_depth) max_depth = o->depths[i];
    if (o->cb_depth > max_depth) max_depth = o->cb_depth;
    int max_b = 1;
    for (int i = 0; i < o->n_blocks; i++)
        if (o->blocks[i] > max_b) max_b = o->blocks[i];
    int64_t n_ctx = (int64_t)max_depth + (o->prefill_tokens > max_b ? o->prefill_tokens : max_b) + 8;
    pf_ctx *c = pf_ctx_new(m, n_ctx, o->threads, NULL, err);
    if (c && o->kv_q8 && (!pf_kv_q8_usable(c->k, err) || pf_ctx_set_kv_type(c, PF_KV_Q8, err) < 0)) {
        pf_ctx_free(c);
        return -1;
    }
    int32_t *toks = malloc((size_t)n_ctx * sizeof *toks);
    float *logits = malloc((size_t)(max_b > 0 ? max_b : 1) * V * sizeof(float));
    double *t_decode = calloc((size_t)o->n_depths * o->reps, sizeof(double));
    double *t_block = calloc((size_t)o->n_blocks * o->reps, sizeof(double));
    double *t_prefill = calloc((size_t)o->reps, sizeof(double));
    double *bw = calloc((size_t)o->reps, sizeof(double)), *cp = calloc((size_t)o->reps, sizeof(double));
    uint64_t *bw_array = NULL;
    size_t bw_words = (size_t)o->bandwidth_mib << 17, bw_map = 0; /* MiB / 8 bytes */
    int rc = -1;
    if (!c || !toks || !logits || !t_decode || !t_block || !t_prefill || !bw || !cp) {
        if (c) snprintf(err, PF_ERR_LEN, "out of memory");
        goto done;
    }
    /* real-looking ids spread over the vocabulary (never one repeated token) */
    uint64_t x = 0x243f6a8885a308d3ull;
    for (int64_t i = 0; i < n_ctx; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        toks[i] = (int32_t)(x % (uint64_t)(V > 256 ? V - 64 : V));
    }
    /* fill the cache to the deepest depth once; timed rows overwrite rows past their depth only */
    if (o->progress) fprintf(stderr, "bench-model: filling the cache to %d tokens...\n", max_depth);
    pf_kv_truncate(c->kv, 0);
    {
        pf_batch b = {.tokens = toks, .n = max_depth, .logits_mode = PF_LOGITS_NONE};
        if (max_depth > 0 && pf_forward(c, &b, err) < 0) goto done;
    }
    /* warm-up: one of each */
    for (int i = 0; i < o->n_blocks; i++) {
        at_depth(c, o->cb_depth, max_depth);
        if (forward_rows(c, toks + o->cb_depth, o->blocks[i], logits, err) < 0) goto done;
    }
    /* peak memory of the model work (it allocates nothing more), before the bandwidth array */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r->peak_rss_mb = (double)ru.ru_maxrss / 1024.0;
    if (o->bandwidth_mib > 0) {
        /* the same kind of memory as the packed weights (huge pages where the kernel gives them);
         * read once per repetition, next to the decode measurements, since this machine's
         * bandwidth drifts between runs */
        bw_array = pf_weights_alloc(bw_words * sizeof *bw_array, &bw_map);
        if (!bw_array) {
            snprintf(err, PF_ERR_LEN, "out of memory for the %d MiB bandwidth array", o->bandwidth_mib);
            goto done;
        }
        for (size_t i = 0; i < bw_words; i++) bw_array[i] = i;
    }
    for (int rep = 0; rep < o->reps; rep++) {
        if (o->progress) fprintf(stderr, "\rbench-model: repetition %d/%d", rep + 1, o->reps);
        if (bw_array) bw[rep] = pf_probe_bandwidth(c->pool, bw_array, bw_words, 2);
        cp[rep] = pf_probe_compute(c->k, c->pool, 3);
        for (int i = 0; i < o->n_depths; i++) {
            int d = o->depths[i];
            double best = 1e9;
            /* a decode step = one row with all logits; several rows in a row, the fastest kept, so a
             * single descheduling does not dominate */
            for (int k = 0; k < o->inner; k++) {
                at_depth(c, d, max_depth);
                double t0 = pf_now_s();
                if (forward_rows(c, toks + d, 1, logits, err) < 0) goto done;
                double t = pf_now_s() - t0;
                if (t < best) best = t;
            }
            t_decode[i * o->reps + rep] = best;
        }
        for (int i = 0; i < o->n_blocks; i++) {
            double best = 1e9;
            for (int k = 0; k < o->inner; k++) {
                at_depth(c, o->cb_depth, max_depth);
                double t0 = pf_now_s();
                if (forward_rows(c, toks + o->cb_depth, o->blocks[i], logits, err) < 0) goto done;
                double t = pf_now_s() - t0;
                if (t < best) best = t;
            }
            t_block[i * o->reps + rep] = best;
        }
        if (o->prefill_tokens > 0) {
            /* prefill writes rows 0..P-1: refill the deep rows afterwards is unnecessary for timing */
            pf_kv_truncate(c->kv, 0);
            double t0 = pf_now_s();
            pf_batch b = {.tokens = toks, .n = o->prefill_tokens, .logits_mode = PF_LOGITS_LAST, .logits = logits};
            if (pf_forward(c, &b, err) < 0) goto done;
            t_prefill[rep] = pf_now_s() - t0;
        }
    }
    if (o->progress) fprintf(stderr, "\n");
    /* c(B) per repetition (same repetition's B=1 time), then the median over repetitions */
    int one = -1;
    for (int i = 0; i < o->n_blocks; i++)
        if (o->blocks[i] == 1) one = i;
    for (int i = 0; i < o->n_blocks; i++) {
        double ratios[256];
        int n = o->reps < 256 ? o->reps : 256;
        for (int rep = 0; rep < n; rep++)
            ratios[rep] = one >= 0 ? t_block[i * o->reps + rep] / t_block[one * o->reps + rep] : 0;
        pf_stat_summarize(ratios, n, &r->c[i]);
        double ms[256];
        for (int rep = 0; rep < n; rep++) ms[rep] = t_block[i * o->reps + rep] * 1e3;
        pf_stat_summarize(ms, n, &r->block_ms[i]);
    }
    for (int i = 0; i < o->n_depths; i++) {
        double tps[256];
        int n = o->reps < 256 ? o->reps : 256;
        for (int rep = 0; rep < n; rep++) tps[rep] = 1.0 / t_decode[i * o->reps + rep];
        pf_stat_summarize(tps, n, &r->decode_tok_s[i]);
    }
    if (o->prefill_tokens > 0) {
        double tps[256];
        int n = o->reps < 256 ? o->reps : 256;
        for (int rep = 0; rep < n; rep++) tps[rep] = o->prefill_tokens / t_prefill[rep];
        pf_stat_summarize(tps, n, &r->prefill_tok_s);
    }
    if (o->ops) {
        /* a separate pass with the forward's op timers on (their clock reads would otherwise be in
         * the times above), blocks interleaved as above; per block the breakdown of its fastest
         * forward is kept, like the fastest-of-inner times above */
        double best[PF_BENCH_MAX];
        for (int i = 0; i < o->n_blocks; i++) best[i] = 1e30;
        if (o->progress) fprintf(stderr, "bench-model: timing operations...\n");
        for (int rep = 0; rep < o->reps * o->inner; rep++)
            for (int i = 0; i < o->n_blocks; i++) {
                double op_s[PF_OP_COUNT] = {0}, tot = 0;
                at_depth(c, o->cb_depth, max_depth);
                c->op_s = op_s;
                int rc2 = forward_rows(c, toks + o->cb_depth, o->blocks[i], logits, err);
                c->op_s = NULL;
                if (rc2 < 0) goto done;
                for (int p = 0; p < PF_OP_COUNT; p++) tot += op_s[p];
                if (tot < best[i]) {
                    best[i] = tot;
                    for (int p = 0; p < PF_OP_COUNT; p++) r->op_ms[i][p] = op_s[p] * 1e3;
                }
            }
    }
    r->bytes_per_token = pf_model_weight_bytes(m);
    if (bw_array) {
        int n = o->reps < 256 ? o->reps : 256;
        if (o->n_depths > 0) {
            /* decode at the first depth over the ceiling of the same repetition, then the median */
            double frac[256];
            for (int rep = 0; rep < n; rep++) frac[rep] = (1.0 / t_decode[rep]) / (bw[rep] * 1e9 / (double)r->bytes_per_token);
            pf_stat_summarize(frac, n, &r->decode_fraction);
        }
        pf_stat_summarize(bw, n, &r->bandwidth);
        r->bandwidth_gb_s = r->bandwidth.median;
    }
    r->ceiling_tok_s = r->bandwidth_gb_s * 1e9 / (double)r->bytes_per_token;
    pf_stat_summarize(cp, o->reps, &r->compute);
    rc = 0;
done:
    pf_ctx_free(c);
    free(toks);
    free(logits);
    free(t_decode);
    free(t_block);
    free(t_prefill);
    free(bw);
    free(cp);
    pf_weights_free(bw_array, bw_map);
    return rc;
}
