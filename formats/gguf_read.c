/* GGUF v3 reader. Every count, length, offset and size is checked against the bytes that remain
 * before it is used; the first problem is reported as "FILE: FIELD: what". */
#include "gguf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_types.h"
#include "map_file.h"

/* Bounds that no sane file exceeds; they keep absurd counts from turning into huge allocations. */
#define MAX_DIMS 4
#define MAX_ALIGNMENT (1u << 16)

typedef struct {
    const uint8_t *p, *end, *base;
    const char *name;
    char *err;
    int failed;
    pf_rc rc; /* the first failure's kind: PF_RC_FORMAT, or PF_RC_OOM from fail_oom */
} cursor;

/* The first failure's message (later ones keep it) and its kind; -1, for `return fail(...)`. */
static int fail_as(cursor *c, pf_rc rc, const char *fmt, ...) {
    if (c->failed) return -1;
    c->failed = 1;
    c->rc = rc;
    int n = snprintf(c->err, PF_ERR_LEN, "%s: ", c->name);
    if (n < 0 || n >= PF_ERR_LEN - 1) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, (size_t)(PF_ERR_LEN - n), fmt, ap);
    va_end(ap);
    return -1;
}
/* A bad file. */
#define fail(c, ...) fail_as((c), PF_RC_FORMAT, __VA_ARGS__)
/* An allocation that failed: the file may be fine. */
#define fail_oom(c, ...) fail_as((c), PF_RC_OOM, __VA_ARGS__)

static int take(cursor *c, void *out, size_t n, const char *field) {
    if (c->failed) return -1;
    if ((size_t)(c->end - c->p) < n) {
        fail(c, "%s: truncated file (need %zu bytes at offset %zu)", field, n,
             (size_t)(c->p - c->base));
        return -1;
    }
    memcpy(out, c->p, n);
    c->p += n;
    return 0;
}

static int take_str(cursor *c, gguf_str *s, const char *field) {
    uint64_t len;
    if (take(c, &len, 8, field) < 0) return -1;
    if (len > (uint64_t)(c->end - c->p)) {
        fail(c, "%s: string length %llu exceeds the file", field, (unsigned long long)len);
        return -1;
    }
    s->ptr = (const char *)c->p;
    s->len = len;
    c->p += len;
    return 0;
}

size_t gguf_scalar_size(uint32_t t) {
    switch (t) {
    case GGUF_U8: case GGUF_I8: case GGUF_BOOL: return 1;
    case GGUF_U16: case GGUF_I16: return 2;
    case GGUF_U32: case GGUF_I32: case GGUF_F32: return 4;
    case GGUF_U64: case GGUF_I64: case GGUF_F64: return 8;
    }
    return 0;
}

static void load_scalar(gguf_kv *kv, uint32_t t, const uint8_t *p) {
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
            float f32; uint64_t u64; int64_t i64; double f64; } x;
    memcpy(&x, p, gguf_scalar_size(t));
    switch (t) {
    case GGUF_U8: kv->v.u = x.u8; break;
    case GGUF_BOOL: kv->v.u = x.u8 != 0; break;
    case GGUF_I8: kv->v.i = x.i8; break;
    case GGUF_U16: kv->v.u = x.u16; break;
    case GGUF_I16: kv->v.i = x.i16; break;
    case GGUF_U32: kv->v.u = x.u32; break;
    case GGUF_I32: kv->v.i = x.i32; break;
    case GGUF_F32: kv->v.f = x.f32; break;
    case GGUF_U64: kv->v.u = x.u64; break;
    case GGUF_I64: kv->v.i = x.i64; break;
    case GGUF_F64: kv->v.f = x.f64; break;
    }
}

static int read_value(cursor *c, gguf_kv *kv, const char *key) {
    char field[160];
    snprintf(field, sizeof field, "metadata '%s'", key);
    if (take(c, &kv->type, 4, field) < 0) return -1;
    if (kv->type >= GGUF_VTYPE_COUNT) {
        fail(c, "%s: unknown value type %u", field, kv->type);
        return -1;
    }
    if (kv->type == GGUF_STR) return take_str(c, &kv->v.s, field);
    if (kv->type != GGUF_ARR) {
        uint8_t buf[8];
        if (take(c, buf, gguf_scalar_size(kv->type), field) < 0) return -1;
        load_scalar(kv, kv->type, buf);
        return 0;
    }
    uint32_t et;
    uint64_t n;
    if (take(c, &et, 4, field) < 0 || take(c, &n, 8, field) < 0) return -1;
    if (et >= GGUF_VTYPE_COUNT || et == GGUF_ARR) {
        fail(c, "%s: unsupported array element type %u", field, et);
        return -1;
    }
    kv->v.arr.type = et;
    kv->v.arr.n = n;
    kv->v.arr.data = NULL;
    kv->v.arr.strs = NULL;
    size_t remain = (size_t)(c->end - c->p);
    if (et == GGUF_STR) {
        /* every string needs at least its 8-byte length */
        if (n > remain / 8) {
            fail(c, "%s: array count %llu exceeds the file", field, (unsigned long long)n);
            return -1;
        }
        kv->v.arr.strs = malloc((size_t)(n ? n : 1) * sizeof(gguf_str));
        if (!kv->v.arr.strs) {
            fail_oom(c, "%s: out of memory for %llu strings", field, (unsigned long long)n);
            return -1;
        }
        for (uint64_t i = 0; i < n; i++)
            if (take_str(c, &kv->v.arr.strs[i], field) < 0) return -1;
        return 0;
    }
    size_t es = gguf_scalar_size(et);
    if (n > remain / es) {
        fail(c, "%s: array count %llu exceeds the file", field, (unsigned long long)n);
        return -1;
    }
    kv->v.arr.data = c->p;
    c->p += n * es;
    return 0;
}

static char *cstr(gguf_str s) {
    char *r = malloc(s.len + 1);
    if (r) {
        memcpy(r, s.ptr, s.len);
        r[s.len] = 0;
    }
    return r;
}

char *gguf_str_dup(gguf_str s) { return cstr(s); }

bool gguf_str_eq(gguf_str s, const char *c) {
    size_t n = strlen(c);
    return s.len == n && memcmp(s.ptr, c, n) == 0;
}

static void free_contents(gguf_file *f) {
    if (f->kv)
        for (uint64_t i = 0; i < f->n_kv; i++)
            if (f->kv[i].type == GGUF_ARR) free(f->kv[i].v.arr.strs);
    free(f->kv);
    free(f->tensors);
    free(f->path);
}

static int parse_tensors(cursor *c, gguf_file *f) {
    size_t remain = (size_t)(c->end - c->p);
    /* a tensor info is at least 8 (name len) + 4 + 4 + 8 bytes */
    if (f->n_tensors > remain / 24) {
        fail(c, "tensor count %llu exceeds the file", (unsigned long long)f->n_tensors);
        return -1;
    }
    f->tensors = calloc((size_t)(f->n_tensors ? f->n_tensors : 1), sizeof(gguf_tensor));
    if (!f->tensors) {
        fail_oom(c, "out of memory for %llu tensor infos", (unsigned long long)f->n_tensors);
        return -1;
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        if (take_str(c, &t->name, "tensor name") < 0) return -1;
        char field[160];
        snprintf(field, sizeof field, "tensor '%.*s'", (int)(t->name.len > 100 ? 100 : t->name.len),
                 t->name.ptr);
        if (take(c, &t->n_dims, 4, field) < 0) return -1;
        if (t->n_dims == 0 || t->n_dims > MAX_DIMS) {
            fail(c, "%s: n_dims %u out of range 1..%d", field, t->n_dims, MAX_DIMS);
            return -1;
        }
        uint64_t nel = 1;
        for (int d = 0; d < MAX_DIMS; d++) t->ne[d] = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) {
            uint64_t ne;
            if (take(c, &ne, 8, field) < 0) return -1;
            if (ne == 0 || ne > (1ull << 40) || nel > (1ull << 50) / ne) {
                fail(c, "%s: dimension %u = %llu is out of range", field, d, (unsigned long long)ne);
                return -1;
            }
            t->ne[d] = (int64_t)ne;
            nel *= ne;
        }
        if (take(c, &t->type, 4, field) < 0 || take(c, &t->offset, 8, field) < 0) return -1;
        const pf_type_traits *tt = pf_tensor_type_info(t->type);
        if (!tt) {
            fail(c, "%s: unsupported tensor type %u", field, t->type);
            return -1;
        }
        if (t->ne[0] % tt->block) {
            fail(c, "%s: row length %lld is not a multiple of the %s block (%d)", field,
                 (long long)t->ne[0], tt->name, tt->block);
            return -1;
        }
        t->nbytes = (size_t)(nel / (uint64_t)tt->block) * tt->type_size;
        for (uint64_t j = 0; j < i; j++)
            if (f->tensors[j].name.len == t->name.len &&
                memcmp(f->tensors[j].name.ptr, t->name.ptr, t->name.len) == 0) {
                fail(c, "%s: duplicate tensor name", field);
                return -1;
            }
    }
    return 0;
}

/* The magic, the version, the counts and every key-value pair. */
static int parse_header(cursor *c, gguf_file *f) {
    char magic[4];
    if (take(c, magic, 4, "magic") < 0) return -1;
    if (memcmp(magic, "GGUF", 4) != 0) return fail(c, "magic: not a GGUF file");
    if (take(c, &f->version, 4, "version") < 0) return -1;
    if (f->version != 3 && f->version != 2) return fail(c, "version: unsupported GGUF version %u (expected 3)", f->version);
    if (take(c, &f->n_tensors, 8, "tensor count") < 0 || take(c, &f->n_kv, 8, "metadata count") < 0) return -1;
    /* a key-value pair is at least 8 (key len) + 4 (type) + 1 bytes */
    if (f->n_kv > (size_t)(c->end - c->p) / 13)
        return fail(c, "metadata count %llu exceeds the file", (unsigned long long)f->n_kv);
    f->kv = calloc((size_t)(f->n_kv ? f->n_kv : 1), sizeof(gguf_kv));
    if (!f->kv) return fail_oom(c, "out of memory for %llu metadata entries", (unsigned long long)f->n_kv);
    for (uint64_t i = 0; i < f->n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        if (take_str(c, &kv->key, "metadata key") < 0) return -1;
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)(kv->key.len > 100 ? 100 : kv->key.len), kv->key.ptr);
        if (read_value(c, kv, key) < 0) return -1;
    }
    return 0;
}

/* general.alignment: a u32 power of two up to MAX_ALIGNMENT; 32 without it. */
static int read_alignment(cursor *c, gguf_file *f) {
    f->alignment = 32;
    const gguf_kv *al = gguf_find(f, "general.alignment");
    if (!al) return 0;
    if (al->type != GGUF_U32 || al->v.u == 0 || al->v.u > MAX_ALIGNMENT || (al->v.u & (al->v.u - 1)))
        return fail(c, "general.alignment: must be a u32 power of two up to %u", MAX_ALIGNMENT);
    f->alignment = al->v.u;
    return 0;
}

/* Every tensor's offset aligned and, with need_data, its bytes inside the file of `size` bytes
 * whose data section starts at f->data_offset. */
static int place_tensors(cursor *c, gguf_file *f, size_t size, int need_data) {
    const size_t data = f->data_offset;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        char field[160];
        snprintf(field, sizeof field, "tensor '%.*s'", (int)(t->name.len > 100 ? 100 : t->name.len),
                 t->name.ptr);
        if (t->offset % f->alignment)
            return fail(c, "%s: offset %llu is not aligned to %llu", field, (unsigned long long)t->offset,
                        (unsigned long long)f->alignment);
        if (!need_data) continue;
        if (t->offset > size - data || t->nbytes > size - data - t->offset)
            return fail(c, "%s: data (offset %llu, %zu bytes) runs past the end of the file", field,
                        (unsigned long long)t->offset, t->nbytes);
        t->data = (const uint8_t *)f->base + data + t->offset;
    }
    return 0;
}

/* need_data: tensor data follows the header inside buf (a GGUF file); otherwise only the header
 * is parsed and validated, tensor `data` stays NULL and `data_offset` is the aligned header end. */
static pf_rc parse(const void *buf, size_t size, const char *name, int need_data, gguf_file **out, char err[PF_ERR_LEN]) {
    cursor c = {(const uint8_t *)buf, (const uint8_t *)buf + size, (const uint8_t *)buf, name, err, 0, PF_RC_OK};
    err[0] = 0;
    *out = NULL;
    gguf_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(name))) {
        free(f);
        snprintf(err, PF_ERR_LEN, "%s: out of memory", name);
        return PF_RC_OOM;
    }
    f->base = buf;
    f->size = size;
    if (parse_header(&c, f) < 0 || read_alignment(&c, f) < 0 || parse_tensors(&c, f) < 0) goto bad;
    size_t hdr = (size_t)(c.p - (const uint8_t *)buf);
    size_t data = (hdr + f->alignment - 1) / f->alignment * f->alignment;
    if (need_data && f->n_tensors && data > size) {
        fail(&c, "data section: starts at %zu beyond the end of the file (%zu bytes)", data, size);
        goto bad;
    }
    f->data_offset = data;
    if (place_tensors(&c, f, size, need_data) < 0) goto bad;
    *out = f;
    return PF_RC_OK;
bad:
    free_contents(f);
    free(f);
    return c.rc;
}

gguf_file *gguf_parse(const void *buf, size_t size, const char *name, char err[PF_ERR_LEN]) {
    gguf_file *f;
    parse(buf, size, name, 1, &f, err);
    return f;
}

pf_rc gguf_parse_meta(const void *buf, size_t size, const char *name, gguf_file **out, char err[PF_ERR_LEN]) {
    return parse(buf, size, name, 0, out, err);
}

pf_rc gguf_parse_map(const uint8_t *map, size_t size, const char *path, gguf_file **out, char err[PF_ERR_LEN]) {
    pf_rc rc = parse(map, size, path, 1, out, err);
    if (rc != PF_RC_OK) {
        pf_unmap_file(map, size);
        return rc;
    }
    (*out)->mapped = 1;
    return PF_RC_OK;
}

pf_rc gguf_open_file(const char *path, gguf_file **out, char err[PF_ERR_LEN]) {
    const uint8_t *map;
    size_t size;
    *out = NULL;
    pf_rc rc = pf_map_file(path, 24, &map, &size, err);
    return rc != PF_RC_OK ? rc : gguf_parse_map(map, size, path, out, err);
}

void pf_err_one_line(char *err) {
    for (unsigned char *p = (unsigned char *)err; *p; p++)
        if (*p < 0x20 || *p == 0x7f) *p = '?';
}

void gguf_close(gguf_file *f) {
    if (!f) return;
    if (f->mapped) pf_unmap_file(f->base, f->size);
    free_contents(f);
    free(f);
}

void *gguf_loader_alloc(gguf_file *f, int own_file, size_t size, char err[PF_ERR_LEN]) {
    void *p = calloc(1, size);
    if (!p) {
        snprintf(err, PF_ERR_LEN, "%s: out of memory", f->path);
        if (own_file) gguf_close(f);
    }
    return p;
}

const gguf_kv *gguf_find(const gguf_file *f, const char *key) {
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (gguf_str_eq(f->kv[i].key, key)) return &f->kv[i];
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (gguf_str_eq(f->tensors[i].name, name)) return &f->tensors[i];
    return NULL;
}

static int is_int_type(uint32_t t) {
    return t == GGUF_U8 || t == GGUF_I8 || t == GGUF_U16 || t == GGUF_I16 || t == GGUF_U32 ||
           t == GGUF_I32 || t == GGUF_U64 || t == GGUF_I64;
}

static int is_signed(uint32_t t) { return t == GGUF_I8 || t == GGUF_I16 || t == GGUF_I32 || t == GGUF_I64; }

int gguf_get_i64(const gguf_file *f, const char *key, int64_t *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return -1;
    if (!is_int_type(kv->type)) return -2;
    if (is_signed(kv->type)) {
        *out = kv->v.i;
    } else {
        if (kv->v.u > (uint64_t)INT64_MAX) return -2;
        *out = (int64_t)kv->v.u;
    }
    return 0;
}

int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out) {
    int64_t v;
    int r = gguf_get_i64(f, key, &v);
    if (r) return r;
    if (v < 0 || v > (int64_t)UINT32_MAX) return -2;
    *out = (uint32_t)v;
    return 0;
}

int gguf_get_f32(const gguf_file *f, const char *key, float *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return -1;
    if (kv->type == GGUF_F32 || kv->type == GGUF_F64) *out = (float)kv->v.f;
    else if (is_int_type(kv->type)) *out = is_signed(kv->type) ? (float)kv->v.i : (float)kv->v.u;
    else return -2;
    return 0;
}

int gguf_get_bool(const gguf_file *f, const char *key, bool *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return -1;
    if (kv->type != GGUF_BOOL) return -2;
    *out = kv->v.u != 0;
    return 0;
}

int gguf_get_str(const gguf_file *f, const char *key, gguf_str *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return -1;
    if (kv->type != GGUF_STR) return -2;
    *out = kv->v.s;
    return 0;
}

const gguf_kv *gguf_get_arr(const gguf_file *f, const char *key, uint32_t elem_type) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv || kv->type != GGUF_ARR) return NULL;
    if (kv->v.arr.type == elem_type) return kv;
    if (is_int_type(elem_type) && is_int_type(kv->v.arr.type)) return kv;
    if ((elem_type == GGUF_F32 || elem_type == GGUF_F64) &&
        (kv->v.arr.type == GGUF_F32 || kv->v.arr.type == GGUF_F64))
        return kv;
    return NULL;
}

int64_t gguf_arr_int(const gguf_kv *kv, uint64_t i) {
    gguf_kv tmp = {0};
    const uint8_t *p = (const uint8_t *)kv->v.arr.data + i * gguf_scalar_size(kv->v.arr.type);
    load_scalar(&tmp, kv->v.arr.type, p);
    if (is_signed(kv->v.arr.type)) return tmp.v.i;
    if (kv->v.arr.type == GGUF_F32 || kv->v.arr.type == GGUF_F64) return (int64_t)tmp.v.f;
    return (int64_t)tmp.v.u;
}

double gguf_arr_float(const gguf_kv *kv, uint64_t i) {
    gguf_kv tmp = {0};
    const uint8_t *p = (const uint8_t *)kv->v.arr.data + i * gguf_scalar_size(kv->v.arr.type);
    load_scalar(&tmp, kv->v.arr.type, p);
    if (kv->v.arr.type == GGUF_F32 || kv->v.arr.type == GGUF_F64) return tmp.v.f;
    return is_signed(kv->v.arr.type) ? (double)tmp.v.i : (double)tmp.v.u;
}

const char *gguf_vtype_name(uint32_t t) {
    static const char *names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                  "bool", "str", "arr", "u64", "i64", "f64"};
    return t < GGUF_VTYPE_COUNT ? names[t] : "?";
}
