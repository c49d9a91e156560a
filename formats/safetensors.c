/* safetensors reader. See safetensors.h. */
#include "formats/safetensors.h"

#include "formats/errf.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/ggml_types.h"
#include "formats/json.h"

#define MAX_SHARDS 4096
#define MAX_TENSORS (1u << 20)

typedef struct {
    char *path;
    const uint8_t *base;
    size_t size;
    int mapped;
} shard;

struct pf_safetensors {
    shard *shards;
    int n_shards;
    pf_st_tensor *t;
    size_t n;
};

static const struct { const char *name; size_t size; } k_dtypes[PF_ST_DTYPE_COUNT] = {
    [PF_ST_BOOL] = {"BOOL", 1}, [PF_ST_U8] = {"U8", 1},     [PF_ST_I8] = {"I8", 1},
    [PF_ST_I16] = {"I16", 2},   [PF_ST_U16] = {"U16", 2},   [PF_ST_I32] = {"I32", 4},
    [PF_ST_U32] = {"U32", 4},   [PF_ST_I64] = {"I64", 8},   [PF_ST_U64] = {"U64", 8},
    [PF_ST_F16] = {"F16", 2},   [PF_ST_BF16] = {"BF16", 2}, [PF_ST_F32] = {"F32", 4},
    [PF_ST_F64] = {"F64", 8},   [PF_ST_F8_E4M3] = {"F8_E4M3", 1}, [PF_ST_F8_E5M2] = {"F8_E5M2", 1},
};

const char *pf_st_dtype_name(int d) { return d >= 0 && d < PF_ST_DTYPE_COUNT ? k_dtypes[d].name : "?"; }
size_t pf_st_dtype_size(int d) { return d >= 0 && d < PF_ST_DTYPE_COUNT ? k_dtypes[d].size : 0; }


void pf_st_close(pf_safetensors *st) {
    if (!st) return;
    for (size_t i = 0; i < st->n; i++) free(st->t[i].name);
    free(st->t);
    for (int i = 0; i < st->n_shards; i++) {
        if (st->shards[i].mapped && st->shards[i].size) munmap((void *)st->shards[i].base, st->shards[i].size);
        free(st->shards[i].path);
    }
    free(st->shards);
    free(st);
}

static bool json_u64(const pf_json *v, uint64_t *out) {
    if (!v || v->type != PF_JSON_NUMBER || !v->u.num.is_int || v->u.num.i < 0) return false;
    *out = (uint64_t)v->u.num.i;
    return true;
}

typedef struct { uint64_t begin, end; size_t idx; } range;

static int cmp_range(const void *a, const void *b) {
    const range *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* One tensor entry of a header. */
static int parse_entry(const char *path, const pf_json_member *m, const uint8_t *data, uint64_t data_size,
                       pf_st_tensor *t, range *r, char *err) {
    const char *nm = m->key;
    if (m->val.type != PF_JSON_OBJECT) return pf_errf(err, "%s: tensor '%.80s': expected an object", path, nm);
    const pf_json *dt = pf_json_get(&m->val, "dtype"), *sh = pf_json_get(&m->val, "shape"),
                  *off = pf_json_get(&m->val, "data_offsets");
    if (!dt || dt->type != PF_JSON_STRING) return pf_errf(err, "%s: tensor '%.80s': dtype: missing or not a string", path, nm);
    t->dtype = -1;
    for (int d = 0; d < PF_ST_DTYPE_COUNT; d++)
        if (strcmp(dt->u.str.s, k_dtypes[d].name) == 0) t->dtype = d;
    if (t->dtype < 0) return pf_errf(err, "%s: tensor '%.80s': dtype: unknown dtype \"%.20s\"", path, nm, dt->u.str.s);
    if (!sh || sh->type != PF_JSON_ARRAY || sh->u.arr.n > PF_ST_MAX_DIMS)
        return pf_errf(err, "%s: tensor '%.80s': shape: expected an array of at most %d sizes", path, nm, PF_ST_MAX_DIMS);
    t->n_dims = (int)sh->u.arr.n;
    uint64_t nel = 1;
    for (int d = 0; d < t->n_dims; d++) {
        uint64_t v;
        if (!json_u64(&sh->u.arr.items[d], &v) || v > (1ull << 40))
            return pf_errf(err, "%s: tensor '%.80s': shape[%d]: expected an integer in 0..2^40", path, nm, d);
        if (v && nel > (1ull << 50) / v) return pf_errf(err, "%s: tensor '%.80s': shape: too many elements", path, nm);
        t->shape[d] = (int64_t)v;
        nel *= v;
    }
    uint64_t b, e;
    if (!off || off->type != PF_JSON_ARRAY || off->u.arr.n != 2 || !json_u64(&off->u.arr.items[0], &b) ||
        !json_u64(&off->u.arr.items[1], &e))
        return pf_errf(err, "%s: tensor '%.80s': data_offsets: expected [begin, end] (non-negative integers)", path, nm);
    if (b > e || e > data_size)
        return pf_errf(err, "%s: tensor '%.80s': data_offsets: [%llu, %llu] is outside the data section of %llu bytes",
                    path, nm, (unsigned long long)b, (unsigned long long)e, (unsigned long long)data_size);
    if (e - b != nel * k_dtypes[t->dtype].size)
        return pf_errf(err, "%s: tensor '%.80s': data_offsets: %llu bytes, but the shape and dtype %s need %llu", path, nm,
                    (unsigned long long)(e - b), k_dtypes[t->dtype].name,
                    (unsigned long long)(nel * k_dtypes[t->dtype].size));
    if (!(t->name = strdup(nm))) return pf_errf(err, "%s: out of memory", path);
    t->nel = nel;
    t->nbytes = (size_t)(e - b);
    t->data = data + b;
    r->begin = b;
    r->end = e;
    return 0;
}

/* The header's length (the first 8 bytes, little-endian): it must fit the file and start a JSON object. */
static int header_length(const shard *sh, uint64_t *hlen, char *err) {
    const char *path = sh->path;
    if (sh->size < 8) return pf_errf(err, "%s: header length: the file has %zu bytes (needs at least 8)", path, sh->size);
    *hlen = 0;
    for (int i = 7; i >= 0; i--) *hlen = *hlen << 8 | sh->base[i];
    if (*hlen < 2 || *hlen > PF_ST_MAX_HEADER || *hlen > sh->size - 8)
        return pf_errf(err, "%s: header length: %llu does not fit the file of %zu bytes (limit %u)", path,
                       (unsigned long long)*hlen, sh->size, PF_ST_MAX_HEADER);
    if (sh->base[8] != '{') return pf_errf(err, "%s: header: does not start with '{'", path);
    return 0;
}

/* The number of tensors the header lists (every member but __metadata__, whose values must be
 * strings); each needs a name without NUL. */
static int count_tensors(const pf_json *root, const char *path, size_t *n, char *err) {
    *n = 0;
    for (size_t i = 0; i < root->u.obj.n; i++) {
        const pf_json_member *m = &root->u.obj.members[i];
        if (strcmp(m->key, "__metadata__") == 0) {
            if (m->val.type != PF_JSON_OBJECT) return pf_errf(err, "%s: __metadata__: expected an object", path);
            for (size_t j = 0; j < m->val.u.obj.n; j++)
                if (m->val.u.obj.members[j].val.type != PF_JSON_STRING)
                    return pf_errf(err, "%s: __metadata__.%.60s: expected a string", path, m->val.u.obj.members[j].key);
            continue;
        }
        if (m->key_len != strlen(m->key) || m->key_len == 0)
            return pf_errf(err, "%s: header: a tensor name is empty or contains NUL", path);
        (*n)++;
    }
    return 0;
}

/* The n tensors of one shard (their ranges rs) must tile its data section: sorted by offset, each
 * begins where the last ended, and the last ends at the section's end. */
static int check_tiling(const pf_safetensors *st, range *rs, size_t n, uint64_t data_size, const char *path, char *err) {
    qsort(rs, n, sizeof *rs, cmp_range);
    uint64_t at = 0;
    for (size_t k = 0; k < n; k++) {
        if (rs[k].begin != at)
            return pf_errf(err, "%s: tensor '%.80s': data_offsets: begins at %llu, expected %llu (%s)", path,
                           st->t[rs[k].idx].name, (unsigned long long)rs[k].begin, (unsigned long long)at,
                           rs[k].begin < at ? "overlaps the tensor before it" : "leaves a hole");
        at = rs[k].end;
    }
    if (at != data_size)
        return pf_errf(err, "%s: data section: %llu bytes, but the tensors cover %llu", path,
                       (unsigned long long)data_size, (unsigned long long)at);
    return 0;
}

/* Appends the tensors root lists (n_new of them, their ranges to rs) to st: each parsed, and no
 * name listed twice in any shard. */
static int append_tensors(pf_safetensors *st, int s, const pf_json *root, const uint8_t *data, uint64_t data_size,
                          range *rs, char *err) {
    const char *path = st->shards[s].path;
    for (size_t i = 0, k = 0; i < root->u.obj.n; i++) {
        const pf_json_member *m = &root->u.obj.members[i];
        if (strcmp(m->key, "__metadata__") == 0) continue;
        pf_st_tensor *t = &st->t[st->n];
        memset(t, 0, sizeof *t);
        t->shard = s;
        if (parse_entry(path, m, data, data_size, t, &rs[k], err) < 0) return -1;
        rs[k].idx = st->n;
        for (size_t j = 0; j < st->n; j++)
            if (strcmp(st->t[j].name, t->name) == 0) {
                pf_errf(err, "%s: tensor '%.80s': listed twice%s", path, t->name,
                        st->t[j].shard != s ? " (in two shards)" : "");
                free(t->name);
                return -1;
            }
        st->n++;
        k++;
    }
    return 0;
}

/* Parses the header of shard s and appends its tensors to st. */
static int parse_shard(pf_safetensors *st, int s, char *err) {
    const shard *sh = &st->shards[s];
    const char *path = sh->path;
    uint64_t hlen = 0;
    if (header_length(sh, &hlen, err) < 0) return -1;
    char jerr[PF_ERR_LEN];
    pf_json_doc *doc = pf_json_parse((const char *)sh->base + 8, (size_t)hlen, jerr);
    if (!doc) return pf_errf(err, "%s: header: %s", path, jerr);
    const pf_json *root = pf_json_root(doc);
    int rc = -1;
    range *rs = NULL;
    const uint8_t *data = sh->base + 8 + hlen;
    uint64_t data_size = sh->size - 8 - hlen;
    size_t n_new = 0;
    if (root->type != PF_JSON_OBJECT) {
        pf_errf(err, "%s: header: expected a JSON object", path);
        goto out;
    }
    if (count_tensors(root, path, &n_new, err) < 0) goto out;
    if (st->n + n_new > MAX_TENSORS) {
        pf_errf(err, "%s: header: more than %u tensors", path, MAX_TENSORS);
        goto out;
    }
    pf_st_tensor *nt = realloc(st->t, (st->n + n_new + 1) * sizeof *nt);
    rs = calloc(n_new + 1, sizeof *rs);
    if (!nt || !rs) {
        if (nt) st->t = nt;
        pf_errf(err, "%s: out of memory", path);
        goto out;
    }
    st->t = nt;
    if (append_tensors(st, s, root, data, data_size, rs, err) < 0) goto out;
    rc = check_tiling(st, rs, n_new, data_size, path, err);
out:
    free(rs);
    pf_json_free(doc);
    return rc;
}

static pf_safetensors *st_new(int n_shards) {
    pf_safetensors *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->shards = calloc((size_t)n_shards, sizeof *st->shards);
    if (!st->shards) {
        free(st);
        return NULL;
    }
    return st;
}

pf_safetensors *pf_st_parse(const void *buf, size_t size, const char *name, char err[PF_ERR_LEN]) {
    pf_safetensors *st = st_new(1);
    if (!st || !(st->shards[0].path = strdup(name))) {
        pf_st_close(st);
        pf_errf(err, "%s: out of memory", name);
        return NULL;
    }
    st->n_shards = 1;
    st->shards[0].base = buf;
    st->shards[0].size = size;
    if (parse_shard(st, 0, err) < 0) {
        pf_st_close(st);
        return NULL;
    }
    return st;
}

static int map_shard(shard *s, const char *path, char *err) {
    if (!(s->path = strdup(path))) return pf_errf(err, "%s: out of memory", path);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return pf_errf(err, "%s: cannot open", path);
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return pf_errf(err, "%s: not a regular file", path);
    }
    s->size = (size_t)sb.st_size;
    if (s->size) {
        void *p = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            s->size = 0;
            return pf_errf(err, "%s: cannot map", path);
        }
        s->base = p;
        s->mapped = 1;
    }
    close(fd);
    return 0;
}

pf_safetensors *pf_st_open(const char *path, char err[PF_ERR_LEN]) {
    pf_safetensors *st = st_new(1);
    if (!st) {
        pf_errf(err, "%s: out of memory", path);
        return NULL;
    }
    st->n_shards = 1;
    if (map_shard(&st->shards[0], path, err) < 0 || parse_shard(st, 0, err) < 0) {
        pf_st_close(st);
        return NULL;
    }
    return st;
}

static bool file_exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* A shard name from an index: a plain file name in the checkpoint folder. */
static bool plain_name(const char *s, size_t len) {
    return len > 0 && len < 256 && strlen(s) == len && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static pf_safetensors *open_index(const char *dir, const char *index, char *err) {
    char jerr[PF_ERR_LEN];
    pf_json_doc *doc = pf_json_parse_file(index, jerr);
    if (!doc) {
        snprintf(err, PF_ERR_LEN, "%s", jerr);
        return NULL;
    }
    pf_safetensors *st = NULL;
    const char **names = NULL;
    const pf_json *wm = pf_json_get(pf_json_root(doc), "weight_map");
    if (!wm || wm->type != PF_JSON_OBJECT || wm->u.obj.n == 0) {
        pf_errf(err, "%s: weight_map: missing, empty or not an object", index);
        goto fail;
    }
    size_t n = wm->u.obj.n;
    names = calloc(n, sizeof *names);
    int n_sh = 0;
    if (!names) goto oom;
    for (size_t i = 0; i < n; i++) { /* distinct shard names, in order of first use */
        const pf_json_member *m = &wm->u.obj.members[i];
        if (m->val.type != PF_JSON_STRING || !plain_name(m->val.u.str.s, m->val.u.str.len)) {
            pf_errf(err, "%s: weight_map.%.80s: expected the file name of a shard in the same folder", index, m->key);
            goto fail;
        }
        int k = 0;
        while (k < n_sh && strcmp(names[k], m->val.u.str.s)) k++;
        if (k == n_sh) {
            if (n_sh == MAX_SHARDS) {
                pf_errf(err, "%s: weight_map: more than %d shards", index, MAX_SHARDS);
                goto fail;
            }
            names[n_sh++] = m->val.u.str.s;
        }
    }
    if (!(st = st_new(n_sh))) goto oom;
    for (int k = 0; k < n_sh; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        st->n_shards = k + 1;
        if (map_shard(&st->shards[k], path, err) < 0 || parse_shard(st, k, err) < 0) goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        const pf_json_member *m = &wm->u.obj.members[i];
        const pf_st_tensor *t = pf_st_find(st, m->key);
        if (!t || strcmp(st->shards[t->shard].path + strlen(dir) + 1, m->val.u.str.s)) {
            pf_errf(err, "%s: weight_map.%.80s: the tensor is not in %s", index, m->key, m->val.u.str.s);
            goto fail;
        }
    }
    if (st->n != n) {
        for (size_t i = 0; i < st->n; i++)
            if (!pf_json_get(wm, st->t[i].name)) {
                pf_errf(err, "%s: weight_map: tensor '%.80s' of %s is not listed", index, st->t[i].name,
                     st->shards[st->t[i].shard].path);
                goto fail;
            }
    }
    free(names);
    pf_json_free(doc);
    return st;
oom:
    pf_errf(err, "%s: out of memory", index);
fail:
    free(names);
    pf_st_close(st);
    pf_json_free(doc);
    return NULL;
}

pf_safetensors *pf_st_open_dir(const char *dir, char err[PF_ERR_LEN]) {
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (file_exists(path)) return open_index(dir, path, err);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (file_exists(path)) return pf_st_open(path, err);
    pf_errf(err, "%s: neither model.safetensors nor model.safetensors.index.json is there", dir);
    return NULL;
}

size_t pf_st_count(const pf_safetensors *st) { return st->n; }
const pf_st_tensor *pf_st_at(const pf_safetensors *st, size_t i) { return i < st->n ? &st->t[i] : NULL; }
const char *pf_st_shard_path(const pf_safetensors *st, int i) {
    return i >= 0 && i < st->n_shards ? st->shards[i].path : "?";
}

const pf_st_tensor *pf_st_find(const pf_safetensors *st, const char *name) {
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->t[i].name, name) == 0) return &st->t[i];
    return NULL;
}

int pf_st_to_f32(const pf_st_tensor *t, float *out) {
    const uint8_t *p = t->data;
    switch (t->dtype) {
    case PF_ST_F32:
        memcpy(out, p, t->nel * 4);
        return 0;
    case PF_ST_F16:
        for (uint64_t i = 0; i < t->nel; i++) out[i] = pf_fp16_to_fp32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
        return 0;
    case PF_ST_BF16:
        for (uint64_t i = 0; i < t->nel; i++) out[i] = pf_bf16_to_fp32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
        return 0;
    default:
        return -1;
    }
}
