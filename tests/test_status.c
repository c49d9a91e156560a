/* Each failure kind through `pocketflash run` (docs/cli.md#exit-status): one line on stderr naming
 * the problem and the exit status of its kind. I/O 2: a missing model or draft, a folder; format 3:
 * a truncated GGUF, a draft given as the model; argument 1: a block out of range, a prompt over the
 * context; out of memory 4: the address space capped (ulimit -v) below what the run needs, where
 * every failing run must say out of memory; cancelled 130: SIGINT while generating. The library's
 * side is tests/api/test_status_api.c, the server's status_server_kinds in test_serve.c. The
 * other commands that load a model or generate share run's table: a missing file and a bad file
 * each. Runs ./pocketflash (or $PF_CLI). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault.h"
#include "test.h"
#include "util.h"

#define TARGET "models/pf-target-f16.gguf"
#define DRAFT "models/pf-draft-dflash2.gguf"

static const char *cli(void) { return getenv("PF_CLI") ? getenv("PF_CLI") : "./pocketflash"; }

/* `pocketflash ARGS`: its exit status (-1 for a signal) and stderr. */
static int run_status(const char *pre, const char *args, char *err, size_t n) {
    int st = pf_fault_run(pre, args, err, n);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int one_line(const char *err) { return test_count_lines(err) == 1 && !strncmp(err, "pocketflash: ", 13); }

/* A copy of the first n bytes of TARGET in the scratch folder. */
static const char *truncated_target(long n) {
    static char path[400];
    snprintf(path, sizeof path, "%s/status-cut-%ld.gguf", pf_test_tmpdir(), n);
    char cmd[900];
    snprintf(cmd, sizeof cmd, "head -c %ld %s > %s", n, TARGET, path);
    return system(cmd) == 0 ? path : NULL;
}

TEST(status_run_exit_status_per_kind) {
    const char *cut = truncated_target(4096);
    CHECK(cut);
    char c1[600], c2[600];
    snprintf(c1, sizeof c1, "run -m %s -p hi -n 2", cut);
    snprintf(c2, sizeof c2, "run -m %s -d %s -p hi -n 2", TARGET, cut);
    static char long_prompt[3000];
    for (size_t i = 0; i + 6 < sizeof long_prompt; i += 6) memcpy(long_prompt + i, "apple ", 6);
    char c3[3400];
    snprintf(c3, sizeof c3, "run -m %s -c 64 -n 2 -p '%s'", TARGET, long_prompt);
    const struct { const char *args; int want; const char *msg; } cases[] = {
        {"run -m /nonexistent/t.gguf -p hi -n 2", 2, "/nonexistent/t.gguf: cannot open: No such file"},
        {"run -m models -p hi -n 2", 2, "models: not a regular file"},
        {"run -m " TARGET " -d /nonexistent/d.gguf -p hi -n 2", 2, "/nonexistent/d.gguf: cannot open"},
        {c1, 3, "status-cut-4096.gguf: "},
        {c2, 3, "status-cut-4096.gguf: "},
        {"run -m " DRAFT " -p hi -n 2", 3, "general.architecture"},
        {"run -m " TARGET " -d " DRAFT " --spec dflash --block 99 -p hi -n 2", 1, "--block 99 is outside 2..64"},
        {c3, 1, "does not fit the context of 64 tokens"},
        {"run -m " TARGET " --profile /nonexistent/p.json -d " DRAFT " -p hi -n 2", 2, "/nonexistent/p.json"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char err[8192];
        int rc = run_status("", cases[i].args, err, sizeof err);
        CHECKF(rc == cases[i].want && one_line(err) && strstr(err, cases[i].msg), "%.80s: exit %d (want %d), '%s'",
               cases[i].args, rc, cases[i].want, err);
    }
}

/* The other commands that load a model or generate exit by the same table (one helper,
 * cli_fail_kind): per command a file that cannot be read (2) and a bad file (3), each failing
 * before anything is measured or served. */
TEST(status_other_commands_exit_status_per_kind) {
    const char *cut = truncated_target(4096);
    CHECK(cut);
    char dir[400], cmd[1400];
    snprintf(dir, sizeof dir, "%s/status-schemas", pf_test_tmpdir());
    snprintf(cmd, sizeof cmd, "mkdir -p %s && echo '{\"type\": \"string\"}' > %s/s.json && echo '{\"prompt\": \"hi\"}' > %s/in.jsonl",
             dir, dir, dir);
    CHECK(system(cmd) == 0);
    static char args[16][1200];
    int n = 0;
#define CASE(...) snprintf(args[n++], sizeof args[0], __VA_ARGS__)
    CASE("gen -m /nonexistent/t.gguf -i %s/in.jsonl -o %s/out.jsonl", dir, dir);
    CASE("gen -m %s -i %s/in.jsonl -o %s/out.jsonl", cut, dir, dir);
    CASE("gen -m %s -d %s -i %s/in.jsonl -o %s/out.jsonl -n 2", TARGET, cut, dir, dir);
    CASE("bench -m /nonexistent/t.gguf --tasks eval/tasks --prompts 1 -n 2 --reps 1");
    CASE("bench -m %s --tasks eval/tasks --prompts 1 -n 2 --reps 1", cut);
    CASE("bench -m %s -d %s --print-plan", TARGET, cut);
    CASE("tune -m /nonexistent/t.gguf --tasks eval/tasks --prompts 1 -o %s/p.json", dir);
    CASE("tune -m %s --tasks eval/tasks --prompts 1 -o %s/p.json", cut, dir);
    CASE("serve -m models --port 0");
    CASE("serve -m %s -d %s --port 0", TARGET, cut);
    CASE("demo -m %s -d /nonexistent/d.gguf --prompts 1 -n 2 --reps 1", TARGET);
    CASE("demo -m %s -d %s --prompts 1 -n 2 --reps 1", TARGET, cut);
    CASE("bench-model -m models --reps 1");
    CASE("bench-model -m %s --reps 1", cut);
    CASE("schema-bench -m /nonexistent/t.gguf %s", dir);
    CASE("schema-bench -m %s %s", cut, dir);
#undef CASE
    static const int want[16] = {2, 3, 3, 2, 3, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3};
    static const char *const msg[16] = {
        "/nonexistent/t.gguf: cannot open", "status-cut-4096.gguf: ", "status-cut-4096.gguf: ",
        "/nonexistent/t.gguf: cannot open", "status-cut-4096.gguf: ", "status-cut-4096.gguf: ",
        "/nonexistent/t.gguf: cannot open", "status-cut-4096.gguf: ", "models: not a regular file",
        "status-cut-4096.gguf: ", "/nonexistent/d.gguf: cannot open", "status-cut-4096.gguf: ",
        "models: not a regular file", "status-cut-4096.gguf: ", "/nonexistent/t.gguf: cannot open",
        "status-cut-4096.gguf: "};
    for (int i = 0; i < n; i++) {
        char err[8192];
        int rc = run_status("", args[i], err, sizeof err);
        /* demo and bench draw a progress bar on stderr before a late failure: the error is its own line */
        const char *line = strstr(err, "pocketflash: ");
        CHECKF(rc == want[i] && line && test_count_lines(line) == 1 && strstr(line, msg[i]), "%.90s: exit %d (want %d), '%s'",
               args[i], rc, want[i], err);
    }
}

/* The files of the table below: a prompt file, a Dec head, a ranked list, a sequence file (one
 * sequence of one token), a checkpoint folder whose config.json is cut short and the first 100
 * bytes of the tokenizer.json; NULL when one cannot be written. */
static const char *kinds_fixtures(void) {
    static char dir[400];
    snprintf(dir, sizeof dir, "%s/kinds", pf_test_tmpdir());
    static const uint8_t seq[16] = {'P', 'F', 'S', 'Q', 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
    char cmd[2600], path[500];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/hf && echo '{\"prompt\": \"hi\"}' > %s/in.jsonl && echo '1 2 3' > %s/ranked.txt && "
             "printf '{\"architectures\": [' > %s/hf/config.json && head -c 100 models/pf-tokenizer.json > %s/tok.json",
             dir, dir, dir, dir, dir);
    snprintf(path, sizeof path, "%s/seq.bin", dir);
    return system(cmd) == 0 && test_write_file(path, seq, sizeof seq) == 0 ? dir : NULL;
}

/* tmpl with @F replaced by file and @D by dir. */
static void kinds_args(char *dst, size_t n, const char *tmpl, const char *file, const char *dir) {
    size_t o = 0;
    for (const char *p = tmpl; *p && o + 1 < n; p++) {
        const char *with = p[0] == '@' && p[1] == 'F' ? file : p[0] == '@' && p[1] == 'D' ? dir : NULL;
        if (with) p++;
        o += (size_t)snprintf(dst + o, n - o, "%.*s", with ? (int)strlen(with) : 1, with ? with : p);
    }
    dst[o < n ? o : n - 1] = 0;
}

/* Every command that reads a file exits with the kind of what failed (docs/cli.md#exit-status), one
 * line "pocketflash: ..." on stderr naming the file: per command a missing file (2), a truncated or
 * malformed one (3: the first 100 bytes of a GGUF, or the fixture named) and an unknown flag (1).
 * Each fails on the first file it opens: no model loads beyond the failing one. */
TEST(status_every_file_command_exit_status_per_kind) {
    const char *gguf_cut = truncated_target(100), *dir = kinds_fixtures();
    CHECK(gguf_cut && dir);
    static const struct {
        const char *args; /* @F: the file under test; @D: the fixtures' folder */
        const char *bad;  /* the bad file in @D; NULL: the cut GGUF; "": none */
    } cmds[] = {
        {"run -m @F -p hi -n 2", NULL},
        {"run -m " TARGET " -f @F", ""},
        {"gen -m @F -i @D/in.jsonl -o @D/out.jsonl", NULL},
        {"bench -m @F --tasks eval/tasks --prompts 1 -n 2 --reps 1", NULL},
        {"tune -m @F --tasks eval/tasks --prompts 1 -o @D/p.json", NULL},
        {"serve -m @F --port 0", NULL},
        {"demo -m @F -d " DRAFT " --prompts 1 -n 2 --reps 1", NULL},
        {"bench-model -m @F --reps 1", NULL},
        {"schema-bench -m @F @D", NULL},
        {"info @F", NULL},
        {"tokenize -m @F -p hi", NULL},
        {"vocab-import @F -o @D/v.gguf", "tok.json"},
        {"convert @F -o @D/c.gguf", "hf"},
        {"pack -m @F -o @D/x.pfb", NULL},
        {"pack -m " TARGET " --profile @F -o @D/x.pfb", ""},
        {"verify @F", NULL},
        {"synth-draft -m @F -o @D/sd.gguf", NULL},
        {"expand -m @F -o @D/e.gguf", NULL},
        {"quantize @F @D/q.gguf q8_0", NULL},
        {"dec-attach -d @F --strip -o @D/da.gguf", NULL},
        {"dec-attach -d " DRAFT " --dec @F -o @D/da.gguf", "tok.json"},
        {"draft-head -d " DRAFT " -m @F --ranked @D/ranked.txt -o @D/dh.gguf", NULL},
        {"taps -m @F --layers 0 -i @D/seq.bin -o @D/t.npy", NULL},
        {"taps -m " TARGET " --layers 0 -i @F -o @D/t.npy", "ranked.txt"},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        char args[1200], bad[500], err[8192];
        kinds_args(args, sizeof args, cmds[i].args, "/nonexistent/kinds.file", dir);
        int rc = run_status("", args, err, sizeof err);
        CHECKF(rc == 2 && one_line(err) && strstr(err, "/nonexistent/kinds.file"), "%s: exit %d (want 2), '%s'", args, rc, err);
        if (!cmds[i].bad || cmds[i].bad[0]) {
            snprintf(bad, sizeof bad, "%s/%s", dir, cmds[i].bad ? cmds[i].bad : "");
            kinds_args(args, sizeof args, cmds[i].args, cmds[i].bad ? bad : gguf_cut, dir);
            rc = run_status("", args, err, sizeof err);
            CHECKF(rc == 3 && one_line(err) && strstr(err, cmds[i].bad ? bad : gguf_cut), "%s: exit %d (want 3), '%s'", args,
                   rc, err);
        }
        size_t name_len = strcspn(cmds[i].args, " ");
        if (i && !strncmp(cmds[i - 1].args, cmds[i].args, name_len + 1)) continue; /* the command's flags are known */
        snprintf(args, sizeof args, "%.*s --bogus-flag", (int)name_len, cmds[i].args);
        rc = run_status("", args, err, sizeof err);
        CHECKF(rc == 1 && one_line(err) && strstr(err, "--bogus-flag"), "%s: exit %d (want 1), '%s'", args, rc, err);
    }
    /* An output that cannot be created is 2 too, in every command that writes one; those that
     * write after a measurement check it before measuring, so each case fails at once. */
    static const char *const outs[] = {
        "bench -m " TARGET " --tasks eval/tasks --prompts 1 -n 2 --reps 1 --json @F",
        "bench -m " TARGET " --tasks eval/tasks --prompts 1 -n 2 --reps 1 --svg @F",
        "bench -m " TARGET " --tasks eval/tasks --prompts 1 -n 2 --reps 1 --concurrency 1 --json @F",
        "bench-model -m " TARGET " --reps 1 --json @F",
        "schema-bench -m " TARGET " @D/hf --json @F",
        "tune -m " TARGET " --tasks eval/tasks --prompts 1 -o @F",
        "synth --shape tiny -o @F",
        "taps -m " TARGET " --layers 0 -i @D/seq.bin -o @F",
        "taps -m " TARGET " --layers 0 -i @D/seq.bin -o @D/t.npy --topk 2 --topk-out @F",
        "gen -m " TARGET " -i @D/in.jsonl -o @F -n 2",
        "run -m " TARGET " -d " DRAFT " -p hi -n 2 --log-rounds @F",
        "pack -m " TARGET " -o @F",
    };
    for (size_t i = 0; i < sizeof outs / sizeof *outs; i++) {
        char args[1200], err[8192];
        kinds_args(args, sizeof args, outs[i], "/nonexistent/kinds.out", dir);
        int rc = run_status("", args, err, sizeof err);
        CHECKF(rc == 2 && one_line(err) && strstr(err, "/nonexistent/kinds.out"), "%s: exit %d (want 2), '%s'", args, rc, err);
    }
    /* A write that fails at the end (the rename onto a folder) is 2 and leaves none of the run's
     * outputs: neither a temporary nor, for taps, the features or the ids written before it. */
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/late_logp.npy && rm -f %s/late.npy %s/late_ids.npy", dir, dir, dir);
    CHECK(system(cmd) == 0);
    static const char *const late[] = {
        "synth --shape tiny -o @D/hf",
        "taps -m " TARGET " --layers 0 -i @D/seq.bin -o @D/late.npy --topk 2 --topk-out @D/late",
    };
    for (size_t i = 0; i < sizeof late / sizeof *late; i++) {
        char args[1200], err[8192];
        kinds_args(args, sizeof args, late[i], "", dir);
        int rc = run_status("", args, err, sizeof err);
        CHECKF(rc == 2 && one_line(err) && strstr(err, "write failed: Is a directory"), "%s: exit %d (want 2), '%s'", args,
               rc, err);
    }
    snprintf(cmd, sizeof cmd, "ls %s %s/hf | grep -q -e '\\.tmp\\.' -e '^late\\.npy$' -e '^late_ids\\.npy$'", dir, dir);
    CHECKF(system(cmd) != 0, "an output of a failed write is left in %s", dir);
}

TEST(status_run_out_of_memory_is_exit_4) {
    if (pf_fault_sanitized()) {
        pf_test_skip("a sanitizer's shadow memory cannot live under ulimit -v");
        return;
    }
    /* from too little to start the program to enough for the whole run: a run that fails after
     * it started must fail for memory, with exit 4 and one line */
    static const long kb[] = {16000, 24000, 32000, 40000, 48000, 64000, 80000, 96000, 128000, 192000, 256000, 512000};
    int n_oom = 0, n_ok = 0;
    for (size_t i = 0; i < sizeof kb / sizeof *kb; i++) {
        char pre[64], err[8192];
        snprintf(pre, sizeof pre, "ulimit -v %ld; ", kb[i]);
        int rc = run_status(pre, "run -m " TARGET " -d " DRAFT " -p 'The capital of France' -n 8 -t 2", err, sizeof err);
        if (rc == 127 && strncmp(err, "pocketflash: ", 13)) continue; /* the loader could not map the program */
        CHECKF(rc == 0 || (rc == 4 && one_line(err) && (strstr(err, "out of memory") || strstr(err, "Cannot allocate"))),
               "ulimit -v %ld: exit %d, '%s'", kb[i], rc, err);
        n_oom += rc == 4;
        n_ok += rc == 0;
    }
    CHECKF(n_oom >= 1 && n_ok >= 1, "%d runs out of memory, %d complete: the caps miss the load", n_oom, n_ok);
}

TEST(status_run_sigint_cancels_with_130) {
    int out[2];
    CHECK(pipe(out) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        char path[400];
        snprintf(path, sizeof path, "%s/status-sigint.err", pf_test_tmpdir());
        if (!freopen(path, "w", stderr)) _exit(126);
        execl(cli(), cli(), "run", "-m", TARGET, "-p", "Once upon a time", "-n", "100000", "--ignore-eos", "-c", "4096",
              (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char c;
    CHECK(read(out[0], &c, 1) == 1); /* generating: its first text is out */
    kill(pid, SIGINT);
    char sink[4096];
    while (read(out[0], sink, sizeof sink) > 0) {
    }
    close(out[0]);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    char path[400];
    snprintf(path, sizeof path, "%s/status-sigint.err", pf_test_tmpdir());
    char *err = test_slurp(path, NULL);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 130 && err && strstr(err, "pocketflash: run: cancelled (SIGINT)"),
           "exit %d, '%s'", WIFEXITED(st) ? WEXITSTATUS(st) : -1, err ? err : "");
    /* the timing lines are not printed for a cancelled run: the error is the last line */
    const char *last = strstr(err, "pocketflash: run: cancelled");
    CHECK(last && !strchr(last, '\n')[1]);
    free(err);
}
