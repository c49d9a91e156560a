/* The public API's models and sessions (include/pocketflash.h): a session holds the engine's
 * session (context over a loaded model, sampler state) and the strategy the library keeps for it
 * (api/api_session.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_session.h"
#include "api/status.h"
#include "api/strategy.h"
#include "engine/constraint.h"
#include "engine/generate.h"
#include "include/pocketflash.h"

void pf_gen_params_default(pf_gen_params *p) {
    memset(p, 0, sizeof *p);
    p->max_tokens = 128;
    p->top_p = 1.0f;
    p->stop_at_eot = true;
}

/* One of pf_load_params' toggles over the environment's default. */
static bool load_toggle(int v, bool env_default) { return v > 0 ? true : v < 0 ? false : env_default; }

static pf_status load_opts(const pf_load_params *p, pf_load_opts *o, char err[PF_ERR_LEN]) {
    *o = pf_load_opts_env();
    if (!p) return PF_OK;
    if (p->kernels) {
        int level = pf_level_parse(p->kernels);
        if (level < 0) {
            char names[64];
            pf_level_names(names, sizeof names);
            snprintf(err, PF_ERR_LEN, "kernels: '%s' is not one of this build's levels (%s)", p->kernels, names);
            return PF_ERR_ARG;
        }
        o->level = pf_level_at_most((pf_level)level);
    }
    const int toggles[2] = {p->repack, p->hugepages};
    for (int i = 0; i < 2; i++)
        if (toggles[i] < -1 || toggles[i] > 1) {
            snprintf(err, PF_ERR_LEN, "%s: %d is not 1 (on), -1 (off) or 0 (the default)", i ? "hugepages" : "repack",
                     toggles[i]);
            return PF_ERR_ARG;
        }
    o->repack = load_toggle(p->repack, o->repack);
    o->hugepages = load_toggle(p->hugepages, o->hugepages);
    return PF_OK;
}

pf_status pf_load_model_with(const char *path, const pf_load_params *p, pf_model **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    if (!path) {
        snprintf(err, PF_ERR_LEN, "pf_load_model: no path");
        return PF_ERR_ARG;
    }
    pf_load_opts o;
    pf_status st = load_opts(p, &o, err);
    return st != PF_OK ? st : pf_api_status(pf_model_open_with(path, &o, out, err));
}

pf_status pf_load_model(const char *path, pf_model **out, char err[PF_ERR_LEN]) {
    return pf_load_model_with(path, NULL, out, err);
}
void pf_free_model(pf_model *m) { pf_model_free(m); }

pf_status pf_session_new(const pf_model *m, const pf_session_params *p, pf_session **out, char err[PF_ERR_LEN]) {
    *out = NULL;
    if (!m) {
        snprintf(err, PF_ERR_LEN, "pf_session_new: no model");
        return PF_ERR_ARG;
    }
    int64_t n_ctx = p && p->n_ctx > 0 ? p->n_ctx : (m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096);
    int threads = p && p->n_threads > 0 ? p->n_threads : 1;
    pf_session *ps = calloc(1, sizeof *ps);
    if (!ps) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_ERR_OOM;
    }
    pf_engine_session *s = &ps->engine;
    s->model = m;
    s->ctx = pf_ctx_new(m, n_ctx, threads, NULL, err); /* NULL only for memory */
    s->logits = malloc((size_t)m->hp.n_vocab * sizeof(float));
    s->hist = s->ctx ? malloc((size_t)(s->ctx->kv->n_ctx + 1) * sizeof *s->hist) : NULL;
    pf_rc rc = PF_RC_OK;
    if (!s->ctx || !s->logits || !s->hist || pf_dist_init(&s->dist, m->hp.n_vocab) < 0) {
        if (s->ctx) snprintf(err, PF_ERR_LEN, "out of memory");
        rc = PF_RC_OOM;
    }
    /* the 8-bit cache is refused rather than silently slow where its scalar path would run */
    if (rc == PF_RC_OK && p && p->kv_q8)
        rc = !pf_kv_q8_usable(s->ctx->k, err) ? PF_RC_ARG : pf_ctx_set_kv_type(s->ctx, PF_KV_Q8, err);
    if (rc != PF_RC_OK) {
        pf_session_free(ps);
        return pf_api_status(rc);
    }
    *out = ps;
    return PF_OK;
}

void pf_session_free(pf_session *ps) {
    if (!ps) return;
    pf_engine_session *s = &ps->engine;
    pf_api_spec_free(ps->spec);
    pf_spec_batch_free(ps->batch);
    pf_engine_masker_free(s);
    free(s->hist);
    pf_ctx_free(s->ctx);
    pf_dist_free(&s->dist);
    free(s->logits);
    free(ps);
}

void pf_session_reset(pf_session *ps) {
    if (!ps) return;
    ps->engine.n_hist = 0;
    ps->engine.prev = NULL;
    pf_kv_truncate(ps->engine.ctx->kv, 0);
}
