/* GGUF v3 writer: metadata and tensors are collected in memory (tensor data by reference), then
 * written through atomic_file (a temporary renamed over PATH only when complete). */
#include <errno.h>
#include "formats/grow.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "errf.h"
#include "ggml_types.h"
#include "gguf.h"

typedef struct {
    uint8_t *p;
    size_t len, cap;
    int oom;
} buf_t;

typedef struct {
    char *name;
    uint32_t type, n_dims;
    int64_t ne[4];
    const void *data;
    size_t nbytes;
} wtensor;

struct gguf_writer {
    buf_t kv;
    uint64_t n_kv;
    wtensor *t;
    size_t n_t, cap_t;
    uint32_t alignment;
    int oom;
    void **owned; /* buffers gguf_w_own handed over, freed with the writer */
    size_t n_owned, cap_owned;
};

static void put(buf_t *b, const void *src, size_t n) {
    if (b->oom || n == 0) return;
    uint8_t *p = pf_grow(b->p, &b->cap, b->len + n, 1, 4096);
    if (!p) {
        b->oom = 1;
        return;
    }
    b->p = p;
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void put_u32(buf_t *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(buf_t *b, uint64_t v) { put(b, &v, 8); }
static void put_str(buf_t *b, const char *s, size_t n) {
    put_u64(b, n);
    put(b, s, n);
}

gguf_writer *gguf_writer_new(void) {
    gguf_writer *w = calloc(1, sizeof *w);
    if (w) w->alignment = 32;
    return w;
}

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (uint64_t i = 0; i < w->n_t; i++) free(w->t[i].name);
    free(w->t);
    for (size_t i = 0; i < w->n_owned; i++) free(w->owned[i]);
    free(w->owned);
    free(w->kv.p);
    free(w);
}

void gguf_w_alignment(gguf_writer *w, uint32_t alignment) { w->alignment = alignment; }

pf_rc gguf_writer_from(const char *path, bool (*skip)(const char *key), gguf_file **src, gguf_writer **out,
                       char err[PF_ERR_LEN]) {
    *out = NULL;
    gguf_file *f;
    pf_rc rc = gguf_open_file(path, &f, err);
    if (rc != PF_RC_OK) return rc;
    gguf_writer *w = gguf_writer_new();
    if (!w) {
        gguf_close(f);
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    gguf_w_copy_kv(w, f, skip);
    *src = f;
    *out = w;
    return PF_RC_OK;
}

void *gguf_w_own(gguf_writer *w, void *p) {
    if (p) {
        void **o = pf_grow(w->owned, &w->cap_owned, w->n_owned + 1, sizeof *o, 64);
        if (!o) {
            free(p);
            p = NULL;
        } else {
            w->owned = o;
        }
    }
    if (!p) {
        w->oom = 1;
        return NULL;
    }
    return w->owned[w->n_owned++] = p;
}

static void key(gguf_writer *w, const char *k, uint32_t type) {
    put_str(&w->kv, k, strlen(k));
    put_u32(&w->kv, type);
    w->n_kv++;
}

void gguf_w_u32(gguf_writer *w, const char *k, uint32_t v) { key(w, k, GGUF_U32); put_u32(&w->kv, v); }
void gguf_w_i32(gguf_writer *w, const char *k, int32_t v) { key(w, k, GGUF_I32); put(&w->kv, &v, 4); }
void gguf_w_u64(gguf_writer *w, const char *k, uint64_t v) { key(w, k, GGUF_U64); put_u64(&w->kv, v); }
void gguf_w_f32(gguf_writer *w, const char *k, float v) { key(w, k, GGUF_F32); put(&w->kv, &v, 4); }
void gguf_w_str(gguf_writer *w, const char *k, const char *v) {
    key(w, k, GGUF_STR);
    put_str(&w->kv, v, strlen(v));
}
void gguf_w_bool(gguf_writer *w, const char *k, bool v) {
    uint8_t b = v;
    key(w, k, GGUF_BOOL);
    put(&w->kv, &b, 1);
}

void gguf_w_scalar(gguf_writer *w, const char *k, uint32_t type, const void *value) {
    size_t es = gguf_scalar_size(type);
    if (!es) return;
    key(w, k, type);
    put(&w->kv, value, es);
}

void gguf_w_arr(gguf_writer *w, const char *k, uint32_t elem_type, const void *data, uint64_t n) {
    key(w, k, GGUF_ARR);
    put_u32(&w->kv, elem_type);
    put_u64(&w->kv, n);
    put(&w->kv, data, (size_t)n * gguf_scalar_size(elem_type));
}

void gguf_w_arr_str(gguf_writer *w, const char *k, const char *const *strs, const uint64_t *lens,
                    uint64_t n) {
    key(w, k, GGUF_ARR);
    put_u32(&w->kv, GGUF_STR);
    put_u64(&w->kv, n);
    for (uint64_t i = 0; i < n; i++) put_str(&w->kv, strs[i], lens ? lens[i] : strlen(strs[i]));
}

/* Re-encode one parsed value; its raw bytes cannot be copied directly for arrays of strings
 * because the reader keeps them as pointers. */
void gguf_w_copy_kv(gguf_writer *w, const gguf_file *src, bool (*skip)(const char *key)) {
    for (uint64_t i = 0; i < src->n_kv; i++) {
        const gguf_kv *kv = &src->kv[i];
        char *k = gguf_str_dup(kv->key);
        if (!k) { w->oom = 1; return; }
        if (skip && skip(k)) { free(k); continue; }
        put_str(&w->kv, kv->key.ptr, kv->key.len);
        put_u32(&w->kv, kv->type);
        w->n_kv++;
        switch (kv->type) {
        case GGUF_STR: put_str(&w->kv, kv->v.s.ptr, kv->v.s.len); break;
        case GGUF_ARR:
            put_u32(&w->kv, kv->v.arr.type);
            put_u64(&w->kv, kv->v.arr.n);
            if (kv->v.arr.type == GGUF_STR)
                for (uint64_t j = 0; j < kv->v.arr.n; j++)
                    put_str(&w->kv, kv->v.arr.strs[j].ptr, kv->v.arr.strs[j].len);
            else
                put(&w->kv, kv->v.arr.data, (size_t)kv->v.arr.n * gguf_scalar_size(kv->v.arr.type));
            break;
        case GGUF_F32: { float f = (float)kv->v.f; put(&w->kv, &f, 4); break; }
        case GGUF_F64: put(&w->kv, &kv->v.f, 8); break;
        default: {
            /* integers and bool: little-endian low bytes of the stored 64-bit value */
            uint64_t u = kv->v.u;
            put(&w->kv, &u, gguf_scalar_size(kv->type));
        }
        }
        free(k);
    }
}

void gguf_w_copy_tensors(gguf_writer *w, const gguf_file *src, bool (*skip)(const char *name)) {
    for (uint64_t i = 0; i < src->n_tensors; i++) {
        const gguf_tensor *t = &src->tensors[i];
        char *name = gguf_str_dup(t->name);
        if (!name) { w->oom = 1; return; }
        if (!skip || !skip(name)) gguf_w_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
        free(name);
    }
}

void gguf_w_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                   const int64_t *ne, const void *data, size_t nbytes) {
    wtensor *grown = pf_grow(w->t, &w->cap_t, w->n_t + 1, sizeof *grown, 64);
    if (!grown) { w->oom = 1; return; }
    w->t = grown;
    wtensor *t = &w->t[w->n_t++];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    t->type = type;
    t->n_dims = n_dims;
    for (uint32_t d = 0; d < 4; d++) t->ne[d] = d < n_dims ? ne[d] : 1;
    t->data = data;
    t->nbytes = nbytes;
    if (!t->name) w->oom = 1;
}

static size_t pad_to(size_t x, size_t a) { return (x + a - 1) / a * a; }

static const uint8_t k_zeros[256];

/* The header (metadata, tensor table, padding to the data) into *h. */
static pf_rc build_header(const gguf_writer *w, buf_t *h, const char *path, char *err) {
    put(h, "GGUF", 4);
    put_u32(h, 3);
    put_u64(h, w->n_t);
    put_u64(h, w->n_kv);
    put(h, w->kv.p, w->kv.len);
    size_t off = 0;
    for (uint64_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        put_str(h, t->name, strlen(t->name));
        put_u32(h, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) put_u64(h, (uint64_t)t->ne[d]);
        put_u32(h, t->type);
        put_u64(h, off);
        off = pad_to(off + t->nbytes, w->alignment);
    }
    for (size_t hpad = pad_to(h->len, w->alignment) - h->len; hpad;) {
        size_t n = hpad < sizeof k_zeros ? hpad : sizeof k_zeros;
        put(h, k_zeros, n);
        hpad -= n;
    }
    if (!h->oom) return PF_RC_OK;
    return pf_err_rc(err, PF_RC_OOM, "%s: out of memory while building the header", path);
}

/* The tensors' bytes, each padded to the alignment; false on a short write. */
static bool write_tensors(const gguf_writer *w, FILE *fp) {
    bool ok = true;
    for (uint64_t i = 0; ok && i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        ok = fwrite(t->data, 1, t->nbytes, fp) == t->nbytes;
        for (size_t pad = pad_to(t->nbytes, w->alignment) - t->nbytes; ok && pad;) {
            size_t n = pad < sizeof k_zeros ? pad : sizeof k_zeros;
            ok = fwrite(k_zeros, 1, n, fp) == n;
            pad -= n;
        }
    }
    return ok;
}

pf_rc gguf_w_save(gguf_writer *w, const char *path, char err[PF_ERR_LEN]) {
    if (w->oom || w->kv.oom) return pf_err_rc(err, PF_RC_OOM, "%s: out of memory while building the file", path);
    buf_t h = {0};
    pf_rc rc = build_header(w, &h, path, err);
    if (rc != PF_RC_OK) {
        free(h.p);
        return rc;
    }
    atomic_file af;
    FILE *fp = atomic_file_open(&af, path, "wb");
    if (!fp) {
        int e = errno;
        free(h.p);
        return pf_err_rc(err, e == ENOMEM ? PF_RC_OOM : PF_RC_IO, "%s: cannot create: %s", path, strerror(e));
    }
    bool ok = fwrite(h.p, 1, h.len, fp) == h.len;
    free(h.p);
    if (!ok || !write_tensors(w, fp)) atomic_file_failed(&af);
    if (atomic_file_commit(&af, path, 0) != 0)
        return pf_err_rc(err, PF_RC_IO, "%s: write failed: %s", path, strerror(errno));
    return PF_RC_OK;
}

int gguf_w_write(gguf_writer *w, const char *path, char err[PF_ERR_LEN]) {
    return gguf_w_save(w, path, err) == PF_RC_OK ? 0 : -1;
}
