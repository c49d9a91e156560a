/* The committed stand-in target against PyTorch (models/pf-target-ref.json, written by the
 * training recipe from the weights read back from the GGUF, in float64): next-token logits of
 * every prompt position and the 64-token greedy continuation; and the C tokenizer against the
 * Python encoder on every eval prompt (eval/tasks/token_ids.jsonl). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/chat.h"
#include "engine/batch.h"
#include "engine/forward.h"
#include "engine/sampler.h"
#include "engine/tokenizer.h"
#include "formats/json.h"
#include "test.h"
#include "util.h"

#define TARGET "models/pf-target-f16.gguf"

static int ids_equal(const pf_json *arr, const int32_t *ids, size_t n) {
    if (!arr || arr->type != PF_JSON_ARRAY || arr->u.arr.n != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (arr->u.arr.items[i].u.num.i != ids[i]) return 0;
    return 1;
}

/* Logit tolerance: F16 weights are exact in both; the engine computes in float32 and keeps K/V in
 * f16 (rounding ~5e-4 relative), PyTorch in float64 with exact K/V. */
#define LOGIT_TOL 2e-3

TEST(target_ref_logits_and_greedy_match_pytorch) {
    char err[PF_ERR_LEN];
    pf_json_doc *doc = pf_json_parse_file("models/pf-target-ref.json", err);
    CHECKF(doc, "%s", err);
    pf_model *m = pf_model_load(TARGET, err);
    CHECKF(m, "%s", err);
    const pf_json *prompts = pf_json_get(pf_json_root(doc), "prompts");
    CHECK(prompts && prompts->type == PF_JSON_ARRAY && prompts->u.arr.n >= 8);
    const int V = m->hp.n_vocab;
    double worst = 0;
    for (size_t pi = 0; pi < prompts->u.arr.n; pi++) {
        const pf_json *p = &prompts->u.arr.items[pi];
        const pf_json *text = pf_json_get(p, "prompt"), *pids = pf_json_get(p, "prompt_ids");
        const pf_json *top = pf_json_get(p, "top20"), *greedy = pf_json_get(p, "greedy_ids");
        int32_t *ids = NULL;
        size_t n = 0;
        CHECK(test_chat_tokens(m, text->u.str.s, &ids, &n, err) == 0);
        CHECKF(ids_equal(pids, ids, n), "prompt %zu: C tokenizer ids differ from PyTorch's", pi);
        CHECK(top && top->u.arr.n == n);
        pf_ctx *c = pf_ctx_new(m, 512, 2, NULL, err);
        float *lg = malloc((size_t)n * V * sizeof(float));
        pf_batch b = {.tokens = ids, .n = (int)n, .logits_mode = PF_LOGITS_ALL, .logits = lg};
        CHECK(pf_forward(c, &b, err) == 0);
        for (size_t pos = 0; pos < n; pos++) {
            const pf_json *row = &top->u.arr.items[pos];
            double scale = fabs(row->u.arr.items[0].u.arr.items[1].u.num.d);
            if (scale < 1) scale = 1;
            for (size_t j = 0; j < row->u.arr.n; j++) {
                int64_t id = row->u.arr.items[j].u.arr.items[0].u.num.i;
                double ref = row->u.arr.items[j].u.arr.items[1].u.num.d;
                double e = fabs(lg[pos * V + id] - ref) / scale;
                if (e > worst) worst = e;
            }
        }
        /* greedy continuation, one row at a time */
        int32_t t = pf_argmax(lg + (n - 1) * V, V);
        size_t ng = greedy->u.arr.n, k;
        for (k = 0; k < ng; k++) {
            CHECKF(t == greedy->u.arr.items[k].u.num.i, "prompt %zu: greedy token %zu is %d, PyTorch has %lld", pi, k, t,
                   (long long)greedy->u.arr.items[k].u.num.i);
            if (k + 1 == ng) break;
            b = (pf_batch){.tokens = &t, .n = 1, .logits_mode = PF_LOGITS_LAST, .logits = lg};
            CHECK(pf_forward(c, &b, err) == 0);
            t = pf_argmax(lg, V);
        }
        free(lg);
        free(ids);
        pf_ctx_free(c);
    }
    printf("    max logit error vs PyTorch: %.2e of the top logit\n", worst);
    CHECKF(worst < LOGIT_TOL, "max logit error %.3g (relative to the top logit) >= %.3g", worst, LOGIT_TOL);
    pf_model_free(m);
    pf_json_free(doc);
}

/* Every eval prompt: C encoding == Python encoding, and decoding gives the text back. */
TEST(target_tokenizer_agrees_with_python_on_eval_prompts) {
    char err[PF_ERR_LEN];
    pf_model *m = pf_model_load(TARGET, err);
    CHECKF(m, "%s", err);
    FILE *f = fopen("eval/tasks/token_ids.jsonl", "rb");
    CHECK(f);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int checked = 0;
    static const char *const types[] = {"chat", "code", "extraction", "math", "qa", "rewrite", "summary"};
    /* Python's ids, one line per eval prompt */
    size_t n_ids_lines = 0;
    char **id_lines = NULL;
    while ((len = getline(&line, &cap, f)) > 1) {
        id_lines = realloc(id_lines, (n_ids_lines + 1) * sizeof *id_lines);
        id_lines[n_ids_lines++] = strndup(line, (size_t)len);
    }
    fclose(f);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        char path[128];
        snprintf(path, sizeof path, "eval/tasks/%s.jsonl", types[t]);
        FILE *tf = fopen(path, "rb");
        while ((len = getline(&line, &cap, tf)) > 1) {
            pf_json_doc *d = pf_json_parse(line, (size_t)len - 1, err);
            const pf_json *id = pf_json_get(pf_json_root(d), "id"), *text = pf_json_get(pf_json_root(d), "prompt");
            pf_json_doc *match = NULL;
            for (size_t k = 0; k < n_ids_lines && !match; k++) {
                pf_json_doc *e = pf_json_parse(id_lines[k], strlen(id_lines[k]) - 1, err);
                if (e && pf_json_str_eq(pf_json_get(pf_json_root(e), "id"), id->u.str.s)) match = e;
                else pf_json_free(e);
            }
            CHECKF(match, "%s: no Python ids for %s", path, id->u.str.s);
            int32_t *ids = NULL;
            size_t n = 0;
            CHECK(pf_tokenize(m->tok, text->u.str.s, text->u.str.len, false, &ids, &n, err) == 0);
            CHECKF(ids_equal(pf_json_get(pf_json_root(match), "ids"), ids, n), "%s: C and Python encodings differ",
                   id->u.str.s);
            /* decode back */
            char *back = malloc(text->u.str.len + 64);
            size_t at = 0;
            for (size_t k = 0; k < n; k++) {
                size_t bl;
                const char *bytes = pf_token_bytes(m->tok, ids[k], &bl);
                if (at + bl <= text->u.str.len) memcpy(back + at, bytes, bl);
                at += bl;
            }
            CHECKF(at == text->u.str.len && !memcmp(back, text->u.str.s, at), "%s: decode(encode) differs", id->u.str.s);
            free(back);
            free(ids);
            pf_json_free(match);
            pf_json_free(d);
            checked++;
        }
        fclose(tf);
    }
    for (size_t k = 0; k < n_ids_lines; k++) free(id_lines[k]);
    free(id_lines);
    free(line);
    CHECKF(checked >= 7 * 40, "only %d eval prompts checked", checked);
    pf_model_free(m);
}
