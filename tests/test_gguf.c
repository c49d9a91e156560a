/* GGUF reader/writer: round trip of every value and tensor type; truncated and corrupted files are
 * rejected with a message naming the field. */
#include <stdlib.h>
#include <string.h>

#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "formats/quant.h"
#include "test.h"
#include "util.h"

static const uint32_t k_types[] = {PF_TYPE_F32, PF_TYPE_F16, PF_TYPE_BF16, PF_TYPE_Q8_0, PF_TYPE_Q4_0, PF_TYPE_Q4_1};
#define N_TYPES (sizeof k_types / sizeof k_types[0])

/* Writes a file with one key of every value type and one 64x3 tensor of every weight type. */
static int write_sample(const char *path, void **blobs) {
    gguf_writer *w = gguf_writer_new();
    uint8_t u8 = 200; int8_t i8 = -100; uint16_t u16 = 60000; int16_t i16 = -30000;
    int64_t i64 = -(1ll << 40); uint64_t u64 = 1ull << 60; double f64 = 3.25;
    gguf_w_scalar(w, "t.u8", GGUF_U8, &u8);
    gguf_w_scalar(w, "t.i8", GGUF_I8, &i8);
    gguf_w_scalar(w, "t.u16", GGUF_U16, &u16);
    gguf_w_scalar(w, "t.i16", GGUF_I16, &i16);
    gguf_w_u32(w, "t.u32", 4000000000u);
    gguf_w_i32(w, "t.i32", -7);
    gguf_w_f32(w, "t.f32", 1.5f);
    gguf_w_bool(w, "t.bool", true);
    gguf_w_str(w, "t.str", "h\xc3\xa9llo");
    gguf_w_u64(w, "t.u64", u64);
    gguf_w_scalar(w, "t.i64", GGUF_I64, &i64);
    gguf_w_scalar(w, "t.f64", GGUF_F64, &f64);
    int32_t arr[5] = {1, -2, 3, -4, 5};
    gguf_w_arr(w, "t.arr_i32", GGUF_I32, arr, 5);
    float farr[3] = {0.5f, -1.0f, 2.0f};
    gguf_w_arr(w, "t.arr_f32", GGUF_F32, farr, 3);
    const char *strs[3] = {"a", "", "long string"};
    gguf_w_arr_str(w, "t.arr_str", strs, NULL, 3);
    gguf_w_arr(w, "t.arr_empty", GGUF_U8, NULL, 0);
    for (size_t i = 0; i < N_TYPES; i++) {
        float src[64 * 3];
        for (int j = 0; j < 64 * 3; j++) src[j] = (float)((j * 37 + (int)i * 11) % 29) / 7.0f - 2.0f;
        size_t nb = pf_row_bytes(k_types[i], 64) * 3;
        blobs[i] = malloc(nb);
        for (int r = 0; r < 3; r++)
            pf_quantize_row(k_types[i], src + r * 64, (char *)blobs[i] + r * pf_row_bytes(k_types[i], 64), 64);
        char name[32];
        snprintf(name, sizeof name, "tensor.%s", pf_type_info(k_types[i])->name);
        int64_t ne[2] = {64, 3};
        gguf_w_tensor(w, name, k_types[i], 2, ne, blobs[i], nb);
    }
    char err[PF_ERR_LEN];
    int r = gguf_w_write(w, path, err);
    gguf_writer_free(w);
    return r;
}

TEST(gguf_round_trip_all_types) {
    char path[300];
    snprintf(path, sizeof path, "%s/sample.gguf", pf_test_tmpdir());
    void *blobs[N_TYPES];
    CHECK(write_sample(path, blobs) == 0);
    char err[PF_ERR_LEN];
    gguf_file *f;
    gguf_open_file(path, &f, err);
    CHECKF(f != NULL, "open failed: %s", err);
    uint32_t u32; int64_t i64; float f32; bool b; gguf_str s;
    CHECK(gguf_get_i64(f, "t.u8", &i64) == 0 && i64 == 200);
    CHECK(gguf_get_i64(f, "t.i8", &i64) == 0 && i64 == -100);
    CHECK(gguf_get_i64(f, "t.u16", &i64) == 0 && i64 == 60000);
    CHECK(gguf_get_i64(f, "t.i16", &i64) == 0 && i64 == -30000);
    CHECK(gguf_get_u32(f, "t.u32", &u32) == 0 && u32 == 4000000000u);
    CHECK(gguf_get_i64(f, "t.i32", &i64) == 0 && i64 == -7);
    CHECK(gguf_get_u32(f, "t.i32", &u32) == -2); /* negative does not fit u32 */
    CHECK(gguf_get_f32(f, "t.f32", &f32) == 0 && f32 == 1.5f);
    CHECK(gguf_get_bool(f, "t.bool", &b) == 0 && b);
    CHECK(gguf_get_str(f, "t.str", &s) == 0 && gguf_str_eq(s, "h\xc3\xa9llo"));
    CHECK(gguf_find(f, "t.u64")->v.u == 1ull << 60);
    CHECK(gguf_get_i64(f, "t.i64", &i64) == 0 && i64 == -(1ll << 40));
    CHECK(gguf_get_f32(f, "t.f64", &f32) == 0 && f32 == 3.25f);
    CHECK(gguf_get_str(f, "t.u32", &s) == -2);
    CHECK(gguf_get_str(f, "missing", &s) == -1);
    const gguf_kv *a = gguf_get_arr(f, "t.arr_i32", GGUF_I32);
    CHECK(a && a->v.arr.n == 5 && gguf_arr_int(a, 1) == -2 && gguf_arr_int(a, 4) == 5);
    a = gguf_get_arr(f, "t.arr_f32", GGUF_F32);
    CHECK(a && a->v.arr.n == 3 && gguf_arr_float(a, 1) == -1.0);
    a = gguf_get_arr(f, "t.arr_str", GGUF_STR);
    CHECK(a && a->v.arr.n == 3 && gguf_str_eq(a->v.arr.strs[0], "a") && gguf_str_eq(a->v.arr.strs[1], "") &&
          gguf_str_eq(a->v.arr.strs[2], "long string"));
    a = gguf_get_arr(f, "t.arr_empty", GGUF_U8);
    CHECK(a && a->v.arr.n == 0);
    CHECK(f->n_tensors == N_TYPES);
    for (size_t i = 0; i < N_TYPES; i++) {
        char name[32];
        snprintf(name, sizeof name, "tensor.%s", pf_type_info(k_types[i])->name);
        const gguf_tensor *t = gguf_find_tensor(f, name);
        CHECK(t && t->type == k_types[i] && t->ne[0] == 64 && t->ne[1] == 3 && t->n_dims == 2);
        CHECK(t->nbytes == pf_row_bytes(k_types[i], 64) * 3);
        CHECK(((uintptr_t)t->data - (uintptr_t)f->base) % 32 == 0);
        CHECK(memcmp(t->data, blobs[i], t->nbytes) == 0);
    }
    /* copying every key into a new file reproduces the metadata byte for byte */
    gguf_writer *w = gguf_writer_new();
    gguf_w_copy_kv(w, f, NULL);
    char path2[300];
    snprintf(path2, sizeof path2, "%s/copy.gguf", pf_test_tmpdir());
    CHECK(gguf_w_write(w, path2, err) == 0);
    gguf_writer_free(w);
    gguf_file *g;
    gguf_open_file(path2, &g, err);
    CHECK(g && g->n_kv == f->n_kv);
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const gguf_kv *x = &f->kv[i];
        char *k = gguf_str_dup(x->key);
        const gguf_kv *y = gguf_find(g, k);
        free(k);
        CHECK(y && y->type == x->type);
        if (x->type == GGUF_STR) CHECK(y->v.s.len == x->v.s.len && !memcmp(y->v.s.ptr, x->v.s.ptr, x->v.s.len));
        else if (x->type != GGUF_ARR) CHECK(y->v.u == x->v.u);
        else CHECK(y->v.arr.n == x->v.arr.n && y->v.arr.type == x->v.arr.type);
    }
    gguf_close(g);
    gguf_close(f);
    for (size_t i = 0; i < N_TYPES; i++) free(blobs[i]);
}

/* The bytes of a sample file written to pf_test_tmpdir()/name (malloc'd), or NULL. */
static char *sample_bytes(const char *name, size_t *n) {
    char path[300];
    void *blobs[N_TYPES];
    test_tmp_path(path, sizeof path, name);
    if (write_sample(path, blobs) != 0) return NULL;
    for (size_t i = 0; i < N_TYPES; i++) free(blobs[i]);
    return test_slurp(path, n);
}

/* Every prefix of a valid file is rejected (or, if it still holds everything, accepted). */
TEST(gguf_truncated_rejected) {
    size_t n;
    char *buf = sample_bytes("trunc.gguf", &n);
    CHECK(buf);
    char err[PF_ERR_LEN];
    gguf_file *full = gguf_parse(buf, n, "full", err);
    CHECK(full != NULL);
    size_t need = 0; /* end of the last tensor's bytes; the padding after it is optional */
    for (uint64_t t = 0; t < full->n_tensors; t++) {
        size_t end = full->data_offset + full->tensors[t].offset + full->tensors[t].nbytes;
        if (end > need) need = end;
    }
    gguf_close(full);
    int rejected = 0;
    for (size_t len = 0; len < need; len++) {
        char *copy = malloc(len ? len : 1); /* exact-size copy so ASan sees any over-read */
        memcpy(copy, buf, len);
        gguf_file *f = gguf_parse(copy, len, "trunc.gguf", err);
        if (f) {
            gguf_close(f);
            free(copy);
            free(buf);
            CHECKF(0, "truncated at %zu of %zu bytes but accepted", len, n);
        }
        CHECKF(strstr(err, "trunc.gguf: ") == err && strlen(err) > 14, "bad message '%s'", err);
        rejected++;
        free(copy);
    }
    CHECK(rejected == (int)need && need > n - 32);
    free(buf);
}

static void put64(char *p, uint64_t v) { memcpy(p, &v, 8); }

/* Hand-made headers with absurd values: each must fail naming its field. */
TEST(gguf_corrupt_fields_named) {
    char err[PF_ERR_LEN];
    char b[256];
    memset(b, 0, sizeof b);
    memcpy(b, "GGUX", 4);
    CHECK(!gguf_parse(b, sizeof b, "x", err) && strstr(err, "magic"));
    memcpy(b, "GGUF", 4);
    uint32_t v = 9;
    memcpy(b + 4, &v, 4);
    CHECK(!gguf_parse(b, sizeof b, "x", err) && strstr(err, "version"));
    v = 3;
    memcpy(b + 4, &v, 4);
    put64(b + 8, 1ull << 62); /* tensors */
    put64(b + 16, 0);
    CHECK(!gguf_parse(b, sizeof b, "x", err) && strstr(err, "tensor count"));
    put64(b + 8, 0);
    put64(b + 16, 1ull << 60); /* kv */
    CHECK(!gguf_parse(b, sizeof b, "x", err) && strstr(err, "metadata count"));
    /* one kv with an absurd key length */
    put64(b + 16, 1);
    put64(b + 24, 1ull << 50);
    CHECK(!gguf_parse(b, sizeof b, "x", err) && strstr(err, "metadata key"));
    /* key "k", unknown value type */
    put64(b + 24, 1);
    b[32] = 'k';
    v = 77;
    memcpy(b + 33, &v, 4);
    CHECK(!gguf_parse(b, sizeof b, "x", err) && strstr(err, "metadata 'k'") && strstr(err, "unknown value type"));
    /* string array with absurd count */
    v = GGUF_ARR;
    memcpy(b + 33, &v, 4);
    v = GGUF_STR;
    memcpy(b + 37, &v, 4);
    put64(b + 41, 1ull << 40);
    CHECK(!gguf_parse(b, sizeof b, "x", err) && strstr(err, "array count"));
    /* nested array */
    v = GGUF_ARR;
    memcpy(b + 37, &v, 4);
    CHECK(!gguf_parse(b, sizeof b, "x", err) && strstr(err, "element type"));
}

/* Tensor infos with bad dims, types, offsets are rejected. */
TEST(gguf_corrupt_tensor_infos) {
    char path[300];
    snprintf(path, sizeof path, "%s/t1.gguf", pf_test_tmpdir());
    float data[64];
    for (int i = 0; i < 64; i++) data[i] = (float)i;
    gguf_writer *w = gguf_writer_new();
    gguf_w_str(w, "general.architecture", "x");
    int64_t ne[2] = {32, 2};
    gguf_w_tensor(w, "w", PF_TYPE_F32, 2, ne, data, sizeof data);
    char err[PF_ERR_LEN];
    CHECK(gguf_w_write(w, path, err) == 0);
    gguf_writer_free(w);
    size_t n;
    char *buf = test_slurp(path, &n);
    CHECK(buf);
    /* locate the tensor info: after the single kv */
    char *ti = memmem(buf, n, "\x01\0\0\0\0\0\0\0w", 9);
    CHECK(ti);
    char *ndims = ti + 9, *dims = ndims + 4, *type = dims + 16, *off = type + 4;
    struct { char *at; int size; uint64_t val; const char *expect; } cases[] = {
        {ndims, 4, 0, "n_dims"}, {ndims, 4, 9, "n_dims"}, {dims, 8, 0, "dimension"},
        {dims + 8, 8, 1ull << 45, "dimension"}, {type, 4, 99, "unsupported tensor type"},
        {type, 4, PF_TYPE_Q8_0, "data"}, /* q8_0 of 32x2 fits but 32x2 f32... */
        {off, 8, 8, "not aligned"}, {off, 8, 1ull << 40, "past the end"},
        {dims, 8, 48, "dimension"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *copy = malloc(n);
        memcpy(copy, buf, n);
        char *at = copy + (cases[i].at - buf);
        memcpy(at, &cases[i].val, (size_t)cases[i].size);
        gguf_file *f = gguf_parse(copy, n, "t1", err);
        if (cases[i].at == type && cases[i].val == PF_TYPE_Q8_0) {
            /* a smaller type is still inside the file: accepted, and sized correctly */
            CHECK(f && f->tensors[0].nbytes == 2 * 34);
            gguf_close(f);
        } else if (cases[i].at == dims && cases[i].val == 48) {
            CHECKF(!f && strstr(err, "past the end"), "case %zu: %s", i, err);
        } else {
            CHECKF(!f && strstr(err, cases[i].expect), "case %zu: got '%s'", i, f ? "accepted" : err);
        }
        free(copy);
    }
    free(buf);
}

/* Random byte flips in a valid file: never a crash (ASan build checks the reads). */
TEST(gguf_random_corruption_no_crash) {
    size_t n;
    char *buf = sample_bytes("flip.gguf", &n);
    CHECK(buf);
    uint64_t s = 12345;
    char err[PF_ERR_LEN];
    int accepted = 0;
    for (int it = 0; it < 3000; it++) {
        char *copy = malloc(n);
        memcpy(copy, buf, n);
        for (int k = 0; k < 1 + it % 4; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            size_t pos = (size_t)(s >> 33) % 600 % n;
            copy[pos] = (char)(s >> 20);
        }
        gguf_file *f = gguf_parse(copy, n, "flip", err);
        if (f) {
            accepted++;
            for (uint64_t t = 0; t < f->n_tensors; t++) /* touch all tensor bytes */
                CHECK((const char *)f->tensors[t].data + f->tensors[t].nbytes <= copy + n);
            gguf_close(f);
        } else {
            CHECK(err[0] != 0);
        }
        free(copy);
    }
    free(buf);
    CHECK(accepted < 3000);
}

TEST(gguf_open_errors) {
    char err[PF_ERR_LEN];
    gguf_file *none;
    CHECK(gguf_open_file("/nonexistent/file.gguf", &none, err) == PF_RC_IO && !none &&
          strstr(err, "/nonexistent/file.gguf: cannot open"));
    CHECK(gguf_open_file("/tmp", &none, err) == PF_RC_IO && !none && strstr(err, "not a regular file"));
}
