#include "engine/constraint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sampler.h"
#include "engine/tokenizer.h"
#include "engine/tools.h"
#include "formats/grow.h"
#include "grammar/close_budget.h"
#include "grammar/schema.h"

struct pf_constraint {
    const pf_token_masker *tm;
    pf_schema *schema;
    pf_matcher *m;
    pf_mask_cache *cache;
    int n_vocab;
    size_t bits_pos; /* the position bits hold, 0: none */
    int n_allowed;
    /* the token budget (docs/structured-output.md): max_tokens, the closing distances, and the
     * matcher position after each token advanced, so a rollback also rolls back the count */
    int64_t budget;
    pf_close *close;
    size_t *tok_end;
    size_t n_tok, cap_tok;
    uint32_t bits[]; /* the mask: one word per 32 tokens, allocated with the struct */
};

pf_token_masker *pf_vocab_masker(const pf_tokenizer *t, int n, char err[PF_ERR_LEN]) {
    int n_tok = pf_tokenizer_n_vocab(t);
    const uint8_t **bytes = calloc((size_t)n, sizeof *bytes);
    uint32_t *lens = calloc((size_t)n, sizeof *lens);
    if (!bytes || !lens) {
        free(bytes);
        free(lens);
        snprintf(err, PF_ERR_LEN, "out of memory");
        return NULL;
    }
    for (int32_t id = 0; id < n && id < n_tok; id++) {
        int type = pf_tokenizer_token_type(t, id);
        if (type == PF_TOKEN_CONTROL || type == PF_TOKEN_UNKNOWN || type == PF_TOKEN_UNUSED) continue;
        size_t len = 0;
        const char *b = pf_token_bytes(t, id, &len);
        bytes[id] = (const uint8_t *)b;
        lens[id] = b ? (uint32_t)len : 0;
    }
    int32_t ends[2] = {pf_tokenizer_eos(t), pf_tokenizer_eot(t)};
    pf_token_masker *tm = pf_token_masker_new(n, bytes, lens, ends, 2, err);
    free(bytes);
    free(lens);
    return tm;
}

static pf_token_masker *build_masker(const pf_model *model, char err[PF_ERR_LEN]) {
    return pf_vocab_masker(model->tok, model->hp.n_vocab, err);
}

void pf_engine_masker_free(pf_engine_session *s) {
    pf_token_masker_free(s->masker);
    s->masker = NULL;
}

static pf_rc check_budget(pf_constraint *c, char err[PF_ERR_LEN]);

/* The compiled schema p asks for, its compiler's status as the call's. */
static bool tool_constraint(const pf_decode_params *p) {
    return p->tools && (p->tool_choice == PF_TOOLS_REQUIRED || p->tool_choice == PF_TOOLS_NAMED);
}

/* A reply that must call a tool: the tools' constraint (engine/tools.h). */
static pf_rc compile_tools(const pf_decode_params *p, pf_schema **out, char err[PF_ERR_LEN]) {
    if (p->json_schema || p->json_object) {
        snprintf(err, PF_ERR_LEN, "a reply cannot both call a tool (tool_choice) and be a JSON document (json_schema)");
        return PF_RC_ARG;
    }
    pf_tools t;
    pf_rc rc = pf_tools_parse(p->tools, strlen(p->tools), &t, err);
    if (rc == PF_RC_OK)
        rc = pf_tools_schema(&t, p->tool_choice == PF_TOOLS_NAMED ? (p->tool_name ? p->tool_name : "") : NULL, out, err);
    pf_tools_free(&t);
    return rc;
}

static pf_rc compile_schema(const pf_decode_params *p, pf_schema **out, char err[PF_ERR_LEN]) {
    if (tool_constraint(p)) return compile_tools(p, out, err);
    pf_schema_status r = p->json_schema ? pf_schema_compile(p->json_schema, strlen(p->json_schema), out, err)
                                        : pf_schema_json_object(out, err);
    return r == PF_SCHEMA_OK ? PF_RC_OK : r == PF_SCHEMA_NO_MEMORY ? PF_RC_OOM : PF_RC_ARG;
}

pf_rc pf_constraint_open(pf_engine_session *s, const pf_decode_params *p, pf_constraint **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    if (!p->json_schema && !p->json_object && !tool_constraint(p)) return PF_RC_OK;
    /* a loaded model's vocabulary is never empty: building its masker fails only for memory */
    if (!s->masker && !(s->masker = build_masker(s->model, err))) return PF_RC_OOM;
    pf_constraint *c = calloc(1, sizeof *c + (size_t)pf_token_masker_words(s->masker) * sizeof *c->bits);
    if (!c) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    c->tm = s->masker;
    c->n_vocab = s->model->hp.n_vocab;
    pf_rc rc = compile_schema(p, &c->schema, err);
    if (rc == PF_RC_OK) {
        c->m = pf_matcher_new(c->schema);
        c->cache = pf_mask_cache_new(c->tm);
        c->close = pf_close_new(c->schema);
        c->budget = p->max_tokens;
        if (!c->m || !c->cache || !c->close) {
            snprintf(err, PF_ERR_LEN, "out of memory");
            rc = PF_RC_OOM;
        }
    }
    if (rc == PF_RC_OK) rc = check_budget(c, err);
    if (rc != PF_RC_OK) pf_constraint_free(c);
    else *out = c;
    return rc;
}

void pf_constraint_free(pf_constraint *c) {
    if (!c) return;
    pf_close_free(c->close);
    free(c->tok_end);
    pf_mask_cache_free(c->cache);
    pf_matcher_free(c->m);
    pf_schema_free(c->schema);
    free(c);
}

/* The mask of the current position within the budget; *fits 0 when no token fits it. */
static void mask_now(pf_constraint *c, int *fits) {
    c->n_allowed = pf_token_mask_budget(c->tm, c->cache, c->m, c->close, c->budget - (int64_t)c->n_tok, c->bits, fits);
    c->bits_pos = pf_matcher_pos(c->m);
}

/* Before anything is generated: some first token leaves a document that closes within max_tokens. */
static pf_rc check_budget(pf_constraint *c, char err[PF_ERR_LEN]) {
    int fits;
    mask_now(c, &fits);
    if (fits) return PF_RC_OK;
    snprintf(err, PF_ERR_LEN, "max_tokens %lld is too small for the JSON schema: its shortest document takes %lld bytes",
             (long long)c->budget, (long long)pf_close_doc(c->close));
    return PF_RC_ARG;
}

const uint32_t *pf_constraint_mask(pf_constraint *c, int *n_allowed) {
    if (c->bits_pos != pf_matcher_pos(c->m)) {
        int fits;
        mask_now(c, &fits);
    }
    if (n_allowed) *n_allowed = c->n_allowed;
    return c->bits;
}

void pf_constraint_apply(pf_constraint *c, float *logits) { pf_constraint_apply_bits(c, pf_constraint_mask(c, NULL), logits); }

int pf_constraint_words(const pf_constraint *c) { return pf_token_masker_words(c->tm); }

void pf_constraint_apply_bits(const pf_constraint *c, const uint32_t *bits, float *logits) {
    pf_mask_apply_aligned(c->tm, bits, c->n_vocab, logits);
}

/* Why the shortcut gives the masked row's argmax: the argmax is the lowest id of the row's highest
 * score. When that token is allowed, no refused token scores above every allowed one, so the
 * aligned mask moves no score (pf_mask_apply_aligned) and only sets refused tokens to -inf; the
 * highest score stays the token's, and no lower id has it. */
int32_t pf_constraint_greedy_bits(const pf_constraint *c, const uint32_t *bits, float *logits) {
    int32_t t = pf_argmax(logits, c->n_vocab);
    if (pf_mask_has(bits, t)) return t;
    pf_constraint_apply_bits(c, bits, logits);
    return pf_argmax(logits, c->n_vocab);
}

int32_t pf_constraint_greedy(pf_constraint *c, float *logits) {
    return pf_constraint_greedy_bits(c, pf_constraint_mask(c, NULL), logits);
}

int32_t pf_constraint_align(pf_constraint *c, int32_t tok) {
    return pf_token_masker_allowed_prefix(c->tm, pf_constraint_mask(c, NULL), tok);
}

int32_t pf_constraint_forced(pf_constraint *c) {
    int n = 0;
    const uint32_t *bits = pf_constraint_mask(c, &n);
    if (n != 1) return -1;
    for (int w = 0; w * 32 < c->n_vocab; w++)
        if (bits[w]) {
            int32_t id = w * 32 + __builtin_ctz(bits[w]);
            return pf_token_masker_is_end(c->tm, id) ? -1 : id;
        }
    return -1;
}

int pf_constraint_advance(pf_constraint *c, int32_t tok) {
    if (pf_token_masker_is_end(c->tm, tok)) return pf_matcher_can_end(c->m) ? 1 : -1;
    uint32_t len = 0;
    const uint8_t *b = pf_token_masker_bytes(c->tm, tok, &len);
    if (!b || pf_matcher_push_bytes(c->m, b, len) != 1) return -1;
    c->bits_pos = 0; /* a position count names a state only until a rollback */
    size_t *te = pf_grow(c->tok_end, &c->cap_tok, c->n_tok + 1, sizeof *te, 64);
    if (te) c->tok_end = te;
    /* without memory for the count the budget goes unheld; the document still parses */
    if (te) c->tok_end[c->n_tok++] = pf_matcher_pos(c->m);
    return 0;
}

size_t pf_constraint_pos(const pf_constraint *c) { return pf_matcher_pos(c->m); }
void pf_constraint_rollback(pf_constraint *c, size_t pos) {
    pf_matcher_rollback(c->m, pos);
    while (c->n_tok && c->tok_end[c->n_tok - 1] > pos) c->n_tok--;
    c->bits_pos = 0;
}
int pf_constraint_done(const pf_constraint *c) { return pf_matcher_closed(c->m); }
