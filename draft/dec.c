#include "draft/dec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/ggml_types.h"

struct pf_dec {
    int n_embd, n_pos;
    float *w; /* 2 * n_embd */
    float bias;
    float *pos_bias;
};

static const gguf_tensor *f32_tensor(const gguf_file *f, const char *name, int64_t n, char err[PF_ERR_LEN]) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) {
        snprintf(err, PF_ERR_LEN, "%.180s: tensor '%s' is missing (no Dec head in this draft)", f->path, name);
        return NULL;
    }
    if (t->type != PF_TYPE_F32 || (n > 0 && (t->n_dims != 1 || t->ne[0] != n))) {
        snprintf(err, PF_ERR_LEN, "%.180s: tensor '%s' must be f32 [%lld]", f->path, name, (long long)n);
        return NULL;
    }
    return t;
}

pf_rc pf_dec_load(const gguf_file *f, int n_embd, pf_dec **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    const gguf_tensor *w = f32_tensor(f, "dec.weight", 2 * (int64_t)n_embd, err);
    const gguf_tensor *b = w ? f32_tensor(f, "dec.bias", 1, err) : NULL;
    const gguf_tensor *pb = b ? f32_tensor(f, "dec.pos_bias", 0, err) : NULL;
    if (!pb) return PF_RC_FORMAT;
    if (pb->n_dims != 1 || pb->ne[0] < 1 || pb->ne[0] > 1024) {
        snprintf(err, PF_ERR_LEN, "%.180s: tensor 'dec.pos_bias' must be f32 [1..1024]", f->path);
        return PF_RC_FORMAT;
    }
    pf_dec *d = calloc(1, sizeof *d);
    if (!d) goto oom;
    d->n_embd = n_embd;
    d->n_pos = (int)pb->ne[0];
    d->w = malloc((size_t)2 * n_embd * sizeof(float));
    d->pos_bias = malloc((size_t)d->n_pos * sizeof(float));
    if (!d->w || !d->pos_bias) goto oom;
    memcpy(d->w, w->data, (size_t)2 * n_embd * sizeof(float));
    memcpy(&d->bias, b->data, sizeof(float));
    memcpy(d->pos_bias, pb->data, (size_t)d->n_pos * sizeof(float));
    *out = d;
    return PF_RC_OK;
oom:
    pf_dec_free(d);
    snprintf(err, PF_ERR_LEN, "out of memory");
    return PF_RC_OOM;
}

pf_rc pf_dec_load_path(const char *path, int n_embd, pf_dec **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    gguf_file *f;
    pf_rc rc = gguf_open_file(path, &f, err);
    if (rc == PF_RC_OK) rc = pf_dec_load(f, n_embd, out, err);
    gguf_close(f);
    return rc;
}

void pf_dec_free(pf_dec *d) {
    if (!d) return;
    free(d->w);
    free(d->pos_bias);
    free(d);
}

double pf_dec_target_logit(const pf_dec *d, const float *h_target) {
    double z = d->bias;
    for (int i = 0; i < d->n_embd; i++) z += (double)d->w[i] * h_target[i];
    return z;
}

double pf_dec_pos_bias(const pf_dec *d, int k) { return d->pos_bias[k - 1 < d->n_pos ? k - 1 : d->n_pos - 1]; }

/* w_d . h + pos_bias[k-1] for the draft row h of position k */
static double draft_logit(const pf_dec *d, const float *h, int k) {
    double v = pf_dec_pos_bias(d, k);
    for (int i = 0; i < d->n_embd; i++) v += (double)d->w[d->n_embd + i] * h[i];
    return v;
}

void pf_dec_draft_logits(const pf_dec *d, const float *h_draft, int n, double *z) {
    for (int k = 1; k <= n; k++) z[k - 1] = draft_logit(d, h_draft + (size_t)k * d->n_embd, k);
}

void pf_dec_survival(const pf_dec *d, const float *h_target, const float *h_draft, int n, float *s) {
    double base = pf_dec_target_logit(d, h_target);
    for (int k = 1; k <= n; k++)
        s[k - 1] = (float)(1.0 / (1.0 + exp(-(base + draft_logit(d, h_draft + (size_t)k * d->n_embd, k)))));
}
