/* What the .pfb reader (pfb.c) and writer (pfb_write.c) share: bounds, little-endian field access,
 * the error helper and the header hash. Internal to formats/. */
#ifndef PF_PFB_IMPL_H
#define PF_PFB_IMPL_H

#include <string.h>

#include "formats/pfb.h"

/* Bounds no sane bundle exceeds; they keep absurd fields from becoming huge allocations. The fuzz
 * build lowers PFB_MAX_RAW so a forged size cannot ask for gigabytes. */
#define PFB_MAX_SECTIONS (1u << 20)
#ifndef PFB_MAX_RAW
#define PFB_MAX_RAW (1ull << 40)
#endif
#define PFB_MIN_ALIGN 32u
#define PFB_MAX_ALIGN 4096u

static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline void wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* "name: message" into err; returns -1. */
int pfb_fail(char *err, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Hash of the header with its hash field zeroed, then the table: one xxh3-64 over both. */
uint64_t pfb_header_hash(const uint8_t *hdr, const uint8_t *table, size_t table_size);

#endif
