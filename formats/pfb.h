/* .pfb deployment bundle: one file holding a target GGUF, optionally a draft GGUF and an opaque
 * tuned profile (JSON text), each model split into a metadata section (its GGUF header: metadata
 * + tensor infos, no data) and one section per tensor. A section is stored raw or zstd-compressed
 * (chosen per section) and carries the xxh3-64 of its stored bytes; raw sections are 64-byte
 * aligned in the file so they are used in place from the mapping.
 *
 * Layout (little-endian):
 *   header, 64 bytes at offset 0:
 *     0  magic "PFBUNDLE"          8  u32 version (1)         12 u32 section count
 *     16 u64 section table offset  24 u32 entry size (144)    28 u32 flags (0)
 *     32 u64 file size             40 u64 xxh3-64 of header (this field zeroed) + section table
 *     48 16 reserved bytes (0)
 *   section table, count entries of 144 bytes:
 *     0  name[96] (NUL-terminated, NUL-padded: the tensor name, "metadata" or "profile")
 *     96 u8 kind (0 metadata, 1 tensor, 2 profile)   97 u8 owner (0 target, 1 draft, 2 profile)
 *     98 u8 codec (0 none, 1 zstd)   99 u8 reserved (0)   100 u32 alignment (power of two)
 *     104 u32 tensor index (position among the model's tensor infos; 0 otherwise)
 *     108 u32 reserved (0)
 *     112 u64 offset   120 u64 stored size   128 u64 raw size   136 u64 xxh3-64 of the stored bytes
 *   sections at their offsets; every byte not in the header, the table or a section is zero.
 *
 * The reader checks every field, bound, overlap, count, size and hash before anything is used and
 * reports the first problem as "FILE: section 'OWNER/NAME': what" (or "FILE: FIELD: what"). */
#ifndef PF_PFB_H
#define PF_PFB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/gguf.h"

#define PFB_MAGIC "PFBUNDLE"
#define PFB_VERSION 1
#define PFB_HEADER_SIZE 64
#define PFB_ENTRY_SIZE 144
#define PFB_NAME_LEN 96
#define PFB_ALIGN 64

enum { PFB_KIND_META = 0, PFB_KIND_TENSOR = 1, PFB_KIND_PROFILE = 2 };
enum { PFB_OWNER_TARGET = 0, PFB_OWNER_DRAFT = 1, PFB_OWNER_PROFILE = 2 };
enum { PFB_CODEC_NONE = 0, PFB_CODEC_ZSTD = 1 };

typedef struct {
    char name[PFB_NAME_LEN];
    uint32_t kind, owner, codec, alignment, index;
    uint64_t offset, stored_size, raw_size, hash;
    const uint8_t *data; /* raw_size bytes: in the mapping (codec none) or owned by the bundle */
} pfb_section;

typedef struct pfb_bundle pfb_bundle;

/* Validate a bundle in a buffer the caller keeps alive for the bundle's lifetime (every hash
 * checked, compressed sections decompressed). NULL + err on any problem. Models built from it
 * (pfb_gguf) point into it: it must outlive them. A file: pfb_model_open. */
pfb_bundle *pfb_parse(const void *buf, size_t size, const char *name, char err[PF_ERR_LEN]);
void pfb_close(pfb_bundle *b);

/* Everything pfb_parse checks, plus each model's metadata parsed and matched against its tensor
 * sections (what pfb_gguf checks); nothing is kept. PF_RC_OK with the section count in *n_sections,
 * or with err PF_RC_FORMAT (a bad header, table, hash or model) / PF_RC_OOM. */
pf_rc pfb_verify(const void *buf, size_t size, const char *name, int *n_sections, char err[PF_ERR_LEN]);
/* pfb_verify on a file (mapped): PF_RC_IO too, when it cannot be opened or mapped. */
pf_rc pfb_verify_file(const char *path, int *n_sections, char err[PF_ERR_LEN]);

/* THE way to open a model file, a GGUF or a .pfb bundle (told by its magic, not its name), mapped
 * once: a GGUF is returned itself (*bundle NULL); from a bundle, its model `owner`
 * (PFB_OWNER_TARGET or PFB_OWNER_DRAFT), whose tables and tensors point into *bundle (close the
 * file, then the bundle), into *file. PF_RC_OK, or with err naming the file and field PF_RC_IO
 * (it cannot be opened or mapped), PF_RC_FORMAT (truncated, malformed, "FILE: the bundle holds no
 * draft model"), PF_RC_OOM. */
pf_rc pfb_model_open(const char *path, int owner, pfb_bundle **bundle, gguf_file **file, char err[PF_ERR_LEN]);

int pfb_n_sections(const pfb_bundle *b);
const pfb_section *pfb_section_at(const pfb_bundle *b, int i);
size_t pfb_size(const pfb_bundle *b);
bool pfb_has_model(const pfb_bundle *b, int owner);
/* The profile section's bytes (not NUL-terminated), or NULL when the bundle has none. */
const void *pfb_profile(const pfb_bundle *b, size_t *len);

/* A gguf_file for the target or draft whose metadata and tensor data point into the bundle
 * (never a mapping of its own: gguf_close frees only the file's tables). Checks that the tensor
 * sections match the tensor infos one to one (name, size). Close it before the bundle. Into *out:
 * PF_RC_OK, or PF_RC_FORMAT (no such model, sections that do not match) / PF_RC_OOM with err. */
pf_rc pfb_gguf(const pfb_bundle *b, int owner, gguf_file **out, char err[PF_ERR_LEN]);

const char *pfb_owner_name(uint32_t owner);
const char *pfb_codec_name(uint32_t codec);

/* ---- writer ---- */
typedef struct {
    const gguf_file *target;   /* required */
    const gguf_file *draft;    /* optional */
    const void *profile;       /* optional opaque text */
    size_t profile_len;
    int level;                 /* zstd level for large sections (0 = 3); small ones get 19 */
    int min_saving;            /* percent a section must shrink to be stored compressed (0 = 5;
                                  100 = store everything raw, used in place from the mapping) */
    /* Called once per section written (raw and stored sizes, codec), may be NULL. */
    void (*on_section)(void *user, const pfb_section *s);
    void *user;
} pfb_pack_params;

/* Write a bundle to "PATH.tmp.PID", renamed over path only when complete (an interrupted or
 * failed pack never leaves a partial bundle at path). PF_RC_OK, or with err PF_RC_ARG (no target,
 * an empty profile), PF_RC_FORMAT (a tensor a bundle cannot hold), PF_RC_OOM, PF_RC_IO (it cannot
 * be created or written). */
pf_rc pfb_write(const char *path, const pfb_pack_params *p, char err[PF_ERR_LEN]);

#endif
