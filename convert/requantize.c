#include "convert/requantize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/ggml_types.h"
#include "formats/quant.h"

void *pf_convert_matrix(uint32_t type, const float *src, int64_t rows, int64_t cols, size_t *nbytes) {
    size_t rb = pf_row_bytes(type, cols);
    if (!rb) return NULL;
    uint8_t *dst = malloc(rb * (size_t)rows);
    if (!dst) return NULL;
    for (int64_t r = 0; r < rows; r++) pf_quantize_row(type, src + r * cols, dst + rb * (size_t)r, cols);
    *nbytes = rb * (size_t)rows;
    return dst;
}

/* ggml's LLAMA_FTYPE numbering for general.file_type */
uint32_t pf_file_type_of(uint32_t type) {
    switch (type) {
    case PF_TYPE_F32: return 0;
    case PF_TYPE_F16: return 1;
    case PF_TYPE_Q4_0: return 2;
    case PF_TYPE_Q4_1: return 3;
    case PF_TYPE_Q8_0: return 7;
    case PF_TYPE_BF16: return 32;
    }
    return 0;
}

static bool skip_file_type(const char *key) { return strcmp(key, "general.file_type") == 0; }

/* Tensor t of f (named name) converted to type, handed to w; PF_RC_FORMAT when its type has no
 * dequantizer, PF_RC_OOM when the copies do not fit. */
static pf_rc convert_tensor(gguf_writer *w, const gguf_tensor *t, const char *name, uint32_t type, const char *in,
                            char err[PF_ERR_LEN]) {
    int64_t rows = t->ne[1] * t->ne[2] * t->ne[3], cols = t->ne[0];
    float *tmp = malloc((size_t)(rows * cols) * sizeof(float));
    if (!tmp) return snprintf(err, PF_ERR_LEN, "%s: tensor '%s': out of memory", in, name), PF_RC_OOM;
    if (pf_dequantize_row(t->type, t->data, tmp, rows * cols) != 0) {
        free(tmp);
        snprintf(err, PF_ERR_LEN, "%s: tensor '%s': conversion failed", in, name);
        return PF_RC_FORMAT;
    }
    size_t nb = 0;
    void *conv = pf_convert_matrix(type, tmp, rows, cols, &nb); /* the writer keeps it (gguf_w_own) */
    free(tmp);
    if (!conv) return snprintf(err, PF_ERR_LEN, "%s: tensor '%s': out of memory", in, name), PF_RC_OOM;
    gguf_w_tensor(w, name, type, t->n_dims, t->ne, gguf_w_own(w, conv), nb);
    return PF_RC_OK;
}

pf_rc pf_requantize_file(const char *in, const char *out, uint32_t type, char err[PF_ERR_LEN]) {
    if (!pf_type_info(type)) {
        snprintf(err, PF_ERR_LEN, "unsupported output type %u", type);
        return PF_RC_ARG;
    }
    gguf_file *f;
    gguf_writer *w;
    pf_rc rc = gguf_writer_from(in, skip_file_type, &f, &w, err);
    if (rc != PF_RC_OK) return rc;
    gguf_w_u32(w, "general.file_type", pf_file_type_of(type));
    for (uint64_t i = 0; i < f->n_tensors && rc == PF_RC_OK; i++) {
        const gguf_tensor *t = &f->tensors[i];
        char *name = gguf_str_dup(t->name);
        if (!name) {
            snprintf(err, PF_ERR_LEN, "%s: out of memory", in);
            rc = PF_RC_OOM;
        } else if (t->n_dims >= 2 && t->ne[0] % PF_QK == 0 && t->type != type) {
            rc = convert_tensor(w, t, name, type, in, err);
        } else {
            gguf_w_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
        }
        free(name);
    }
    if (rc == PF_RC_OK) rc = gguf_w_save(w, out, err);
    gguf_writer_free(w);
    gguf_close(f);
    return rc;
}
