/* pocketflash taps: the target's tapped residual rows over given token sequences (the features a
 * DFlash draft is trained on), computed by the same forward the engine runs at generation time.
 *
 * Input (written by train/draft_data.py seqs): "PFSQ", u32 n_seq, u32 length[n_seq],
 * i32 tokens[sum of lengths]. Output: a NumPy .npy file, float16 [total tokens, n_taps * n_embd],
 * row-major, tap t of token r at r * n_taps * n_embd + t * n_embd (the layout train_draft.py reads).
 * With --topk K --topk-out P also the target's K most likely next tokens after every row, for
 * distillation: P_ids.npy (uint16, or int32 for a vocabulary over 65,536) and P_logp.npy (float16
 * log-probabilities at temperature 1), both [total tokens, K], most likely first, ties by lower id.
 * Every output is written to a temporary and renamed when complete (formats/atomic_file.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "engine/batch.h"
#include "engine/forward.h"
#include "formats/atomic_file.h"
#include "formats/ggml_types.h"
#include "kernels/topology.h"

static const char k_usage[] =
    "usage: pocketflash taps -m MODEL.gguf --layers L1,L2,... -i SEQS.bin -o FEATS.npy [-t N]\n"
    "  runs every sequence of SEQS.bin through the model (one prefill each, empty cache) and writes the\n"
    "  residual-stream rows after the given 0-based layers as float16 [tokens, n_taps * n_embd]\n"
    "  -t N           threads (default: the physical cores, here %d)\n"
    "  --topk K       also write the model's K (1..256) most likely next tokens after every row:\n"
    "  --topk-out P   P_ids.npy (uint16, int32 above 65,536 tokens) and P_logp.npy (float16 log-probs)\n";

enum { MAX_TAPS = 16, MAX_TOPK = 256 };

static int parse_layers(const char *v, int n_layer, int *layers, int *n) {
    *n = 0;
    const char *p = v;
    while (*p) {
        char *end;
        long l = strtol(p, &end, 10);
        if (end == p || l < 0 || l >= n_layer || *n == MAX_TAPS)
            return cli_fail("taps: --layers '%s': need up to %d comma-separated layers in 0..%d", v, MAX_TAPS, n_layer - 1), 0;
        layers[(*n)++] = (int)l;
        if (*end == ',') end++;
        else if (*end) return cli_fail("taps: --layers '%s': unexpected '%c'", v, *end), 0;
        p = end;
    }
    return *n > 0 ? 1 : (cli_fail("taps: --layers is empty"), 0);
}

/* Reads the whole SEQS.bin; lengths and tokens point into *buf. 0, or after a one-line error the
 * exit status of its kind (2 it cannot be read, 3 not a sequence file, 4 out of memory). */
static int read_seqs(const char *path, uint8_t **buf, uint32_t *n_seq, const uint32_t **lens, const int32_t **toks,
                     uint64_t *total) {
    FILE *f = fopen(path, "rb");
    if (!f) return cli_fail_kind(PF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) size = -1;
    *buf = size > 0 ? malloc((size_t)size) : NULL;
    int ok = *buf && fread(*buf, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    if (size < 0) return cli_fail_kind(PF_ERR_IO, "%s: cannot read", path);
    if (size > 0 && !*buf) return cli_fail_kind(PF_ERR_OOM, "%s: out of memory", path);
    if (size > 0 && !ok) return cli_fail_kind(PF_ERR_IO, "%s: cannot read", path);
    if (size < 8 || memcmp(*buf, "PFSQ", 4))
        return cli_fail_kind(PF_ERR_FORMAT, "%s: not a sequence file (magic PFSQ)", path);
    memcpy(n_seq, *buf + 4, 4);
    if ((uint64_t)size < 8 + 4ull * *n_seq) return cli_fail_kind(PF_ERR_FORMAT, "%s: truncated length table", path);
    *lens = (const uint32_t *)(*buf + 8);
    *total = 0;
    for (uint32_t i = 0; i < *n_seq; i++) *total += (*lens)[i];
    if ((uint64_t)size != 8 + 4ull * *n_seq + 4ull * *total)
        return cli_fail_kind(PF_ERR_FORMAT, "%s: size %ld does not match %u sequences of %llu tokens", path, size, *n_seq,
                             (unsigned long long)*total);
    *toks = (const int32_t *)(*buf + 8 + 4ull * *n_seq);
    return 0;
}

/* NumPy format 1.0 header (descr e.g. "<f2"), padded so the data starts at a multiple of 64. */
static int write_npy_header(FILE *f, const char *descr, uint64_t rows, int cols) {
    char dict[128];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%llu, %d), }", descr,
                     (unsigned long long)rows, cols);
    int total = 10 + n + 1, pad = (64 - total % 64) % 64;
    uint16_t hlen = (uint16_t)(n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fwrite(&hlen, 2, 1, f);
    fwrite(dict, 1, (size_t)n, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    return fputc('\n', f) != EOF;
}

/* The k largest logits of one row (most likely first, ties by lower id) as log-probabilities. */
static void row_topk(const float *logits, int n_vocab, int k, int32_t *ids, float *logp) {
    float mx = logits[0];
    for (int v = 1; v < n_vocab; v++) mx = logits[v] > mx ? logits[v] : mx;
    double z = 0;
    for (int v = 0; v < n_vocab; v++) z += exp((double)logits[v] - mx);
    int n = 0;
    for (int v = 0; v < n_vocab; v++) {
        if (n == k && !(logits[v] > logits[ids[k - 1]])) continue;
        int j = n < k ? n++ : k - 1;
        while (j > 0 && logits[v] > logits[ids[j - 1]]) { ids[j] = ids[j - 1]; j--; }
        ids[j] = v;
    }
    double lz = log(z) + mx;
    for (int j = 0; j < k; j++) logp[j] = (float)((double)logits[ids[j]] - lz);
}

/* The top-k outputs of one run: two .npy files written whole or not at all. */
typedef struct {
    int k, wide; /* wide: int32 ids, else uint16 */
    FILE *f_ids, *f_lp;
    atomic_file af_ids, af_lp;
    char path_ids[4096], path_lp[4096];
    int32_t *ids; /* the four row buffers are one allocation, ids its start */
    float *lp;
    pf_half *lp16;
    void *ids_out;
} topk_out;

/* 0, or after a one-line error the exit status of its kind (as topk_write and topk_commit). */
static int topk_open(topk_out *o, const char *prefix, int k, int n_vocab, uint64_t rows, int max_len) {
    o->k = k;
    o->wide = n_vocab > 65536;
    if ((size_t)snprintf(o->path_ids, sizeof o->path_ids, "%s_ids.npy", prefix) >= sizeof o->path_ids ||
        (size_t)snprintf(o->path_lp, sizeof o->path_lp, "%s_logp.npy", prefix) >= sizeof o->path_lp)
        return cli_fail_kind(PF_ERR_IO, "taps: --topk-out '%s': path too long", prefix);
    size_t m = (size_t)max_len * k; /* int32 ids, float log-probs, 4-byte ids out, then the f16 log-probs */
    if (!(o->ids = malloc(m * (sizeof *o->ids + sizeof *o->lp + 4 + sizeof *o->lp16))))
        return cli_fail_kind(PF_ERR_OOM, "taps: out of memory for the top-k rows");
    o->lp = (float *)(o->ids + m);
    o->ids_out = o->lp + m;
    o->lp16 = (pf_half *)((char *)o->ids_out + m * 4);
    int rc = cli_create(o->path_ids, &o->af_ids);
    if (rc || (rc = cli_create(o->path_lp, &o->af_lp))) return rc;
    o->f_ids = o->af_ids.fp;
    o->f_lp = o->af_lp.fp;
    if (!write_npy_header(o->f_ids, o->wide ? "<i4" : "<u2", rows, k))
        return cli_fail_kind(PF_ERR_IO, "%s: write failed: %s", o->path_ids, strerror(errno));
    if (!write_npy_header(o->f_lp, "<f2", rows, k))
        return cli_fail_kind(PF_ERR_IO, "%s: write failed: %s", o->path_lp, strerror(errno));
    return 0;
}

/* Top-k of n rows of logits, appended to both files. */
static int topk_write(topk_out *o, const pf_kernels *kern, const float *logits, int n, int n_vocab) {
    size_t m = (size_t)n * o->k;
    for (int r = 0; r < n; r++)
        row_topk(logits + (size_t)r * n_vocab, n_vocab, o->k, o->ids + (size_t)r * o->k, o->lp + (size_t)r * o->k);
    kern->f32_to_f16(o->lp, o->lp16, (int64_t)m);
    size_t w = 4;
    if (!o->wide) {
        uint16_t *u = o->ids_out;
        for (size_t i = 0; i < m; i++) u[i] = (uint16_t)o->ids[i];
        w = 2;
    } else
        memcpy(o->ids_out, o->ids, m * 4);
    if (fwrite(o->ids_out, w, m, o->f_ids) != m)
        return cli_fail_kind(PF_ERR_IO, "%s: write failed: %s", o->path_ids, strerror(errno));
    if (fwrite(o->lp16, sizeof *o->lp16, m, o->f_lp) != m)
        return cli_fail_kind(PF_ERR_IO, "%s: write failed: %s", o->path_lp, strerror(errno));
    return 0;
}

/* Both files renamed into place; when the second fails the first is removed again, so a failed
 * run leaves no ids without their log-probabilities (0 or the exit status, reported). */
static int topk_commit(topk_out *o) {
    if (!o->f_ids) return 0;
    o->f_ids = o->f_lp = NULL;
    int rc = cli_finish(&o->af_ids, o->path_ids);
    if (rc) return rc;
    if ((rc = cli_finish(&o->af_lp, o->path_lp))) unlink(o->path_ids);
    return rc;
}

static void topk_free(topk_out *o) {
    atomic_file_abort(&o->af_ids);
    atomic_file_abort(&o->af_lp);
    free(o->ids);
}

int cmd_taps(int argc, char **argv) {
    const char *model = NULL, *in = NULL, *out = NULL, *layers_arg = NULL, *topk_prefix = NULL;
    int n_threads = pf_physical_cores(), topk = 0;
    const cli_arg args[] = {CLI_STR("-m", &model), CLI_STR("-i", &in), CLI_STR("-o", &out),
                            CLI_STR("--layers", &layers_arg), CLI_STR("--topk-out", &topk_prefix),
                            CLI_INT("--topk", &topk, 1, MAX_TOPK), CLI_INT("-t", &n_threads, 1, 256), CLI_END};
    int parsed = cli_parse("taps", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (printf(k_usage, n_threads), 0) : 1;
    if (!model || !in || !out || !layers_arg) return cli_fail("taps: -m, --layers, -i and -o are required");
    if (!topk != !topk_prefix) return cli_fail("taps: --topk and --topk-out go together");
    char err[PF_ERR_LEN];
    uint8_t *buf = NULL;
    uint32_t n_seq = 0;
    const uint32_t *lens = NULL;
    const int32_t *toks = NULL;
    uint64_t total = 0;
    pf_model *m = NULL;
    pf_ctx *c = NULL;
    float *taps = NULL, *logits = NULL;
    pf_half *row16 = NULL;
    topk_out tk = {0};
    FILE *fo = NULL;
    atomic_file af = {0};
    int rc = 1, layers[MAX_TAPS], n_taps = 0;
    if ((rc = read_seqs(in, &buf, &n_seq, &lens, &toks, &total))) goto done;
    pf_rc mrc = pf_model_open(model, &m, err);
    if (mrc != PF_RC_OK) { rc = cli_fail_status(pf_api_status(mrc), err); goto done; }
    rc = 1;
    if (!parse_layers(layers_arg, m->hp.n_layer, layers, &n_taps)) goto done;
    uint32_t max_len = 1;
    for (uint32_t i = 0; i < n_seq; i++) max_len = lens[i] > max_len ? lens[i] : max_len;
    if (!(c = pf_ctx_new(m, max_len, n_threads, NULL, err))) { rc = cli_fail_status(PF_ERR_OOM, err); goto done; }
    size_t width = (size_t)n_taps * (size_t)m->hp.n_embd;
    taps = malloc((size_t)max_len * width * sizeof *taps);
    row16 = malloc((size_t)max_len * width * sizeof *row16);
    if (!taps || !row16) { rc = cli_fail_kind(PF_ERR_OOM, "taps: out of memory for %u rows", max_len); goto done; }
    if (topk && topk > m->hp.n_vocab) { cli_fail("taps: --topk %d exceeds the vocabulary (%d)", topk, (int)m->hp.n_vocab); goto done; }
    if (topk && !(logits = malloc((size_t)max_len * (size_t)m->hp.n_vocab * sizeof *logits))) {
        rc = cli_fail_kind(PF_ERR_OOM, "taps: out of memory for %u rows of logits", max_len);
        goto done;
    }
    if (topk && (rc = topk_open(&tk, topk_prefix, topk, (int)m->hp.n_vocab, total, (int)max_len))) goto done;
    if ((rc = cli_create(out, &af))) goto done;
    fo = af.fp;
    if (!write_npy_header(fo, "<f2", total, (int)width)) { rc = cli_fail_kind(PF_ERR_IO, "%s: write failed: %s", out, strerror(errno)); goto done; }
    const int32_t *t = toks;
    for (uint32_t i = 0; i < n_seq; i++) {
        pf_kv_truncate(c->kv, 0);
        pf_batch b = {.tokens = t, .n = (int)lens[i], .logits_mode = topk ? PF_LOGITS_ALL : PF_LOGITS_NONE,
                      .logits = logits, .tap_layers = layers, .n_taps = n_taps, .taps = taps};
        pf_rc frc = lens[i] ? pf_forward(c, &b, err) : PF_RC_OK;
        if (frc != PF_RC_OK) { rc = cli_fail_kind(pf_api_status(frc), "%s: sequence %u: %s", in, i, err); goto done; }
        if (topk && (rc = topk_write(&tk, c->k, logits, (int)lens[i], (int)m->hp.n_vocab))) goto done;
        size_t n = (size_t)lens[i] * width;
        c->k->f32_to_f16(taps, row16, (int64_t)n);
        if (fwrite(row16, sizeof *row16, n, fo) != n) { rc = cli_fail_kind(PF_ERR_IO, "%s: write failed: %s", out, strerror(errno)); goto done; }
        t += lens[i];
        if ((i + 1) % 500 == 0) fprintf(stderr, "\rtaps: %u / %u sequences", i + 1, n_seq);
    }
    fo = NULL;
    if ((rc = cli_finish(&af, out))) goto done;
    if ((rc = topk_commit(&tk))) {
        unlink(out); /* all of the run's outputs or none */
        goto done;
    }
    fprintf(stderr, "\rtaps: %u sequences, %llu tokens, %d taps\n", n_seq, (unsigned long long)total, n_taps);
    rc = 0;
done:
    atomic_file_abort(&af);
    topk_free(&tk);
    free(logits);
    free(row16);
    free(taps);
    pf_ctx_free(c);
    pf_model_free(m);
    free(buf);
    return rc;
}
