/* pf_gen_params -> strategy: the parameters as a description for the one resolver
 * (verify/plan.h), its plan built by the strategy factory (verify/strategies.h) over the loaded
 * draft; the session keeps what it built (api_spec) until the plan changes. */
#include "api/strategy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/draft.h"
#include "api/api_session.h"
#include "api/status.h"
#include "verify/spec.h"
#include "verify/strategies.h"

struct api_spec {
    const pf_draft *draft; /* what it was built for */
    pf_strategy_plan plan;
    pf_drafter *drafter;
    pf_spec *spec;
};

static void api_spec_clear(api_spec *a) {
    pf_spec_free(a->spec);
    pf_drafter_free(a->drafter);
    memset(a, 0, sizeof *a);
}

void pf_api_spec_free(api_spec *a) {
    if (!a) return;
    api_spec_clear(a);
    free(a);
}

_Static_assert(PF_KIND_DEFAULT == (int)PF_SPEC_DEFAULT && PF_KIND_PLAIN == (int)PF_SPEC_PLAIN &&
                   PF_KIND_DFLASH == (int)PF_SPEC_DFLASH && PF_KIND_NGRAM == (int)PF_SPEC_NGRAM &&
                   PF_KIND_DEC == (int)PF_SPEC_DEC && PF_KIND_ADAPTIVE == (int)PF_SPEC_ADAPTIVE &&
                   PF_KIND_HYBRID == (int)PF_SPEC_HYBRID,
               "the strategy kinds are the public pf_spec_kind values");

/* The parameters resolved (verify/plan.h). */
static pf_status plan_of(const pf_gen_params *p, pf_strategy_plan *plan, char err[PF_ERR_LEN]) {
    if ((int)p->spec < PF_SPEC_DEFAULT || p->spec > PF_SPEC_HYBRID) {
        snprintf(err, PF_ERR_LEN, "unknown strategy %d", (int)p->spec);
        return PF_ERR_ARG;
    }
    pf_strategy_desc d = {.kind = (pf_kind)p->spec, .block = p->block, .draft_head = p->draft_head,
                          .ngram_n = p->ngram_n, .task = p->task, .profile_name = p->profile,
                          .has_draft = p->draft != NULL, .draft_has_dec = p->draft && p->draft->dec,
                          .draft_block = p->draft ? pf_dflash_block_size(p->draft->weights) : 0};
    pf_profile prof;
    if (p->profile) {
        pf_rc prc = pf_profile_load(p->profile, &prof, err);
        if (prc != PF_RC_OK) return pf_api_status(prc);
        d.profile = &prof;
    }
    int rc = pf_strategy_plan_make(&d, plan, err);
    if (p->profile) pf_profile_free(&prof);
    return rc < 0 ? PF_ERR_ARG : PF_OK; /* the resolver fails only for a bad value; it allocates nothing */
}

/* The plan's drafter and strategy over the loaded draft; their status as it came. */
static pf_status build(api_spec *a, pf_engine_session *s, char err[PF_ERR_LEN]) {
    const pf_dflash *w = a->draft ? a->draft->weights : NULL;
    pf_rc rc = pf_drafter_for(&a->plan, w, 0, s, &a->drafter, err);
    if (rc == PF_RC_OK) rc = pf_strategy_build(s, &a->plan, a->drafter, a->draft ? a->draft->dec : NULL, &a->spec, err);
    return pf_api_status(rc);
}

pf_status pf_gen_plan(const pf_gen_params *p, char *out, size_t out_len, char err[PF_ERR_LEN]) {
    pf_strategy_plan plan;
    pf_status rc = plan_of(p, &plan, err);
    if (rc == PF_OK && out_len) pf_plan_format(&plan, out, out_len);
    return rc;
}

/* The draft p names is one for the session's model. */
static pf_status draft_fits(const pf_session *s, const pf_gen_params *p, char err[PF_ERR_LEN]) {
    if (!p->draft || p->draft->target == s->engine.model) return PF_OK;
    snprintf(err, PF_ERR_LEN, "the draft was loaded for another model");
    return PF_ERR_ARG;
}

pf_status pf_api_choice(const pf_session *s, const pf_gen_params *p, pf_spec_choice *c, char err[PF_ERR_LEN]) {
    memset(c, 0, sizeof *c);
    pf_status rc = draft_fits(s, p, err);
    if (rc == PF_OK) rc = plan_of(p, &c->plan, err);
    if (rc != PF_OK || c->plan.kind == PF_KIND_PLAIN || c->plan.kind == PF_KIND_NGRAM) return rc;
    c->w = p->draft->weights; /* every other kind needs the draft (the resolver checked) */
    c->dec = p->draft->dec;
    return PF_OK;
}

void pf_api_use_strategy(pf_session *s, pf_strategy *strategy) { s->strategy = strategy; }

pf_status pf_api_strategy(pf_session *s, const pf_gen_params *p, api_choice *c, char err[PF_ERR_LEN]) {
    *c = (api_choice){.strategy = s->strategy};
    if (c->strategy) return PF_OK;
    pf_strategy_plan plan;
    pf_status rc = draft_fits(s, p, err);
    if (rc == PF_OK) rc = plan_of(p, &plan, err);
    if (rc == PF_OK) c->kind = pf_kind_name(plan.kind);
    if (rc != PF_OK || plan.kind == PF_KIND_PLAIN) return rc;
    if (!s->spec && !(s->spec = calloc(1, sizeof *s->spec))) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_ERR_OOM;
    }
    api_spec *a = s->spec;
    const pf_draft *draft = plan.kind == PF_KIND_NGRAM ? NULL : p->draft;
    if (!a->spec || a->draft != draft || memcmp(&a->plan, &plan, sizeof plan)) {
        api_spec_clear(a); /* the plan changed: a new drafter (the engine then prefills afresh) */
        a->draft = draft;
        a->plan = plan;
        rc = build(a, &s->engine, err);
        if (rc != PF_OK) {
            api_spec_clear(a);
            return rc;
        }
    }
    c->strategy = pf_spec_strategy(a->spec);
    c->spec = a->spec;
    c->block = a->plan.block;
    return PF_OK;
}

void pf_api_round_stats(const api_choice *c, pf_gen_stats *st) { pf_api_spec_stats(c->kind, c->spec, c->block, st); }

void pf_api_spec_stats(const char *kind, const pf_spec *sp, int block, pf_gen_stats *st) {
    st->spec = kind;
    if (!sp) return;
    const pf_spec_stats *r = pf_spec_stats_get(sp);
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
