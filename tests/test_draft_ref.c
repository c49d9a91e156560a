/* The committed drafts (models/pf-draft-dflash.gguf, models/pf-draft-dflash2.gguf) against the
 * PyTorch reference models/pf-draft-ref.json (train/export_draft.py ref): the C engine rebuilds
 * the same context (target prefill over the ChatML prompt with the draft's taps ->
 * pf_dflash_append_context), proposes one greedy block of the reference's size (the drafts' trained block)
 * after the reference's bonus token, and
 *   - the logits of every draft row at the reference's top-8 ids agree within
 *     REL_TOL = 2e-3 of max(1, |largest reference logit of the row|) (F16 weights, f16 KV caches on both the
 *     target and the draft, f32 accumulation vs a float64 reference: ~1e-3 relative expected),
 *   - the greedy draft tokens (DFlash: argmax; DFlash2: the selector walk) are identical,
 *   - the target's own greedy token after the prompt is the reference's bonus.
 * PF_DRAFT_REF overrides the reference path (its "target"/"drafts" paths are relative to the
 * repository root, where the suite runs). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "draft/dflash.h"
#include "engine/batch.h"
#include "engine/forward.h"
#include "formats/json.h"
#include "test.h"

#define REL_TOL 2e-3

static const pf_json *arr_at(const pf_json *a, size_t i) {
    return a && a->type == PF_JSON_ARRAY && i < a->u.arr.n ? &a->u.arr.items[i] : NULL;
}
static size_t arr_len(const pf_json *a) { return a && a->type == PF_JSON_ARRAY ? a->u.arr.n : 0; }
static double num(const pf_json *v) { return v && v->type == PF_JSON_NUMBER ? v->u.num.d : NAN; }

/* One draft over every reference case; returns the worst relative logit error seen via *worst. */
static void check_draft(const pf_model *m, const char *path, const pf_json *cases, const char *key, int B, int topk,
                        double *worst) {
    char err[PF_ERR_LEN];
    pf_dflash *d = pf_dflash_load(path, m, err);
    CHECKF(d, "load %s: %s", path, err);
    CHECKF(pf_dflash_block_size(d) == B, "%s: block size %d, reference %d", path, pf_dflash_block_size(d), B);
    CHECKF(pf_dflash_version(d) == (strcmp(key, "dflash2") ? 1 : 2), "%s: version %d", path, pf_dflash_version(d));
    int n_taps;
    const int *tl = pf_dflash_tap_layers(d, &n_taps);
    const int H = m->hp.n_embd, V = m->hp.n_vocab;
    for (size_t ci = 0; ci < arr_len(cases) && !pf_test_failed(); ci++) {
        const pf_json *c = arr_at(cases, ci);
        const pf_json *pid = pf_json_get(c, "prompt_ids"), *dd = pf_json_get(c, key);
        const char *id = pf_json_get(c, "id") ? pf_json_get(c, "id")->u.str.s : "?";
        int P = (int)arr_len(pid);
        int32_t bonus = (int32_t)num(pf_json_get(c, "bonus"));
        CHECKF(P > 0 && dd, "%s: case %zu malformed", key, ci);
        int32_t *toks = malloc((size_t)P * sizeof *toks);
        float *taps = malloc((size_t)P * n_taps * H * sizeof(float)), *last = malloc((size_t)V * sizeof(float));
        for (int i = 0; i < P; i++) toks[i] = (int32_t)num(arr_at(pid, (size_t)i));
        pf_ctx *ctx = pf_ctx_new(m, P + 8, 2, NULL, err);
        pf_batch b = {.tokens = toks, .n = P, .logits_mode = PF_LOGITS_LAST, .logits = last, .tap_layers = tl,
                      .n_taps = n_taps, .taps = taps};
        int ok = ctx && pf_forward(ctx, &b, err) == 0;
        pf_ctx_free(ctx);
        pf_dflash_state *s = ok ? pf_dflash_state_new(d, P + B + 8, NULL, NULL, err) : NULL;
        ok = s && pf_dflash_append_context(s, taps, P, err) == 0;
        int32_t draft[64];
        ok = ok && pf_dflash_propose(s, bonus, B, NULL, NULL, draft, NULL, NULL, err) == 0;
        int am = 0;
        for (int v = 1; v < V; v++)
            if (last[v] > last[am]) am = v;
        int n_rows = 0;
        const float *lg = ok ? pf_dflash_last_logits(s, &n_rows) : NULL;
        free(toks);
        free(taps);
        free(last);
        if (!ok || !lg) {
            pf_dflash_state_free(s);
            pf_dflash_free(d);
            CHECKF(0, "%s/%s: %s", key, id, err);
        }
        if (am != bonus) {
            pf_dflash_state_free(s);
            pf_dflash_free(d);
            CHECKF(0, "%s/%s: the target's greedy token after the prompt is %d, reference bonus %d", key, id, am,
                   bonus);
        }
        const pf_json *top = pf_json_get(dd, "top"), *rt = pf_json_get(dd, "tokens");
        int bad = 0;
        for (int r = 0; r < B - 1 && !bad; r++) {
            const pf_json *row = arr_at(top, (size_t)r);
            double scale = 1;
            for (int j = 0; j < topk; j++) scale = fmax(scale, fabs(num(arr_at(arr_at(row, (size_t)j), 1))));
            for (int j = 0; j < topk; j++) {
                const pf_json *e = arr_at(row, (size_t)j);
                int tid = (int)num(arr_at(e, 0));
                double ref = num(arr_at(e, 1)), got = lg[(size_t)r * V + tid];
                double rel = fabs(got - ref) / scale;
                if (rel > *worst) *worst = rel;
                if (!(rel <= REL_TOL)) {
                    printf("    %s/%s row %d token %d: C %.6f vs reference %.6f (%.2e of %.3f)\n", key, id, r + 1,
                           tid, got, ref, rel, scale);
                    bad = 1;
                    break;
                }
            }
        }
        for (int r = 0; r < B - 1 && !bad; r++) {
            int want = (int)num(arr_at(rt, (size_t)r));
            if (draft[r] != want) {
                printf("    %s/%s: draft token %d is %d, reference %d\n", key, id, r + 1, draft[r], want);
                bad = 1;
            }
        }
        pf_dflash_state_free(s);
        if (bad) {
            pf_dflash_free(d);
            CHECKF(0, "%s/%s disagrees with the reference", key, id);
        }
    }
    pf_dflash_free(d);
}

TEST(draft_ref_committed_drafts_match_pytorch) {
    char err[PF_ERR_LEN];
    const char *ref = getenv("PF_DRAFT_REF") ? getenv("PF_DRAFT_REF") : "models/pf-draft-ref.json";
    pf_json_doc *doc = pf_json_parse_file(ref, err);
    CHECKF(doc, "%s", err);
    const pf_json *root = pf_json_root(doc), *drafts = pf_json_get(root, "drafts"), *cases = pf_json_get(root, "cases");
    const pf_json *tp = pf_json_get(root, "target");
    int B = (int)num(pf_json_get(root, "block")), topk = (int)num(pf_json_get(root, "topk"));
    if (!tp || tp->type != PF_JSON_STRING || !drafts || arr_len(cases) < 1 || B < 2 || B > 64 || topk < 1) {
        pf_json_free(doc);
        CHECKF(0, "%s: malformed reference", ref);
    }
    pf_model *m = pf_model_load(tp->u.str.s, err);
    if (!m) {
        pf_json_free(doc);
        CHECKF(0, "%s", err);
    }
    double worst = 0;
    static const char *const keys[2] = {"dflash", "dflash2"};
    for (int k = 0; k < 2 && !pf_test_failed(); k++) {
        const pf_json *f = pf_json_get(pf_json_get(drafts, keys[k]), "file");
        if (!f || f->type != PF_JSON_STRING) {
            printf("    %s: no \"%s\" draft\n", ref, keys[k]);
            continue;
        }
        check_draft(m, f->u.str.s, cases, keys[k], B, topk, &worst);
    }
    if (!pf_test_failed())
        printf("    %zu cases x 2 drafts: tokens identical, worst logit error %.2e relative (tolerance %.0e)\n",
               arr_len(cases), worst, REL_TOL);
    pf_model_free(m);
    pf_json_free(doc);
}
