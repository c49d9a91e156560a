/* GGUF v3 reader (over mmap or a caller's buffer) and writer.
 * The reader validates every count, length, offset and size against the file before use and
 * reports the first problem as "FILE: FIELD: what is wrong". */
#ifndef PF_GGUF_H
#define PF_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/errf.h" /* PF_ERR_LEN */
#include "formats/status.h"

enum gguf_vtype {
    GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5,
    GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STR = 8, GGUF_ARR = 9, GGUF_U64 = 10, GGUF_I64 = 11,
    GGUF_F64 = 12, GGUF_VTYPE_COUNT
};

typedef struct {
    const char *ptr; /* not NUL-terminated: points into the file */
    uint64_t len;
} gguf_str;

typedef struct {
    gguf_str key;
    uint32_t type;
    union {
        uint64_t u; /* U8..U64, BOOL */
        int64_t i;  /* I8..I64 */
        double f;   /* F32, F64 */
        gguf_str s;
        struct {
            uint32_t type; /* element type (never ARR) */
            uint64_t n;
            const void *data; /* numeric elements, little-endian, packed */
            gguf_str *strs;   /* string elements (type == GGUF_STR), n entries */
        } arr;
    } v;
} gguf_kv;

typedef struct {
    gguf_str name;
    uint32_t n_dims;
    int64_t ne[4]; /* innermost first; unused dims are 1 */
    uint32_t type;
    uint64_t offset; /* from the start of the data section */
    size_t nbytes;
    const void *data; /* inside the mapping */
} gguf_tensor;

typedef struct gguf_file {
    char *path;
    const uint8_t *base; /* whole file */
    size_t size;
    int mapped; /* base is an mmap we own */
    uint32_t version;
    uint64_t n_kv, n_tensors;
    gguf_kv *kv;
    gguf_tensor *tensors;
    uint64_t alignment;
    size_t data_offset;
} gguf_file;

/* Map and parse a file into *out: PF_RC_OK, or with err PF_RC_IO (it cannot be opened or mapped),
 * PF_RC_FORMAT (truncated, malformed, not a GGUF), PF_RC_OOM (its tables do not fit in memory). */
pf_rc gguf_open_file(const char *path, gguf_file **out, char err[PF_ERR_LEN]);
/* Parse a whole file mapped by pf_map_file (formats/map_file.h) into *out; the file then owns the
 * mapping (gguf_close unmaps it, and so does a failure here). PF_RC_OK, PF_RC_FORMAT or PF_RC_OOM. */
pf_rc gguf_parse_map(const uint8_t *map, size_t size, const char *path, gguf_file **out, char err[PF_ERR_LEN]);
/* Parse a buffer the caller keeps alive (fuzzing). `name` is used in messages. NULL with err. */
gguf_file *gguf_parse(const void *buf, size_t size, const char *name, char err[PF_ERR_LEN]);
/* Parse only the header (metadata + tensor infos) of a GGUF held in buf into *out; tensor data need
 * not follow (bundles keep it in separate sections). Same validation as gguf_parse except that
 * tensor data is not located: every tensor's `data` is NULL for the caller to set; data_offset is
 * the aligned end of the header (it may exceed size when buf holds no padding). PF_RC_OK,
 * PF_RC_FORMAT or PF_RC_OOM. */
pf_rc gguf_parse_meta(const void *buf, size_t size, const char *name, gguf_file **out, char err[PF_ERR_LEN]);
void gguf_close(gguf_file *f);
/* The first step of a loader that takes ownership of f when own_file (a model, a draft): a zeroed
 * object of `size` bytes; NULL only when out of memory, with err naming the file and f closed if
 * owned. */
void *gguf_loader_alloc(gguf_file *f, int own_file, size_t size, char err[PF_ERR_LEN]);
/* Messages quote names and strings of the file; a control byte among them (a newline, an escape
 * sequence) becomes '?' so that every message stays one printable line. */
void pf_err_one_line(char *err);

const gguf_kv *gguf_find(const gguf_file *f, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);
bool gguf_str_eq(gguf_str s, const char *c);
/* Allocated NUL-terminated copy. */
char *gguf_str_dup(gguf_str s);

/* Typed getters: 0 on success; -1 if absent; -2 if present with an incompatible type (integer
 * getters accept any integer type whose value fits). */
int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out);
int gguf_get_i64(const gguf_file *f, const char *key, int64_t *out);
int gguf_get_f32(const gguf_file *f, const char *key, float *out);
int gguf_get_bool(const gguf_file *f, const char *key, bool *out);
int gguf_get_str(const gguf_file *f, const char *key, gguf_str *out);
/* Array getter: element type must equal `elem_type` (for integer arrays, any integer type is
 * reported through gguf_arr_int). */
const gguf_kv *gguf_get_arr(const gguf_file *f, const char *key, uint32_t elem_type);
/* Element i of a numeric integer array as int64 (any integer element type). */
int64_t gguf_arr_int(const gguf_kv *kv, uint64_t i);
double gguf_arr_float(const gguf_kv *kv, uint64_t i);
const char *gguf_vtype_name(uint32_t t);
/* Bytes of one value of a numeric or bool GGUF type (0 for strings, arrays, unknown types). */
size_t gguf_scalar_size(uint32_t t);

/* ---- writer ---- */
typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_new(void);
void gguf_writer_free(gguf_writer *w);
void gguf_w_u32(gguf_writer *w, const char *key, uint32_t v);
void gguf_w_i32(gguf_writer *w, const char *key, int32_t v);
void gguf_w_u64(gguf_writer *w, const char *key, uint64_t v);
void gguf_w_f32(gguf_writer *w, const char *key, float v);
void gguf_w_bool(gguf_writer *w, const char *key, bool v);
void gguf_w_str(gguf_writer *w, const char *key, const char *v);
/* Generic scalar of any numeric type (value given as u64/i64/double by type). */
void gguf_w_scalar(gguf_writer *w, const char *key, uint32_t type, const void *value);
/* Numeric array: `data` holds n packed little-endian elements of elem_type (copied). */
void gguf_w_arr(gguf_writer *w, const char *key, uint32_t elem_type, const void *data, uint64_t n);
/* String array (copied). lens may be NULL for NUL-terminated strings. */
void gguf_w_arr_str(gguf_writer *w, const char *key, const char *const *strs, const uint64_t *lens,
                    uint64_t n);
/* Copy every key of `src` except those for which skip(key) returns true (skip may be NULL). */
void gguf_w_copy_kv(gguf_writer *w, const gguf_file *src, bool (*skip)(const char *key));
/* A writer seeded with the metadata of the file at path (gguf_w_copy_kv with skip) into *out; *src
 * receives the open file, for gguf_w_copy_tensors, to close after the write. PF_RC_OK, or
 * gguf_open_file's kinds and PF_RC_OOM with err (nothing open). */
pf_rc gguf_writer_from(const char *path, bool (*skip)(const char *key), gguf_file **src, gguf_writer **out,
                       char err[PF_ERR_LEN]);
/* Hand the writer a malloc'd buffer (tensor data it will write) to free with the writer; returns p,
 * or NULL (p freed, the writer marked out of memory, so the write fails) when p is NULL or the
 * writer cannot record it. */
void *gguf_w_own(gguf_writer *w, void *p);
/* Every tensor of src (data borrowed: src must outlive the write) except those skip() names. */
void gguf_w_copy_tensors(gguf_writer *w, const gguf_file *src, bool (*skip)(const char *name));
/* Add a tensor; data is NOT copied and must stay valid until gguf_w_write returns. */
void gguf_w_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                   const int64_t *ne, const void *data, size_t nbytes);
/* Write to path via a temporary file renamed into place when complete. PF_RC_OK, or with err
 * PF_RC_OOM (the file could not be built in memory) or PF_RC_IO (it could not be written). */
pf_rc gguf_w_save(gguf_writer *w, const char *path, char err[PF_ERR_LEN]);
/* gguf_w_save for callers that need no kind: 0 or -1 (err filled). */
int gguf_w_write(gguf_writer *w, const char *path, char err[PF_ERR_LEN]);
void gguf_w_alignment(gguf_writer *w, uint32_t alignment);

#endif
