/* Draft taps llama.cpp accepts: the default rule is z-lab's build_target_layer_ids (compared with the
 * formula run by Python, whose round() is the reference), never the last layer; synth-draft uses it
 * and warns on an explicit last-layer tap; expand says what happens to one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "draft/dflash_taps.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "test.h"
#include "util.h"
#include "engine/batch.h"

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
    test_tmp_path(py, sizeof py, "zlab_taps.py");
    test_tmp_path(out, sizeof out, "zlab_taps.txt");
    CHECK(test_write_file(py,
          "def build_target_layer_ids(num_target_layers, num_draft_layers):\n"
          "    if num_draft_layers == 1:\n"
          "        return [(num_target_layers // 2)]\n"
          "    start = 1\n"
          "    end = num_target_layers - 3\n"
          "    span = end - start\n"
          "    return [int(round(start + (i * span) / (num_draft_layers - 1))) for i in range(num_draft_layers)]\n"
          "for n in range(4, 81):\n"
          "    for d in range(1, 11):\n"
          "        print(n, d, *build_target_layer_ids(n, d))\n",
          (size_t)-1) == 0);
    snprintf(cmd, sizeof cmd, "%s %s > %s", getenv("PYTHON") ? getenv("PYTHON") : "/usr/bin/python3", py, out);
    CHECK(test_sh(cmd) == 0);
    FILE *f = fopen(out, "r");
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
    gguf_file *g;
    gguf_open_file(d0, &g, err);
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

/* taps --topk: the ids are the forward's K largest logits of every row in order (ties by lower id)
 * and the log-probabilities are theirs; bad flag combinations fail with one line and write nothing. */
TEST(taps_topk_matches_the_forward) {
    char model[400], seqs[400], feats[400], pre[400], ids_p[440], lp_p[440], err[PF_ERR_LEN], args[2000];
    test_tmp_path(model, sizeof model, "topk-model.gguf");
    test_tmp_path(seqs, sizeof seqs, "topk.seqs");
    test_tmp_path(feats, sizeof feats, "topk_feats.npy");
    test_tmp_path(pre, sizeof pre, "topk");
    snprintf(ids_p, sizeof ids_p, "%s_ids.npy", pre);
    snprintf(lp_p, sizeof lp_p, "%s_logp.npy", pre);
    pf_model *m = test_synth_model(pf_synth_shape_find("tiny"), PF_TYPE_Q8_0, false, model);
    CHECK(m);
    enum { N = 9, K = 5 };
    uint32_t hdr[3] = {0, 1, N};
    memcpy(hdr, "PFSQ", 4);
    int32_t toks[N];
    for (int i = 0; i < N; i++) toks[i] = (i * 37 + 5) % (int)m->hp.n_vocab;
    uint8_t file[sizeof hdr + sizeof toks];
    memcpy(file, hdr, sizeof hdr);
    memcpy(file + sizeof hdr, toks, sizeof toks);
    CHECK(test_write_file(seqs, file, sizeof file) == 0);
    snprintf(args, sizeof args, "taps -m %s --layers 0 -i %s -o %s -t 1 --topk %d --topk-out %s", model, seqs, feats, K, pre);
    char out[256], eout[512];
    CHECKF(test_run_cli(args, out, sizeof out, eout, sizeof eout) == 0, "%s", eout);
    size_t n_ids = 0, n_lp = 0;
    char *ids_f = test_slurp(ids_p, &n_ids), *lp_f = test_slurp(lp_p, &n_lp);
    CHECK(ids_f && lp_f && n_ids == 128 + N * K * 2 && n_lp == 128 + N * K * 2);
    /* the header after the magic's NUL byte: "\x93NUMPY\x01\x00" + length + the dict */
    CHECK(strstr(ids_f + 10, "'<u2'") && strstr(lp_f + 10, "'<f2'") && strstr(ids_f + 10, "(9, 5)"));
    const uint16_t *ids = (const uint16_t *)(ids_f + 128);
    const pf_half *lp = (const pf_half *)(lp_f + 128);
    /* the same rows through the library forward */
    pf_ctx *c = pf_ctx_new(m, 64, 1, NULL, err);
    CHECKF(c, "%s", err);
    int V = (int)m->hp.n_vocab;
    float *logits = malloc((size_t)N * V * sizeof *logits);
    pf_batch b = {.tokens = toks, .n = N, .logits_mode = PF_LOGITS_ALL, .logits = logits};
    CHECKF(pf_forward(c, &b, err) == 0, "%s", err);
    int checked = 0;
    for (int r = 0; r < N; r++) {
        const float *row = logits + (size_t)r * V;
        double mx = row[0], z = 0;
        for (int v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
        for (int v = 0; v < V; v++) z += exp(row[v] - mx);
        for (int j = 0; j < K; j++) {
            int id = ids[r * K + j], above = 0;
            for (int v = 0; v < V; v++) above += row[v] > row[id] || (row[v] == row[id] && v < id);
            CHECKF(above == j, "row %d rank %d: id %d has %d tokens before it", r, j, id, above);
            double want = row[id] - mx - log(z);
            CHECKF(fabs(pf_fp16_to_fp32(lp[r * K + j]) - want) < 2e-3 * (1 + fabs(want)), "row %d rank %d: %g vs %g", r, j,
                   pf_fp16_to_fp32(lp[r * K + j]), want);
            checked++;
        }
    }
    CHECK(checked == N * K);
    free(logits);
    free(ids_f);
    free(lp_f);
    pf_ctx_free(c);
    pf_model_free(m);
    /* --topk without --topk-out, and K above the vocabulary: one line, no output */
    remove(feats);
    snprintf(args, sizeof args, "taps -m %s --layers 0 -i %s -o %s --topk 4", model, seqs, feats);
    CHECK(test_run_cli(args, out, sizeof out, eout, sizeof eout) != 0 && strstr(eout, "--topk-out") && !test_exists(feats));
    snprintf(args, sizeof args, "taps -m %s --layers 0 -i %s -o %s --topk 256 --topk-out %s", model, seqs, feats, pre);
    remove(ids_p);
    int rc = test_run_cli(args, out, sizeof out, eout, sizeof eout);
    CHECKF(rc != 0 || V >= 256, "%s", eout);
    if (rc != 0) CHECK(!test_exists(feats) && !test_exists(ids_p) && test_count_lines(eout) == 1);
}
