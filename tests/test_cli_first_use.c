/* The CLI as a new user meets it: the demo command (`make demo`), and llama.cpp's conventions:
 * special-token texts in a raw prompt are special tokens (--no-special: text), the one-to-one flag
 * spellings, -t defaulting to the physical cores; and the ChatML tokenization with and without
 * parsing the messages' special-token texts. On the committed stand-in target and its DFlash2
 * draft. Runs ./pocketflash (or $PF_CLI). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "engine/chat.h"
#include "engine/chat_tokens.h"
#include "engine/model.h"
#include "kernels/topology.h"
#include "test.h"
#include "util.h"

#define TARGET "models/pf-target-f16.gguf"
#define DRAFT "models/pf-draft-dflash2.gguf"
#define QUESTION "A shop sells 12 apples for 3 dollars each. How much do the apples cost?"

/* A file holding the prompt --chat makes of QUESTION, typed raw (the way llama.cpp users write it). */
static const char *raw_chatml_file(void) {
    static char path[300];
    snprintf(path, sizeof path, "%s/raw-chatml.txt", pf_test_tmpdir());
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("<|im_start|>user\n" QUESTION "<|im_end|>\n<|im_start|>assistant\n", f);
        fclose(f);
    }
    return path;
}

/* N of "prefill: N tokens" in run's stderr, or -1. */
static int prefill_tokens(const char *err) {
    const char *p = strstr(err, "prefill: ");
    return p ? atoi(p + 9) : -1;
}

static int count_words(const char *s) {
    int n = 0;
    for (const char *p = s; *p; p++)
        if (*p != ' ' && *p != '\n' && (p == s || p[-1] == ' ')) n++;
    return n;
}

TEST(cli_raw_chatml_prompt_equals_chat) {
    static char o1[16384], e1[8192], o2[16384], e2[8192], o3[16384], e3[8192], ids[8192], ie[1024], args[1024];
    const char *raw = raw_chatml_file();
    /* the raw ChatML prompt gives the tokens and the text of --chat on the bare question */
    snprintf(args, sizeof args, "run -m " TARGET " -n 24 -f %s", raw);
    CHECKF(RUN_CLI(args, o1, e1) == 0, "raw: %s", e1);
    CHECKF(RUN_CLI("run -m " TARGET " -n 24 --chat -p '" QUESTION "'", o2, e2) == 0, "chat: %s", e2);
    CHECKF(prefill_tokens(e1) > 0 && prefill_tokens(e1) == prefill_tokens(e2), "prompt tokens %d vs %d",
           prefill_tokens(e1), prefill_tokens(e2));
    CHECKF(strlen(o1) > 2 && !strcmp(o1, o2), "raw prompt's text '%s' differs from --chat's '%s'", o1, o2);
    snprintf(args, sizeof args, "tokenize -m " TARGET " -f %s", raw);
    CHECK(RUN_CLI(args, ids, ie) == 0);
    CHECKF(count_words(ids) == prefill_tokens(e1), "tokenize gives %d ids, run prefilled %d", count_words(ids),
           prefill_tokens(e1));
    /* --no-special: the same bytes tokenized as text (what tokenize --no-special gives) */
    snprintf(args, sizeof args, "run -m " TARGET " -n 24 --no-special -f %s", raw);
    CHECKF(RUN_CLI(args, o3, e3) == 0, "%s", e3);
    snprintf(args, sizeof args, "tokenize -m " TARGET " --no-special -f %s", raw);
    CHECK(RUN_CLI(args, ids, ie) == 0);
    CHECKF(prefill_tokens(e3) == count_words(ids) && prefill_tokens(e3) > prefill_tokens(e1),
           "--no-special prefilled %d, tokenize --no-special %d ids, special %d", prefill_tokens(e3), count_words(ids),
           prefill_tokens(e1));
    /* with --chat, --no-special keeps the template's markers special: same as --chat for a plain question */
    CHECK(RUN_CLI("run -m " TARGET " -n 24 --chat --no-special -p '" QUESTION "'", o3, e3) == 0);
    CHECKF(!strcmp(o3, o2) && prefill_tokens(e3) == prefill_tokens(e2), "--chat --no-special changed a plain prompt");
    /* ... while a marker typed in the message is text there, and a token with the default */
    CHECK(RUN_CLI("run -m " TARGET " -n 4 --chat -p 'a<|im_end|>b'", o2, e2) == 0);
    CHECK(RUN_CLI("run -m " TARGET " -n 4 --chat --no-special -p 'a<|im_end|>b'", o3, e3) == 0);
    CHECKF(prefill_tokens(e3) > prefill_tokens(e2), "typed marker: %d tokens with --no-special, %d without",
           prefill_tokens(e3), prefill_tokens(e2));
}

TEST(cli_llama_flag_spellings) {
    static char o1[16384], e1[16384], o2[16384], e2[16384];
    /* the same run spelled both ways: the same sampled text */
    CHECKF(RUN_CLI("run -m " TARGET " -p 'The apples' -n 12 -c 256 -t 1 --seed 7 --temp 0.8 --top-k 20 --top-p 0.9", o1, e1) == 0, "%s", e1);
    CHECKF(RUN_CLI("run --model " TARGET " --prompt 'The apples' --n-predict 12 --ctx-size 256 --threads 1 -s 7 --temp 0.8 "
               "--top-k 20 --top-p 0.9", o2, e2) == 0, "%s", e2);
    CHECKF(strlen(o1) > 2 && !strcmp(o1, o2), "'%s' vs '%s'", o1, o2);
    CHECK(RUN_CLI("run --model " TARGET " --prompt 'The apples' --predict 12 --threads 1 -s 8 --temp 0.8", o2, e2) == 0);
    CHECKF(strcmp(o1, o2), "another seed gave the same sample: the alias -s is not the seed");
    /* -sys / --system-prompt are the system message */
    CHECK(RUN_CLI("run -m " TARGET " --chat --system 'Answer in one word.' -p hi -n 12", o1, e1) == 0);
    CHECK(RUN_CLI("run -m " TARGET " --chat -sys 'Answer in one word.' -p hi -n 12", o2, e2) == 0);
    CHECKF(!strcmp(o1, o2) && prefill_tokens(e1) == prefill_tokens(e2), "-sys: '%s' vs '%s'", o1, o2);
    CHECK(RUN_CLI("run -m " TARGET " --chat --system-prompt 'Answer in one word.' -p hi -n 12", o2, e2) == 0);
    CHECK(!strcmp(o1, o2));
    CHECK(RUN_CLI("run -m " TARGET " --chat -p hi -n 12", o2, e2) == 0);
    CHECKF(prefill_tokens(e2) < prefill_tokens(e1), "the system message was not used");
    /* -md / --model-draft are the draft, --draft-max N is --block N+1 (the same statistics) */
    CHECKF(RUN_CLI("run -m " TARGET " -d " DRAFT " --block 3 --chat -p '" QUESTION "' -n 24 --stats", o1, e1) == 0, "%s", e1);
    CHECKF(RUN_CLI("run -m " TARGET " -md " DRAFT " --draft-max 2 --chat -p '" QUESTION "' -n 24 --stats", o2, e2) == 0, "%s", e2);
    const char *r1 = strstr(e1, "speculation:"), *r2 = strstr(e2, "speculation:");
    CHECKF(r1 && r2 && !strcmp(o1, o2), "-md/--draft-max run differs");
    CHECKF(!strncmp(r1, r2, strcspn(r1, "\n")), "round statistics differ: '%.80s' vs '%.80s'", r1, r2);
    CHECK(RUN_CLI("run -m " TARGET " --model-draft " DRAFT " --chat -p '" QUESTION "' -n 24", o2, e2) == 0);
    CHECK(!strcmp(o1, o2));
    /* out of range: one line naming the flag as typed */
    CHECK(RUN_CLI("run -m " TARGET " -md " DRAFT " --draft 0 -p hi", o2, e2) == 1);
    CHECKF(strstr(e2, "--draft: '0' is not an integer in 1..63") && strchr(e2, '\n') == e2 + strlen(e2) - 1,
           "stderr: %s", e2);
    CHECK(RUN_CLI("run -m " TARGET " --no-such-flag -p hi", o2, e2) == 1);
    CHECKF(strstr(e2, "unknown flag '--no-such-flag'"), "stderr: %s", e2);
    /* gen and bench take the same spellings */
    char path[300], args[1200];
    snprintf(path, sizeof path, "%s/llama-prompts.jsonl", pf_test_tmpdir());
    FILE *f = fopen(path, "w");
    CHECK(f);
    fputs("{\"id\": \"a\", \"prompt\": \"" QUESTION "\"}\n", f);
    fclose(f);
    snprintf(args, sizeof args, "gen --model " TARGET " -md " DRAFT " -i %s -o %s.out --n-predict 8 --threads 1 --no-special",
             path, path);
    CHECKF(RUN_CLI(args, o1, e1) == 0, "gen: %s", e1);
    CHECKF(RUN_CLI("bench --model " TARGET " --model-draft " DRAFT " --tasks eval/tasks --prompts 1 --reps 1 --n-predict 8 "
               "--draft-max 2 --threads 1", o1, e1) == 0, "bench: %s", e1);
    CHECKF(strstr(o1, "| dflash/3 |"), "bench did not run block 3: %.300s", o1);
}

TEST(cli_threads_default_is_physical_cores) {
    static char o[16384], e[1024];
    char want[64];
    snprintf(want, sizeof want, "the physical cores, here %d)", pf_physical_cores());
    const char *cmds[] = {"run --help", "gen --help", "bench --help"};
    for (int i = 0; i < 3; i++) {
        CHECK(RUN_CLI(cmds[i], o, e) == 0);
        CHECKF(strstr(o, want), "%s lacks '%s'", cmds[i], want);
    }
}

TEST(physical_cores_from_sysfs) {
    char root[300], path[400];
    snprintf(root, sizeof root, "%s/sys-cpu", pf_test_tmpdir());
    mkdir(root, 0700);
    /* 4 logical CPUs on 2 cores (SMT pairs 0,2 and 1,3); cpu4 has no topology files */
    static const char *const sib[4] = {"0,2\n", "1,3\n", "0,2\n", "1,3\n"};
    for (int c = 0; c < 5; c++) {
        snprintf(path, sizeof path, "%s/cpu%d", root, c);
        mkdir(path, 0700);
        if (c == 4) continue;
        snprintf(path, sizeof path, "%s/cpu%d/topology", root, c);
        mkdir(path, 0700);
        snprintf(path, sizeof path, "%s/cpu%d/topology/thread_siblings_list", root, c);
        test_write_file(path, sib[c], (size_t)-1);
    }
    int all[4] = {0, 1, 2, 3}, pair[2] = {0, 2}, odd[3] = {1, 3, 4};
    CHECK(pf_physical_cores_in(root, all, 4) == 2);
    CHECK(pf_physical_cores_in(root, pair, 2) == 1);
    CHECK(pf_physical_cores_in(root, odd, 3) == 2); /* cpu4: unknown, a core of its own */
    CHECK(pf_physical_cores_in("/nonexistent", all, 4) == 4);
    CHECK(pf_physical_cores_in(root, all, 0) == 1);
    int n = pf_physical_cores();
    CHECKF(n >= 1 && n <= 4096, "pf_physical_cores() = %d", n);
}

TEST(chat_tokenize_no_special_keeps_the_template) {
    char err[PF_ERR_LEN];
    pf_model *m = pf_model_load(TARGET, err);
    CHECKF(m, "%s", err);
    static const char *const users[] = {QUESTION, "\nleading newline", "", "tab\tand  spaces \n\n"};
    int ok = 1;
    for (int sys = 0; sys < 2 && ok; sys++)
        for (size_t i = 0; i < sizeof users / sizeof *users && ok; i++) {
            const char *system = sys ? "You are brief.\n" : NULL;
            char *text = pf_chat_format(system, users[i]);
            int32_t *a = NULL, *b = NULL, *c = NULL;
            size_t na = 0, nb = 0, nc = 0;
            ok = text && pf_tokenize(m->tok, text, strlen(text), true, &a, &na, err) == 0 &&
                 pf_chat_tokenize(m->tok, system, users[i], true, &b, &nb, err) == 0 &&
                 pf_chat_tokenize(m->tok, system, users[i], false, &c, &nc, err) == 0;
            /* plain messages: the same ids in both modes, equal to tokenizing the formatted text */
            ok = ok && na == nb && na == nc && !memcmp(a, b, na * sizeof *a) && !memcmp(a, c, na * sizeof *a);
            if (!ok) printf("    case %d/%zu differs\n", sys, i);
            free(text), free(a), free(b), free(c);
        }
    /* a marker typed in the message: a token by default, text with parse_special false */
    int32_t *a = NULL, *c = NULL;
    size_t na = 0, nc = 0;
    int32_t end = pf_tokenizer_find(m->tok, "<|im_end|>", 10);
    int r = pf_chat_tokenize(m->tok, NULL, "a<|im_end|>b", true, &a, &na, err) |
            pf_chat_tokenize(m->tok, NULL, "a<|im_end|>b", false, &c, &nc, err);
    int ends_a = 0, ends_c = 0;
    for (size_t i = 0; i < na; i++) ends_a += a[i] == end;
    for (size_t i = 0; i < nc; i++) ends_c += c[i] == end;
    free(a), free(c);
    pf_model_free(m);
    CHECK(ok);
    CHECKF(r == 0 && end >= 0 && ends_a == 2 && ends_c == 1 && nc > na, "markers %d / %d, ids %zu / %zu", ends_a, ends_c,
           na, nc);
}

TEST(cli_demo_table) {
    static char o[16384], e[16384];
    CHECKF(RUN_CLI("demo -m " TARGET " -d " DRAFT " --prompts 1 --reps 1 -n 8 -t 1", o, e) == 0,
           "demo: %s", e);
    /* the models' names, the settings, one row per task type, every one checked identical */
    CHECKF(strstr(o, "pf-target") && strstr(o, "pf-draft-dflash2") && strstr(o, "1 threads") && strstr(o, " kernels"),
           "header: %.400s", o);
    CHECK(strstr(o, "| task | plain tok/s | speculative tok/s | speedup | tau | identical |"));
    static const char *const types[] = {"chat", "code", "extraction", "math", "qa", "rewrite", "summary"};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        char row[64];
        snprintf(row, sizeof row, "\n| %s | ", types[i]);
        const char *r = strstr(o, row);
        CHECKF(r && strstr(r, " | yes |\n") && strchr(r + 1, '\n') > strstr(r, " | yes |"), "row %s: %.300s", types[i],
               r ? r : o);
    }
    CHECK(strstr(o, "| **overall** (geomean) |") && strstr(o, "x** |"));
    CHECKF(RUN_CLI("demo -m " TARGET, o, e) == 1 && strstr(e, "-d DRAFT.gguf are required"),
           "%s", e);
}
