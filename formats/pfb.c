/* .pfb bundle reader (layout in pfb.h; the writer is pfb_write.c). It trusts nothing: the header
 * and the section table are hashed together, every entry is range-checked, sections may not overlap
 * each other or the table, every byte outside them must be zero, and each section's stored bytes
 * must match their xxh3-64 before they are decompressed or handed out. */
#include "formats/pfb_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "formats/map_file.h"

struct pfb_bundle {
    char *path;
    const uint8_t *base;
    size_t size;
    int mapped; /* base is an mmap we own */
    int n;
    pfb_section *s;
    uint8_t **owned; /* per section: decompressed buffer, or NULL when used in place */
};

int pfb_fail(char *err, const char *name, const char *fmt, ...) {
    int n = snprintf(err, PF_ERR_LEN, "%s: ", name);
    if (n >= 0 && n < PF_ERR_LEN - 1) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, (size_t)(PF_ERR_LEN - n), fmt, ap);
        va_end(ap);
    }
    return -1;
}

const char *pfb_owner_name(uint32_t owner) {
    return owner == PFB_OWNER_TARGET ? "target" : owner == PFB_OWNER_DRAFT ? "draft"
         : owner == PFB_OWNER_PROFILE ? "profile" : "?";
}

const char *pfb_codec_name(uint32_t codec) {
    return codec == PFB_CODEC_NONE ? "none" : codec == PFB_CODEC_ZSTD ? "zstd" : "?";
}

static int all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* Hash of the header with its hash field zeroed, then the table: one xxh3-64 over both. */
uint64_t pfb_header_hash(const uint8_t *hdr, const uint8_t *table, size_t table_size) {
    uint8_t h[PFB_HEADER_SIZE];
    memcpy(h, hdr, sizeof h);
    memset(h + 40, 0, 8);
    XXH3_state_t *st = XXH3_createState();
    if (!st) return 0;
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, h, sizeof h);
    XXH3_64bits_update(st, table, table_size);
    uint64_t r = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return r;
}

/* ---- reader ---- */

typedef struct { uint64_t start, end; int idx; } region; /* idx: -2 header, -1 table, else section */

static int cmp_region(const void *a, const void *b) {
    const region *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start ? 1 : 0;
}

static void region_name(const pfb_section *s, int idx, char *out, size_t n) {
    if (idx == -2) snprintf(out, n, "header");
    else if (idx == -1) snprintf(out, n, "section table");
    else snprintf(out, n, "section '%s/%s'", pfb_owner_name(s[idx].owner), s[idx].name);
}

/* A section's kind against its owner and name: one metadata section per model, tensors of a
 * model, the one profile section. 0, or -1 (format). */
static int check_kind(const pfb_section *s, const char *name, char *err) {
    const char *o = pfb_owner_name(s->owner);
    int model = s->owner == PFB_OWNER_TARGET || s->owner == PFB_OWNER_DRAFT;
    switch (s->kind) {
    case PFB_KIND_META:
        if (!model || strcmp(s->name, "metadata") || s->index)
            return pfb_fail(err, name, "section '%s/%s': a metadata section must be named 'metadata', index 0, "
                        "owned by the target or the draft", o, s->name);
        break;
    case PFB_KIND_TENSOR:
        if (!model) return pfb_fail(err, name, "section '%s/%s': a tensor section must belong to the target or the draft",
                                o, s->name);
        break;
    case PFB_KIND_PROFILE:
        if (s->owner != PFB_OWNER_PROFILE || strcmp(s->name, "profile") || s->index)
            return pfb_fail(err, name, "section '%s/%s': the profile section must be 'profile/profile', index 0", o,
                        s->name);
        break;
    default:
        return pfb_fail(err, name, "section '%s/%s': unknown kind %u", o, s->name, s->kind);
    }
    if (s->owner == PFB_OWNER_PROFILE && s->kind != PFB_KIND_PROFILE)
        return pfb_fail(err, name, "section '%s/%s': owner 'profile' holds only the profile section", o, s->name);
    return 0;
}

/* A section's place in the file (aligned, inside it) and its sizes for its codec. 0, or -1 (format). */
static int check_bytes(const pfb_section *s, const char *name, size_t size, char *err) {
    const char *o = pfb_owner_name(s->owner);
    if (s->alignment < PFB_MIN_ALIGN || s->alignment > PFB_MAX_ALIGN || (s->alignment & (s->alignment - 1)))
        return pfb_fail(err, name, "section '%s/%s': alignment %u is not a power of two in %u..%u", o, s->name,
                    s->alignment, PFB_MIN_ALIGN, PFB_MAX_ALIGN);
    if (s->offset % s->alignment)
        return pfb_fail(err, name, "section '%s/%s': offset %llu is not aligned to %u", o, s->name,
                    (unsigned long long)s->offset, s->alignment);
    if (s->stored_size == 0) return pfb_fail(err, name, "section '%s/%s': stored size is 0", o, s->name);
    if (s->offset > size || s->stored_size > size - s->offset)
        return pfb_fail(err, name, "section '%s/%s': bytes %llu..%llu run past the end of the file (%zu bytes)", o,
                    s->name, (unsigned long long)s->offset,
                    (unsigned long long)(s->offset + s->stored_size), size);
    if (s->codec == PFB_CODEC_NONE) {
        if (s->raw_size != s->stored_size)
            return pfb_fail(err, name, "section '%s/%s': raw size %llu differs from the stored size %llu (codec none)",
                        o, s->name, (unsigned long long)s->raw_size, (unsigned long long)s->stored_size);
    } else if (s->codec == PFB_CODEC_ZSTD) {
        if (s->raw_size == 0 || s->raw_size > PFB_MAX_RAW || s->raw_size > SIZE_MAX - PFB_MAX_ALIGN)
            return pfb_fail(err, name, "section '%s/%s': raw size %llu is out of range", o, s->name,
                        (unsigned long long)s->raw_size);
    } else {
        return pfb_fail(err, name, "section '%s/%s': unknown codec %u", o, s->name, s->codec);
    }
    return 0;
}

/* Table entry i (at e) into *s, checked. 0, or -1 (format). */
static int parse_entry(const uint8_t *e, int i, pfb_section *s, const char *name, size_t size, char *err) {
    memset(s, 0, sizeof *s);
    const uint8_t *nul = memchr(e, 0, PFB_NAME_LEN);
    if (!nul) return pfb_fail(err, name, "section %d: name is not NUL-terminated", i);
    size_t len = (size_t)(nul - e);
    memcpy(s->name, e, len);
    s->kind = e[96];
    s->owner = e[97];
    s->codec = e[98];
    s->alignment = rd32(e + 100);
    s->index = rd32(e + 104);
    s->offset = rd64(e + 112);
    s->stored_size = rd64(e + 120);
    s->raw_size = rd64(e + 128);
    s->hash = rd64(e + 136);
    const char *o = pfb_owner_name(s->owner);
    if (len == 0) return pfb_fail(err, name, "section %d: empty name", i);
    if (!all_zero(nul, PFB_NAME_LEN - len))
        return pfb_fail(err, name, "section '%s/%s': name padding is not zero", o, s->name);
    if (e[99] || rd32(e + 108)) return pfb_fail(err, name, "section '%s/%s': reserved bytes are not zero", o, s->name);
    if (s->owner > PFB_OWNER_PROFILE) return pfb_fail(err, name, "section '?/%s': unknown owner %u", s->name, s->owner);
    if (check_kind(s, name, err) < 0 || check_bytes(s, name, size, err) < 0) return -1;
    return 0;
}

/* Sections, header and table may not overlap; every byte between them must be zero (so that no
 * bit of the file escapes the hashes). */
static pf_rc check_layout(const uint8_t *base, size_t size, const pfb_section *s, int n, uint64_t toff,
                          uint64_t tsize, const char *name, char *err) {
    region *r = malloc(((size_t)n + 2) * sizeof *r);
    if (!r) {
        pfb_fail(err, name, "out of memory for %d sections", n);
        return PF_RC_OOM;
    }
    r[0] = (region){0, PFB_HEADER_SIZE, -2};
    r[1] = (region){toff, toff + tsize, -1};
    for (int i = 0; i < n; i++) r[i + 2] = (region){s[i].offset, s[i].offset + s[i].stored_size, i};
    qsort(r, (size_t)n + 2, sizeof *r, cmp_region);
    uint64_t pos = 0;
    int last = -3, rc = 0; /* the region that reaches furthest so far */
    for (int i = 0; i < n + 2 && rc == 0; i++) {
        char a[160], b[160];
        if (r[i].start < pos) {
            region_name(s, last, a, sizeof a);
            region_name(s, r[i].idx, b, sizeof b);
            rc = pfb_fail(err, name, "%s overlaps %s (at offset %llu)", b, a, (unsigned long long)r[i].start);
        } else if (!all_zero(base + pos, (size_t)(r[i].start - pos))) {
            region_name(s, r[i].idx, b, sizeof b);
            rc = pfb_fail(err, name, "padding before %s (offset %llu..%llu) is not zero", b, (unsigned long long)pos,
                      (unsigned long long)r[i].start);
        }
        if (r[i].end > pos) {
            pos = r[i].end;
            last = r[i].idx;
        }
    }
    if (rc == 0 && !all_zero(base + pos, size - (size_t)pos))
        rc = pfb_fail(err, name, "trailing bytes after offset %llu are not zero", (unsigned long long)pos);
    free(r);
    return rc < 0 ? PF_RC_FORMAT : PF_RC_OK;
}

static int check_counts(const pfb_section *s, int n, const char *name, char *err) {
    int meta[2] = {0, 0}, tensors[2] = {0, 0}, profile = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].kind == PFB_KIND_META && meta[s[i].owner]++)
            return pfb_fail(err, name, "section '%s/metadata': duplicate metadata section", pfb_owner_name(s[i].owner));
        if (s[i].kind == PFB_KIND_TENSOR) tensors[s[i].owner]++;
        if (s[i].kind == PFB_KIND_PROFILE && profile++)
            return pfb_fail(err, name, "section 'profile/profile': duplicate profile section");
    }
    if (!meta[PFB_OWNER_TARGET]) return pfb_fail(err, name, "no target metadata section (not a usable bundle)");
    if (tensors[PFB_OWNER_DRAFT] && !meta[PFB_OWNER_DRAFT])
        return pfb_fail(err, name, "draft tensor sections without a draft metadata section");
    return 0;
}

static pf_rc decompress(pfb_bundle *b, int i, ZSTD_DCtx **dctx, char *err) {
    pfb_section *s = &b->s[i];
    const uint8_t *src = b->base + s->offset;
    const char *o = pfb_owner_name(s->owner);
    unsigned long long fcs = ZSTD_getFrameContentSize(src, (size_t)s->stored_size);
    if (fcs == ZSTD_CONTENTSIZE_ERROR) {
        pfb_fail(err, b->path, "section '%s/%s': not a zstd frame", o, s->name);
        return PF_RC_FORMAT;
    }
    if (fcs != s->raw_size) {
        pfb_fail(err, b->path, "section '%s/%s': raw size %llu differs from the zstd frame's content size", o, s->name,
                 (unsigned long long)s->raw_size);
        return PF_RC_FORMAT;
    }
    size_t cap = ((size_t)s->raw_size + PFB_ALIGN - 1) / PFB_ALIGN * PFB_ALIGN;
    uint8_t *dst = aligned_alloc(PFB_ALIGN, cap);
    if (!dst) {
        pfb_fail(err, b->path, "section '%s/%s': out of memory for %llu bytes", o, s->name,
                 (unsigned long long)s->raw_size);
        return PF_RC_OOM;
    }
    if (!*dctx && !(*dctx = ZSTD_createDCtx())) {
        free(dst);
        pfb_fail(err, b->path, "out of memory for the zstd decoder");
        return PF_RC_OOM;
    }
    size_t r = ZSTD_decompressDCtx(*dctx, dst, (size_t)s->raw_size, src, (size_t)s->stored_size);
    if (ZSTD_isError(r) || r != s->raw_size) {
        free(dst);
        /* zstd's own allocation failure is memory; every other error is the frame's */
        pf_rc rc = ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? PF_RC_OOM : PF_RC_FORMAT;
        pfb_fail(err, b->path, "section '%s/%s': zstd: %s", o, s->name,
                 ZSTD_isError(r) ? ZSTD_getErrorName(r) : "decompressed size differs from the raw size");
        return rc;
    }
    b->owned[i] = dst;
    s->data = dst;
    return PF_RC_OK;
}

void pfb_close(pfb_bundle *b) {
    if (!b) return;
    if (b->owned)
        for (int i = 0; i < b->n; i++) free(b->owned[i]);
    free(b->owned);
    free(b->s);
    if (b->mapped) pf_unmap_file(b->base, b->size);
    free(b->path);
    free(b);
}

/* The fixed header: magic, version, the file's size, the section table's place and the hash over
 * both. *count, *toff and *tsize receive the table's entries, offset and size. 0, or -1 (format). */
static int check_header(const uint8_t *base, size_t size, const char *name, uint32_t *count, uint64_t *toff,
                        uint64_t *tsize, char *err) {
    if (size < PFB_HEADER_SIZE)
        return pfb_fail(err, name, "header: truncated file (%zu bytes, the header alone is %d)", size, PFB_HEADER_SIZE);
    if (memcmp(base, PFB_MAGIC, 8) != 0) return pfb_fail(err, name, "magic: not a pocketflash bundle");
    uint32_t version = rd32(base + 8), esize = rd32(base + 24), flags = rd32(base + 28);
    uint64_t fsize = rd64(base + 32), hash = rd64(base + 40);
    *count = rd32(base + 12);
    *toff = rd64(base + 16);
    if (version != PFB_VERSION)
        return pfb_fail(err, name, "version: unsupported bundle version %u (expected %d)", version, PFB_VERSION);
    if (fsize != size)
        return pfb_fail(err, name, "file size: the header says %llu bytes but the file has %zu (%s)",
                        (unsigned long long)fsize, size, fsize > size ? "truncated" : "extra bytes");
    if (esize != PFB_ENTRY_SIZE || flags || !all_zero(base + 48, 16))
        return pfb_fail(err, name, "header: entry size %u, flags %u or reserved bytes not as version %d defines", esize,
                        flags, PFB_VERSION);
    if (*count == 0 || *count > PFB_MAX_SECTIONS)
        return pfb_fail(err, name, "section count: %u is out of range 1..%u", *count, PFB_MAX_SECTIONS);
    *tsize = (uint64_t)*count * PFB_ENTRY_SIZE;
    if (*toff < PFB_HEADER_SIZE || *toff % 8 || *toff > size || *tsize > size - *toff)
        return pfb_fail(err, name, "section table: offset %llu (%llu bytes) lies outside the file",
                        (unsigned long long)*toff, (unsigned long long)*tsize);
    if (pfb_header_hash(base, base + *toff, (size_t)*tsize) != hash)
        return pfb_fail(err, name, "header: hash mismatch (header or section table corrupted)");
    return 0;
}

/* An empty bundle of count sections over buf; NULL when memory runs out. */
static pfb_bundle *bundle_new(const uint8_t *base, size_t size, const char *name, uint32_t count) {
    pfb_bundle *b = calloc(1, sizeof *b);
    if (!b || !(b->path = strdup(name)) || !(b->s = calloc(count, sizeof *b->s)) ||
        !(b->owned = calloc(count, sizeof *b->owned))) {
        if (b) { free(b->s); free(b->path); free(b); }
        return NULL;
    }
    b->base = base;
    b->size = size;
    b->n = (int)count;
    return b;
}

/* Every section's stored bytes against its hash. 0, or -1 (format). */
static int check_hashes(const pfb_bundle *b, const char *name, char *err) {
    for (int i = 0; i < b->n; i++) {
        const pfb_section *s = &b->s[i];
        if (XXH3_64bits(b->base + s->offset, (size_t)s->stored_size) != s->hash)
            return pfb_fail(err, name, "section '%s/%s': hash mismatch (stored bytes corrupted)", pfb_owner_name(s->owner),
                            s->name);
    }
    return 0;
}

/* Each section's data: in place when stored plainly (no copy), else decompressed. */
static pf_rc load_sections(pfb_bundle *b, char *err) {
    ZSTD_DCtx *dctx = NULL;
    pf_rc rc = PF_RC_OK;
    for (int i = 0; i < b->n && rc == PF_RC_OK; i++) {
        if (b->s[i].codec == PFB_CODEC_NONE) b->s[i].data = b->base + b->s[i].offset;
        else rc = decompress(b, i, &dctx, err);
    }
    ZSTD_freeDCtx(dctx);
    return rc;
}

/* pfb_parse with the kind of its failure: PF_RC_FORMAT or PF_RC_OOM. */
static pf_rc parse(const void *buf, size_t size, const char *name, pfb_bundle **out, char err[PF_ERR_LEN]) {
    const uint8_t *base = buf;
    uint32_t count = 0;
    uint64_t toff = 0, tsize = 0;
    err[0] = 0;
    *out = NULL;
    if (check_header(base, size, name, &count, &toff, &tsize, err) < 0) return PF_RC_FORMAT;
    pfb_bundle *b = bundle_new(base, size, name, count);
    if (!b) {
        pfb_fail(err, name, "out of memory for %u sections", count);
        return PF_RC_OOM;
    }
    pf_rc rc = PF_RC_FORMAT;
    for (uint32_t i = 0; i < count; i++)
        if (parse_entry(base + toff + (size_t)i * PFB_ENTRY_SIZE, (int)i, &b->s[i], name, size, err) < 0) goto bad;
    if (check_counts(b->s, b->n, name, err) < 0) goto bad;
    if ((rc = check_layout(base, size, b->s, b->n, toff, tsize, name, err)) != PF_RC_OK) goto bad;
    rc = PF_RC_FORMAT;
    if (check_hashes(b, name, err) < 0) goto bad;
    if ((rc = load_sections(b, err)) != PF_RC_OK) goto bad;
    *out = b;
    return PF_RC_OK;
bad:
    pfb_close(b);
    return rc;
}

pfb_bundle *pfb_parse(const void *buf, size_t size, const char *name, char err[PF_ERR_LEN]) {
    pfb_bundle *b;
    parse(buf, size, name, &b, err);
    return b;
}


/* pfb_parse over a whole file mapped by pf_map_file; the bundle owns the mapping (unmapped here
 * when parsing fails). */
static pf_rc parse_map(const uint8_t *map, size_t size, const char *path, pfb_bundle **out, char err[PF_ERR_LEN]) {
    pf_rc rc = parse(map, size, path, out, err);
    if (rc != PF_RC_OK) {
        pf_unmap_file(map, size);
        return rc;
    }
    (*out)->mapped = 1;
    return PF_RC_OK;
}

pf_rc pfb_model_open(const char *path, int owner, pfb_bundle **bundle, gguf_file **file, char err[PF_ERR_LEN]) {
    *bundle = NULL;
    *file = NULL;
    const uint8_t *map;
    size_t size;
    /* 24 bytes: the smallest GGUF header; a bundle's is larger and pfb_parse checks it */
    pf_rc rc = pf_map_file(path, 24, &map, &size, err);
    if (rc != PF_RC_OK) return rc;
    if (memcmp(map, PFB_MAGIC, 8) != 0) return gguf_parse_map(map, size, path, file, err);
    pfb_bundle *b = NULL;
    rc = parse_map(map, size, path, &b, err);
    if (rc == PF_RC_OK) rc = pfb_gguf(b, owner, file, err);
    if (rc != PF_RC_OK) {
        pfb_close(b);
        return rc;
    }
    *bundle = b;
    return PF_RC_OK;
}

int pfb_n_sections(const pfb_bundle *b) { return b->n; }
const pfb_section *pfb_section_at(const pfb_bundle *b, int i) { return i >= 0 && i < b->n ? &b->s[i] : NULL; }
size_t pfb_size(const pfb_bundle *b) { return b->size; }

static const pfb_section *find(const pfb_bundle *b, uint32_t kind, uint32_t owner) {
    for (int i = 0; i < b->n; i++)
        if (b->s[i].kind == kind && b->s[i].owner == owner) return &b->s[i];
    return NULL;
}

bool pfb_has_model(const pfb_bundle *b, int owner) { return find(b, PFB_KIND_META, (uint32_t)owner) != NULL; }

const void *pfb_profile(const pfb_bundle *b, size_t *len) {
    const pfb_section *s = find(b, PFB_KIND_PROFILE, PFB_OWNER_PROFILE);
    *len = s ? (size_t)s->raw_size : 0;
    return s ? s->data : NULL;
}

/* Tensor section s of the bundle b as the data of its tensor in f (seen: the tensors given data so
 * far): it must name the tensor at its index, once, with the bytes the tensor needs. 0, or -1 (format). */
static int attach_tensor(const pfb_bundle *b, gguf_file *f, const pfb_section *s, uint8_t *seen, char *err) {
    const char *o = pfb_owner_name(s->owner);
    if (s->index >= f->n_tensors)
        return pfb_fail(err, b->path, "section '%s/%s': tensor index %u is out of range (the metadata has %llu tensors)", o,
                        s->name, s->index, (unsigned long long)f->n_tensors);
    gguf_tensor *t = &f->tensors[s->index];
    if (!gguf_str_eq(t->name, s->name))
        return pfb_fail(err, b->path, "section '%s/%s': tensor index %u is '%.*s' in the metadata", o, s->name, s->index,
                        (int)(t->name.len > 100 ? 100 : t->name.len), t->name.ptr);
    if (seen[s->index]) return pfb_fail(err, b->path, "section '%s/%s': duplicate section for this tensor", o, s->name);
    if (s->raw_size != t->nbytes)
        return pfb_fail(err, b->path, "section '%s/%s': %llu bytes, but the tensor info needs %zu", o, s->name,
                        (unsigned long long)s->raw_size, t->nbytes);
    seen[s->index] = 1;
    t->data = s->data;
    return 0;
}

/* Every tensor of the owner's metadata f given its section's data. 0, -1 (format) or -2 (memory), err filled. */
static int attach_tensors(const pfb_bundle *b, int owner, gguf_file *f, char *err) {
    uint8_t *seen = calloc((size_t)(f->n_tensors ? f->n_tensors : 1), 1);
    if (!seen) {
        pfb_fail(err, b->path, "out of memory");
        return -2;
    }
    int rc = 0;
    for (int i = 0; i < b->n && rc == 0; i++)
        if (b->s[i].kind == PFB_KIND_TENSOR && b->s[i].owner == (uint32_t)owner) rc = attach_tensor(b, f, &b->s[i], seen, err);
    for (uint64_t i = 0; i < f->n_tensors && rc == 0; i++)
        if (!seen[i]) {
            gguf_str nm = f->tensors[i].name;
            rc = pfb_fail(err, b->path, "section '%s/%.*s': missing (the metadata lists this tensor)",
                          pfb_owner_name((uint32_t)owner), (int)(nm.len > 100 ? 100 : nm.len), nm.ptr);
        }
    free(seen);
    return rc;
}

pf_rc pfb_gguf(const pfb_bundle *b, int owner, gguf_file **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    const pfb_section *meta = find(b, PFB_KIND_META, (uint32_t)owner);
    if (!meta || (owner != PFB_OWNER_TARGET && owner != PFB_OWNER_DRAFT)) {
        pfb_fail(err, b->path, "the bundle holds no %s model", pfb_owner_name((uint32_t)owner));
        return PF_RC_FORMAT;
    }
    char gname[PF_ERR_LEN];
    snprintf(gname, sizeof gname, "%s (%s)", b->path, pfb_owner_name((uint32_t)owner));
    gguf_file *f = NULL;
    pf_rc rc = gguf_parse_meta(meta->data, (size_t)meta->raw_size, gname, &f, err);
    if (rc != PF_RC_OK) return rc;
    int at = attach_tensors(b, owner, f, err);
    if (at < 0) {
        gguf_close(f);
        return at == -2 ? PF_RC_OOM : PF_RC_FORMAT;
    }
    *out = f;
    return PF_RC_OK;
}

pf_rc pfb_verify(const void *buf, size_t size, const char *name, int *n_sections, char err[PF_ERR_LEN]) {
    *n_sections = 0;
    pfb_bundle *b;
    pf_rc rc = parse(buf, size, name, &b, err);
    if (rc != PF_RC_OK) return rc;
    for (int owner = PFB_OWNER_TARGET; owner <= PFB_OWNER_DRAFT && rc == PF_RC_OK; owner++) {
        if (!pfb_has_model(b, owner)) continue;
        gguf_file *f = NULL;
        rc = pfb_gguf(b, owner, &f, err);
        gguf_close(f);
    }
    if (rc == PF_RC_OK) *n_sections = b->n;
    pfb_close(b);
    return rc;
}

pf_rc pfb_verify_file(const char *path, int *n_sections, char err[PF_ERR_LEN]) {
    *n_sections = 0;
    const uint8_t *map;
    size_t size;
    pf_rc rc = pf_map_file(path, 1, &map, &size, err);
    if (rc != PF_RC_OK) return rc;
    rc = pfb_verify(map, size, path, n_sections, err);
    pf_unmap_file(map, size);
    return rc;
}
