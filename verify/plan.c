#include "verify/plan.h"

#include <stdio.h>
#include <string.h>

int pf_default_block(pf_kind kind, int draft_block) {
    if (kind == PF_KIND_NGRAM) return PF_NGRAM_BLOCK;
    if ((kind == PF_KIND_DFLASH || kind == PF_KIND_HYBRID) && draft_block > PF_FIXED_BLOCK_DEFAULT)
        return PF_FIXED_BLOCK_DEFAULT;
    return draft_block > PF_MAX_BLOCK ? PF_MAX_BLOCK : draft_block;
}

/* The profile's costs and acceptance copied into the plan. */
static void copy_prior(const pf_profile *p, const char *task, pf_strategy_plan *plan) {
    pf_spec_prior sp;
    pf_profile_prior(p, task, &sp);
    plan->use_prior = 1;
    plan->n_cost = sp.c ? sp.n : 0;
    for (int i = 0; i < plan->n_cost; i++) plan->c[i] = sp.c[i], plan->draft[i] = sp.draft[i];
    plan->n_alpha = sp.n_alpha;
    for (int i = 0; i < sp.n_alpha; i++) plan->alpha[i] = sp.alpha[i];
}

/* The profile's entry: the prior (kind and block both open), or what it fills of kind and block. */
static int from_profile(const pf_strategy_desc *d, pf_kind *kind, int *block, pf_strategy_plan *plan,
                        char err[PF_ERR_LEN]) {
    const pf_profile_task *t = d->task ? pf_profile_find(d->profile, d->task) : NULL;
    if (d->task && !t) {
        snprintf(err, PF_ERR_LEN, "task '%.60s' is not in the profile %.150s", d->task,
                 d->profile_name ? d->profile_name : "");
        return -1;
    }
    pf_kind k;
    if (pf_kind_parse(t ? t->spec : d->profile->spec, &k, err) < 0) return -1;
    plan->profile_block = t ? t->block : d->profile->block;
    if (*kind == PF_KIND_DEFAULT && *block == 0 && !d->profile_fixed && pf_kind_uses_draft(k) && k != PF_KIND_HYBRID) {
        /* the tuned choice as the prior: the draft's Dec head decides when it has one */
        *kind = d->draft_has_dec ? PF_KIND_DEC : PF_KIND_ADAPTIVE;
        copy_prior(d->profile, d->task, plan);
    } else {
        if (*kind == PF_KIND_DEFAULT) *kind = k;
        if (*block == 0) *block = plan->profile_block;
    }
    return 0;
}

/* The values a description gives directly: one message per wrong one. */
static int check_values(const pf_strategy_desc *d, char err[PF_ERR_LEN]) {
    if (d->block && pf_block_check("block", d->block, err) < 0) return -1;
    if (d->ngram_n < 0 || d->ngram_n > 16) {
        snprintf(err, PF_ERR_LEN, "ngram_n %d is outside 1..16", d->ngram_n);
        return -1;
    }
    if (d->draft_head < -1) {
        snprintf(err, PF_ERR_LEN, "draft_head %d: expected -1 (whole vocabulary), 0 (default) or N", d->draft_head);
        return -1;
    }
    if (!d->task || d->profile) return 0;
    snprintf(err, PF_ERR_LEN, "task '%.60s' needs a profile", d->task);
    return -1;
}

int pf_strategy_plan_make(const pf_strategy_desc *d, pf_strategy_plan *plan, char err[PF_ERR_LEN]) {
    memset(plan, 0, sizeof *plan);
    if (check_values(d, err) < 0) return -1;
    pf_kind kind = d->kind;
    int block = d->block;
    if (d->profile && from_profile(d, &kind, &block, plan, err) < 0) return -1;
    /* the default with a draft: a block given alone fixes it (dflash, llama.cpp's --draft-max),
     * else the draft's Dec head gates when it has one, else the adaptive block */
    if (kind == PF_KIND_DEFAULT)
        kind = !d->has_draft ? PF_KIND_PLAIN : block ? PF_KIND_DFLASH : d->draft_has_dec ? PF_KIND_DEC : PF_KIND_ADAPTIVE;
    int uses_draft = pf_kind_uses_draft(kind);
    if (uses_draft && !d->has_draft) {
        snprintf(err, PF_ERR_LEN, "strategy %s needs a draft: -d DRAFT.gguf, or a bundle that holds one",
                 pf_kind_name(kind));
        return -1;
    }
    if (kind == PF_KIND_DEC && !d->draft_has_dec) {
        snprintf(err, PF_ERR_LEN, "strategy dec needs a draft with a Dec head (dec.* tensors)");
        return -1;
    }
    if (uses_draft && block == 0 && d->draft_block < 2) {
        snprintf(err, PF_ERR_LEN, "strategy %s: the draft's trained block is unknown", pf_kind_name(kind));
        return -1;
    }
    plan->kind = kind;
    plan->block = kind == PF_KIND_PLAIN ? 1 : block ? block : pf_default_block(kind, d->draft_block);
    plan->draft_head = uses_draft ? d->draft_head : 0;
    if (kind == PF_KIND_NGRAM || kind == PF_KIND_HYBRID) plan->ngram_n = d->ngram_n ? d->ngram_n : PF_NGRAM_N_DEFAULT;
    return 0;
}

const pf_spec_prior *pf_plan_prior(const pf_strategy_plan *plan, pf_spec_prior *prior) {
    if (!plan->use_prior) return NULL;
    *prior = (pf_spec_prior){.c = plan->n_cost ? plan->c : NULL, .draft = plan->draft, .n = plan->n_cost,
                             .alpha = plan->n_alpha ? plan->alpha : NULL, .n_alpha = plan->n_alpha};
    return prior;
}

void pf_plan_format(const pf_strategy_plan *plan, char *buf, size_t n) {
    int k = snprintf(buf, n, "%s block=%d", pf_kind_name(plan->kind), plan->block);
    if (k >= 0 && (size_t)k < n && plan->draft_head) k += snprintf(buf + k, n - (size_t)k, " draft_head=%d", plan->draft_head);
    if (k >= 0 && (size_t)k < n && plan->ngram_n) k += snprintf(buf + k, n - (size_t)k, " ngram=%d", plan->ngram_n);
    if (k >= 0 && (size_t)k < n && plan->use_prior)
        snprintf(buf + k, n - (size_t)k, " prior=profile(block %d)", plan->profile_block);
}
