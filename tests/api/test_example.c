/* examples/chat (built by make) run as a user would: two turns on stdin with the committed draft.
 * Its first reply equals `pocketflash run --chat` for the same message (the same rendering and
 * the same tokens), and the second turn reuses the first turn's cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"

static size_t read_file(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    return n;
}

TEST(example_chat_streams_turns_with_reuse) {
    const char *dir = pf_test_tmpdir();
    const char *example = getenv("PF_EXAMPLE_CHAT") ? getenv("PF_EXAMPLE_CHAT") : "build/examples/chat";
    const char *cli = getenv("PF_CLI") ? getenv("PF_CLI") : "./pocketflash";
    const char *q1 = "A shop sells 12 apples for 3 dollars each. How much do the apples cost?";
    char cmd[2048], in[300], out[300], errf[300], ref[300];
    snprintf(in, sizeof in, "%s/chat-in.txt", dir);
    snprintf(out, sizeof out, "%s/chat-out.txt", dir);
    snprintf(errf, sizeof errf, "%s/chat-err.txt", dir);
    snprintf(ref, sizeof ref, "%s/chat-ref.txt", dir);
    FILE *f = fopen(in, "w");
    CHECK(f);
    fprintf(f, "%s\nAnd how much do 5 apples cost?\n", q1);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "%s -m models/pf-target-f16.gguf -d models/pf-draft-dflash2.gguf -n 24 --system 'Be brief.' <%s >%s 2>%s",
             example, in, out, errf);
    CHECKF(system(cmd) == 0, "%s failed", cmd);
    snprintf(cmd, sizeof cmd,
             "%s run -m models/pf-target-f16.gguf -d models/pf-draft-dflash2.gguf -n 24 --chat --system 'Be brief.' "
             "-p '%s' >%s 2>/dev/null",
             cli, q1, ref);
    CHECK(system(cmd) == 0);
    static char o[16384], e[4096], r[8192];
    size_t no = read_file(out, o, sizeof o), nr = read_file(ref, r, sizeof r);
    read_file(errf, e, sizeof e);
    CHECKF(nr > 1 && no > nr && !memcmp(o, r, nr), "example's first reply:\n%s\nrun --chat:\n%s", o, r);
    int p1, u1, p2, u2;
    const char *t2 = strstr(e, "[turn 2:");
    CHECKF(sscanf(e, "[turn 1: %d prompt tokens, %d reused", &p1, &u1) == 2 && t2 &&
               sscanf(t2, "[turn 2: %d prompt tokens, %d reused", &p2, &u2) == 2,
           "stderr: %s", e);
    CHECKF(u1 == 0 && u2 >= p1 - 1 && u2 < p2, "turn 1: %d prompt, turn 2: %d reused of %d", p1, u2, p2);
}
