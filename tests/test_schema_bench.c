/* schema-bench (eval/schema_bench.c): instances serialized exactly as Python's json.dumps(data,
 * ensure_ascii=False) writes them (golden texts from CPython 3), the command's table and --json on
 * hand-written schema files, and MaskBench's protocol on a fixed-seed sample of the shared fixture's
 * real-world schemas: no invalid instance accepted, and no fewer schemas passing than the floor below. */
#include <stdlib.h>
#include <string.h>

#include "engine/constraint.h"
#include "engine/tokenizer.h"
#include "eval/schema_bench.h"
#include "test.h"
#include "util.h"

/* The sample: SAMPLE files of the fixture drawn with SEED; FLOOR of them passed when this was last
 * raised (the masks are exact, so the count is the same on every CPU). */
#define SAMPLE 400
#define SEED 1
#define PASS_FLOOR 381

static int dumps_is(const char *json, const char *want) {
    char err[PF_ERR_LEN];
    pf_json_doc *d = pf_json_parse(json, strlen(json), err);
    if (!d) return fprintf(stderr, "%s\n", err), 0;
    pf_sbuf b = {0};
    pf_sb_py_dumps(&b, pf_json_root(d), json, strlen(json));
    int ok = b.p && !strcmp(b.p, want);
    if (!ok) fprintf(stderr, "dumps(%s) = %s, want %s\n", json, b.p ? b.p : "(null)", want);
    free(b.p);
    pf_json_free(d);
    return ok;
}

TEST(schema_bench_python_dumps) {
    /* floats as repr() writes them; ints as written ("-0" is the int 0) */
    CHECK(dumps_is("[1.0,1e16,1.5E16,1e-5,0.0001,123456789.125,-0.0,2.5e-7,1e22,0.1,100.00,1e15,"
                   "12345678901234567890,-0,7,-3]",
                   "[1.0, 1e+16, 1.5e+16, 1e-05, 0.0001, 123456789.125, -0.0, 2.5e-07, 1e+22, 0.1, 100.0, "
                   "1000000000000000.0, 12345678901234567890, 0, 7, -3]"));
    /* strings: short escapes, \u00XX for other controls, everything else (U+2028, DEL, /) raw */
    CHECK(dumps_is("{\"x\":\"\\u00e9\\n\\u0001\\\"\\\\\\u2028\\/\\u007f\\t\"}",
                   "{\"x\": \"\xc3\xa9\\n\\u0001\\\"\\\\\xe2\x80\xa8/\x7f\\t\"}"));
    /* a key given twice: its first place, its last value (a dict) */
    CHECK(dumps_is("{\"a\":1,\"b\":[],\"a\":{\"c\":null},\"d\":{}}", "{\"a\": {\"c\": null}, \"b\": [], \"d\": {}}"));
    CHECK(dumps_is("[true,false,null,[],[[1]]]", "[true, false, null, [], [[1]]]"));
}

/* The command on two hand-written files: one passing, one the engine refuses. */
TEST(schema_bench_cli_table_and_json) {
    char dir[512], path[600], out[8192], err[4096], args[1400];
    test_tmp_path(dir, sizeof dir, "maskbench");
    CHECK(test_sh((snprintf(args, sizeof args, "mkdir -p %s", dir), args)) == 0);
    snprintf(path, sizeof path, "%s/a.json", dir);
    CHECK(test_write_file(path,
                          "{\"schema\": {\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}}, "
                          "\"required\": [\"n\"]}, \"tests\": [{\"valid\": true, \"data\": {\"n\": 5}}, "
                          "{\"valid\": false, \"data\": {\"n\": \"5\"}}, {\"valid\": false, \"data\": {}}]}",
                          (size_t)-1) == 0);
    snprintf(path, sizeof path, "%s/b.json", dir);
    CHECK(test_write_file(path, "{\"schema\": {\"type\": \"array\", \"uniqueItems\": true}, \"tests\": []}", (size_t)-1) == 0);
    snprintf(args, sizeof args, "schema-bench -m models/pf-target-f16.gguf %s --json %s/r.json", dir, dir);
    CHECKF(RUN_CLI(args, out, err) == 0, "%s", err);
    CHECKF(strstr(out, "schemas 2: passing 1 (50.0%), compile errors 1, validation errors 0, invalidation errors 0"),
           "%s", out);
    CHECKF(strstr(out, "uniqueItems"), "%s", out);
    snprintf(path, sizeof path, "%s/r.json", dir);
    char *j = test_slurp(path, NULL);
    CHECK(j);
    char e2[PF_ERR_LEN];
    pf_json_doc *d = pf_json_parse(j, strlen(j), e2);
    free(j);
    CHECKF(d, "%s", e2);
    const pf_json *r = pf_json_root(d);
    const char *const want[] = {"schemas", "passing", "compile_error", "validation_error", "invalidation_error"};
    const int n_want[] = {2, 1, 1, 0, 0};
    int ok = 1;
    for (int i = 0; i < 5; i++) {
        const pf_json *v = pf_json_get(r, want[i]);
        ok &= v && v->type == PF_JSON_NUMBER && v->u.num.i == n_want[i];
    }
    ok &= pf_json_get(pf_json_get(r, "tbm_us"), "p50") && pf_json_get(pf_json_get(r, "tbm_us"), "p99") &&
          pf_json_get(pf_json_get(r, "ttfm_us"), "p50") && pf_json_get(pf_json_get(r, "ttfm_us"), "p99");
    pf_json_free(d);
    CHECK(ok);
}

TEST(schema_bench_maskbench_sample) {
    NEED_SHARED("fixtures/maskbench/maskbench-data.tar.zst");
    char err[PF_ERR_LEN];
    char **paths = NULL;
    int n = 0;
    CHECKF(pf_sb_list(".cache/maskbench/data", SAMPLE, SEED, &paths, &n, err) == 0, "%s (make test-data unpacks it)",
           err);
    CHECK(n == SAMPLE);
    pf_tokenizer *tok;
    CHECKF(pf_tokenizer_load_file("models/pf-target-f16.gguf", &tok, err) == PF_RC_OK, "%s", err);
    pf_token_masker *tm = pf_vocab_masker(tok, pf_tokenizer_n_vocab(tok), err);
    pf_sb_result r = {0};
    int rc = tm ? pf_sb_run(tok, tm, paths, n, &r) : -1;
    int schemas = r.schemas, pass = r.passing, inval = r.invalidation_error;
    for (size_t i = 0; i < r.n_failures; i++)
        if (r.failures[i].outcome == PF_SB_INVALIDATION_ERROR)
            fprintf(stderr, "invalid instance accepted: %s: %s\n", r.failures[i].file, r.failures[i].why);
    pf_sb_result_free(&r);
    pf_token_masker_free(tm);
    pf_tokenizer_free(tok);
    pf_sb_list_free(paths, n);
    CHECK(rc == 0 && schemas == SAMPLE);
    CHECKF(inval == 0, "%d schemas accepted an invalid instance", inval);
    CHECKF(pass >= PASS_FLOOR, "%d of %d schemas pass, below the floor of %d", pass, SAMPLE, PASS_FLOOR);
}
