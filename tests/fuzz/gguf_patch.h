/* Structured mutation of a valid GGUF for the loader fuzz targets: the fixed-size fields of a
 * file (every scalar metadata value, the counts and first elements of numeric arrays, the bytes of
 * short strings, every tensor's n_dims, shape, type and offset) are located once; a fuzz input is
 * a list of edits to them, so mutations keep the container parseable and reach the model and
 * draft loaders behind it (random bytes mostly stop at the container, which fuzz_gguf covers).
 *
 * Input: records of 11 bytes {u16 field, u8 op, u64 value}: op 0 sets the field to value, 1 adds
 * the low byte of value as a signed delta, 2 sets one of the edge values (0, 1, all-ones, the
 * sign bit, small counts), 3 flips one bit. At most GP_MAX_EDITS records are used. */
#ifndef PF_FUZZ_GGUF_PATCH_H
#define PF_FUZZ_GGUF_PATCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"

#define GP_MAX_FIELDS 65536
#define GP_MAX_EDITS 8
#define GP_RECORD 11

typedef struct {
    uint32_t off;
    uint8_t width;
} gp_field;

typedef struct {
    uint8_t *base;
    size_t size;
    gp_field *f;
    int n;
} gp_file;

static int gp_add(gp_file *g, size_t off, int width) {
    if (g->n >= GP_MAX_FIELDS || off + (size_t)width > g->size) return 0;
    g->f[g->n].off = (uint32_t)off;
    g->f[g->n].width = (uint8_t)width;
    g->n++;
    return 1;
}

static int gp_width(uint32_t type) {
    static const int w[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type < 13 ? w[type] : -1;
}

static int gp_rd(const gp_file *g, size_t *p, void *dst, size_t n) {
    if (*p + n > g->size) return 0;
    memcpy(dst, g->base + *p, n);
    *p += n;
    return 1;
}

/* A string at *p: its bytes become fields when short (names, architecture, template markers). */
static int gp_str(gp_file *g, size_t *p, int fields) {
    uint64_t len;
    if (!gp_rd(g, p, &len, 8) || len > g->size - *p) return 0;
    if (fields && len <= 24)
        for (uint64_t i = 0; i < len; i++) gp_add(g, *p + i, 1);
    *p += len;
    return 1;
}

static int gp_value(gp_file *g, size_t *p, uint32_t type) {
    if (type == 8) return gp_str(g, p, 1);
    if (type == 9) {
        uint32_t et;
        uint64_t n;
        size_t at_n;
        if (!gp_rd(g, p, &et, 4)) return 0;
        at_n = *p;
        if (!gp_rd(g, p, &n, 8)) return 0;
        gp_add(g, at_n, 8);
        if (et == 8) {
            for (uint64_t i = 0; i < n; i++)
                if (!gp_str(g, p, i < 4)) return 0;
            return 1;
        }
        int w = gp_width(et);
        if (w <= 0 || n > (g->size - *p) / (uint64_t)w) return 0;
        for (uint64_t i = 0; i < n; i++)
            if (i < 8) gp_add(g, *p + i * (uint64_t)w, w);
        *p += n * (uint64_t)w;
        return 1;
    }
    int w = gp_width(type);
    if (w <= 0) return 0;
    gp_add(g, *p, w);
    *p += (size_t)w;
    return 1;
}

/* Locate the fields of a GGUF v3 image (base is kept, not copied). 0 on a file it cannot walk. */
static int gp_index(gp_file *g, uint8_t *base, size_t size) {
    memset(g, 0, sizeof *g);
    g->base = base;
    g->size = size;
    g->f = calloc(GP_MAX_FIELDS, sizeof *g->f);
    size_t p = 8;
    uint64_t n_t, n_kv;
    if (!g->f || !gp_rd(g, &p, &n_t, 8) || !gp_rd(g, &p, &n_kv, 8)) return 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        uint32_t type;
        if (!gp_str(g, &p, 0) || !gp_rd(g, &p, &type, 4) || !gp_value(g, &p, type)) return 0;
    }
    for (uint64_t i = 0; i < n_t; i++) {
        uint32_t nd;
        if (!gp_str(g, &p, 0)) return 0;
        gp_add(g, p, 4);
        if (!gp_rd(g, &p, &nd, 4) || nd > 4) return 0;
        for (uint32_t d = 0; d < nd; d++) {
            gp_add(g, p, 8);
            p += 8;
        }
        gp_add(g, p, 4); /* type */
        gp_add(g, p + 4, 8); /* offset */
        p += 12;
    }
    return g->n > 0;
}

/* A copy of the base image with the input's edits applied (malloc'd, exactly size bytes). */
static uint8_t *gp_apply(const gp_file *g, const uint8_t *data, size_t size) {
    uint8_t *out = malloc(g->size);
    if (!out) return NULL;
    memcpy(out, g->base, g->size);
    for (int r = 0; r < GP_MAX_EDITS && size >= GP_RECORD; r++, data += GP_RECORD, size -= GP_RECORD) {
        uint16_t fi;
        uint64_t v, cur = 0;
        memcpy(&fi, data, 2);
        memcpy(&v, data + 3, 8);
        const gp_field *f = &g->f[fi % g->n];
        memcpy(&cur, out + f->off, f->width);
        uint64_t mask = f->width == 8 ? ~0ull : (1ull << (8 * f->width)) - 1;
        static const uint64_t edge[] = {0, 1, 2, 3, 4, 7, 8, 16, 31, 32, 64, 255, 256, 4096, 65535, 65536};
        switch (data[2] & 3) {
        case 0: cur = v; break;
        case 1: cur += (uint64_t)(int64_t)(int8_t)(v & 0xff); break;
        case 2:
            cur = (v >> 8) % 20 < 16 ? edge[(v >> 8) % 20 % 16]
                  : (v >> 8) % 20 == 16 ? mask : (v >> 8) % 20 == 17 ? mask >> 1 : (v >> 8) % 20 == 18 ? (mask >> 1) + 1 : cur * 2;
            break;
        default: cur ^= 1ull << (v % (8 * f->width)); break;
        }
        cur &= mask;
        memcpy(out + f->off, &cur, f->width);
    }
    return out;
}

/* The whole of a file, malloc'd. */
static uint8_t *gp_slurp(const char *path, size_t *size) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = n > 0 ? malloc((size_t)n) : NULL;
    if (b && fread(b, 1, (size_t)n, fp) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(fp);
    *size = b ? (size_t)n : 0;
    return b;
}

/* An error message must be one line, non-empty. */
static void gp_check_err(const char *err) {
    if (!err[0] || strchr(err, '\n')) {
        fprintf(stderr, "bad error message: '%s'\n", err);
        abort();
    }
}

/* The input as a loader target sees it: data[0] picks one of the n bases, the rest edits it, and
 * the result is parsed as `name`. The file, its bytes in *buf (the caller frees them after the
 * file), or NULL for an input too short, an image that does not parse (its error message checked)
 * or no memory, *buf then freed. */
static gguf_file *gp_parse(const gp_file *bases, int n, const uint8_t *data, size_t size, const char *name,
                           char *err, uint8_t **buf) {
    *buf = NULL;
    if (size < 1) return NULL;
    const gp_file *g = &bases[data[0] % n];
    *buf = gp_apply(g, data + 1, size - 1);
    if (!*buf) return NULL;
    gguf_file *f = gguf_parse(*buf, g->size, name, err);
    if (!f) {
        gp_check_err(err);
        free(*buf);
        *buf = NULL;
    }
    return f;
}

#endif
