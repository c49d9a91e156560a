/* The CLI end to end: bad input gets ONE line naming the problem and a non-zero exit; the main
 * commands work on a synthetic model. Runs ./pocketflash (or $PF_CLI). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "formats/gguf.h"
#include "kernels/cpu.h"
#include "kernels/kernels.h"
#include "test.h"
#include "util.h"

/* Non-zero exit, exactly one line on stderr containing `expect`, nothing on stdout. */
#define CHECK_FAILS(args, expect)                                                               \
    do {                                                                                        \
        char o_[8192], e_[8192];                                                                \
        int rc_ = RUN_CLI(args, o_, e_);                                     \
        CHECKF(rc_ != 0 && rc_ < 128, "%s: exit %d", args, rc_);                                \
        CHECKF(test_count_lines(e_) == 1 && strstr(e_, expect), "%s: stderr '%s' lacks '%s'", args, e_, expect); \
        CHECKF(strstr(e_, "pocketflash: ") == e_, "%s: message not prefixed: '%s'", args, e_);   \
    } while (0)

static const char *tiny_model(void) {
    static char path[300];
    test_cli_synth_tiny("q8_0", "cli-tiny.gguf", path, sizeof path);
    return path;
}

TEST(cli_run_tiny_model) {
    const char *m = tiny_model();
    char args[600], o[8192], e[8192];
    snprintf(args, sizeof args, "run -m %s -p hello -n 16", m);
    CHECKF(RUN_CLI(args, o, e) == 0, "run failed: %s", e);
    CHECK(strlen(o) > 1);
    CHECK(strstr(e, "prefill:") && strstr(e, "decode: 16 tokens") && strstr(e, "tok/s"));
    /* greedy is deterministic; sampled with a seed is reproducible */
    char o2[8192];
    CHECK(RUN_CLI(args, o2, e) == 0 && !strcmp(o, o2));
    snprintf(args, sizeof args, "run -m %s -p hello -n 16 --temp 0.9 --top-k 40 --top-p 0.9 --seed 5 -t 2", m);
    CHECK(RUN_CLI(args, o, e) == 0);
    CHECK(RUN_CLI(args, o2, e) == 0 && !strcmp(o, o2));
    snprintf(args, sizeof args, "run -m %s -p hello -n 8 --chat --system 'be brief'", m);
    CHECKF(RUN_CLI(args, o, e) == 0, "chat run failed: %s", e);
}

TEST(cli_bad_inputs_one_line_errors) {
    const char *m = tiny_model();
    char args[1200], path[300];
    CHECK_FAILS("run -m /nonexistent.gguf -p hi", "cannot open");
    snprintf(path, sizeof path, "%s/notgguf.txt", pf_test_tmpdir());
    FILE *f = fopen(path, "w");
    fputs("this is not a model file, just some text that is long enough", f);
    fclose(f);
    snprintf(args, sizeof args, "run -m %s -p hi", path);
    CHECK_FAILS(args, "not a GGUF file");
    /* truncated model */
    snprintf(args, sizeof args, "head -c 5000 %s > %s/trunc.gguf", m, pf_test_tmpdir());
    CHECK(system(args) == 0);
    snprintf(args, sizeof args, "run -m %s/trunc.gguf -p hi", pf_test_tmpdir());
    CHECK_FAILS(args, "trunc.gguf");
    /* wrong architecture */
    gguf_writer *w = gguf_writer_new();
    gguf_w_str(w, "general.architecture", "llama");
    snprintf(path, sizeof path, "%s/llama.gguf", pf_test_tmpdir());
    char err[PF_ERR_LEN];
    CHECK(gguf_w_write(w, path, err) == 0);
    gguf_writer_free(w);
    snprintf(args, sizeof args, "run -m %s -p hi", path);
    CHECK_FAILS(args, "architecture: 'llama' is not supported");
    /* prompt longer than the context */
    snprintf(args, sizeof args, "run -m %s -c 16 -p 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen'", m);
    CHECK_FAILS(args, "does not fit the context");
    /* invalid UTF-8 prompt */
    snprintf(path, sizeof path, "%s/bad-utf8.txt", pf_test_tmpdir());
    f = fopen(path, "wb");
    fputs("abc\xc3(def", f);
    fclose(f);
    snprintf(args, sizeof args, "run -m %s -f %s", m, path);
    CHECK_FAILS(args, "UTF-8");
    /* flags */
    snprintf(args, sizeof args, "run -m %s -p hi --bogus", m);
    CHECK_FAILS(args, "unknown flag '--bogus'");
    snprintf(args, sizeof args, "run -m %s -p hi -n", m);
    CHECK_FAILS(args, "needs a value");
    snprintf(args, sizeof args, "run -m %s -p hi -n abc", m);
    CHECK_FAILS(args, "not an integer");
    snprintf(args, sizeof args, "run -m %s -p hi --top-p 1.5", m);
    CHECK_FAILS(args, "--top-p");
    CHECK_FAILS("frobnicate", "unknown command");
    CHECK_FAILS("synth --shape huge -o /tmp/x.gguf", "unknown shape");
    CHECK_FAILS("info /nonexistent.gguf", "cannot open");
    snprintf(args, sizeof args, "info %s --x", m);
    CHECK_FAILS(args, "unknown flag");
}

TEST(cli_quantize_and_info) {
    const char *m = tiny_model();
    char args[1200], o[65536], e[8192];
    static const char *types[] = {"q4_1", "q4_0", "f16", "bf16", "f32"};
    for (int i = 0; i < 5; i++) {
        snprintf(args, sizeof args, "quantize %s %s/q-%s.gguf %s", m, pf_test_tmpdir(), types[i], types[i]);
        CHECKF(RUN_CLI(args, o, e) == 0, "quantize %s: %s", types[i], e);
        snprintf(args, sizeof args, "info %s/q-%s.gguf", pf_test_tmpdir(), types[i]);
        CHECK(RUN_CLI(args, o, e) == 0);
        CHECK(strstr(o, "blk.1.ffn_down.weight") && strstr(o, types[i]) && strstr(o, "qwen3.block_count"));
        snprintf(args, sizeof args, "run -m %s/q-%s.gguf -p abc -n 4", pf_test_tmpdir(), types[i]);
        CHECKF(RUN_CLI(args, o, e) == 0, "run on %s: %s", types[i], e);
    }
    /* a failed conversion leaves no output file behind */
    snprintf(args, sizeof args, "quantize /nonexistent.gguf %s/never.gguf q8_0", pf_test_tmpdir());
    CHECK_FAILS(args, "cannot open");
    snprintf(args, sizeof args, "ls %s | grep -c never > /dev/null", pf_test_tmpdir());
    CHECK(system(args) != 0);
    snprintf(args, sizeof args, "quantize %s %s/x.gguf q5_k", m, pf_test_tmpdir());
    CHECK_FAILS(args, "unknown type");
}

TEST(cli_bench_model_reports_and_json) {
    const char *m = tiny_model();
    char args[1200], o[16384], e[8192], js[300];
    snprintf(js, sizeof js, "%s/bm.json", pf_test_tmpdir());
    snprintf(args, sizeof args, "bench-model -m %s --reps 2 --bw-mib 32 --json %s", m, js);
    CHECKF(RUN_CLI(args, o, e) == 0, "bench-model failed: %s", e);
    CHECK(strstr(o, "c(8) at depth 512") && strstr(o, "decode tok/s, depth 2048") && strstr(o, "bandwidth ceiling"));
    char *j = test_slurp(js, NULL);
    CHECK(j);
    CHECK(strstr(j, "\"c\": {\"1\": 1.0000") && strstr(j, "\"decode_tok_s\"") && strstr(j, "\"peak_rss_mb\"") &&
          strstr(j, "\"bandwidth_gb_s\"") && strstr(j, "\"decode_fraction_of_ceiling\""));
    const char *cg = strstr(j, "\"compute_gfma_s\": "); /* the compute probe ran and measured something */
    CHECKF(cg && atof(cg + strlen("\"compute_gfma_s\": ")) > 0.1, "compute probe: %s", cg ? cg : "missing");
    free(j);
}

TEST(cli_bench_per_task_checks_identical) {
    const char *m = tiny_model();
    char dir[300], args[1500], o[32768], e[32768], path[400];
    snprintf(dir, sizeof dir, "%s/tasks", pf_test_tmpdir());
    snprintf(args, sizeof args, "mkdir -p %s", dir);
    CHECK(system(args) == 0);
    static const char *const types[] = {"math", "chat"};
    for (int t = 0; t < 2; t++) {
        snprintf(path, sizeof path, "%s/%s.jsonl", dir, types[t]);
        FILE *f = fopen(path, "w");
        for (int i = 0; i < 3; i++)
            fprintf(f, "{\"id\": \"%s-%d\", \"type\": \"%s\", \"lang\": \"en\", \"prompt\": \"%s question %d: what is 2 + %d? %d %d %d\"}\n",
                    types[t], i, types[t], types[t], i, i, i, i, i);
        fclose(f);
    }
    /* two long inputs: the report by input length has a second group */
    snprintf(path, sizeof path, "%s/summary.jsonl", dir);
    FILE *lf = fopen(path, "w");
    for (int i = 0; i < 2; i++) {
        fprintf(lf, "{\"id\": \"summary-%d\", \"type\": \"summary\", \"lang\": \"en\", \"prompt\": \"Summarize:", i);
        for (int w = 0; w < 30; w++) fprintf(lf, " item %d of the list %d,", w, i);
        fprintf(lf, "\"}\n");
    }
    fclose(lf);
    snprintf(path, sizeof path, "%s/bench.json", pf_test_tmpdir());
    snprintf(args, sizeof args, "bench -m %s --tasks %s --spec ngram -n 12 --reps 2 --json %s --svg %s/b.svg", m, dir, path,
             pf_test_tmpdir());
    CHECKF(RUN_CLI(args, o, e) == 0, "bench failed: %s", e);
    CHECK(strstr(o, "| math | ngram/8 | 3 |") && strstr(o, "| chat | ngram/8 | 3 |") && strstr(o, "| summary | ngram/8 | 2 |") &&
          strstr(o, "**overall** (geomean)"));
    CHECK(!strstr(o, "| NO |"));
    const char *mc = strstr(o, "machine: fp32 compute of the threads ");
    CHECKF(mc && atof(mc + strlen("machine: fp32 compute of the threads ")) > 0.1, "no compute reading: %s", o);
    char *j = test_slurp(path, NULL);
    CHECK(j);
    CHECK(strstr(j, "\"math\": {") && strstr(j, "\"speedup\": ") && strstr(j, "\"identical\": true") &&
          strstr(j, "\"speedup_geomean\": ") && strstr(j, "\"compute_gfma_s\": ["));
    /* every prompt in one group of input lengths, the short and the long ones in different groups */
    const char *bl = strstr(j, "\"by_input_length\": [");
    int groups = 0, prompts = 0;
    for (const char *g = bl ? strstr(bl, "\"prompts\": ") : NULL; g && g < strchr(bl, ']'); g = strstr(g + 1, "\"prompts\": ")) {
        prompts += atoi(g + strlen("\"prompts\": "));
        groups++;
    }
    CHECKF(bl && groups >= 2 && prompts == 8, "by input length: %d groups, %d prompts: %.300s", groups, prompts, bl ? bl : j);
    CHECK(strstr(o, "| input tokens | prompts | ngram: speedup (tau) |"));
    free(j);
    snprintf(args, sizeof args, "grep -c '<rect' %s/b.svg > /dev/null", pf_test_tmpdir());
    CHECK(system(args) == 0);
    /* the chart is readable: ticks at multiples of 0.5x, the 1.0x line named, and the caption says what ran where */
    snprintf(path, sizeof path, "%s/b.svg", pf_test_tmpdir());
    FILE *f = fopen(path, "r");
    CHECK(f);
    size_t n = fread(o, 1, sizeof o - 1, f);
    o[n] = 0;
    fclose(f);
    const char *slash = strrchr(m, '/');
    char want[300];
    snprintf(want, sizeof want, "PF_KERNELS=%s, ", pf_level_name(pf_best_level()));
    CHECKF(strstr(o, slash ? slash + 1 : m) && strstr(o, want) && strstr(o, " threads, ") && strstr(o, " UTC</text>") &&
               strstr(o, "plain decoding (1.0x)"),
           "chart caption or baseline label missing: %.600s", o);
    int ticks = 0, one = 0;
    for (const char *t = strstr(o, "class=\"tick\">"); t; t = strstr(t + 1, "class=\"tick\">")) {
        double v = atof(t + strlen("class=\"tick\">"));
        CHECKF(v * 2 == (double)(int)(v * 2), "tick %.3f is not a multiple of 0.5x", v);
        one |= v == 1.0;
        ticks++;
    }
    CHECKF(ticks >= 3 && one, "%d ticks, 1.0x %s", ticks, one ? "present" : "missing");
    snprintf(args, sizeof args, "bench -m %s --tasks /nonexistent", m);
    CHECK_FAILS(args, "cannot open the task folder");
    /* a prompt longer than the context is refused before anything is measured */
    snprintf(args, sizeof args, "bench -m %s --tasks %s -c 128", m, dir);
    CHECK(RUN_CLI(args, o, e) != 0);
    CHECKF(strstr(e, "summary prompt 1: ") && strstr(e, "do not fit the context of 128 tokens") && !strstr(e, "1/16"),
           "%.400s", e);
}

TEST(cli_gen_batch_jsonl) {
    const char *m = tiny_model();
    char in[300], out[400], args[1200], o[16384], e[4096];
    snprintf(in, sizeof in, "%s/prompts.jsonl", pf_test_tmpdir());
    snprintf(out, sizeof out, "%s/gen.jsonl", pf_test_tmpdir());
    FILE *f = fopen(in, "w");
    fputs("{\"id\": \"a\", \"prompt\": \"hello \\\"there\\\"\"}\n{\"prompt\": \"second\"}\n", f);
    fclose(f);
    snprintf(args, sizeof args, "gen -m %s -i %s -o %s -n 5", m, in, out);
    CHECKF(RUN_CLI(args, o, e) == 0, "gen failed: %s", e);
    f = fopen(out, "r");
    CHECK(f);
    size_t n = fread(o, 1, sizeof o - 1, f);
    o[n] = 0;
    fclose(f);
    CHECK(test_count_lines(o) == 2 && strstr(o, "{\"id\": \"a\", \"prompt\": \"hello \\\"there\\\"\"") &&
          strstr(o, "\"response_ids\": [") && strstr(o, "{\"id\": 1,"));
    /* a bad line fails without leaving an output file */
    f = fopen(in, "w");
    fputs("{\"nope\": 1}\n", f);
    fclose(f);
    snprintf(args, sizeof args, "gen -m %s -i %s -o %s.x -n 5", m, in, out);
    CHECK_FAILS(args, "no string field");
    snprintf(args, sizeof args, "test -e %s.x", out);
    CHECK(system(args) != 0);
}

TEST(cli_tune_writes_profile_used_by_run_and_bench) {
    const char *m = tiny_model();
    char dir[300], args[2000], o[32768], e[32768], path[400], prof[400], draft[400];
    snprintf(dir, sizeof dir, "%s/tune-tasks", pf_test_tmpdir());
    snprintf(args, sizeof args, "mkdir -p %s", dir);
    CHECK(system(args) == 0);
    snprintf(path, sizeof path, "%s/code.jsonl", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"type\": \"code\", \"prompt\": \"def f(x): return x + x + x\"}\n", f);
    fclose(f);
    snprintf(draft, sizeof draft, "%s/tune-draft.gguf", pf_test_tmpdir());
    snprintf(args, sizeof args, "synth-draft -m %s -o %s --layers 1 --block 4", m, draft);
    CHECKF(RUN_CLI(args, o, e) == 0, "synth-draft: %s", e);
    snprintf(prof, sizeof prof, "%s/profile.json", pf_test_tmpdir());
    snprintf(args, sizeof args, "tune -m %s -d %s --tasks %s -o %s --blocks 2,4 --depth 32 -n 8 --reps 1 --prompts 1", m,
             draft, dir, prof);
    CHECKF(RUN_CLI(args, o, e) == 0, "tune failed: %s", e);
    CHECK(strstr(o, "| c(B) |") && strstr(o, "| code |") && strstr(o, "dflash draft cost"));
    snprintf(args, sizeof args, "bench -m %s -d %s --tasks %s --profile %s -n 8 --reps 1", m, draft, dir, prof);
    CHECKF(RUN_CLI(args, o, e) == 0, "bench --profile failed: %s", e);
    CHECK(strstr(o, "| code | ") && !strstr(o, "| NO |"));
    snprintf(args, sizeof args, "run -m %s -d %s --profile %s --task code -p hi -n 4", m, draft, prof);
    CHECKF(RUN_CLI(args, o, e) == 0, "run --profile failed: %s", e);
    snprintf(args, sizeof args, "grep -q '\"alpha\": \\[' %s", prof); /* the adaptive prior */
    CHECK(system(args) == 0);
    /* several strategies in one interleaved run: one table, one JSON */
    snprintf(path, sizeof path, "%s/compare.json", pf_test_tmpdir());
    snprintf(args, sizeof args, "bench -m %s -d %s --tasks %s --compare fixed:2,adaptive,default,profile:%s -n 8 --reps 1 --json %s",
             m, draft, dir, prof, path);
    CHECKF(RUN_CLI(args, o, e) == 0, "bench --compare failed: %s", e);
    CHECK(strstr(o, "| plain tok/s |") && strstr(o, "| fixed:2 |") && strstr(o, "| adaptive |") && strstr(o, "| default |") &&
          strstr(o, "| profile:") && !strstr(o, "| NO |") && strstr(o, "load average"));
    snprintf(args, sizeof args, "grep -c '\"name\": ' %s | grep -qx 4 && grep -q '\"mean_rows_verified\": ' %s", path, path);
    CHECK(system(args) == 0);
    snprintf(args, sizeof args, "bench -m %s -d %s --tasks %s --compare fixed", m, draft, dir);
    CHECK_FAILS(args, "needs a block");
    snprintf(args, sizeof args, "bench -m %s -d %s --tasks %s --compare fixed:4,bogus", m, draft, dir);
    CHECK_FAILS(args, "unknown strategy 'bogus'");
    /* run -d without --spec/--block: the default (adaptive) strategy, plain decoding's text */
    char plain_out[4096];
    snprintf(args, sizeof args, "run -m %s -p 'one two three' -n 12 --temp 0.7 --seed 5", m);
    CHECKF(RUN_CLI(args, plain_out, e) == 0, "run: %s", e);
    snprintf(args, sizeof args, "run -m %s -d %s -p 'one two three' -n 12 --temp 0.7 --seed 5 --stats", m, draft);
    CHECKF(RUN_CLI(args, o, e) == 0, "run -d: %s", e);
    CHECK(!strcmp(o, plain_out) && strstr(e, "speculation:"));
    snprintf(args, sizeof args, "run -m %s --profile %s --task nosuch -p hi", m, prof);
    CHECK_FAILS(args, "not in the profile");
    snprintf(args, sizeof args, "run -m %s --profile %s -p hi", m, path);
    CHECK_FAILS(args, "profile");
}

/* draft-head: a ranked list goes into a draft that then loads and speculates with it (run
 * --draft-head full|N|default all give the plain output); bad lists get one-line errors and no
 * output file. */
TEST(cli_draft_head) {
    const char *m = tiny_model();
    char args[1600], draft[300], ranked[300], out[300], o[8192], e[8192];
    snprintf(draft, sizeof draft, "%s/cli-dh-raw.gguf", pf_test_tmpdir());
    snprintf(ranked, sizeof ranked, "%s/cli-dh-ranked.txt", pf_test_tmpdir());
    snprintf(out, sizeof out, "%s/cli-dh.gguf", pf_test_tmpdir());
    snprintf(args, sizeof args, "synth-draft -m %s -o %s --version 2", m, draft);
    CHECK(RUN_CLI(args, o, e) == 0);
    FILE *f = fopen(ranked, "w");
    for (int i = 0; i < 120; i++) fprintf(f, "%d%c", (i * 7 + 3) % 512, i % 10 == 9 ? '\n' : ' ');
    fclose(f);
    snprintf(args, sizeof args, "draft-head -d %s -m %s --ranked %s -n 100 -o %s", draft, m, ranked, out);
    CHECKF(RUN_CLI(args, o, e) == 0 && strstr(o, "100 tokens (of 120 ranked"), "%s%s", o, e);
    char plain[8192];
    snprintf(args, sizeof args, "run -m %s -p 'a b c' -n 12 --ignore-eos", m);
    CHECK(RUN_CLI(args, plain, e) == 0);
    static const char *const heads[3] = {"", "--draft-head full", "--draft-head 40"};
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "run -m %s -d %s %s -p 'a b c' -n 12 --ignore-eos", m, out, heads[i]);
        CHECKF(RUN_CLI(args, o, e) == 0 && !strcmp(o, plain), "%s: '%s' vs plain '%s' (%s)", heads[i], o, plain, e);
    }
    snprintf(args, sizeof args, "run -m %s -d %s --draft-head 121 -p 'a b c' -n 4", m, out);
    CHECK_FAILS(args, "ranks 120");
    snprintf(args, sizeof args, "run -m %s -d %s --draft-head 8 -p 'a b c' -n 4", m, out);
    CHECK_FAILS(args, "selector");
    /* duplicates, ids past the vocabulary, text: refused, nothing written */
    static const char *const bad[3][2] = {{"1 2 3 2", "listed twice"}, {"1 2 512", "outside the vocabulary"},
                                          {"1 two 3", "not a token id"}};
    for (int i = 0; i < 3; i++) {
        f = fopen(ranked, "w");
        fputs(bad[i][0], f);
        fclose(f);
        remove(out);
        snprintf(args, sizeof args, "draft-head -d %s -m %s --ranked %s -o %s", draft, m, ranked, out);
        CHECK_FAILS(args, bad[i][1]);
        CHECKF(!fopen(out, "rb"), "%s: output written despite the error", bad[i][0]);
    }
    snprintf(args, sizeof args, "draft-head -d %s -m %s --ranked %s -o %s --bogus 1", draft, m, ranked, out);
    CHECK_FAILS(args, "unknown flag");
}

/* --kv q8: the same command runs with the 8-bit cache on every SIMD level this CPU has (AVX2,
 * AVX-512; NEON, dotprod, i8mm on ARM64), each forced by PF_KERNELS; on the scalar kernels, and a
 * wrong type, it is refused in one line. Sets PF_KERNELS; the caller restores it. */
static void check_kv_q8_levels(void) {
    const char *m = tiny_model();
    char args[1200], o[16384], e[8192];
    const pf_kernels *ks[PF_LEVEL_COUNT]; /* asked before the loop sets PF_KERNELS */
    for (int l = 0; l < PF_LEVEL_COUNT; l++) ks[l] = test_kernels(l);
    for (int l = PF_LEVEL_SCALAR + 1; l < PF_LEVEL_COUNT; l++) {
        if (!ks[l]) continue;
        setenv("PF_KERNELS", pf_level_name((pf_level)l), 1);
        snprintf(args, sizeof args, "run -m %s -p 'hello there' -n 6 --kv q8", m);
        CHECKF(RUN_CLI(args, o, e) == 0, "%s: run --kv q8 failed: %s", pf_level_name((pf_level)l), e);
        snprintf(args, sizeof args, "bench-model -m %s --reps 1 --bw-mib 16 --kv q8", m);
        CHECKF(RUN_CLI(args, o, e) == 0 && strstr(o, "8-bit KV cache"), "bench-model --kv q8: %s", e);
    }
    /* on the scalar kernels (here forced by PF_KERNELS) the 8-bit cache is refused, not run slowly */
    snprintf(args, sizeof args, "run -m %s -p 'hello there' -n 6 --kv q8", m);
    setenv("PF_KERNELS", "scalar", 1);
    CHECK_FAILS(args, "the 8-bit KV cache needs SIMD kernels");
    unsetenv("PF_KERNELS");
    snprintf(args, sizeof args, "run -m %s -p hi --kv q4", m);
    CHECK_FAILS(args, "unknown KV cache type 'q4'");
}

TEST(cli_kv_q8) {
    test_env saved;
    test_env_save(&saved, "PF_KERNELS");
    check_kv_q8_levels();
    test_env_restore(&saved);
}

/* A failure's kind shows in run's one line as the library gave it: a profile that cannot be read
 * names the file and the system's reason (I/O), a truncated one the byte where it broke (format),
 * a bad value the value (argument); the same requests' statuses through the API are checked in
 * tests/api (api_failure_kinds_reach_the_caller) and the server's in test_serve.c. */
TEST(cli_run_failure_kinds_one_line) {
    char trunc[400], args[1200];
    snprintf(trunc, sizeof trunc, "%s/run-truncated-profile.json", pf_test_tmpdir());
    size_t n = 0;
    char *text = test_slurp("eval/results/profile-pocket.json", &n);
    CHECK(text && n > 300);
    FILE *f = fopen(trunc, "wb");
    CHECK(f && fwrite(text, 1, 300, f) == 300 && fclose(f) == 0);
    free(text);
    static const struct { const char *flags, *expect; } cases[] = {
        {"--profile /nonexistent/profile.json", "/nonexistent/profile.json: No such file or directory"}, /* I/O */
        {"--profile %s", "run-truncated-profile.json: byte 300"},                                     /* format */
        {"--spec dflash --block 99", "--block 99 is outside 2..64"},                                   /* argument */
        {"--print-plan --profile /nonexistent/profile.json", "/nonexistent/profile.json: No such file"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char flags[600];
        snprintf(flags, sizeof flags, cases[i].flags, trunc);
        snprintf(args, sizeof args, "run -m models/pf-target-f16.gguf -d models/pf-draft-dflash2.gguf -n 2 -p hi %s", flags);
        CHECK_FAILS(args, cases[i].expect);
    }
}
