#include "engine/sampler.h"

#include "kernels/kernels.h"

#include <math.h>
#include <stdlib.h>

int32_t pf_argmax(const float *logits, int n) { return pf_kernels_best()->argmax(logits, n); }

int pf_dist_init(pf_dist *d, int cap) {
    d->ids = malloc((size_t)cap * sizeof *d->ids);
    d->p = malloc((size_t)cap * sizeof *d->p);
    d->n = 0;
    d->cap = cap;
    return d->ids && d->p ? 0 : -1;
}

void pf_dist_free(pf_dist *d) {
    free(d->ids);
    free(d->p);
    d->ids = NULL;
    d->p = NULL;
}

static int cmp_desc(const void *a, const void *b, void *ctx) {
    const float *logits = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    float lx = logits[x], ly = logits[y];
    if (lx != ly) return lx > ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Stable order: by logit descending, ties by id. */
static void sort_ids(int32_t *ids, int n, const float *logits) {
    qsort_r(ids, (size_t)n, sizeof *ids, cmp_desc, (void *)logits);
}

void pf_sampling_probs(const pf_sampling *s, const float *logits, int n, pf_dist *out) {
    if (s->temp <= 0 || s->top_k == 1) {
        out->ids[0] = pf_argmax(logits, n);
        out->p[0] = 1.0f;
        out->n = 1;
        return;
    }
    float mx = logits[pf_argmax(logits, n)];
    /* Candidates: tokens whose probability relative to the best exceeds e^-40 at this
     * temperature; anything below cannot change a float32 sum or draw. */
    float cut = mx - 40.0f * s->temp;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (logits[i] >= cut) out->ids[m++] = i;
    sort_ids(out->ids, m, logits);
    if (s->top_k > 0 && m > s->top_k) m = s->top_k;
    double sum = 0;
    for (int i = 0; i < m; i++) {
        out->p[i] = expf((logits[out->ids[i]] - mx) / s->temp);
        sum += out->p[i];
    }
    for (int i = 0; i < m; i++) out->p[i] = (float)(out->p[i] / sum);
    if (s->top_p > 0 && s->top_p < 1) {
        double cum = 0;
        int keep = m;
        for (int i = 0; i < m; i++) {
            cum += out->p[i];
            if (cum >= s->top_p) { keep = i + 1; break; }
        }
        m = keep;
        double z = 0;
        for (int i = 0; i < m; i++) z += out->p[i];
        for (int i = 0; i < m; i++) out->p[i] = (float)(out->p[i] / z);
    }
    out->n = m;
}

int32_t pf_dist_sample(const pf_dist *d, pf_rng *r) {
    if (d->n == 1) return d->ids[0];
    double u = pf_rng_uniform(r), cum = 0;
    for (int i = 0; i < d->n; i++) {
        cum += d->p[i];
        if (u < cum) return d->ids[i];
    }
    return d->ids[d->n - 1];
}

float pf_dist_prob(const pf_dist *d, int32_t id) {
    for (int i = 0; i < d->n; i++)
        if (d->ids[i] == id) return d->p[i];
    return 0.0f;
}

int32_t pf_sample(const pf_sampling *s, const float *logits, int n, pf_dist *scratch, pf_rng *r) {
    pf_sampling_probs(s, logits, n, scratch);
    return pf_dist_sample(scratch, r);
}
