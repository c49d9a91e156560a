/* A fuzz target without libFuzzer: LLVMFuzzerInitialize (when the target has one), then
 * LLVMFuzzerTestOneInput once on each file named, a folder's files in name order. Arguments that
 * start with '-' are libFuzzer's flags and are ignored, so the suite runs either build the same
 * way. Built with the ordinary compiler against the library (mk/fuzz.mk), for machines without
 * clang's libFuzzer: the seeds still run, under the sanitizers in `make asan`. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);
/* LeakSanitizer's, present under make asan: what the target's set-up allocates and keeps for the
 * whole run is not a leak (libFuzzer counts only what one input leaves behind, too). */
__attribute__((weak)) void __lsan_disable(void);
__attribute__((weak)) void __lsan_enable(void);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "driver: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            uint8_t *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "driver: out of memory reading %s\n", path);
        return 1;
    }
    /* an exact-size copy, so a read past the input's end is past its allocation */
    uint8_t *in = malloc(n ? n : 1);
    if (in) memcpy(in, buf, n);
    free(buf);
    if (!in) return 1;
    LLVMFuzzerTestOneInput(in, n);
    free(in);
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_dir(const char *dir, int *count) {
    DIR *d = opendir(dir);
    if (!d) return 1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        if (n == cap && !(names = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names))) return 1;
        if (!(names[n++] = strdup(e->d_name))) return 1;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (!rc && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            rc = run_file(path);
            ++*count;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv) {
    if (__lsan_disable) __lsan_disable();
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    if (__lsan_enable) __lsan_enable();
    int count = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-') continue;
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "driver: no such file or folder: %s\n", argv[i]);
            return 1;
        }
        int rc = S_ISDIR(st.st_mode) ? run_dir(argv[i], &count) : (count++, run_file(argv[i]));
        if (rc) return rc;
    }
    printf("driver: %d inputs ran\n", count);
    return 0;
}
