/* Draft taps llama.cpp accepts: the default rule is z-lab's build_target_layer_ids (compared with the
 * formula run by Python, whose round() is the reference), never the last layer; synth-draft uses it
 * and warns on an explicit last-layer tap; expand says what happens to one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "draft/dflash_taps.h"
#include "formats/gguf.h"
#include "test.h"
#include "util.h"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

TEST(taps_default_rule_is_zlabs) {
    /* z-lab's formula, as its Python writes it, for every target depth 4..80 and draft depth 1..10 */
    char py[300], out[300], cmd[1200];
    snprintf(py, sizeof py, "%s/zlab_taps.py", pf_test_tmpdir());
    snprintf(out, sizeof out, "%s/zlab_taps.txt", pf_test_tmpdir());
    FILE *f = fopen(py, "w");
    CHECK(f);
    fputs("def build_target_layer_ids(num_target_layers, num_draft_layers):\n"
          "    if num_draft_layers == 1:\n"
          "        return [(num_target_layers // 2)]\n"
          "    start = 1\n"
          "    end = num_target_layers - 3\n"
          "    span = end - start\n"
          "    return [int(round(start + (i * span) / (num_draft_layers - 1))) for i in range(num_draft_layers)]\n"
          "for n in range(4, 81):\n"
          "    for d in range(1, 11):\n"
          "        print(n, d, *build_target_layer_ids(n, d))\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s %s > %s", getenv("PYTHON") ? getenv("PYTHON") : "/usr/bin/python3", py, out);
    CHECK(test_sh(cmd) == 0);
    f = fopen(out, "r");
    CHECK(f);
    int lines = 0, n, d;
    while (fscanf(f, "%d %d", &n, &d) == 2) {
        int want[16], got[16];
        for (int i = 0; i < d; i++) CHECK(fscanf(f, "%d", &want[i]) == 1);
        CHECK(pf_dflash_default_taps(n, d, got) == d);
        for (int i = 0; i < d; i++) {
            CHECKF(got[i] == want[i], "n=%d d=%d tap %d: %d, Python %d", n, d, i, got[i], want[i]);
            CHECKF(got[i] >= 0 && got[i] <= n - 2, "n=%d d=%d taps layer %d", n, d, got[i]);
        }
        lines++;
    }
    fclose(f);
    CHECK(lines == 77 * 10);
    /* the published Qwen3-8B-DFlash-b16 config: 36 target layers, 5 draft layers */
    int t[5];
    CHECK(pf_dflash_default_taps(36, 5, t) == 5 && t[0] == 1 && t[1] == 9 && t[2] == 17 && t[3] == 25 && t[4] == 33);
    /* shallow targets: clamped below the last layer; nothing to tap in a 1-layer target */
    CHECK(pf_dflash_default_taps(2, 3, t) == 3 && t[0] == 0 && t[1] == 0 && t[2] == 0);
    CHECK(pf_dflash_default_taps(3, 2, t) == 2 && t[0] <= 1 && t[1] <= 1);
    CHECK(pf_dflash_default_taps(1, 2, t) < 0);
}

TEST(taps_synth_draft_default_and_last_layer_warning) {
    const char *tmp = pf_test_tmpdir();
    char cmd[1500], d0[300], d1[300], errp[300];
    snprintf(d0, sizeof d0, "%s/taps-default.gguf", tmp);
    snprintf(d1, sizeof d1, "%s/taps-last.gguf", tmp);
    snprintf(errp, sizeof errp, "%s/taps.err", tmp);
    /* the committed 6-layer target, 3 draft layers: ids round(1 + i*2/2) = 1, 2, 3 -> stored 2, 3, 4 */
    snprintf(cmd, sizeof cmd, "%s synth-draft -m models/pf-target-f16.gguf -o %s --layers 3 --block 4 2>%s", test_cli(), d0, errp);
    CHECK(test_sh(cmd) == 0);
    CHECK(!strstr(slurp(errp), "warning"));
    char err[PF_ERR_LEN];
    gguf_file *g = gguf_open(d0, err);
    CHECK(g);
    const gguf_kv *tl = gguf_get_arr(g, "dflash.target_layers", GGUF_I32);
    int want[3];
    CHECK(pf_dflash_default_taps(6, 3, want) == 3);
    CHECK(tl && tl->v.arr.n == 3);
    for (int i = 0; i < 3; i++) CHECK(gguf_arr_int(tl, (uint64_t)i) == want[i] + 1 && want[i] + 1 < 6);
    gguf_close(g);
    CHECK(pf_dflash_file_taps_last(d0, 6) < 0);
    /* an explicit tap of the last layer is written, with a warning naming llama.cpp's refusal */
    snprintf(cmd, sizeof cmd, "%s synth-draft -m models/pf-target-f16.gguf -o %s --layers 2 --taps 1,5 --block 4 2>%s", test_cli(), d1,
             errp);
    CHECK(test_sh(cmd) == 0);
    CHECK(pf_dflash_file_taps_last(d1, 6) == 1);
    CHECKF(strstr(slurp(errp), "warning: ") && strstr(slurp(errp), "llama.cpp's loader refuses"), "%s", slurp(errp));
}

TEST(taps_expand_says_what_happens_to_a_last_layer_tap) {
    const char *tmp = pf_test_tmpdir();
    char cmd[2000], t[300], d[300], bt[300], bd[300], errp[300];
    snprintf(t, sizeof t, "%s/taps-tiny.gguf", tmp);
    snprintf(d, sizeof d, "%s/taps-tiny-d.gguf", tmp);
    snprintf(bt, sizeof bt, "%s/taps-tiny-big.gguf", tmp);
    snprintf(bd, sizeof bd, "%s/taps-tiny-big-d.gguf", tmp);
    snprintf(errp, sizeof errp, "%s/taps-exp.err", tmp);
    snprintf(cmd, sizeof cmd, "%s synth --shape tiny --type f32 -o %s && %s synth-draft -m %s -o %s --layers 2 --taps 0,1 --block 4 2>/dev/null",
             test_cli(), t, test_cli(), t, d);
    CHECK(test_sh(cmd) == 0);
    /* deeper expanded target: the kept index is an interior layer's input, which llama.cpp accepts */
    snprintf(cmd, sizeof cmd, "%s expand -m %s -o %s --shape tiny --layers 4 -d %s -O %s 2>%s", test_cli(), t, bt, d, bd, errp);
    CHECK(test_sh(cmd) == 0);
    CHECKF(strstr(slurp(errp), "taps the last layer of the 2-layer source target; kept as 2") &&
           strstr(slurp(errp), "which llama.cpp accepts"), "%s", slurp(errp));
    CHECK(pf_dflash_file_taps_last(bd, 4) < 0 && pf_dflash_file_taps_last(bd, 2) == 1);
    /* the same depth: it stays the last layer, and the warning says llama.cpp refuses it */
    snprintf(cmd, sizeof cmd, "%s expand -m %s -o %s --shape tiny -d %s -O %s 2>%s", test_cli(), t, bt, d, bd, errp);
    CHECK(test_sh(cmd) == 0);
    CHECKF(strstr(slurp(errp), "keeps it (pocketflash runs it, llama.cpp's loader refuses the draft)"), "%s", slurp(errp));
}
