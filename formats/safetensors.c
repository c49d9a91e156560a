/* safetensors reader. See safetensors.h. */
#include "formats/safetensors.h"

#include "formats/errf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/ggml_types.h"
#include "formats/json.h"
#include "formats/map_file.h"

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
        if (st->shards[i].mapped) pf_unmap_file(st->shards[i].base, st->shards[i].size);
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

/* A malformed header's message: PF_RC_FORMAT. */
#define BAD(err, ...) pf_err_rc((err), PF_RC_FORMAT, __VA_ARGS__)
#define OOM(err, path) pf_err_rc((err), PF_RC_OOM, "%s: out of memory", (path))

/* One tensor entry of a header. */
static pf_rc parse_entry(const char *path, const pf_json_member *m, const uint8_t *data, uint64_t data_size,
                       pf_st_tensor *t, range *r, char *err) {
    const char *nm = m->key;
    if (m->val.type != PF_JSON_OBJECT) return BAD(err, "%s: tensor '%.80s': expected an object", path, nm);
    const pf_json *dt = pf_json_get(&m->val, "dtype"), *sh = pf_json_get(&m->val, "shape"),
                  *off = pf_json_get(&m->val, "data_offsets");
    if (!dt || dt->type != PF_JSON_STRING) return BAD(err, "%s: tensor '%.80s': dtype: missing or not a string", path, nm);
    t->dtype = -1;
    for (int d = 0; d < PF_ST_DTYPE_COUNT; d++)
        if (strcmp(dt->u.str.s, k_dtypes[d].name) == 0) t->dtype = d;
    if (t->dtype < 0) return BAD(err, "%s: tensor '%.80s': dtype: unknown dtype \"%.20s\"", path, nm, dt->u.str.s);
    if (!sh || sh->type != PF_JSON_ARRAY || sh->u.arr.n > PF_ST_MAX_DIMS)
        return BAD(err, "%s: tensor '%.80s': shape: expected an array of at most %d sizes", path, nm, PF_ST_MAX_DIMS);
    t->n_dims = (int)sh->u.arr.n;
    uint64_t nel = 1;
    for (int d = 0; d < t->n_dims; d++) {
        uint64_t v;
        if (!json_u64(&sh->u.arr.items[d], &v) || v > (1ull << 40))
            return BAD(err, "%s: tensor '%.80s': shape[%d]: expected an integer in 0..2^40", path, nm, d);
        if (v && nel > (1ull << 50) / v) return BAD(err, "%s: tensor '%.80s': shape: too many elements", path, nm);
        t->shape[d] = (int64_t)v;
        nel *= v;
    }
    uint64_t b, e;
    if (!off || off->type != PF_JSON_ARRAY || off->u.arr.n != 2 || !json_u64(&off->u.arr.items[0], &b) ||
        !json_u64(&off->u.arr.items[1], &e))
        return BAD(err, "%s: tensor '%.80s': data_offsets: expected [begin, end] (non-negative integers)", path, nm);
    if (b > e || e > data_size)
        return BAD(err, "%s: tensor '%.80s': data_offsets: [%llu, %llu] is outside the data section of %llu bytes",
                   path, nm, (unsigned long long)b, (unsigned long long)e, (unsigned long long)data_size);
    if (e - b != nel * k_dtypes[t->dtype].size)
        return BAD(err, "%s: tensor '%.80s': data_offsets: %llu bytes, but the shape and dtype %s need %llu", path, nm,
                   (unsigned long long)(e - b), k_dtypes[t->dtype].name,
                   (unsigned long long)(nel * k_dtypes[t->dtype].size));
    if (!(t->name = strdup(nm))) return OOM(err, path);
    t->nel = nel;
    t->nbytes = (size_t)(e - b);
    t->data = data + b;
    r->begin = b;
    r->end = e;
    return PF_RC_OK;
}

/* The header's length (the first 8 bytes, little-endian): it must fit the file and start a JSON object. */
static pf_rc header_length(const shard *sh, uint64_t *hlen, char *err) {
    const char *path = sh->path;
    if (sh->size < 8) return BAD(err, "%s: header length: the file has %zu bytes (needs at least 8)", path, sh->size);
    *hlen = 0;
    for (int i = 7; i >= 0; i--) *hlen = *hlen << 8 | sh->base[i];
    if (*hlen < 2 || *hlen > PF_ST_MAX_HEADER || *hlen > sh->size - 8)
        return BAD(err, "%s: header length: %llu does not fit the file of %zu bytes (limit %u)", path,
                   (unsigned long long)*hlen, sh->size, PF_ST_MAX_HEADER);
    if (sh->base[8] != '{') return BAD(err, "%s: header: does not start with '{'", path);
    return PF_RC_OK;
}

/* The number of tensors the header lists (every member but __metadata__, whose values must be
 * strings); each needs a name without NUL. */
static pf_rc count_tensors(const pf_json *root, const char *path, size_t *n, char *err) {
    *n = 0;
    for (size_t i = 0; i < root->u.obj.n; i++) {
        const pf_json_member *m = &root->u.obj.members[i];
        if (strcmp(m->key, "__metadata__") == 0) {
            if (m->val.type != PF_JSON_OBJECT) return BAD(err, "%s: __metadata__: expected an object", path);
            for (size_t j = 0; j < m->val.u.obj.n; j++)
                if (m->val.u.obj.members[j].val.type != PF_JSON_STRING)
                    return BAD(err, "%s: __metadata__.%.60s: expected a string", path, m->val.u.obj.members[j].key);
            continue;
        }
        if (m->key_len != strlen(m->key) || m->key_len == 0)
            return BAD(err, "%s: header: a tensor name is empty or contains NUL", path);
        (*n)++;
    }
    return PF_RC_OK;
}

/* The n tensors of one shard (their ranges rs) must tile its data section: sorted by offset, each
 * begins where the last ended, and the last ends at the section's end. */
static pf_rc check_tiling(const pf_safetensors *st, range *rs, size_t n, uint64_t data_size, const char *path, char *err) {
    qsort(rs, n, sizeof *rs, cmp_range);
    uint64_t at = 0;
    for (size_t k = 0; k < n; k++) {
        if (rs[k].begin != at)
            return BAD(err, "%s: tensor '%.80s': data_offsets: begins at %llu, expected %llu (%s)", path,
                       st->t[rs[k].idx].name, (unsigned long long)rs[k].begin, (unsigned long long)at,
                       rs[k].begin < at ? "overlaps the tensor before it" : "leaves a hole");
        at = rs[k].end;
    }
    if (at != data_size)
        return BAD(err, "%s: data section: %llu bytes, but the tensors cover %llu", path,
                   (unsigned long long)data_size, (unsigned long long)at);
    return PF_RC_OK;
}

/* Appends the tensors root lists (n_new of them, their ranges to rs) to st: each parsed, and no
 * name listed twice in any shard. */
static pf_rc append_tensors(pf_safetensors *st, int s, const pf_json *root, const uint8_t *data, uint64_t data_size,
                          range *rs, char *err) {
    const char *path = st->shards[s].path;
    for (size_t i = 0, k = 0; i < root->u.obj.n; i++) {
        const pf_json_member *m = &root->u.obj.members[i];
        if (strcmp(m->key, "__metadata__") == 0) continue;
        pf_st_tensor *t = &st->t[st->n];
        memset(t, 0, sizeof *t);
        t->shard = s;
        pf_rc rc = parse_entry(path, m, data, data_size, t, &rs[k], err);
        if (rc != PF_RC_OK) return rc;
        rs[k].idx = st->n;
        for (size_t j = 0; j < st->n; j++)
            if (strcmp(st->t[j].name, t->name) == 0) {
                BAD(err, "%s: tensor '%.80s': listed twice%s", path, t->name, st->t[j].shard != s ? " (in two shards)" : "");
                free(t->name);
                return PF_RC_FORMAT;
            }
        st->n++;
        k++;
    }
    return PF_RC_OK;
}

/* The tensor table grown by n_new entries, and ranges for them in *rs. */
static pf_rc make_room(pf_safetensors *st, size_t n_new, range **rs, const char *path, char *err) {
    if (st->n + n_new > MAX_TENSORS) return BAD(err, "%s: header: more than %u tensors", path, MAX_TENSORS);
    pf_st_tensor *nt = realloc(st->t, (st->n + n_new + 1) * sizeof *nt);
    if (!nt) return OOM(err, path);
    st->t = nt;
    if (!(*rs = calloc(n_new + 1, sizeof **rs))) return OOM(err, path);
    return PF_RC_OK;
}

/* Parses the header of shard s and appends its tensors to st. */
static pf_rc parse_shard(pf_safetensors *st, int s, char *err) {
    const shard *sh = &st->shards[s];
    const char *path = sh->path;
    uint64_t hlen = 0;
    pf_rc rc = header_length(sh, &hlen, err);
    if (rc != PF_RC_OK) return rc;
    char jerr[PF_ERR_LEN];
    pf_json_doc *doc;
    if ((rc = pf_json_read((const char *)sh->base + 8, (size_t)hlen, &doc, jerr)) != PF_RC_OK)
        return pf_err_rc(err, rc, "%s: header: %s", path, jerr);
    const pf_json *root = pf_json_root(doc);
    range *rs = NULL;
    const uint8_t *data = sh->base + 8 + hlen;
    uint64_t data_size = sh->size - 8 - hlen;
    size_t n_new = 0;
    if (root->type != PF_JSON_OBJECT) rc = BAD(err, "%s: header: expected a JSON object", path);
    if (rc == PF_RC_OK) rc = count_tensors(root, path, &n_new, err);
    if (rc == PF_RC_OK) rc = make_room(st, n_new, &rs, path, err);
    if (rc == PF_RC_OK) rc = append_tensors(st, s, root, data, data_size, rs, err);
    if (rc == PF_RC_OK) rc = check_tiling(st, rs, n_new, data_size, path, err);
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

pf_rc pf_st_parse(const void *buf, size_t size, const char *name, pf_safetensors **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    pf_safetensors *st = st_new(1);
    if (!st || !(st->shards[0].path = strdup(name))) {
        pf_st_close(st);
        return OOM(err, name);
    }
    st->n_shards = 1;
    st->shards[0].base = buf;
    st->shards[0].size = size;
    pf_rc rc = parse_shard(st, 0, err);
    if (rc != PF_RC_OK) {
        pf_st_close(st);
        return rc;
    }
    *out = st;
    return PF_RC_OK;
}

/* Maps the file at path as shard s (its own path copied) and parses its header. */
static pf_rc open_shard(pf_safetensors *st, int s, const char *path, char *err) {
    shard *sh = &st->shards[s];
    st->n_shards = s + 1;
    if (!(sh->path = strdup(path))) return OOM(err, path);
    pf_rc rc = pf_map_file(path, 1, &sh->base, &sh->size, err);
    if (rc != PF_RC_OK) return rc;
    sh->mapped = 1;
    return parse_shard(st, s, err);
}

pf_rc pf_st_open(const char *path, pf_safetensors **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    pf_safetensors *st = st_new(1);
    if (!st) return OOM(err, path);
    pf_rc rc = open_shard(st, 0, path, err);
    if (rc != PF_RC_OK) {
        pf_st_close(st);
        return rc;
    }
    *out = st;
    return PF_RC_OK;
}

static bool file_exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* A shard name from an index: a plain file name in the checkpoint folder. */
static bool plain_name(const char *s, size_t len) {
    return len > 0 && len < 256 && strlen(s) == len && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* The distinct shard names of weight_map wm into names[] (room for every entry), in order of first use. */
static pf_rc shard_names(const pf_json *wm, const char *index, const char **names, int *n_sh, char *err) {
    *n_sh = 0;
    for (size_t i = 0; i < wm->u.obj.n; i++) {
        const pf_json_member *m = &wm->u.obj.members[i];
        if (m->val.type != PF_JSON_STRING || !plain_name(m->val.u.str.s, m->val.u.str.len))
            return BAD(err, "%s: weight_map.%.80s: expected the file name of a shard in the same folder", index, m->key);
        int k = 0;
        while (k < *n_sh && strcmp(names[k], m->val.u.str.s)) k++;
        if (k < *n_sh) continue;
        if (*n_sh == MAX_SHARDS) return BAD(err, "%s: weight_map: more than %d shards", index, MAX_SHARDS);
        names[(*n_sh)++] = m->val.u.str.s;
    }
    return PF_RC_OK;
}

/* Every tensor weight_map lists is in the shard it names, and every tensor of the shards is listed. */
static pf_rc check_weight_map(const pf_safetensors *st, const pf_json *wm, const char *dir, const char *index, char *err) {
    for (size_t i = 0; i < wm->u.obj.n; i++) {
        const pf_json_member *m = &wm->u.obj.members[i];
        const pf_st_tensor *t = pf_st_find(st, m->key);
        if (!t || strcmp(st->shards[t->shard].path + strlen(dir) + 1, m->val.u.str.s))
            return BAD(err, "%s: weight_map.%.80s: the tensor is not in %s", index, m->key, m->val.u.str.s);
    }
    if (st->n == wm->u.obj.n) return PF_RC_OK;
    for (size_t i = 0; i < st->n; i++)
        if (!pf_json_get(wm, st->t[i].name))
            return BAD(err, "%s: weight_map: tensor '%.80s' of %s is not listed", index, st->t[i].name,
                       st->shards[st->t[i].shard].path);
    return PF_RC_OK;
}

/* The shards named[0..n_sh) of the folder dir, opened into a new *out. */
static pf_rc open_shards(const char *dir, const char **names, int n_sh, pf_safetensors **out, const char *index,
                         char *err) {
    if (!(*out = st_new(n_sh))) return OOM(err, index);
    pf_rc rc = PF_RC_OK;
    for (int k = 0; k < n_sh && rc == PF_RC_OK; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        rc = open_shard(*out, k, path, err);
    }
    return rc;
}

static pf_rc open_index(const char *dir, const char *index, pf_safetensors **out, char *err) {
    pf_json_doc *doc;
    pf_rc rc = pf_json_load(index, &doc, err);
    if (rc != PF_RC_OK) return rc;
    pf_safetensors *st = NULL;
    const char **names = NULL;
    int n_sh = 0;
    const pf_json *wm = pf_json_get(pf_json_root(doc), "weight_map");
    if (!wm || wm->type != PF_JSON_OBJECT || wm->u.obj.n == 0)
        rc = BAD(err, "%s: weight_map: missing, empty or not an object", index);
    else if (!(names = calloc(wm->u.obj.n, sizeof *names)))
        rc = OOM(err, index);
    if (rc == PF_RC_OK) rc = shard_names(wm, index, names, &n_sh, err);
    if (rc == PF_RC_OK) rc = open_shards(dir, names, n_sh, &st, index, err);
    if (rc == PF_RC_OK) rc = check_weight_map(st, wm, dir, index, err);
    free(names);
    pf_json_free(doc);
    if (rc != PF_RC_OK) pf_st_close(st);
    else *out = st;
    return rc;
}

pf_rc pf_st_open_dir(const char *dir, pf_safetensors **out, char err[PF_ERR_LEN]) {
    char path[4096];
    *out = NULL;
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (file_exists(path)) return open_index(dir, path, out, err);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (file_exists(path)) return pf_st_open(path, out, err);
    return pf_err_rc(err, PF_RC_IO, "%s: neither model.safetensors nor model.safetensors.index.json is there", dir);
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
