/* Hugging Face safetensors reader (over mmap or a caller's buffer), single files and sharded
 * checkpoints (model.safetensors.index.json).
 *
 * Format: u64 little-endian header length N, N bytes of JSON, then the data section. The JSON is an
 * object whose members are tensors {"dtype": "F16", "shape": [..], "data_offsets": [begin, end]}
 * (offsets relative to the data section) plus an optional "__metadata__" object of strings.
 * Everything is checked before use: the header length against the file, the JSON (strict, bounded),
 * every dtype, shape and offset pair, that each tensor's bytes are shape x element size, and that the
 * tensors tile the data section exactly (no overlap, no hole, nothing after the last one), as the
 * reference implementation requires. Errors name the file, the tensor and the field. */
#ifndef PF_SAFETENSORS_H
#define PF_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "formats/errf.h" /* PF_ERR_LEN */
#include "formats/status.h"

#define PF_ST_MAX_DIMS 8
#define PF_ST_MAX_HEADER (100u << 20) /* the reference implementation's limit */

enum pf_st_dtype {
    PF_ST_BOOL, PF_ST_U8, PF_ST_I8, PF_ST_I16, PF_ST_U16, PF_ST_I32, PF_ST_U32, PF_ST_I64, PF_ST_U64,
    PF_ST_F16, PF_ST_BF16, PF_ST_F32, PF_ST_F64, PF_ST_F8_E4M3, PF_ST_F8_E5M2, PF_ST_DTYPE_COUNT
};

typedef struct {
    char *name;
    int dtype; /* enum pf_st_dtype */
    int n_dims;
    int64_t shape[PF_ST_MAX_DIMS]; /* outermost first, as torch: a [out, in] matrix is {out, in} */
    uint64_t nel;
    size_t nbytes;
    const uint8_t *data; /* inside the owning file's mapping (no alignment guaranteed) */
    int shard;           /* index of the file that holds it */
} pf_st_tensor;

typedef struct pf_safetensors pf_safetensors;

/* Each opener puts the checkpoint in *out (NULL on failure) and returns PF_RC_OK, or with err
 * PF_RC_IO (a file cannot be opened or mapped: missing, unreadable, a folder), PF_RC_FORMAT
 * (truncated, malformed) or PF_RC_OOM. */
/* One .safetensors file (mapped). */
pf_rc pf_st_open(const char *path, pf_safetensors **out, char err[PF_ERR_LEN]);
/* A buffer the caller keeps alive (fuzzing). `name` is used in messages. PF_RC_FORMAT or PF_RC_OOM. */
pf_rc pf_st_parse(const void *buf, size_t size, const char *name, pf_safetensors **out, char err[PF_ERR_LEN]);
/* A checkpoint folder: model.safetensors.index.json (its weight_map names the shards, plain file
 * names inside dir; every mapped tensor must be in the shard named for it and no tensor may be in
 * two shards), else model.safetensors; a folder with neither is PF_RC_IO. */
pf_rc pf_st_open_dir(const char *dir, pf_safetensors **out, char err[PF_ERR_LEN]);
void pf_st_close(pf_safetensors *st);

size_t pf_st_count(const pf_safetensors *st);
const pf_st_tensor *pf_st_at(const pf_safetensors *st, size_t i); /* in file order, shard by shard */
const pf_st_tensor *pf_st_find(const pf_safetensors *st, const char *name);
/* Path of shard i (for messages). */
const char *pf_st_shard_path(const pf_safetensors *st, int i);

const char *pf_st_dtype_name(int dtype);
size_t pf_st_dtype_size(int dtype);
/* F32, F16 or BF16 elements of t as floats (exact widening); out holds t->nel. -1 for other dtypes. */
int pf_st_to_f32(const pf_st_tensor *t, float *out);

#endif
