/* Measurement behind README "Using the library" (not part of the build): a three-turn chat
 * through the public API, each turn once on a session that keeps its cache and once on a session
 * reset first (interleaved, order alternating per repetition), medians of time to first token.
 *   cc -O2 -std=c11 -Iinclude tools/chat_reuse_bench.c libpocketflash.a -lzstd -lxxhash -lm -pthread
 *   a.out REPS MODEL DRAFT THREADS */
#include <pocketflash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/api/text_sink.h"

static char *dup(const char *s) {
    char *d = malloc(strlen(s) + 1);
    return d ? strcpy(d, s) : NULL;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 5) return fprintf(stderr, "usage: %s REPS MODEL DRAFT THREADS\n", argv[0]), 2;
    int reps = atoi(argv[1]);
    char err[PF_ERR_LEN];
    pf_model *m = NULL;
    pf_load_model(argv[2], &m, err);
    pf_draft *d = NULL;
    if (m) pf_load_draft(m, argv[3], &d, err);
    pf_session_params sp = {.n_threads = atoi(argv[4]), .n_ctx = 2048};
    pf_session *warm = NULL, *cold = NULL;
    if (d) pf_session_new(m, &sp, &warm, err);
    if (warm) pf_session_new(m, &sp, &cold, err);
    if (!cold) return fprintf(stderr, "%s\n", err), 1;
    static const char *const users[3] = {
        "A shop sells 12 apples for 3 dollars each. How much do the apples cost?",
        "And how much do 5 apples cost? Explain each step of the calculation.",
        "Write the two answers as JSON with the fields apples and dollars.",
    };
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.max_tokens = 64;
    gp.draft = d;
    double *tw = calloc((size_t)reps * 3, sizeof *tw), *tc = calloc((size_t)reps * 3, sizeof *tc);
    int pre_w[3] = {0}, pre_c[3] = {0}, n_prompt[3] = {0}, same = 1;
    for (int r = 0; r < reps; r++) {
        pf_message msg[8];
        text rep[3];
        int n = 0;
        msg[n++] = (pf_message){"system", "You are a helpful assistant. Answer briefly and show the arithmetic."};
        pf_session_reset(warm);
        for (int t = 0; t < 3; t++) {
            msg[n++] = (pf_message){"user", users[t]};
            text a = {.n = 0}, b = {.n = 0};
            pf_gen_stats sw, sc;
            for (int k = 0; k < 2; k++) {
                if ((k + r) % 2 == 0) {
                    if (pf_generate_chat(warm, msg, n, &gp, text_sink, &a, &sw, err) != PF_OK) return fprintf(stderr, "%s\n", err), 1;
                } else {
                    pf_session_reset(cold);
                    if (pf_generate_chat(cold, msg, n, &gp, text_sink, &b, &sc, err) != PF_OK) return fprintf(stderr, "%s\n", err), 1;
                }
            }
            same &= a.n == b.n && !memcmp(a.s, b.s, a.n);
            tw[t * reps + r] = sw.ttft_s;
            tc[t * reps + r] = sc.ttft_s;
            pre_w[t] = sw.n_prompt - sw.n_reused;
            pre_c[t] = sc.n_prompt;
            n_prompt[t] = sw.n_prompt;
            rep[t] = a;
            msg[n++] = (pf_message){"assistant", dup(rep[t].s)};
        }
        for (int i = 0; i < n; i++)
            if (!strcmp(msg[i].role, "assistant")) free((char *)msg[i].content);
    }
    printf("turn | prompt tokens | prefilled (reuse / cold) | TTFT ms reuse | TTFT ms cold | ratio\n");
    for (int t = 0; t < 3; t++) {
        qsort(tw + t * reps, (size_t)reps, sizeof *tw, cmp);
        qsort(tc + t * reps, (size_t)reps, sizeof *tc, cmp);
        double w = tw[t * reps + reps / 2], c = tc[t * reps + reps / 2];
        printf("%d | %d | %d / %d | %.2f | %.2f | %.2fx\n", t + 1, n_prompt[t], pre_w[t], pre_c[t], 1e3 * w, 1e3 * c, c / w);
    }
    printf("replies identical: %s\n", same ? "yes" : "NO");
    pf_session_free(warm);
    pf_session_free(cold);
    pf_free_draft(d);
    pf_free_model(m);
    free(tw);
    free(tc);
    return same ? 0 : 1;
}
