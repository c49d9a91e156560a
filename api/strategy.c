/* pf_gen_params -> strategy through the strategy factory (verify/strategies.h): the draft,
 * pf_spec_kind, block, profile; the session keeps what it built (api_spec) until the parameters
 * change. */
#include "api/strategy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/draft.h"
#include "verify/spec.h"
#include "verify/strategies.h"

/* A tuned profile's choice as the adaptive planner's prior (copied out of the profile file). */
typedef struct {
    int on;
    double c[PF_MAX_BLOCK + 1], draft[PF_MAX_BLOCK + 1], alpha[PF_MAX_BLOCK];
    int n, n_alpha;
} api_prior;

typedef struct {
    /* what it was built for */
    const pf_draft *draft;
    pf_kind kind;
    int asked, ngram_n, draft_head; /* asked: the block requested (0 = default) */
    api_prior prior;
    int block;                      /* the block in use */
    pf_drafter *drafter;
    pf_spec *spec;
} api_spec;

static void api_spec_clear(api_spec *a) {
    pf_spec_free(a->spec);
    pf_drafter_free(a->drafter);
    memset(a, 0, sizeof *a);
}

static void api_spec_free(void *p) {
    if (!p) return;
    api_spec_clear(p);
    free(p);
}

static void prior_copy(const pf_strategy_plan *plan, api_prior *prior) {
    memset(prior, 0, sizeof *prior); /* compared with memcmp: zeroed whole, padding included */
    if (!plan->use_prior) return;
    const pf_spec_prior *sp = &plan->prior;
    prior->on = 1;
    prior->n = sp->c ? sp->n : 0;
    for (int i = 0; i < prior->n; i++) prior->c[i] = sp->c[i], prior->draft[i] = sp->draft[i];
    prior->n_alpha = sp->n_alpha;
    for (int i = 0; i < sp->n_alpha; i++) prior->alpha[i] = sp->alpha[i];
}

/* The session's description resolved by the strategy factory (verify/strategies.h). */
static pf_status plan_of(const pf_gen_params *p, pf_strategy_plan *plan, api_prior *prior,
                         char err[PF_ERR_LEN]) {
    static const pf_kind kinds[] = {PF_KIND_DEFAULT, PF_KIND_AR, PF_KIND_DFLASH, PF_KIND_NGRAM, PF_KIND_DEC,
                                    PF_KIND_ADAPTIVE};
    pf_strategy_desc d = {.kind = kinds[p->spec], .block = p->block, .task = p->task, .profile_name = p->profile,
                          .has_draft = p->draft != NULL, .draft_has_dec = p->draft && p->draft->dec};
    pf_profile prof;
    if (p->profile) {
        if (pf_profile_load(p->profile, &prof, err) < 0) return PF_ERR_FORMAT;
        d.profile = &prof;
    }
    int rc = pf_strategy_plan_make(&d, plan, err);
    if (rc == 0) prior_copy(plan, prior);
    if (p->profile) pf_profile_free(&prof);
    return rc < 0 ? PF_ERR_ARG : PF_OK;
}

static pf_status build(api_spec *a, pf_session *s, char err[PF_ERR_LEN]) {
    int trained = PF_NGRAM_BLOCK;
    if (!(a->drafter = pf_drafter_for(a->kind, a->draft ? a->draft->weights : NULL, s, a->ngram_n, err)))
        return PF_ERR_OOM;
    if (a->kind != PF_KIND_NGRAM) {
        trained = pf_dflash_block_size(a->draft->weights);
        if (pf_drafter_apply_head(a->drafter, a->draft_head, err) < 0) return PF_ERR_ARG;
    }
    pf_strategy_plan plan = {.kind = a->kind, .block = a->asked, .use_prior = a->prior.on};
    plan.prior = (pf_spec_prior){.c = a->prior.n ? a->prior.c : NULL, .draft = a->prior.draft, .n = a->prior.n,
                                 .alpha = a->prior.n_alpha ? a->prior.alpha : NULL, .n_alpha = a->prior.n_alpha};
    if (!(a->spec = pf_strategy_build(s, &plan, a->drafter, trained, a->draft ? a->draft->dec : NULL, err)))
        return PF_ERR_OOM;
    a->block = pf_spec_block(a->spec);
    return PF_OK;
}

pf_status pf_api_strategy(pf_session *s, const pf_gen_params *p, pf_strategy **strategy, pf_spec **spec, int *block,
                          char err[PF_ERR_LEN]) {
    *strategy = p->strategy;
    *spec = NULL;
    *block = 0;
    if (p->strategy) return PF_OK;
    int ngram_n = p->ngram_n ? p->ngram_n : 3;
    if ((int)p->spec < PF_SPEC_DEFAULT || p->spec > PF_SPEC_ADAPTIVE) {
        snprintf(err, PF_ERR_LEN, "unknown strategy %d", (int)p->spec);
        return PF_ERR_ARG;
    }
    if (p->block && (p->block < 2 || p->block > PF_MAX_BLOCK)) {
        snprintf(err, PF_ERR_LEN, "block %d is outside 2..%d", p->block, PF_MAX_BLOCK);
        return PF_ERR_ARG;
    }
    if (ngram_n < 1 || ngram_n > 16) {
        snprintf(err, PF_ERR_LEN, "ngram_n %d is outside 1..16", ngram_n);
        return PF_ERR_ARG;
    }
    if (p->draft_head < -1) {
        snprintf(err, PF_ERR_LEN, "draft_head %d: expected -1 (whole vocabulary), 0 (default) or N", p->draft_head);
        return PF_ERR_ARG;
    }
    if (p->draft && p->draft->target != s->model) {
        snprintf(err, PF_ERR_LEN, "the draft was loaded for another model");
        return PF_ERR_ARG;
    }
    pf_strategy_plan plan;
    api_prior prior;
    pf_status rc = plan_of(p, &plan, &prior, err);
    if (rc != PF_OK || plan.kind == PF_KIND_AR) return rc;
    if (!s->ext) {
        if (!(s->ext = calloc(1, sizeof(api_spec)))) {
            snprintf(err, PF_ERR_LEN, "out of memory");
            return PF_ERR_OOM;
        }
        s->ext_free = api_spec_free;
    }
    api_spec *a = s->ext;
    pf_kind kind = plan.kind;
    const pf_draft *draft = kind == PF_KIND_NGRAM ? NULL : p->draft;
    int head = kind == PF_KIND_NGRAM ? 0 : p->draft_head;
    if (!a->spec || a->kind != kind || a->draft != draft || a->asked != plan.block || a->draft_head != head ||
        (kind == PF_KIND_NGRAM && a->ngram_n != ngram_n) || memcmp(&a->prior, &prior, sizeof prior)) {
        api_spec_clear(a); /* parameters changed: a new drafter (the engine then prefills afresh) */
        *a = (api_spec){.draft = draft, .kind = kind, .asked = plan.block, .ngram_n = ngram_n, .draft_head = head};
        memcpy(&a->prior, &prior, sizeof prior);
        rc = build(a, s, err);
        if (rc != PF_OK) {
            api_spec_clear(a);
            return rc;
        }
    }
    *strategy = pf_spec_strategy(a->spec);
    *spec = a->spec;
    *block = a->block;
    return PF_OK;
}

void pf_api_round_stats(const pf_spec *spec, int block, pf_gen_stats *st) {
    if (!spec) return;
    const pf_spec_stats *r = pf_spec_stats_get(spec);
    st->block = block;
    st->rounds = r->rounds;
    st->round_tokens = r->tokens;
    st->drafted = r->drafted;
    st->accepted = r->tokens - r->rounds;
    st->tau = pf_spec_tau(r);
    st->acceptance = r->drafted ? (double)st->accepted / (double)r->drafted : 0.0;
    st->draft_s = r->t_draft;
    st->context_s = r->t_ctx;
    st->verify_s = r->t_verify;
    st->accept_s = r->t_accept;
    double other = r->t_total - r->t_draft - r->t_ctx - r->t_verify - r->t_accept;
    st->other_s = other > 0 ? other : 0;
    st->prompt_context_s = r->t_prompt_ctx;
}
