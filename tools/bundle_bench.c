/* Measurements behind the README's bundle / prompt-cache table (not part of the build):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -I. -Iinclude tools/bundle_bench.c libpocketflash.a -lzstd -lxxhash -lm -pthread
 *   a.out load REPS FILE...          load time (pf_model_load + session + first forward of one
 *                                    token), median over REPS runs, files interleaved per rep
 *   a.out ttft REPS MODEL SYSTEM.txt time to first token of a chat with SYSTEM.txt as the system
 *                                    message: cold vs prompt-cache hit, interleaved, medians */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/generate.h"
#include "engine/model.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double load_once(const char *path) {
    char err[PF_ERR_LEN];
    double t0 = now_s();
    pf_model *m = pf_model_load(path, err);
    if (!m) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    pf_session_params sp = {.n_threads = 1, .n_ctx = 64};
    pf_session *s = NULL;
    pf_session_new(m, &sp, &s, err);
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.max_tokens = 1;
    int32_t tok = 1;
    if (!s || pf_generate_tokens(s, &tok, 1, &gp, NULL, NULL, NULL, err) != PF_OK) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    double t = now_s() - t0;
    pf_session_free(s);
    pf_model_free(m);
    return t;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "load")) {
        int reps = atoi(argv[2]), nf = argc - 3;
        double *t = calloc((size_t)(reps * nf), sizeof *t);
        for (int f = 0; f < nf; f++) load_once(argv[3 + f]); /* warm the page cache */
        for (int r = 0; r < reps; r++)
            for (int f = 0; f < nf; f++) t[f * reps + r] = load_once(argv[3 + f]);
        for (int f = 0; f < nf; f++) printf("%-40s load+first forward median %.2f ms\n", argv[3 + f], 1e3 * median(t + f * reps, reps));
        free(t);
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "ttft")) {
        int reps = atoi(argv[2]);
        char err[PF_ERR_LEN];
        pf_model *m = pf_model_load(argv[3], err);
        FILE *fp = fopen(argv[4], "rb");
        if (!m || !fp) return fprintf(stderr, "cannot load\n"), 1;
        static char sys[65536];
        size_t n = fread(sys, 1, sizeof sys - 1, fp);
        fclose(fp);
        sys[n] = 0;
        pf_session_params sp = {.n_threads = 1, .n_ctx = 512};
        pf_session *s = NULL;
        pf_session_new(m, &sp, &s, err);
        char cache[256];
        snprintf(cache, sizeof cache, "/tmp/bundle-bench-%d.cache", (int)getpid());
        unlink(cache);
        const char *user = "Summarise the rules above in one sentence.";
        pf_gen_params gp;
        pf_gen_params_default(&gp);
        gp.max_tokens = 1;
        gp.chat = true;
        gp.system = sys;
        pf_gen_stats st;
        gp.prompt_cache = cache; /* first run writes the system block */
        if (pf_generate(s, user, strlen(user), &gp, NULL, NULL, &st, err) != PF_OK) return fprintf(stderr, "%s\n", err), 1;
        double *cold = calloc((size_t)reps, sizeof *cold), *hit = calloc((size_t)reps, sizeof *hit);
        int n_prompt = st.n_prompt, n_cached = 0;
        for (int r = 0; r < reps; r++) {
            gp.prompt_cache = NULL;
            pf_session_reset(s); /* both runs start from an empty session cache */
            pf_generate(s, user, strlen(user), &gp, NULL, NULL, &st, err);
            cold[r] = st.ttft_s;
            gp.prompt_cache = cache;
            pf_session_reset(s);
            pf_generate(s, user, strlen(user), &gp, NULL, NULL, &st, err);
            hit[r] = st.ttft_s;
            n_cached = st.n_cached;
        }
        double c = median(cold, reps), h = median(hit, reps);
        printf("prompt %d tokens, %d from the cache: TTFT cold %.2f ms, hit %.2f ms, ratio %.1fx\n", n_prompt, n_cached,
               1e3 * c, 1e3 * h, c / h);
        unlink(cache);
        pf_session_free(s);
        pf_model_free(m);
        return 0;
    }
    fprintf(stderr, "usage: %s load REPS FILE... | ttft REPS MODEL SYSTEM.txt\n", argv[0]);
    return 1;
}
