/* Faults a long-lived user meets: a full disk (ulimit -f), an output path that cannot be written
 * (a missing folder, an existing folder) and an address-space limit (ulimit -v). Every command
 * that writes a file fails with one line and leaves neither the output nor a temporary; a load
 * that does not fit fails with one line, never a crash. HF convert and vocab-import are checked
 * in test_convert.c. Runs ./pocketflash (or $PF_CLI). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <math.h>

#include "engine/model.h"
#include "fault.h"
#include "formats/ggml_types.h"
#include "formats/quant.h"
#include "test.h"

/* A tiny target, its DFlash draft and the small inputs the writers read, once per run. */
static const char *scratch(void) {
    static char dir[300];
    if (dir[0]) return dir;
    snprintf(dir, sizeof dir, "%s/faults", pf_test_tmpdir());
    char cmd[2048], err[4096];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/tasks", dir);
    if (system(cmd) != 0) return dir;
    snprintf(cmd, sizeof cmd, "synth --shape tiny --type q8_0 -o %s/t.gguf", dir);
    if (pf_fault_run("", cmd, err, sizeof err) != 0) printf("    synth failed: %s\n", err);
    snprintf(cmd, sizeof cmd, "synth-draft -m %s/t.gguf -o %s/d.gguf", dir, dir);
    if (pf_fault_run("", cmd, err, sizeof err) != 0) printf("    synth-draft failed: %s\n", err);
    char path[400];
    snprintf(path, sizeof path, "%s/p.jsonl", dir);
    FILE *f = fopen(path, "w");
    if (f) {
        for (int i = 0; i < 8; i++) fprintf(f, "{\"prompt\": \"question %d: what is the answer?\"}\n", i);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/tasks/qa.jsonl", dir);
    if ((f = fopen(path, "w"))) {
        fputs("{\"id\": \"qa-0\", \"type\": \"qa\", \"prompt\": \"What does the word shake mean?\"}\n", f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/ranked.txt", dir);
    if ((f = fopen(path, "w"))) {
        fputs("5 6 7 8 9 10\n", f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/dec.json", dir); /* tiny: hidden 128, so 2H = 256 weights */
    if ((f = fopen(path, "w"))) {
        fputs("{\"weight\": [", f);
        for (int i = 0; i < 256; i++) fprintf(f, "%s0.01", i ? ", " : "");
        fputs("], \"bias\": 0.1, \"pos_bias\": [0, 0, 0, 0]}\n", f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/seqs.bin", dir); /* "PFSQ", 2 sequences of 5 and 3 tokens */
    if ((f = fopen(path, "wb"))) {
        const uint32_t head[3] = {2, 5, 3};
        const int32_t toks[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        fwrite("PFSQ", 1, 4, f);
        fwrite(head, sizeof head, 1, f);
        fwrite(toks, sizeof toks, 1, f);
        fclose(f);
    }
    return dir;
}

/* pf_fault_writer on ARGS after its %S's became the scratch folder. */
static int writer(const char *label, int blocks, const char *args) {
    char a[2048], *o = a;
    const char *dir = scratch();
    for (const char *s = args; *s && o < a + sizeof a - 400; s++) {
        if (s[0] == '%' && s[1] == 'S') {
            o += sprintf(o, "%s", dir);
            s++;
        } else {
            *o++ = *s;
        }
    }
    *o = 0;
    return pf_fault_writer(label, blocks, a);
}

TEST(fault_model_writers_fail_with_one_line_and_leave_nothing) {
    /* one 512-byte block: the header gets written, the tensors do not */
    CHECK(writer("synth", 1, "synth --shape tiny --type q8_0 -o %s") == 0);
    CHECK(writer("quantize", 1, "quantize %S/t.gguf %s q4_1") == 0);
    CHECK(writer("synth-draft", 1, "synth-draft -m %S/t.gguf -o %s") == 0);
    CHECK(writer("synth-draft2", 1, "synth-draft -m %S/t.gguf --version 2 -o %s") == 0);
    CHECK(writer("expand", 1, "expand -m %S/t.gguf -o %s --shape tiny --layers 3 --type q8_0") == 0);
    CHECK(writer("expand-draft", 1, "expand -m %S/t.gguf -o %S/expanded.gguf --shape tiny --layers 3 --type q8_0 "
                                    "-d %S/d.gguf -O %s") == 0);
    CHECK(writer("pack", 1, "pack -m %S/t.gguf -d %S/d.gguf -o %s") == 0);
    CHECK(writer("dec-attach", 1, "dec-attach -d %S/d.gguf --dec %S/dec.json -o %s") == 0);
    CHECK(writer("draft-head", 1, "draft-head -d %S/d.gguf -m %S/t.gguf --ranked %S/ranked.txt -o %s") == 0);
}

TEST(fault_generation_writers_fail_with_one_line_and_leave_nothing) {
    CHECK(writer("gen", 1, "gen -m %S/t.gguf -i %S/p.jsonl -o %s -n 16 -t 1") == 0);
    CHECK(writer("gen-draft", 1, "gen -m %S/t.gguf -d %S/d.gguf -i %S/p.jsonl -o %s -n 16 -t 1") == 0);
    CHECK(writer("taps", 1, "taps -m %S/t.gguf --layers 0,1 -i %S/seqs.bin -o %s -t 1") == 0);
}

TEST(fault_report_writers_fail_with_one_line_and_leave_nothing) {
    /* reports are short: no block at all */
    CHECK(writer("bench-json", 0, "bench -m %S/t.gguf --spec ngram --tasks %S/tasks --prompts 1 --reps 1 -n 4 -t 1 "
                                  "--json %s") == 0);
    CHECK(writer("bench-svg", 0, "bench -m %S/t.gguf --spec ngram --tasks %S/tasks --prompts 1 --reps 1 -n 4 -t 1 "
                                 "--svg %s") == 0);
    CHECK(writer("bench-model", 0, "bench-model -m %S/t.gguf --reps 1 --bw-mib 1 --depth 8 -t 1 --json %s") == 0);
    CHECK(writer("tune", 0, "tune -m %S/t.gguf --tasks %S/tasks --prompts 1 --reps 1 -n 4 -t 1 --blocks 2 --depth 8 "
                            "-o %s") == 0);
}

/* The prompt cache only saves work: a cache that cannot be written costs one warning line, the
 * generation still succeeds, and no file is left. */
TEST(fault_prompt_cache_unwritable_warns_and_leaves_nothing) {
    const char *dir = scratch();
    const char *pre[2] = {"ulimit -f 1; ", ""};
    const char *where[2] = {"pc", "missing/pc"};
    for (int i = 0; i < 2; i++) {
        char cmd[2048], err[8192], path[600];
        snprintf(cmd, sizeof cmd, "run -m %s/t.gguf -p 'hello world, how are you' -n 2 -t 1 --prompt-cache %s/%s", dir,
                 dir, where[i]);
        int st = pf_fault_run(pre[i], cmd, err, sizeof err);
        CHECKF(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s%s: status %d: %s", pre[i], cmd, st, err);
        CHECKF(strstr(err, "warning: prompt cache") && strstr(err, "not saved"), "%s%s: %s", pre[i], cmd, err);
        snprintf(path, sizeof path, "%s/%s", dir, where[i]);
        FILE *f = fopen(path, "rb");
        CHECKF(!f, "%s was written", path);
        snprintf(cmd, sizeof cmd, "ls %s | grep -q '^pc' && exit 1; exit 0", dir);
        CHECKF(system(cmd) == 0, "a temporary of the prompt cache is left in %s", dir);
    }
}

/* Loading the committed target (25 MB, with its draft) under address-space limits from far too
 * small to enough: every run either works or fails with one line. A sanitizer reserves terabytes of
 * shadow memory and cannot run under ulimit -v at all: a sanitized suite (make asan, which builds
 * ./pocketflash too) checks the plain CLI. */
static int vm_limits(void);

TEST(fault_load_under_address_space_limit_fails_with_one_line) {
    char *saved = getenv("PF_CLI") ? strdup(getenv("PF_CLI")) : NULL;
    if (pf_fault_sanitized()) {
        if (access("./pocketflash", X_OK) != 0) {
            free(saved);
            pf_test_skip("a sanitizer's shadow memory does not fit under ulimit -v, and there is no ./pocketflash");
            return;
        }
        setenv("PF_CLI", "./pocketflash", 1);
    }
    int ok = vm_limits();
    if (saved) setenv("PF_CLI", saved, 1);
    else unsetenv("PF_CLI");
    free(saved);
    CHECK(ok == 0);
}

static int vm_limits(void) {
    static const long kb[] = {16000, 24000, 32000, 48000, 64000, 96000, 128000, 192000, 256000, 512000};
    int worked = 0;
    for (size_t i = 0; i < sizeof kb / sizeof kb[0]; i++) {
        if (pf_fault_vm_limit(kb[i], "run -m models/pf-target-f16.gguf -p 'The capital of France' -n 4 -t 2") != 0 ||
            pf_fault_vm_limit(kb[i], "run -m models/pf-target-f16.gguf -d models/pf-draft-dflash2.gguf "
                                     "-p 'The capital of France' -n 8 -t 2") != 0)
            return -1;
        char err[4096];
        char pre[64];
        snprintf(pre, sizeof pre, "ulimit -v %ld; ", kb[i]);
        int st = pf_fault_run(pre, "run -m models/pf-target-f16.gguf -p 'The capital' -n 2 -t 2", err, sizeof err);
        worked += st == 0;
    }
    if (!worked)
        pf_test_failf(__FILE__, __LINE__, "no limit was large enough to load the target: the test's limits need updating");
    return worked ? 0 : -1;
}

/* Found by fuzz_model: a loader message quotes the file's strings, and a newline in one (here the
 * architecture "q\nen3") made it two lines. */
TEST(fault_loader_message_of_a_control_byte_is_one_line) {
    char path[400], err[PF_ERR_LEN];
    snprintf(path, sizeof path, "%s/t.gguf", scratch());
    FILE *f = fopen(path, "rb");
    CHECK(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    char *at = NULL;
    for (size_t i = 0; i + 5 <= n && !at; i++)
        if (!memcmp(buf + i, "qwen3", 5) && i >= 8 && buf[i - 8] == 5) at = buf + i; /* the u64 length 5 */
    CHECK(at);
    at[1] = '\n';
    snprintf(path, sizeof path, "%s/nl.gguf", scratch());
    CHECK((f = fopen(path, "wb")) && fwrite(buf, 1, n, f) == n && fclose(f) == 0);
    pf_model *m = pf_model_load(path, err);
    CHECK(!m);
    CHECKF(!strchr(err, '\n') && strstr(err, "q?en3"), "%s", err);
}

/* Found by fuzz_model: NaN or Inf (a model's bad weights) reaching the scalar quantizers was
 * converted to an integer, undefined behaviour that UBSan (make asan) reports. Now 0. */
TEST(fault_quantizers_take_nan_and_inf) {
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = (float)(i % 7) - 3.0f;
    x[3] = NAN;
    x[40] = INFINITY;
    x[41] = -INFINITY;
    static const uint32_t types[] = {PF_TYPE_Q8_0, PF_TYPE_Q4_0, PF_TYPE_Q4_1};
    uint8_t out[256];
    for (int t = 0; t < 3; t++) CHECK(pf_quantize_row(types[t], x, out, 64) == 0);
    pf_block_q8_act act[2];
    pf_quantize_row_q8_act(x, act, 64);
    CHECK(act[0].qs[3] == 0);
}
