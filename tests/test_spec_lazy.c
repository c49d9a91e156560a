/* A batch slot's deferred drafter context (verify/spec_lazy.c): a calibrated adaptive strategy
 * that may defer keeps its prompt's rows and its plain steps' rows, and builds the drafter's
 * context from them at its first draft; that draft and the drafter's hidden rows are the eager
 * strategy's bit for bit (the drafter handed the same rows in one call instead of several). */
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "draft/draft_open.h"
#include "engine/batch.h"
#include "test.h"
#include "util.h"
#include "verify/spec_impl.h"
#include "verify/strategies.h"

typedef struct {
    pf_session *s;
    pf_drafter *d;
    pf_spec *sp;
} side;

/* One side: its own session (cache), drafter and adaptive strategy over draft w, begun on the
 * prompt (prefilled with the strategy's taps), then `plain` plain steps; lazy: the batch's leave to
 * defer. */
static void side_run(pf_model *m, const pf_dflash *w, const pf_dec *dec, const int32_t *ids, int n, int lazy, int plain,
                     side *o) {
    char err[PF_ERR_LEN];
    pf_session_params p = {.n_threads = 2, .n_ctx = 256};
    CHECK(pf_session_new(m, &p, &o->s, err) == PF_OK);
    pf_strategy_desc desc = {.kind = PF_KIND_DEC};
    pf_strategy_desc_draft(&desc, w, dec);
    pf_strategy_plan plan;
    CHECKF(pf_strategy_plan_make(&desc, &plan, err) == 0, "%s", err);
    pf_engine_session *e = &o->s->engine;
    CHECK(pf_drafter_for(&plan, w, 0, e, &o->d, err) == PF_RC_OK);
    CHECKF(pf_strategy_build(e, &plan, o->d, dec, &o->sp, err) == PF_RC_OK, "%s", err);
    o->sp->lazy_ok = lazy;
    o->sp->calibrated = 1; /* as a batch slot that inherited its calibration */
    pf_strategy *st = pf_spec_strategy(o->sp);
    size_t row = (size_t)st->n_taps * m->hp.n_embd;
    float *taps = malloc((size_t)n * row * sizeof(float));
    pf_batch b = {.kv = e->ctx->kv, .tokens = ids, .n = n, .logits_mode = PF_LOGITS_LAST, .logits = e->logits,
                  .tap_layers = st->tap_layers, .n_taps = st->n_taps, .taps = taps};
    CHECK(taps && pf_forward(e->ctx, &b, err) == PF_RC_OK);
    CHECKF(st->begin(st->state, e, ids, n, taps, err) == PF_RC_OK, "%s", err);
    free(taps);
    CHECKF(o->sp->lazy == lazy, "lazy %d after begin, wanted %d", o->sp->lazy, lazy);
    int32_t last = ids[n - 1] == 7 ? 8 : 7, out[PF_MAX_BLOCK];
    for (int k = 0, n_out = 0; k < plain; k++) {
        pf_spec_round_state r;
        CHECK(pf_spec_round_draft(o->sp, last, 64, 1, &r, &b, err) == PF_RC_OK);
        CHECK(pf_forward(e->ctx, &b, err) == PF_RC_OK);
        CHECK(pf_spec_round_finish(o->sp, &r, 0, out, &n_out, err) == PF_RC_OK && n_out == 1);
        last = out[0];
    }
    CHECKF(o->sp->lazy == lazy && (!lazy || o->sp->n_lz == n + plain), "lazy %d with %d rows waiting", o->sp->lazy,
           o->sp->n_lz);
    pf_spec_round_state r;
    CHECK(pf_spec_round_draft(o->sp, last, 64, 5, &r, &b, err) == PF_RC_OK);
    CHECK(!o->sp->lazy && r.nd == 4);
}

static void side_free(side *o) {
    pf_spec_free(o->sp);
    pf_drafter_free(o->d);
    pf_session_free(o->s);
}

TEST(spec_lazy_context_drafts_as_eager) {
    char err[PF_ERR_LEN];
    pf_model *m = pf_model_load("models/pf-target-f16.gguf", err);
    CHECKF(m, "%s", err);
    pf_dflash *w = NULL;
    pf_dec *dec = NULL;
    CHECKF(pf_draft_open(m, "models/pf-draft-dflash2.gguf", &w, &dec, err) == PF_RC_OK && dec, "%s", err);
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK(test_chat_tokens(m, "Tell me a story about a fox and a crow.", &ids, &n, err) == 0);
    for (int plain = 0; plain <= 3; plain += 3) {
        side eager = {0}, lazy = {0};
        side_run(m, w, dec, ids, (int)n, 0, plain, &eager);
        side_run(m, w, dec, ids, (int)n, 1, plain, &lazy);
        CHECKF(!memcmp(eager.sp->rows, lazy.sp->rows, 5 * sizeof(int32_t)), "%d plain steps: other drafts", plain);
        int ne = 0, nl = 0, de = 0, dl = 0;
        const float *he = eager.d->hidden(eager.d->state, &ne, &de), *hl = lazy.d->hidden(lazy.d->state, &nl, &dl);
        CHECKF(he && hl && ne == nl && de == dl && !memcmp(he, hl, (size_t)ne * de * sizeof(float)),
               "%d plain steps: the drafter's hidden rows differ", plain);
        side_free(&eager);
        side_free(&lazy);
    }
    free(ids);
    pf_dec_free(dec);
    pf_dflash_free(w);
    pf_model_free(m);
}
