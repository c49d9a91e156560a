/* pf_gen_params -> strategy: the draft, pf_spec_kind, block, profile; the session keeps what it
 * built (api_spec) until the parameters change. */
#include "api/strategy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/draft.h"
#include "draft/dflash_drafter.h"
#include "draft/ngram.h"
#include "verify/profile.h"
#include "verify/spec.h"
#include "verify/strategies.h"

/* The strategy a draft gets when the caller names none: what `pocketflash run -d` does by default
 * (pf_spec_default in verify/strategies.c, which opens the draft from its file: adaptive Dec when
 * the draft has a Dec head, else the adaptive block, at most the draft's trained block). */
static pf_spec_kind default_spec(const pf_draft *d) {
    return !d ? PF_SPEC_PLAIN : d->dec ? PF_SPEC_DEC : PF_SPEC_ADAPTIVE;
}

/* A tuned profile's choice as the adaptive planner's prior (copied out of the profile file). */
typedef struct {
    int on;
    double c[PF_MAX_BLOCK + 1], draft[PF_MAX_BLOCK + 1], alpha[PF_MAX_BLOCK];
    int n, n_alpha;
} api_prior;

typedef struct {
    /* what it was built for */
    const pf_draft *draft;
    pf_spec_kind kind;
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

static const char *kind_name(pf_spec_kind k) {
    return k == PF_SPEC_DFLASH     ? "dflash"
           : k == PF_SPEC_NGRAM    ? "ngram"
           : k == PF_SPEC_DEC      ? "dec"
           : k == PF_SPEC_ADAPTIVE ? "adaptive"
                                   : "ar";
}

static int kind_of(const char *name, pf_spec_kind *k) {
    if (!strcmp(name, "ar")) *k = PF_SPEC_PLAIN;
    else if (!strcmp(name, "dflash")) *k = PF_SPEC_DFLASH;
    else if (!strcmp(name, "ngram")) *k = PF_SPEC_NGRAM;
    else if (!strcmp(name, "dec")) *k = PF_SPEC_DEC;
    else if (!strcmp(name, "adaptive")) *k = PF_SPEC_ADAPTIVE;
    else return -1;
    return 0;
}

/* Strategy and block of a tuned profile (its task entry, else its default) where p leaves them open.
 * When both are open and the entry is a draft strategy, the generation adapts from it as
 * `pocketflash run --profile` and `bench --profile` do, up to the draft's trained block: Dec when
 * the draft has a Dec head, else the adaptive block, with the profile's costs (and, without a head,
 * its acceptance) as the prior. */
static pf_status from_profile(const pf_gen_params *p, pf_spec_kind *kind, int *block, api_prior *prior,
                              char err[PF_ERR_LEN]) {
    pf_profile prof;
    if (pf_profile_load(p->profile, &prof, err) < 0) return PF_ERR_FORMAT;
    const pf_profile_task *t = p->task ? pf_profile_find(&prof, p->task) : NULL;
    pf_status rc = PF_OK;
    pf_spec_kind k;
    if (p->task && !t) {
        snprintf(err, PF_ERR_LEN, "task '%.60s' is not in the profile %.150s", p->task, p->profile);
        rc = PF_ERR_ARG;
    } else if (kind_of(t ? t->spec : prof.spec, &k) < 0) {
        snprintf(err, PF_ERR_LEN, "%.150s: unknown strategy '%s'", p->profile, t ? t->spec : prof.spec);
        rc = PF_ERR_FORMAT;
    } else if (*kind == PF_SPEC_DEFAULT && *block == 0 && k != PF_SPEC_NGRAM && k != PF_SPEC_PLAIN) {
        *kind = k == PF_SPEC_DEC ? PF_SPEC_DEC : PF_SPEC_ADAPTIVE;
        pf_spec_prior sp;
        pf_profile_prior(&prof, p->task, &sp);
        memset(prior, 0, sizeof *prior);
        prior->on = 1;
        prior->n = sp.c ? sp.n : 0;
        for (int i = 0; i < prior->n; i++) prior->c[i] = sp.c[i], prior->draft[i] = sp.draft[i];
        prior->n_alpha = sp.n_alpha;
        for (int i = 0; i < sp.n_alpha; i++) prior->alpha[i] = sp.alpha[i];
    } else {
        if (*kind == PF_SPEC_DEFAULT) *kind = k;
        if (*block == 0) *block = t ? t->block : prof.block;
    }
    pf_profile_free(&prof);
    return rc;
}

static pf_status build(api_spec *a, pf_session *s, char err[PF_ERR_LEN]) {
    int trained = 8; /* ngram's block */
    if (a->kind == PF_SPEC_NGRAM) {
        if (!(a->drafter = pf_ngram_drafter_new(1, a->ngram_n))) {
            snprintf(err, PF_ERR_LEN, "out of memory");
            return PF_ERR_OOM;
        }
    } else {
        if (!(a->drafter = pf_dflash_drafter_new(a->draft->weights, s, err))) return PF_ERR_OOM;
        trained = pf_dflash_block_size(a->draft->weights);
        if (pf_drafter_apply_head(a->drafter, a->draft_head, err) < 0) return PF_ERR_ARG;
    }
    int block = a->asked ? a->asked : pf_default_block(kind_name(a->kind), trained);
    if (block < 2) block = 2;
    if (block > PF_MAX_BLOCK) block = PF_MAX_BLOCK;
    if (!(a->spec = pf_spec_new(s, a->drafter, block, err))) return PF_ERR_OOM;
    pf_spec_prior prior = {.c = a->prior.n ? a->prior.c : NULL, .draft = a->prior.draft, .n = a->prior.n,
                           .alpha = a->prior.n_alpha ? a->prior.alpha : NULL, .n_alpha = a->prior.n_alpha};
    if ((a->kind == PF_SPEC_DEC || a->kind == PF_SPEC_ADAPTIVE) &&
        pf_spec_set_adaptive(a->spec, a->kind == PF_SPEC_DEC ? a->draft->dec : NULL, a->prior.on ? &prior : NULL,
                             err) < 0)
        return PF_ERR_INTERNAL;
    a->block = block;
    return PF_OK;
}

pf_status pf_api_strategy(pf_session *s, const pf_gen_params *p, pf_strategy **strategy, pf_spec **spec, int *block,
                          char err[PF_ERR_LEN]) {
    *strategy = p->strategy;
    *spec = NULL;
    *block = 0;
    if (p->strategy) return PF_OK;
    pf_spec_kind kind = p->spec;
    int blk = p->block, ngram_n = p->ngram_n ? p->ngram_n : 3;
    if ((int)kind < PF_SPEC_DEFAULT || kind > PF_SPEC_ADAPTIVE) {
        snprintf(err, PF_ERR_LEN, "unknown strategy %d", (int)kind);
        return PF_ERR_ARG;
    }
    if (blk && (blk < 2 || blk > PF_MAX_BLOCK)) {
        snprintf(err, PF_ERR_LEN, "block %d is outside 2..%d", blk, PF_MAX_BLOCK);
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
    api_prior prior; /* compared with memcmp below: zeroed whole, padding included */
    memset(&prior, 0, sizeof prior);
    if (p->profile) {
        pf_status rc = from_profile(p, &kind, &blk, &prior, err);
        if (rc != PF_OK) return rc;
    } else if (p->task) {
        snprintf(err, PF_ERR_LEN, "task '%.60s' needs a profile", p->task);
        return PF_ERR_ARG;
    }
    if (kind == PF_SPEC_DEFAULT) kind = default_spec(p->draft);
    if (kind == PF_SPEC_PLAIN) return PF_OK;
    if ((kind == PF_SPEC_DFLASH || kind == PF_SPEC_DEC || kind == PF_SPEC_ADAPTIVE) && !p->draft) {
        snprintf(err, PF_ERR_LEN, "strategy %s needs a draft (pf_load_draft)", kind_name(kind));
        return PF_ERR_ARG;
    }
    /* from a profile: the draft's Dec head decides when it has one (the profile's costs its prior) */
    if (prior.on && (kind == PF_SPEC_DEC || kind == PF_SPEC_ADAPTIVE) && p->draft)
        kind = p->draft->dec ? PF_SPEC_DEC : PF_SPEC_ADAPTIVE;
    if (kind == PF_SPEC_DEC && !p->draft->dec) {
        snprintf(err, PF_ERR_LEN, "strategy dec needs a draft with a Dec head (dec.* tensors)");
        return PF_ERR_ARG;
    }
    if (!s->ext) {
        if (!(s->ext = calloc(1, sizeof(api_spec)))) {
            snprintf(err, PF_ERR_LEN, "out of memory");
            return PF_ERR_OOM;
        }
        s->ext_free = api_spec_free;
    }
    api_spec *a = s->ext;
    const pf_draft *draft = kind == PF_SPEC_NGRAM ? NULL : p->draft;
    int head = kind == PF_SPEC_NGRAM ? 0 : p->draft_head;
    if (!a->spec || a->kind != kind || a->draft != draft || a->asked != blk || a->draft_head != head ||
        (kind == PF_SPEC_NGRAM && a->ngram_n != ngram_n) || memcmp(&a->prior, &prior, sizeof prior)) {
        api_spec_clear(a); /* parameters changed: a new drafter (the engine then prefills afresh) */
        *a = (api_spec){.draft = draft, .kind = kind, .asked = blk, .ngram_n = ngram_n, .draft_head = head};
        memcpy(&a->prior, &prior, sizeof prior);
        pf_status rc = build(a, s, err);
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
