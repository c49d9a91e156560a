/* Structured output end to end on the committed stand-in (models/pf-target-f16.gguf): plain
 * decoding under a JSON Schema or JSON mode, greedy and sampled, gives documents that parse and
 * validate (eval/schema_valid.c); a bad schema fails before anything is generated; and every
 * speculative strategy gives constrained plain decoding's tokens under greedy. */
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "api/strategy.h"
#include "engine/batch.h"
#include "engine/constraint.h"
#include "engine/forward.h"
#include "engine/generate.h"
#include "engine/sampler.h"
#include "grammar/token_mask.h"
#include "engine/tokenizer.h"
#include "chi2.h"
#include "schema_check.h"
#include "test.h"
#include "util.h"
#include "verify/spec.h"
#include "verify/strategies.h"

static const char *const k_schemas[] = {
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"},"
    "\"kind\":{\"enum\":[\"person\",\"pet\"]}},\"required\":[\"name\",\"age\",\"kind\"],\"additionalProperties\":false}",
    "{\"enum\":[\"positive\",\"negative\",\"neutral\"]}",
    "{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":4}",
    "{\"type\":\"object\",\"properties\":{\"intent\":{\"enum\":[\"book\",\"cancel\",\"ask\"]},\"urgent\":{\"type\":\"boolean\"},"
    "\"date\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}},\"required\":[\"intent\",\"urgent\"]}",
    "{\"type\":\"object\",\"properties\":{\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":3},"
    "\"score\":{\"type\":\"number\"}},\"required\":[\"tags\",\"score\"],\"additionalProperties\":false}",
    NULL, /* JSON mode */
};
enum { N_SCHEMAS = sizeof k_schemas / sizeof *k_schemas };
static const char *const k_prompts[] = {
    "<|im_start|>user\nExtract the person: Maria Lopez, 34, is a nurse.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nClassify the sentiment: I loved this film!<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nList the primes below 10 as JSON.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nBook a table for two tomorrow, it is urgent.<|im_end|>\n<|im_start|>assistant\n",
};
enum { N_PROMPTS = sizeof k_prompts / sizeof *k_prompts };

/* Generate under schema k (greedy when temp is 0); the tokens to seq. */
static pf_status run_schema(test_pair *p, pf_strategy *strat, int k, int prompt, float temp, uint64_t seed, test_seq *seq,
                            pf_gen_stats *st, char err[PF_ERR_LEN]) {
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.max_tokens = 160;
    gp.temp = temp;
    gp.top_k = temp > 0 ? 40 : 0;
    gp.seed = seed;
    gp.json_schema = k_schemas[k];
    gp.json_object = !k_schemas[k];
    return test_pair_generate(p, strat, k_prompts[prompt], &gp, seq, st, err);
}

/* A complete document (stop at its end) parses and validates; one cut by the length is left. */
static int document_ok(test_pair *p, int k, const test_seq *seq, const pf_gen_stats *st, int *complete) {
    char text[8192];
    size_t n = test_seq_text(p->m, seq, text, sizeof text);
    if (n == (size_t)-1) return 0;
    if (st->stop != PF_STOP_EOT) return st->stop == PF_STOP_LENGTH;
    (*complete)++;
    int ok = pf_schema_valid_text(k_schemas[k] ? k_schemas[k] : "{\"type\":\"object\"}", text, n);
    if (!ok) fprintf(stderr, "schema %d: invalid document '%.*s'\n", k, (int)n, text);
    return ok;
}

/* Sampled plain decoding under every schema and prompt gives documents that validate (greedy's:
 * structured_spec_greedy_equals_plain_every_strategy, which validates its plain runs first). */
TEST(structured_plain_sampled_validates) {
    test_pair p;
    CHECK(test_pair_open(&p) == 0);
    char err[PF_ERR_LEN];
    int complete = 0, runs = 0;
    for (int k = 0; k < N_SCHEMAS; k++)
        for (int pi = 0; pi < N_PROMPTS; pi++, runs++) {
            test_seq seq;
            pf_gen_stats st;
            CHECKF(run_schema(&p, NULL, k, pi, 0.9f, 11 + (uint64_t)pi, &seq, &st, err) == PF_OK, "%s", err);
            CHECKF(document_ok(&p, k, &seq, &st, &complete), "schema %d prompt %d sampled", k, pi);
        }
    fprintf(stderr, "%d of %d documents complete within 160 tokens\n", complete, runs);
    CHECKF(complete * 2 >= runs, "only %d of %d documents complete", complete, runs);
    test_pair_close(&p);
}

TEST(structured_bad_schema_generates_nothing) {
    test_pair p;
    CHECK(test_pair_open(&p) == 0);
    pf_gen_params gp;
    pf_gen_params_default(&gp);
    gp.json_schema = "{\"type\":\"object\",\"properties\":{\"when\":{\"type\":\"string\",\"format\":\"idn-email\"}}}";
    test_seq seq = {.n = 0};
    char err[PF_ERR_LEN] = "";
    pf_status rc = pf_generate(p.s, "hi", 2, &gp, NULL, NULL, NULL, err);
    CHECK(rc == PF_ERR_ARG);
    CHECKF(strstr(err, "/properties/when: format: 'idn-email' is not supported"), "%s", err);
    int32_t prompt[2] = {10, 11};
    gp.json_schema = "{\"type\":\"object\",";
    CHECK(pf_generate_tokens(p.s, prompt, 2, &gp, test_seq_push, &seq, NULL, err) == PF_ERR_ARG && seq.n == 0);
    CHECKF(strstr(err, "json schema: byte") && !strchr(err, '\n'), "%s", err);
    test_pair_close(&p);
}

TEST(structured_cli_flags) {
    char schema[300], out[8192], errs[4096], cmd[900];
    test_tmp_path(schema, sizeof schema, "yesno.json");
    CHECK(test_write_file(schema, "{\"enum\":[\"yes\",\"no\"]}", (size_t)-1) == 0);
    snprintf(cmd, sizeof cmd, "run -m models/pf-target-f16.gguf -p 'Is water wet?' --chat -n 40 --json-schema %s", schema);
    CHECKF(RUN_CLI(cmd, out, errs) == 0, "%s", errs);
    CHECKF(!strcmp(out, "\"yes\"\n") || !strcmp(out, "\"no\"\n"), "%s", out);
    CHECK(RUN_CLI("run -m models/pf-target-f16.gguf -p 'Give JSON' --chat -n 300 --json", out, errs) == 0);
    CHECKF(out[0] == '{', "%s", out);
    CHECK(test_write_file(schema, "{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}", (size_t)-1) == 0);
    CHECK(RUN_CLI(cmd, out, errs) == 1);
    CHECKF(strstr(errs, "pattern: a backreference is not supported") && test_count_lines(errs) == 1, "%s", errs);
    CHECK(RUN_CLI("run -m models/pf-target-f16.gguf -p x --json --json-schema /dev/null", out, errs) == 1);
    CHECKF(strstr(errs, "give one of --json-schema FILE or --json"), "%s", errs);
}

/* gen: a line's own "schema" constrains that line (the enum's two values), the file's --json the
 * others; a "schema" that is neither an object nor a boolean fails the run naming the line, with
 * no output file. */
TEST(structured_gen_schema_per_line) {
    char in[300], outp[300], out[8192], errs[4096], cmd[1200];
    test_tmp_path(in, sizeof in, "gen-schema.jsonl");
    test_tmp_path(outp, sizeof outp, "gen-schema-out.jsonl");
    CHECK(test_write_file(in, "{\"id\": \"a\", \"prompt\": \"Is water wet?\", \"schema\": {\"enum\": [\"yes\", \"no\"]}}\n"
                              "{\"id\": \"b\", \"prompt\": \"Give JSON\"}\n", (size_t)-1) == 0);
    snprintf(cmd, sizeof cmd, "gen -m models/pf-target-f16.gguf -d models/pf-draft-dflash2.gguf -i %s -o %s -n 60 -t 1 --json",
             in, outp);
    CHECKF(RUN_CLI(cmd, out, errs) == 0, "%s", errs);
    char *o = test_slurp(outp, NULL);
    CHECK(o);
    const char *a = o ? strstr(o, "\"response\": ") : NULL, *b = a ? strstr(a + 1, "\"response\": ") : NULL;
    CHECKF(a && (!strncmp(a + 12, "\"\\\"yes\\\"\"", 9) || !strncmp(a + 12, "\"\\\"no\\\"\"", 8)), "%s", o);
    CHECKF(b && !strncmp(b + 12, "\"{", 2), "%s", o);
    free(o);
    CHECK(test_write_file(in, "{\"prompt\": \"x\"}\n{\"prompt\": \"y\", \"schema\": 3}\n", (size_t)-1) == 0);
    snprintf(cmd, sizeof cmd, "gen -m models/pf-target-f16.gguf -i %s -o %s.x -n 4 -t 1", in, outp);
    CHECK(RUN_CLI(cmd, out, errs) == 3); /* a line that is not a prompt record: a bad file */
    CHECKF(strstr(errs, ":2: \"schema\" must be a JSON Schema (an object or a boolean)") && test_count_lines(errs) == 1, "%s", errs);
    snprintf(cmd, sizeof cmd, "%s.x", outp);
    CHECK(!test_exists(cmd));
}

/* Greedy: plain decoding's documents under every schema and prompt validate (at least half of
 * them complete within 160 tokens), and every strategy over the committed DFlash2 draft gives
 * constrained plain decoding's tokens on every schema, with two of the four prompts each (turn
 * about, so every schema and prompt pair is decoded by two or three of the five strategies); the
 * schema's forced tokens are appended and accepted. */
TEST(structured_spec_greedy_equals_plain_every_strategy) {
    test_pair p;
    CHECK(test_pair_open(&p) == 0);
    char err[PF_ERR_LEN];
    static test_seq plain[N_SCHEMAS][N_PROMPTS];
    int complete = 0;
    for (int k = 0; k < N_SCHEMAS; k++)
        for (int pi = 0; pi < N_PROMPTS; pi++) {
            pf_gen_stats st;
            CHECKF(run_schema(&p, NULL, k, pi, 0, 0, &plain[k][pi], &st, err) == PF_OK, "%s", err);
            CHECKF(document_ok(&p, k, &plain[k][pi], &st, &complete), "schema %d prompt %d greedy", k, pi);
        }
    fprintf(stderr, "%d of %d greedy documents complete within 160 tokens\n", complete, N_SCHEMAS * N_PROMPTS);
    CHECKF(complete * 2 >= N_SCHEMAS * N_PROMPTS, "only %d of %d greedy documents complete", complete,
           N_SCHEMAS * N_PROMPTS);
    for (int ki = 0; ki < TEST_N_SPEC_KINDS; ki++) {
        pf_spec *spec = test_library_spec(p.s, p.draft, (pf_spec_kind)test_spec_kinds[ki], 0, err);
        CHECKF(spec, "%s", err);
        int64_t forced = 0, tokens = 0, rounds = 0;
        for (int k = 0; k < N_SCHEMAS; k++)
            for (int j = 0; j < 2; j++) {
                int pi = (k + ki + 2 * j) % N_PROMPTS;
                test_seq seq;
                pf_gen_stats st;
                CHECKF(run_schema(&p, pf_spec_strategy(spec), k, pi, 0, 0, &seq, &st, err) == PF_OK, "%s", err);
                CHECKF(test_seq_same(&seq, &plain[k][pi]), "%s: schema %d prompt %d differs from plain (%d vs %d tokens)",
                       pf_kind_name(test_spec_kinds[ki]), k, pi, seq.n, plain[k][pi].n);
                const pf_spec_stats *ss = pf_spec_stats_get(spec);
                forced += ss->forced;
                tokens += ss->tokens;
                rounds += ss->rounds;
            }
        fprintf(stderr, "%s: %lld rounds, %lld tokens, %lld forced\n", pf_kind_name(test_spec_kinds[ki]), (long long)rounds,
                (long long)tokens, (long long)forced);
        CHECK(forced > 0 || test_spec_kinds[ki] == PF_KIND_NGRAM || test_spec_kinds[ki] == PF_KIND_DEC || test_spec_kinds[ki] == PF_KIND_ADAPTIVE);
    }
    test_pair_close(&p);
}

/* Sampled: every strategy's documents validate; the adaptive strategies draft point masses and
 * accept with plain sampling's random numbers, so with a seed they give plain sampling's tokens. */
TEST(structured_spec_sampled_validates) {
    test_pair p;
    CHECK(test_pair_open(&p) == 0);
    char err[PF_ERR_LEN];
    int complete = 0;
    for (int ki = 0; ki < TEST_N_SPEC_KINDS; ki++) {
        pf_spec *spec = test_library_spec(p.s, p.draft, (pf_spec_kind)test_spec_kinds[ki], 0, err);
        CHECKF(spec, "%s", err);
        for (int k = 0; k < N_SCHEMAS; k++) {
            test_seq seq, ref;
            pf_gen_stats st;
            int pi = (k + ki) % N_PROMPTS;
            CHECKF(run_schema(&p, pf_spec_strategy(spec), k, pi, 0.9f, 7 + (uint64_t)k, &seq, &st, err) == PF_OK, "%s", err);
            CHECKF(document_ok(&p, k, &seq, &st, &complete), "%s schema %d", pf_kind_name(test_spec_kinds[ki]), k);
            if (test_spec_kinds[ki] != PF_KIND_ADAPTIVE && test_spec_kinds[ki] != PF_KIND_DEC) continue;
            CHECK(run_schema(&p, NULL, k, pi, 0.9f, 7 + (uint64_t)k, &ref, &st, err) == PF_OK);
            CHECKF(test_seq_same(&seq, &ref), "%s schema %d: sampled tokens differ from plain", pf_kind_name(test_spec_kinds[ki]), k);
        }
    }
    test_pair_close(&p);
}

typedef struct {
    pf_spec *spec;
    int64_t acc, drafted, forced;
} sample_tally;

static void tally_round(void *u) {
    sample_tally *t = u;
    const pf_spec_stats *st = pf_spec_stats_get(t->spec);
    t->acc += st->tokens - st->rounds;
    t->drafted += st->drafted;
    t->forced += st->forced;
}

/* Constrained plain decoding's exact distribution of the tokens at positions 1..n_pos of a
 * generation (0 is the prefill's sample): every path of its first n_pos + 1 tokens walked depth
 * first on the session's context, each node's distribution the one plain decoding samples from
 * (the constraint's mask on the target's row, then temperature and top-k: pick() in
 * engine/generate.c); the marginals added into exact[n_pos][V]. */
typedef struct {
    pf_engine_session *s;
    pf_constraint *c;
    pf_sampling smp;
    int n_prompt, n_pos, V, nodes;
    double *exact;
} exact_walk;

static int walk(exact_walk *w, int depth, double prob, char err[PF_ERR_LEN]) {
    pf_dist d;
    if (pf_dist_init(&d, w->V) != 0) return snprintf(err, PF_ERR_LEN, "out of memory"), -1;
    pf_constraint_apply(w->c, w->s->logits);
    pf_sampling_probs(&w->smp, w->s->logits, w->V, &d);
    w->nodes++;
    int rc = 0;
    for (int i = 0; i < d.n && rc == 0; i++) {
        double q = prob * d.p[i];
        if (depth >= 1) w->exact[(size_t)(depth - 1) * w->V + d.ids[i]] += q;
        if (depth == w->n_pos || q <= 0) continue;
        size_t pos = pf_constraint_pos(w->c);
        if (pf_constraint_advance(w->c, d.ids[i]) != 0) {
            snprintf(err, PF_ERR_LEN, "token %d at depth %d: not a step inside the document", d.ids[i], depth);
            rc = -1;
            break;
        }
        pf_kv_truncate(w->s->ctx->kv, w->n_prompt + depth);
        pf_batch b = {.tokens = &d.ids[i], .n = 1, .logits_mode = PF_LOGITS_LAST, .logits = w->s->logits};
        rc = pf_forward(w->s->ctx, &b, err) == PF_RC_OK ? walk(w, depth + 1, q, err) : -1;
        pf_constraint_rollback(w->c, pos);
    }
    pf_dist_free(&d);
    return rc;
}

/* exact[n_pos][V] for prompt ids under dp (top-k 4, temperature 1, as test_sample_counts draws). */
static double *exact_marginals(test_pair *p, const int32_t *ids, int n_ids, const pf_decode_params *dp, int n_pos,
                               int *nodes, char err[PF_ERR_LEN]) {
    exact_walk w = {.s = &p->s->engine, .smp = {dp->temp, dp->top_k, dp->top_p}, .n_prompt = n_ids, .n_pos = n_pos,
                    .V = p->m->hp.n_vocab};
    w.exact = calloc((size_t)n_pos * w.V, sizeof *w.exact);
    pf_session_reset(p->s);
    pf_batch b = {.tokens = ids, .n = n_ids, .logits_mode = PF_LOGITS_LAST, .logits = w.s->logits};
    int rc = w.exact && pf_constraint_open(w.s, dp, &w.c, err) == PF_RC_OK && w.c && pf_forward(w.s->ctx, &b, err) == PF_RC_OK
                 ? walk(&w, 0, 1.0, err)
                 : -1;
    pf_constraint_free(w.c);
    pf_session_reset(p->s);
    *nodes = w.nodes;
    if (rc == 0) return w.exact;
    free(w.exact);
    return NULL;
}

/* Sampled under a schema, speculative decoding with a stochastic draft (DFlash's own proposal
 * distributions, masked along the drafted path) has constrained plain decoding's distribution:
 * per position of the tokens after the first, a chi-square goodness of fit of the speculative
 * runs against plain decoding's exact distribution (exact_marginals), where a token plain decoding
 * cannot give fails at once. 750 runs against the exact distribution have the power of the
 * two-sample test of 1,500 runs a side (docs/testing.md). Drafts must be both kept (a few dozen
 * times at least) and rejected. */
TEST(structured_spec_sampled_same_distribution) {
    test_pair p;
    CHECK(test_pair_open(&p) == 0);
    char err[PF_ERR_LEN];
    const char *prompt = "<|im_start|>user\nGive three package priorities.<|im_end|>\n<|im_start|>assistant\n";
    const char *schema = "{\"type\":\"array\",\"items\":{\"enum\":[\"required\",\"important\",\"standard\","
                         "\"optional\",\"extra\"]},\"minItems\":3,\"maxItems\":3}";
    int32_t *ids = NULL;
    size_t n_ids = 0;
    CHECK(pf_tokenize(p.m->tok, prompt, strlen(prompt), true, &ids, &n_ids, err) == 0);
    enum { RUNS = 750, POS = 4 };
    /* what test_sample_counts asks of every run */
    pf_decode_params dp = {.json_schema = schema, .max_tokens = 64, .temp = 1.0f, .top_k = 4, .top_p = 1.0f};
    int nodes = 0;
    double *exact = exact_marginals(&p, ids, (int)n_ids, &dp, POS, &nodes, err);
    CHECKF(exact, "%s", err);
    pf_spec *spec = test_library_spec(p.s, p.draft, PF_SPEC_DFLASH, 4, err);
    CHECKF(spec, "%s", err);
    sample_tally tally = {spec, 0, 0, 0};
    test_sampling ts = {.s = p.s, .prompt = ids, .n_prompt = (int)n_ids, .runs = RUNS, .n_pos = POS,
                        .n_vocab = p.m->hp.n_vocab, .seed_mul = 7919, .seed_add = 3, .strategy = pf_spec_strategy(spec),
                        .after = tally_round, .u = &tally, .json_schema = schema, .strategy_only = 1};
    int *cnt = test_sample_counts(&ts, err);
    CHECKF(cnt, "%s", err);
    printf("    exact distribution from %d nodes; kept %lld of %lld drafts (%lld forced)\n", nodes, (long long)tally.acc,
           (long long)tally.drafted, (long long)tally.forced);
    CHECKF(tally.acc >= 30 && tally.acc < tally.drafted, "kept %lld of %lld drafts (%lld forced)",
           (long long)tally.acc, (long long)tally.drafted, (long long)tally.forced);
    char why[128];
    /* the speculative half of the counts (test_sample_counts's [1]) */
    CHECKF(pf_chi2_positions_fit(cnt + (size_t)POS * p.m->hp.n_vocab, exact, POS, p.m->hp.n_vocab, RUNS, why, sizeof why) < 0,
           "%s", why);
    free(cnt);
    free(exact);
    free(ids);
    test_pair_close(&p);
}

/* The greedy shortcut (pf_constraint_greedy_bits: the row's own argmax when allowed, else the
 * masked row's) against masking every row first (pf_constraint_apply_bits, then the argmax), on
 * rows of few distinct values (ties) and of spread ones, at states along a document where the top
 * token is often refused (then the aligned mask moves its score to an allowed prefix). */
TEST(structured_greedy_shortcut_is_the_masked_argmax) {
    test_pair p;
    CHECK(test_pair_open(&p) == 0);
    char err[PF_ERR_LEN];
    pf_decode_params dp = {.json_schema = k_schemas[0], .max_tokens = 160};
    pf_constraint *c = NULL;
    CHECKF(pf_constraint_open(&p.s->engine, &dp, &c, err) == PF_RC_OK && c, "%s", err);
    static const char doc[] = "{\"name\": \"Maria Lopez\", \"age\": 34, \"kind\": \"person\"}";
    int32_t *ids = NULL;
    size_t n_ids = 0;
    CHECKF(pf_tokenize(p.m->tok, doc, strlen(doc), false, &ids, &n_ids, err) == 0, "%s", err);
    const int V = p.m->hp.n_vocab, words = pf_constraint_words(c);
    float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
    uint32_t *bits = malloc((size_t)words * sizeof *bits);
    CHECK(a && b && bits);
    uint64_t x = 0x9E3779B97F4A7C15u;
    int shortcut = 0, masked = 0;
    for (size_t k = 0; k <= n_ids; k++) {
        memcpy(bits, pf_constraint_mask(c, NULL), (size_t)words * sizeof *bits);
        for (int r = 0; r < 64; r++) {
            for (int i = 0; i < V; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                a[i] = r & 1 ? (float)(x >> 62) : (float)(x >> 40) / (float)(1u << 24) * 20.0f - 10.0f;
            }
            memcpy(b, a, (size_t)V * sizeof *a);
            int32_t top = pf_argmax(a, V), got = pf_constraint_greedy_bits(c, bits, a);
            pf_constraint_apply_bits(c, bits, b);
            int32_t want = pf_argmax(b, V);
            CHECKF(got == want, "position %zu row %d: shortcut %d, masked argmax %d", k, r, got, want);
            if (pf_mask_has(bits, top)) shortcut++;
            else masked++;
        }
        if (k < n_ids) CHECK(pf_constraint_advance(c, ids[k]) == 0);
    }
    /* both branches were taken */
    CHECKF(shortcut > 0 && masked > 0, "rows with an allowed top %d, refused %d", shortcut, masked);
    free(ids);
    free(a);
    free(b);
    free(bits);
    pf_constraint_free(c);
    test_pair_close(&p);
}
