/* The safetensors reader on hand-made buffers: valid files parse with every field right; corrupt
 * headers, unknown dtypes, wrong sizes and offsets outside, overlapping or leaving holes in the data
 * section are refused with the tensor and field named. Each failure keeps its kind: a path that
 * cannot be opened is I/O, a truncated file format, an allocation that fails out of memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "formats/safetensors.h"
#include "test.h"
#include "util.h"

/* A file: u64 header length, the header, then `data_len` bytes 0, 1, 2, ... */
static uint8_t *mk(const char *header, size_t data_len, size_t *size) {
    size_t h = strlen(header);
    *size = 8 + h + data_len;
    uint8_t *b = malloc(*size);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    for (size_t i = 0; i < data_len; i++) b[8 + h + i] = (uint8_t)i;
    return b;
}

/* Parses header+data; on failure the error must contain want (NULL: must succeed). */
static int expect(const char *header, size_t data_len, const char *want, char *got, size_t got_n) {
    size_t n;
    uint8_t *b = mk(header, data_len, &n);
    char err[PF_ERR_LEN] = "";
    pf_safetensors *st;
    pf_rc rc = pf_st_parse(b, n, "t.safetensors", &st, err);
    int ok = want ? rc == PF_RC_FORMAT && !st && strstr(err, want) != NULL : rc == PF_RC_OK && st != NULL;
    snprintf(got, got_n, "%s", st ? "(parsed)" : err);
    pf_st_close(st);
    free(b);
    return ok;
}

TEST(safetensors_parses_valid_files) {
    const char *h = "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[8,20]},"
                    "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"e\":{\"dtype\":\"I64\",\"shape\":[0],\"data_offsets\":[20,20]}}   ";
    size_t n;
    uint8_t *b = mk(h, 20, &n);
    char err[PF_ERR_LEN];
    pf_safetensors *st;
    CHECKF(pf_st_parse(b, n, "t", &st, err) == PF_RC_OK, "%s", err);
    CHECKF(st, "%s", err);
    CHECK(pf_st_count(st) == 3);
    const pf_st_tensor *a = pf_st_find(st, "a"), *bb = pf_st_find(st, "b"), *e = pf_st_find(st, "e");
    CHECK(a && bb && e && !pf_st_find(st, "__metadata__"));
    CHECK(a->dtype == PF_ST_F32 && a->n_dims == 1 && a->shape[0] == 2 && a->nbytes == 8 && a->data == b + 8 + strlen(h));
    CHECK(bb->dtype == PF_ST_BF16 && bb->n_dims == 2 && bb->shape[0] == 2 && bb->shape[1] == 3 && bb->nel == 6);
    CHECK(bb->data == a->data + 8 && bb->nbytes == 12);
    CHECK(e->nel == 0 && e->nbytes == 0);
    float f[6];
    CHECK(pf_st_to_f32(bb, f) == 0);
    /* bytes 8,9 -> bf16 0x0908 -> float bits 0x09080000 */
    uint32_t bits;
    memcpy(&bits, &f[0], 4);
    CHECK(bits == 0x09080000u);
    CHECK(pf_st_to_f32(e, f) < 0); /* I64 is not a float type */
    pf_st_close(st);
    free(b);
}

TEST(safetensors_rejects_bad_headers) {
    static const struct { const char *header; size_t data; const char *want; } cases[] = {
        {"[]", 0, "does not start with '{'"},
        {"{\"a\"", 0, "header: "},                                                                /* truncated JSON */
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", 4, "header: "},          /* trailing comma */
        {"{\"a\":{\"dtype\":\"Q4\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': dtype: unknown dtype"},
        {"{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': dtype: missing"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': shape[0]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":\"x\",\"data_offsets\":[0,4]}}", 4, "tensor 'a': shape:"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "tensor 'a': data_offsets: expected"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,400]}}", 4, "outside the data section"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "the shape and dtype F32 need 8"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, "outside the data section"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],"
         "\"data_offsets\":[4,8]}}", 8, "overlaps"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "leaves a hole"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 12, "data section: 12 bytes, but the tensors cover 4"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
         "\"data_offsets\":[4,8]}}", 8, "tensor 'a': listed twice"},
        {"{\"__metadata__\":{\"k\":1}}", 0, "__metadata__.k: expected a string"},
        {"{\"a\":3}", 0, "tensor 'a': expected an object"},
    };
    char got[PF_ERR_LEN];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECKF(expect(cases[i].header, cases[i].data, cases[i].want, got, sizeof got), "case %zu: wanted '%s', got '%s'", i,
               cases[i].want, got);
}

TEST(safetensors_rejects_bad_lengths) {
    char err[PF_ERR_LEN];
    pf_safetensors *st;
    uint8_t small[5] = {0};
    CHECK(pf_st_parse(small, sizeof small, "t", &st, err) == PF_RC_FORMAT && strstr(err, "header length: the file has 5 bytes"));
    size_t n;
    uint8_t *b = mk("{}", 0, &n);
    b[0] = 200; /* header length beyond the file */
    CHECK(pf_st_parse(b, n, "t", &st, err) == PF_RC_FORMAT && strstr(err, "header length: 200 does not fit"));
    b[0] = 2;
    b[8] = ' '; /* must start with '{' */
    CHECK(pf_st_parse(b, n, "t", &st, err) == PF_RC_FORMAT && strstr(err, "does not start with '{'"));
    free(b);
    /* every truncation of a valid file is refused cleanly */
    const char *h = "{\"a\":{\"dtype\":\"F16\",\"shape\":[3,2],\"data_offsets\":[0,12]}}";
    b = mk(h, 12, &n);
    for (size_t cut = 0; cut < n; cut++) {
        CHECKF(pf_st_parse(b, cut, "t", &st, err) == PF_RC_FORMAT && !st, "a file cut to %zu of %zu bytes: '%s'", cut, n,
               err);
    }
    free(b);
}

TEST(safetensors_sharded_index_is_checked) {
    char dir[300], p[400];
    snprintf(dir, sizeof dir, "%s/st_index", pf_test_tmpdir());
    char cmd[400];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    CHECK(system(cmd) == 0);
    const char *h1 = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    const char *h2 = "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    const char *hs[2] = {h1, h2};
    for (int i = 0; i < 2; i++) {
        size_t n;
        uint8_t *b = mk(hs[i], 4, &n);
        snprintf(p, sizeof p, "%s/s%d.safetensors", dir, i + 1);
        FILE *f = fopen(p, "wb");
        CHECK(f && fwrite(b, 1, n, f) == n);
        fclose(f);
        free(b);
    }
    static const struct { const char *index; const char *want; pf_rc rc; } cases[] = {
        {"{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\"}}", NULL, PF_RC_OK},
        {"{\"weight_map\":{\"a\":\"s2.safetensors\",\"b\":\"s2.safetensors\"}}", "weight_map.a: the tensor is not in s2",
         PF_RC_FORMAT},
        {"{\"weight_map\":{\"a\":\"../s1.safetensors\"}}", "weight_map.a: expected the file name of a shard", PF_RC_FORMAT},
        {"{\"weight_map\":{\"a\":\"s3.safetensors\"}}", "s3.safetensors: cannot open", PF_RC_IO},
        {"{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s1.safetensors\"}}", "weight_map.b: the tensor is not in s1",
         PF_RC_FORMAT},
        {"{\"weight_map\":{}}", "weight_map: missing, empty", PF_RC_FORMAT},
        {"{\"metadata\":{}}", "weight_map: missing", PF_RC_FORMAT},
        {"{\"weight_map\":", "model.safetensors.index.json", PF_RC_FORMAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
        FILE *f = fopen(p, "w");
        CHECK(f);
        fputs(cases[i].index, f);
        fclose(f);
        char err[PF_ERR_LEN] = "";
        pf_safetensors *st;
        pf_rc rc = pf_st_open_dir(dir, &st, err);
        CHECKF(rc == cases[i].rc, "case %zu: kind %d, wanted %d ('%s')", i, rc, cases[i].rc, err);
        if (!cases[i].want) {
            CHECKF(st && pf_st_count(st) == 2 && pf_st_find(st, "b")->shard == 1, "case %zu: %s", i, err);
        } else {
            CHECKF(!st && strstr(err, cases[i].want), "case %zu: wanted '%s', got '%s'", i, cases[i].want, err);
        }
        pf_st_close(st);
    }
}

/* A header the JSON parser must hold whole before the reader can refuse it: one array of n zeros
 * (some 40 bytes of tree per two bytes of text). */
static uint8_t *big_header(size_t n, size_t *size) {
    char *h = malloc(2 * n + 8);
    if (!h) return NULL;
    memcpy(h, "{\"a\":[", 6);
    for (size_t i = 0; i < n; i++) memcpy(h + 6 + 2 * i, "0,", 2);
    memcpy(h + 6 + 2 * n - 1, "]}", 3);
    uint8_t *b = mk(h, 0, size);
    free(h);
    return b;
}

TEST(safetensors_failures_keep_their_kind) {
    char err[PF_ERR_LEN], path[400];
    pf_safetensors *st = NULL;
    CHECKF(pf_st_open("/nonexistent/model.safetensors", &st, err) == PF_RC_IO && !st && strstr(err, "cannot open"), "%s", err);
    CHECKF(pf_st_open(pf_test_tmpdir(), &st, err) == PF_RC_IO && strstr(err, "not a regular file"), "%s", err);
    CHECKF(pf_st_open_dir("/nonexistent", &st, err) == PF_RC_IO && strstr(err, "neither model.safetensors"), "%s", err);
    size_t n;
    uint8_t *b = mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16, &n);
    test_tmp_path(path, sizeof path, "st-cut.safetensors");
    CHECK(test_write_file(path, b, n - 5) == 0);
    free(b);
    CHECKF(pf_st_open(path, &st, err) == PF_RC_FORMAT && strstr(err, "st-cut.safetensors: "), "%s", err);
    /* out of memory: 2 MB of header text needs some 40 MB of tree */
    b = big_header((size_t)1 << 20, &n);
    CHECK(b != NULL);
    if (pf_fault_cap_vm(0) != 0) {
        free(b);
        pf_test_skip("no address-space cap here (a sanitizer, or no /proc/self/statm)");
        return;
    }
    pf_rc rc = pf_st_parse(b, n, "big.safetensors", &st, err);
    pf_fault_uncap_vm();
    free(b);
    CHECKF(rc == PF_RC_OOM && !st && strstr(err, "big.safetensors: header: ") && strstr(err, "out of memory"), "%d '%s'", rc,
           err);
}
