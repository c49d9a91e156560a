/* .pfb bundle writer (layout in pfb.h): sections planned from the source GGUF files, compressed,
 * laid out aligned, hashed, and written to a temporary file renamed into place. */
#include "formats/pfb_impl.h"
#include "formats/atomic_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

typedef struct {
    uint32_t kind, owner, index;
    const char *name;
    size_t name_len;
    const void *raw;
    size_t raw_size;
} plan_entry;

static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static int plan_model(plan_entry *pl, int *n, const gguf_file *f, uint32_t owner, const char *path, char *err) {
    /* the metadata section is the source's header bytes exactly (tensor offsets included; they are
     * ignored on load), so its hash identifies the model the same way in both containers */
    size_t hdr = f->data_offset < f->size ? f->data_offset : f->size;
    pl[(*n)++] = (plan_entry){PFB_KIND_META, owner, 0, "metadata", 8, f->base, hdr};
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (t->name.len >= PFB_NAME_LEN || t->name.len == 0 || memchr(t->name.ptr, 0, t->name.len))
            return pfb_fail(err, path, "tensor '%.*s' (%s): the name must be 1..%d bytes without NUL to fit a bundle",
                        (int)(t->name.len > 100 ? 100 : t->name.len), t->name.ptr, pfb_owner_name(owner),
                        PFB_NAME_LEN - 1);
        if (!t->data || !t->nbytes)
            return pfb_fail(err, path, "tensor '%.*s' (%s): no data", (int)t->name.len, t->name.ptr,
                        pfb_owner_name(owner));
        pl[(*n)++] = (plan_entry){PFB_KIND_TENSOR, owner, (uint32_t)i, t->name.ptr, t->name.len, t->data, t->nbytes};
    }
    return 0;
}

static int write_zeros(FILE *fp, size_t n) {
    static const uint8_t zeros[4096];
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        if (fwrite(zeros, 1, k, fp) != k) return -1;
        n -= k;
    }
    return 0;
}

/* The compressor and its output buffer, reused from section to section. */
typedef struct {
    ZSTD_CCtx *cctx;
    uint8_t *dst;
    size_t dst_cap;
    int level, min_saving; /* zstd level of large tensors; % a compressed section must save */
} section_coder;

/* The bytes to store for entry e: compressed (codec PFB_CODEC_ZSTD) only where it saves enough
 * (quantized blocks rarely do), else its raw bytes. -1 when out of memory. */
static int encode_section(section_coder *c, const plan_entry *e, const void **out, size_t *out_size, uint32_t *codec) {
    *out = e->raw;
    *out_size = e->raw_size;
    *codec = PFB_CODEC_NONE;
    size_t bound = ZSTD_compressBound(e->raw_size);
    if (bound > c->dst_cap) {
        free(c->dst);
        if (!(c->dst = malloc(bound))) {
            c->dst_cap = 0;
            return -1;
        }
        c->dst_cap = bound;
    }
    /* small sections and the text-like ones (metadata, profile) get the strongest level */
    int lv = e->kind != PFB_KIND_TENSOR || e->raw_size <= (256u << 10) ? 19 : c->level;
    size_t z = c->min_saving < 100 ? ZSTD_compressCCtx(c->cctx, c->dst, c->dst_cap, e->raw, e->raw_size, lv) : e->raw_size;
    if (!ZSTD_isError(z) && (double)z <= (double)e->raw_size * (1.0 - c->min_saving / 100.0) && c->min_saving < 100) {
        *out = c->dst;
        *out_size = z;
        *codec = PFB_CODEC_ZSTD;
    }
    return 0;
}

/* Section s's entry of the table (PFB_ENTRY_SIZE bytes at t). */
static void encode_entry(uint8_t *t, const pfb_section *s) {
    memcpy(t, s->name, PFB_NAME_LEN);
    t[96] = (uint8_t)s->kind;
    t[97] = (uint8_t)s->owner;
    t[98] = (uint8_t)s->codec;
    wr32(t + 100, s->alignment);
    wr32(t + 104, s->index);
    wr64(t + 112, s->offset);
    wr64(t + 120, s->stored_size);
    wr64(t + 128, s->raw_size);
    wr64(t + 136, s->hash);
}

/* The header and the table of n entries, at the start of the file; `end` where the data ends. */
static int write_header(FILE *fp, int n, uint64_t end, const uint8_t *table, size_t tsize) {
    uint8_t hdr[PFB_HEADER_SIZE] = {0};
    memcpy(hdr, PFB_MAGIC, 8);
    wr32(hdr + 8, PFB_VERSION);
    wr32(hdr + 12, (uint32_t)n);
    wr64(hdr + 16, PFB_HEADER_SIZE);
    wr32(hdr + 24, PFB_ENTRY_SIZE);
    wr64(hdr + 32, end);
    wr64(hdr + 40, pfb_header_hash(hdr, table, tsize));
    if (fseek(fp, 0, SEEK_SET) != 0 || fwrite(hdr, 1, sizeof hdr, fp) != sizeof hdr ||
        fwrite(table, 1, tsize, fp) != tsize)
        return -1;
    return 0;
}

/* Plan entry e encoded and written at the next aligned offset after *pos, its table entry into *s;
 * *pos moves past it. 0, -1 (a write failed: errno) or -2 (out of memory). */
static int write_section(FILE *fp, section_coder *coder, const plan_entry *e, pfb_section *s, size_t *pos) {
    memcpy(s->name, e->name, e->name_len);
    s->kind = e->kind;
    s->owner = e->owner;
    s->index = e->index;
    s->alignment = PFB_ALIGN;
    s->raw_size = e->raw_size;
    const void *out;
    size_t out_size;
    if (encode_section(coder, e, &out, &out_size, &s->codec) < 0) return -2;
    size_t at = align_up(*pos, PFB_ALIGN);
    if (write_zeros(fp, at - *pos) < 0 || fwrite(out, 1, out_size, fp) != out_size) return -1;
    s->offset = at;
    s->stored_size = out_size;
    s->hash = XXH3_64bits(out, out_size);
    *pos = at + out_size;
    return 0;
}

/* The n planned sections and their table written to path (a whole file or none), sec[] filled. */
static pf_rc write_planned(const char *path, const pfb_pack_params *p, const plan_entry *pl, int n, pfb_section *sec,
                           section_coder *coder, char err[PF_ERR_LEN]) {
    size_t tsize = (size_t)n * PFB_ENTRY_SIZE;
    uint8_t *table = calloc(1, tsize);
    if (!table) return pfb_fail(err, path, "out of memory"), PF_RC_OOM;
    atomic_file af = {0};
    pf_rc rc = PF_RC_IO;
    FILE *fp = atomic_file_open(&af, path, "wb");
    if (!fp) {
        pfb_fail(err, path, "cannot create: %s", strerror(errno));
        goto done;
    }
    size_t pos = align_up(PFB_HEADER_SIZE + tsize, PFB_ALIGN);
    if (write_zeros(fp, pos) < 0) goto io;
    for (int i = 0; i < n; i++) {
        int w = write_section(fp, coder, &pl[i], &sec[i], &pos);
        if (w == -2) {
            pfb_fail(err, path, "out of memory");
            rc = PF_RC_OOM;
            goto done;
        }
        if (w < 0) goto io;
        encode_entry(table + (size_t)i * PFB_ENTRY_SIZE, &sec[i]);
        if (p->on_section) p->on_section(p->user, &sec[i]);
    }
    if (write_header(fp, n, pos, table, tsize) < 0 || atomic_file_commit(&af, path, 1) != 0) goto io;
    rc = PF_RC_OK;
    goto done;
io:
    pfb_fail(err, path, "write failed: %s", strerror(errno));
done:
    if (rc) atomic_file_abort(&af);
    free(table);
    return rc;
}

pf_rc pfb_write(const char *path, const pfb_pack_params *p, char err[PF_ERR_LEN]) {
    err[0] = 0;
    if (!p->target) return pfb_fail(err, path, "no target model to pack"), PF_RC_ARG;
    if (p->profile && p->profile_len == 0) return pfb_fail(err, path, "the profile is empty"), PF_RC_ARG;
    uint64_t cap = 2 + p->target->n_tensors + (p->draft ? 1 + p->draft->n_tensors : 0);
    if (cap > PFB_MAX_SECTIONS)
        return pfb_fail(err, path, "too many tensors for a bundle (%llu)", (unsigned long long)cap), PF_RC_FORMAT;
    plan_entry *pl = calloc((size_t)cap, sizeof *pl);
    pfb_section *sec = calloc((size_t)cap, sizeof *sec);
    section_coder coder = {.cctx = ZSTD_createCCtx(), .level = p->level > 0 ? p->level : 3,
                           .min_saving = p->min_saving > 0 ? p->min_saving : 5};
    int n = 0;
    pf_rc rc = PF_RC_OOM;
    if (!pl || !sec || !coder.cctx) {
        pfb_fail(err, path, "out of memory");
        goto done;
    }
    rc = PF_RC_FORMAT; /* a tensor a bundle cannot hold */
    if (plan_model(pl, &n, p->target, PFB_OWNER_TARGET, path, err) < 0) goto done;
    if (p->draft && plan_model(pl, &n, p->draft, PFB_OWNER_DRAFT, path, err) < 0) goto done;
    if (p->profile) pl[n++] = (plan_entry){PFB_KIND_PROFILE, PFB_OWNER_PROFILE, 0, "profile", 7, p->profile, p->profile_len};
    rc = write_planned(path, p, pl, n, sec, &coder, err);
done:
    ZSTD_freeCCtx(coder.cctx);
    free(coder.dst);
    free(sec);
    free(pl);
    return rc;
}
