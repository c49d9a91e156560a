#include "engine/weights.h"

#include <stdio.h>
#include <string.h>

#include "formats/quant.h"

int pf_get_u32(const gguf_file *f, const char *key, uint32_t *out, int required, char *err) {
    int r = gguf_get_u32(f, key, out);
    if (r == 0) return 0;
    if (r == -1 && !required) return 1;
    snprintf(err, PF_ERR_LEN, "%s: %s: %s", f->path, key,
             r == -1 ? "missing" : "has the wrong type or an out-of-range value");
    return -1;
}

const gguf_tensor *pf_find_tensor(const gguf_file *f, const char *name, char *err) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) snprintf(err, PF_ERR_LEN, "%s: tensor '%s' is missing", f->path, name);
    return t;
}

const gguf_tensor *pf_find_matrix(const gguf_file *f, const char *name, int64_t rows, int64_t cols, char *err) {
    const gguf_tensor *t = pf_find_tensor(f, name, err);
    if (t && (t->n_dims != 2 || t->ne[0] != cols || t->ne[1] != rows)) {
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s' has shape [%lld, %lld], expected [%lld, %lld]", f->path, name,
                 (long long)t->ne[0], (long long)t->ne[1], (long long)cols, (long long)rows);
        return NULL;
    }
    return t;
}

void pf_weight_set(pf_weight *w, const gguf_tensor *t, int64_t rows, int64_t cols) {
    w->data = t->data;
    w->type = t->type;
    w->rows = rows;
    w->cols = cols;
    w->row_bytes = pf_row_bytes(t->type, cols);
}

int pf_bind_matrix(const gguf_file *f, const char *name, int64_t rows, int64_t cols, pf_weight *w, char *err) {
    const gguf_tensor *t = pf_find_matrix(f, name, rows, cols, err);
    if (!t) return -1;
    const pf_type_traits *tr = pf_type_info(t->type);
    if (!tr || !pf_kernels_get(PF_LEVEL_SCALAR)->gemm[t->type]) {
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s': weight type %u is not supported", f->path, name, t->type);
        return -1;
    }
    if (cols % PF_QK) {
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s': input size %lld is not a multiple of 32", f->path, name,
                 (long long)cols);
        return -1;
    }
    pf_weight_set(w, t, rows, cols);
    return 0;
}

/* A float tensor of exactly the dims ne[0..3] (unused 1); converted into `store` unless it is
 * aligned f32 already. */
int pf_bind_floats(const gguf_file *f, const char *name, const int64_t ne[4], const float **out, float *store,
                       char *err) {
    const gguf_tensor *t = pf_find_tensor(f, name, err);
    if (!t) return -1;
    int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    if (t->ne[0] != ne[0] || t->ne[1] != ne[1] || t->ne[2] != ne[2] || t->ne[3] != ne[3]) {
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s' has shape [%lld, %lld, %lld], expected [%lld, %lld, %lld]",
                 f->path, name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)ne[0],
                 (long long)ne[1], (long long)ne[2]);
        return -1;
    }
    if (t->type == PF_TYPE_F32 && ((uintptr_t)t->data & 3) == 0) {
        *out = t->data;
        return 0;
    }
    if (t->type != PF_TYPE_F32 && t->type != PF_TYPE_F16 && t->type != PF_TYPE_BF16) {
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s' has unsupported type %u (f32, f16 or bf16)", f->path, name, t->type);
        return -1;
    }
    if (t->type == PF_TYPE_F32)
        memcpy(store, t->data, (size_t)n * sizeof(float));
    else
        pf_dequantize_row(t->type, t->data, store, n);
    *out = store;
    return 0;
}

int pf_bind_vector(const gguf_file *f, const char *name, int64_t n, const float **out, float *store, char *err) {
    const int64_t ne[4] = {n, 1, 1, 1};
    return pf_bind_floats(f, name, ne, out, store, err);
}


int pf_check_architecture(const gguf_file *f, const char *expected, const char *what, char *err) {
    gguf_str arch;
    if (gguf_get_str(f, "general.architecture", &arch) != 0) {
        snprintf(err, PF_ERR_LEN, "%s: general.architecture: missing (not a model file)", f->path);
        return -1;
    }
    if (!gguf_str_eq(arch, expected)) {
        snprintf(err, PF_ERR_LEN, "%s: general.architecture: '%.*s' %s (expected %s)", f->path,
                 (int)(arch.len > 40 ? 40 : arch.len), arch.ptr, what, expected);
        return -1;
    }
    return 0;
}

int pf_read_shape(const gguf_file *f, const char *prefix, pf_hparams *hp, char *err) {
    static const char *const keys[6] = {"block_count", "embedding_length", "feed_forward_length",
                                        "attention.head_count", "attention.head_count_kv", "attention.key_length"};
    char key[96];
    uint32_t v[6];
    for (int i = 0; i < 6; i++) {
        snprintf(key, sizeof key, "%s.%s", prefix, keys[i]);
        int r = pf_get_u32(f, key, &v[i], i < 4, err);
        if (r < 0) return -1;
        if (r == 1) v[i] = 0;
    }
    hp->n_layer = (int)v[0];
    hp->n_embd = (int)v[1];
    hp->n_ff = (int)v[2];
    hp->n_head = (int)v[3];
    hp->n_head_kv = v[4] ? (int)v[4] : hp->n_head;
    hp->head_dim = v[5] ? (int)v[5] : (hp->n_head ? hp->n_embd / hp->n_head : 0);
    uint32_t vlen;
    snprintf(key, sizeof key, "%s.attention.value_length", prefix);
    if (gguf_get_u32(f, key, &vlen) == 0 && (int)vlen != hp->head_dim) {
        snprintf(err, PF_ERR_LEN, "%s: %s: %u differs from key_length %d", f->path, key, vlen, hp->head_dim);
        return -1;
    }
    char key2[96];
    snprintf(key, sizeof key, "%s.rope.freq_base", prefix);
    snprintf(key2, sizeof key2, "%s.attention.layer_norm_rms_epsilon", prefix);
    if (gguf_get_f32(f, key, &hp->rope_theta) == -2 || gguf_get_f32(f, key2, &hp->rms_eps) == -2) {
        snprintf(err, PF_ERR_LEN, "%s: %s.rope.freq_base / layer_norm_rms_epsilon: wrong type", f->path, prefix);
        return -1;
    }
    return 0;
}
