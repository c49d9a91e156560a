/* Measurement behind docs/performance.md "Structured output" (not part of the build): the JSON
 * Schema constraint's cost per generated token on a real vocabulary. The document (valid against
 * the schema) is tokenized with the GGUF's tokenizer and replayed through a fresh constraint as
 * generation does: at each position the mask (cached per state, fresh cache per document), applied
 * to a logits row, then the token advanced. Reps documents in a row; the first pays for building
 * the vocabulary's tries, which a session keeps. The row is a fixed pseudo-random one, copied in
 * before each application; the same replay with the plain mask (pf_mask_apply) instead of the
 * aligned one the engine applies (pf_mask_apply_aligned) gives the alignment's share. A third replay
 * is greedy decoding as the engine does it (pf_constraint_greedy_bits's rule): the row's top score
 * put on the document's next token, as a model writing that document would, so its argmax is
 * allowed and the row is not masked.
 *   cc -O2 -std=c11 -D_GNU_SOURCE -I. -Iinclude tools/mask_bench.c libpocketflash.a -lzstd -lxxhash -lm -pthread
 * With BUDGET, every mask is the one within that max_tokens (pf_token_mask_budget, the closing
 * distances measured after each token a state's first walk accepts; docs/structured-output.md).
 *   cc -O2 -std=c11 -D_GNU_SOURCE -I. -Iinclude tools/mask_bench.c libpocketflash.a -lzstd -lxxhash -lm -pthread
 *   a.out VOCAB.gguf SCHEMA.json DOCUMENT.json REPS [BUDGET] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/clock.h"
#include "engine/constraint.h"
#include "engine/sampler.h"
#include "engine/tokenizer.h"
#include "grammar/close_budget.h"
#include "grammar/matcher.h"
#include "grammar/schema.h"
#include "grammar/token_mask.h"

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = calloc(1, 1 << 20);
    *n = b ? fread(b, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    while (b && *n && (b[*n - 1] == '\n' || b[*n - 1] == ' ')) b[--*n] = 0;
    return b;
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6)
        return fprintf(stderr, "usage: mask_bench VOCAB.gguf SCHEMA.json DOCUMENT.json REPS [BUDGET]\n"), 2;
    long long budget = argc == 6 ? atoll(argv[5]) : -1;
    char err[PF_ERR_LEN];
    size_t n_schema = 0, n_doc = 0;
    char *schema = slurp(argv[2], &n_schema), *doc = slurp(argv[3], &n_doc);
    pf_tokenizer *t;
    pf_tokenizer_load_file(argv[1], &t, err);
    if (!t || !schema || !doc) return fprintf(stderr, "%s\n", t ? "cannot read the schema or document" : err), 1;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (pf_tokenize(t, doc, n_doc, false, &ids, &n_ids, err) != PF_RC_OK) return fprintf(stderr, "%s\n", err), 1;
    double t0 = pf_now_s();
    pf_token_masker *tm = pf_vocab_masker(t, pf_tokenizer_n_vocab(t), err);
    double t_build = pf_now_s() - t0;
    pf_schema *s = NULL;
    pf_schema_compile(schema, n_schema, &s, err);
    if (!tm || !s) return fprintf(stderr, "%s\n", err), 1;
    pf_close *cl = budget >= 0 ? pf_close_new(s) : NULL;
    int V = pf_tokenizer_n_vocab(t), reps = atoi(argv[4]), words = pf_token_masker_words(tm), forced = 0;
    float *logits = calloc((size_t)V, sizeof *logits), *row = malloc((size_t)V * sizeof *row);
    uint32_t *bits = malloc((size_t)words * sizeof *bits);
    uint64_t x = 88172645463325252u;
    for (int i = 0; row && i < V; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        row[i] = (float)(x >> 40) / (float)(1u << 24) * 20.0f - 10.0f;
    }
    double best = 1e9, first = 0, best_plain = 1e9, best_greedy = 1e9;
    for (int r = 0; r < 3 * reps; r++) {
        int plain = r >= reps && r < 2 * reps, greedy = r >= 2 * reps; /* then the plain mask, then greedy */
        pf_matcher *m = pf_matcher_new(s);
        pf_mask_cache *cache = pf_mask_cache_new(tm);
        double a = pf_now_s();
        for (size_t i = 0; i < n_ids; i++) {
            int fits = 1;
            int n = cl ? pf_token_mask_budget(tm, cache, m, cl, budget - (long long)i, bits, &fits)
                       : pf_token_mask(tm, cache, m, bits);
            memcpy(logits, row, (size_t)V * sizeof *row);
            if (greedy) {
                logits[ids[i]] = 11.0f; /* above the row's range */
                int32_t t = pf_argmax(logits, V);
                if (!pf_mask_has(bits, t)) {
                    pf_mask_apply_aligned(tm, bits, V, logits);
                    t = pf_argmax(logits, V);
                }
                if (t != ids[i]) return fprintf(stderr, "greedy picked %d, not the document's %d\n", t, ids[i]), 1;
            } else if (plain) pf_mask_apply(bits, V, logits);
            else pf_mask_apply_aligned(tm, bits, V, logits);
            if (r == 0) forced += n == 1;
            uint32_t len = 0;
            const uint8_t *tb = pf_token_masker_bytes(tm, ids[i], &len);
            if (!pf_mask_has(bits, ids[i]) || pf_matcher_push_bytes(m, tb, len) != 1)
                return fprintf(stderr, "token %zu (%d) refused: the document does not fit the schema\n", i, ids[i]), 1;
        }
        double dt = pf_now_s() - a;
        if (r == 0) first = dt;
        if (plain && dt < best_plain) best_plain = dt;
        if (greedy && dt < best_greedy) best_greedy = dt;
        if (!plain && !greedy && dt < best) best = dt;
        pf_mask_cache_free(cache);
        pf_matcher_free(m);
    }
    printf("vocabulary %d tokens (tries built in %.1f ms), document %zu tokens (%d forced); constraint per token: "
           "first document %.1f us, best of %d %.1f us (with the plain mask %.1f us; greedy, the row's top allowed, %.1f us)\n",
           V, t_build * 1e3, n_ids, forced, first / (double)n_ids * 1e6, reps, best / (double)n_ids * 1e6,
           best_plain / (double)n_ids * 1e6, best_greedy / (double)n_ids * 1e6);
    return 0;
}
