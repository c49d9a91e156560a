/* Prompt cache files (layout in prompt_cache.h): every field is checked before use; a file that
 * fails any check is reported and never partly applied. */
#include "engine/prompt_cache.h"

#include "formats/atomic_file.h"
#include "formats/errf.h"
#include "kernels/kv_layout.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#define PC_MAGIC "PFPCACHE"
#define PC_VERSION 1    /* f16 keys and values */
#define PC_VERSION_Q8 2 /* the 8-bit cache: int8 rows and their scales */
#define PC_HEADER 64
#define PC_MAX_TOKENS (1u << 24)
#define PC_MAX_TAPS 256u
#define PC_MAX_RAW (1ull << 38)
#define PC_SAMPLE 4096 /* bytes of each tensor's data hashed at its start, middle and end */

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static void wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

uint64_t pf_prompt_cache_key(const pf_model *m, const pf_kernels *k) {
    XXH3_state_t *st = XXH3_createState();
    if (!st) return 0;
    XXH3_64bits_reset(st);
    static const char tag[] = "pocketflash prompt cache key v1";
    XXH3_64bits_update(st, tag, sizeof tag);
    const gguf_file *f = m->file;
    size_t hdr = f->data_offset < f->size ? f->data_offset : f->size;
    XXH3_64bits_update(st, f->base, hdr);
    const pf_hparams *hp = &m->hp;
    int64_t h[] = {hp->n_layer, hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv, hp->head_dim, hp->n_vocab,
                   hp->n_ctx_train};
    XXH3_64bits_update(st, h, sizeof h);
    XXH3_64bits_update(st, &hp->rope_theta, sizeof hp->rope_theta);
    XXH3_64bits_update(st, &hp->rms_eps, sizeof hp->rms_eps);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        XXH3_64bits_update(st, t->name.ptr, (size_t)t->name.len);
        XXH3_64bits_update(st, &t->type, sizeof t->type);
        XXH3_64bits_update(st, t->ne, sizeof t->ne);
        uint64_t nb = t->nbytes;
        XXH3_64bits_update(st, &nb, sizeof nb);
        if (!t->data) continue;
        size_t n = t->nbytes < PC_SAMPLE ? t->nbytes : PC_SAMPLE;
        const uint8_t *d = t->data;
        XXH3_64bits_update(st, d, n);
        XXH3_64bits_update(st, d + (t->nbytes - n) / 2, n);
        XXH3_64bits_update(st, d + t->nbytes - n, n);
    }
    if (k && k->name) XXH3_64bits_update(st, k->name, strlen(k->name));
    uint64_t r = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return r;
}

/* Byte size of the raw payload, or 0 if it overflows the limit (n_kv_head: the 8-bit cache's scales
 * per row, 0 for f16). */
static uint64_t payload_size(uint64_t n, uint64_t n_layer, uint64_t kv_dim, uint64_t n_embd, uint64_t n_taps,
                             uint64_t n_kv_head) {
    /* with every factor bounded no product overflows; the sum is checked against the limit */
    if (n > PC_MAX_TOKENS || n_layer > (1u << 20) || kv_dim > (1u << 20) || n_embd > (1u << 20) || n_taps > PC_MAX_TAPS ||
        n_kv_head > kv_dim)
        return 0;
    uint64_t kv = n_layer * kv_dim;
    if (kv > (1ull << 32)) return 0;
    /* tokens, tap ids, K and V (f16; or int8 plus an f32 scale per layer, row and head) */
    uint64_t r = 4 * n + 4 * n_taps + (n_kv_head ? 2 * n * kv + 8 * n * n_layer * n_kv_head : 4 * n * kv);
    uint64_t t = n_taps * n_embd;
    if (t > (1ull << 32) || r > PC_MAX_RAW) return 0;
    r += 4 * n * t;
    return r > PC_MAX_RAW ? 0 : r;
}


/* The K/V part of the payload: keys, then values, each rows [n_layer][n][kv_dim] (f16; the 8-bit
 * cache: int8, then the scales [n_layer][n][n_kv_head]). save: cache rows 0..n-1 -> p; else
 * p -> cache rows 0..use-1 (the file holds n). Returns the bytes of the part. */
static size_t kv_section(pf_kv_cache *kv, uint8_t *p, uint32_t n, int use, int save) {
    const int q8 = kv->type == PF_KV_Q8, nh = kv->n_kv_head, hd = kv->head_dim;
    const size_t row = (size_t)kv->kv_dim * (q8 ? 1 : sizeof(pf_half));
    uint8_t *p0 = p;
    int rows = save ? (int)n : use;
    for (int which = 0; which < 2; which++) {
        for (int l = 0; l < kv->n_layer; l++) {
            for (int t = 0; t < rows; t++) {
                uint8_t *r = p + (size_t)t * row;
                if (q8) {
                    void *X = which ? (void *)(kv->v8 + (size_t)l * kv->layer_stride)
                                    : (void *)(kv->k8 + (size_t)l * kv->layer_stride);
                    if (save) pf_kv_row_get_q8(X, !which, kv->head_stride, nh, hd, t, (int8_t *)r);
                    else pf_kv_row_put_q8(X, !which, kv->head_stride, nh, hd, t, (const int8_t *)r);
                } else {
                    pf_half *X = (which ? kv->v : kv->k) + (size_t)l * kv->layer_stride;
                    if (save) pf_kv_row_get(X, !which, kv->head_stride, nh, hd, t, (pf_half *)r);
                    else pf_kv_row_put(X, !which, kv->head_stride, nh, hd, t, (const pf_half *)r);
                }
            }
            p += (size_t)n * row;
        }
        if (!q8) continue;
        float *sc = which ? kv->vs : kv->ks;
        for (int l = 0; l < kv->n_layer; l++) {
            for (int t = 0; t < rows; t++)
                for (int h = 0; h < nh; h++) {
                    float *c = &sc[((size_t)l * nh + h) * kv->scale_stride + t];
                    uint8_t *f = p + ((size_t)t * nh + h) * sizeof(float);
                    if (save) memcpy(f, c, sizeof(float));
                    else memcpy(c, f, sizeof(float));
                }
            p += (size_t)n * nh * sizeof(float);
        }
    }
    return (size_t)(p - p0);
}

int pf_prompt_cache_save(const char *path, uint64_t key, const pf_kv_cache *kv, int n_embd, const int32_t *tokens,
                         int n_tokens, const int *tap_layers, int n_taps, const float *taps, char err[PF_ERR_LEN]) {
    if (n_tokens < 1 || n_tokens > kv->len || (uint32_t)n_taps > PC_MAX_TAPS || (n_taps && !taps))
        return pf_errf(err, "nothing valid to save (%d tokens, %lld cached rows)", n_tokens, (long long)kv->len);
    const int q8 = kv->type == PF_KV_Q8;
    uint64_t raw = payload_size((uint64_t)n_tokens, (uint64_t)kv->n_layer, (uint64_t)kv->kv_dim, (uint64_t)n_embd,
                                (uint64_t)n_taps, q8 ? (uint64_t)kv->n_kv_head : 0);
    if (!raw) return pf_errf(err, "the prefix is too large to save");
    uint8_t *buf = malloc((size_t)raw);
    size_t cap = ZSTD_compressBound((size_t)raw);
    uint8_t *out = malloc(PC_HEADER + cap);
    if (!buf || !out) {
        free(buf);
        free(out);
        return pf_errf(err, "out of memory");
    }
    uint8_t *p = buf;
    memcpy(p, tokens, (size_t)n_tokens * 4);
    p += (size_t)n_tokens * 4;
    for (int t = 0; t < n_taps; t++, p += 4) wr32(p, (uint32_t)tap_layers[t]);
    p += kv_section((pf_kv_cache *)kv, p, (uint32_t)n_tokens, 0, 1); /* reads kv only */
    if (n_taps) memcpy(p, taps, (size_t)n_tokens * (size_t)n_taps * (size_t)n_embd * sizeof(float));
    size_t z = ZSTD_compress(out + PC_HEADER, cap, buf, (size_t)raw, 3);
    free(buf);
    if (ZSTD_isError(z)) {
        free(out);
        return pf_errf(err, "zstd: %s", ZSTD_getErrorName(z));
    }
    uint8_t *h = out;
    memset(h, 0, PC_HEADER);
    memcpy(h, PC_MAGIC, 8);
    wr32(h + 8, q8 ? PC_VERSION_Q8 : PC_VERSION);
    wr32(h + 12, (uint32_t)n_tokens);
    wr64(h + 16, key);
    wr32(h + 24, (uint32_t)kv->n_layer);
    wr32(h + 28, (uint32_t)kv->kv_dim);
    wr32(h + 32, (uint32_t)n_embd);
    wr32(h + 36, (uint32_t)n_taps);
    wr64(h + 40, raw);
    wr64(h + 48, XXH3_64bits(out + PC_HEADER, z));
    wr64(h + 56, XXH3_64bits(h, 56));
    atomic_file af;
    FILE *fp = atomic_file_open(&af, path, "wb");
    if (fp && fwrite(out, 1, PC_HEADER + z, fp) != PC_HEADER + z) atomic_file_failed(&af);
    free(out);
    if (!fp || atomic_file_commit(&af, path, 0) != 0) {
        pf_errf(err, "cannot write: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static uint8_t *read_all(const char *path, size_t *size, int *absent, char *err) {
    *absent = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        *absent = errno == ENOENT;
        pf_errf(err, "cannot open: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(fp), &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > PC_MAX_RAW) {
        fclose(fp);
        pf_errf(err, "not a regular file of a sane size");
        return NULL;
    }
    *size = (size_t)st.st_size;
    uint8_t *buf = malloc(*size ? *size : 1);
    if (!buf) {
        fclose(fp);
        pf_errf(err, "out of memory");
        return NULL;
    }
    size_t n = fread(buf, 1, *size, fp);
    fclose(fp);
    if (n != *size) {
        free(buf);
        pf_errf(err, "read failed");
        return NULL;
    }
    return buf;
}

/* The header's fields (after its magic and hash were checked). */
typedef struct {
    uint32_t version, n, n_layer, kv_dim, embd, nt;
    uint64_t raw_size;
} pc_header;

/* The header of a file of `size` bytes at h: intact, of this version and KV type, made with this
 * model (key, shape) and in range. */
static int read_header(const uint8_t *h, size_t size, uint64_t key, const pf_kv_cache *kv, int n_embd, pc_header *hd,
                       char *err) {
    if (size < PC_HEADER) return pf_errf(err, "truncated file (%zu bytes)", size);
    if (memcmp(h, PC_MAGIC, 8) != 0) return pf_errf(err, "not a prompt cache file");
    if (XXH3_64bits(h, 56) != rd64(h + 56)) return pf_errf(err, "header hash mismatch (corrupt file)");
    *hd = (pc_header){.version = rd32(h + 8), .n = rd32(h + 12), .n_layer = rd32(h + 24), .kv_dim = rd32(h + 28),
                      .embd = rd32(h + 32), .nt = rd32(h + 36), .raw_size = rd64(h + 40)};
    const int q8 = kv->type == PF_KV_Q8;
    if (hd->version != PC_VERSION && hd->version != PC_VERSION_Q8) return pf_errf(err, "unsupported version %u", hd->version);
    if ((hd->version == PC_VERSION_Q8) != q8)
        return pf_errf(err, "saved with the %s KV cache, this run uses the %s one", q8 ? "f16" : "8-bit", q8 ? "8-bit" : "f16");
    if (rd64(h + 16) != key || (int)hd->n_layer != kv->n_layer || (int)hd->kv_dim != kv->kv_dim || (int)hd->embd != n_embd)
        return pf_errf(err, "made with another model (or kernel level)");
    if (hd->n < 1 || hd->n > PC_MAX_TOKENS || hd->nt > PC_MAX_TAPS ||
        payload_size(hd->n, hd->n_layer, hd->kv_dim, hd->embd, hd->nt, q8 ? (uint64_t)kv->n_kv_head : 0) != hd->raw_size ||
        hd->raw_size == 0)
        return pf_errf(err, "header fields out of range (corrupt file)");
    return 0;
}

/* The payload after the header (zn bytes at z), checked against its hash and decompressed into
 * *raw (raw_size bytes, malloc'd). */
static int inflate_payload(const uint8_t *z, size_t zn, uint64_t hash, uint64_t raw_size, uint8_t **raw, char *err) {
    if (XXH3_64bits(z, zn) != hash) return pf_errf(err, "payload hash mismatch (corrupt or truncated file)");
    if (ZSTD_getFrameContentSize(z, zn) != raw_size || !(*raw = malloc((size_t)raw_size)))
        return pf_errf(err, "payload size does not match its header (corrupt file)");
    size_t got = ZSTD_decompress(*raw, (size_t)raw_size, z, zn);
    if (ZSTD_isError(got) || got != raw_size) return pf_errf(err, "payload does not decompress (corrupt file)");
    return 0;
}

/* idx[t]: where the file's list of nt tapped layers (at tl) has tap_layers[t]. */
static int match_taps(const uint8_t *tl, uint32_t nt, const int *tap_layers, int n_taps, int *idx, char *err) {
    for (int t = 0; t < n_taps; t++) {
        idx[t] = -1;
        for (uint32_t j = 0; j < nt && idx[t] < 0; j++)
            if ((int32_t)rd32(tl + 4 * j) == tap_layers[t]) idx[t] = (int)j;
        if (idx[t] < 0)
            return pf_errf(err, "holds no tapped rows for target layer %d (saved by another strategy)", tap_layers[t]);
    }
    return 0;
}

int pf_prompt_cache_restore(const char *path, uint64_t key, pf_kv_cache *kv, int n_embd, const int32_t *prompt,
                            int n_prompt, const int *tap_layers, int n_taps, float *taps, char err[PF_ERR_LEN]) {
    size_t size = 0;
    int absent;
    uint8_t *file = read_all(path, &size, &absent, err), *raw = NULL;
    if (!file) return absent ? 0 : -1;
    int rc = -1;
    pc_header hd = {0};
    int idx[PC_MAX_TAPS];
    if (read_header(file, size, key, kv, n_embd, &hd, err) < 0 ||
        inflate_payload(file + PC_HEADER, size - PC_HEADER, rd64(file + 48), hd.raw_size, &raw, err) < 0)
        goto done;
    const uint32_t n = hd.n, nt = hd.nt, embd = hd.embd;
    if ((int)n > n_prompt || memcmp(raw, prompt, (size_t)n * 4) != 0) {
        pf_errf(err, "the prompt does not start with its %u-token prefix", n);
        goto done;
    }
    const uint8_t *tl = raw + (size_t)n * 4;
    if (match_taps(tl, nt, tap_layers, n_taps, idx, err) < 0) goto done;
    int use = (int)n < n_prompt ? (int)n : n_prompt - 1; /* at least one token must be prefilled */
    if (use < 1 || kv->len != 0 || use > kv->n_ctx) {
        pf_errf(err, "leaves no prompt token to prefill");
        goto done;
    }
    const uint8_t *p = tl + 4 * (size_t)nt;
    p += kv_section(kv, (uint8_t *)p, n, use, 0);
    for (int b = 0; b < use; b++)
        for (int t = 0; t < n_taps; t++)
            memcpy(taps + ((size_t)b * n_taps + t) * embd, p + (((size_t)b * nt + idx[t]) * embd) * sizeof(float),
                   embd * sizeof(float));
    kv->len = use;
    rc = use;
done:
    free(raw);
    free(file);
    return rc;
}
