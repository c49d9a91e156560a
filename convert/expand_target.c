/* Expanding a Qwen3 target (convert/expand.h). */
#include "convert/expand_impl.h"
#include "convert/shape_keys.h"
#include "engine/batch.h"
#include "engine/forward.h"

/* ---------------------------------------------------------------- the target */

/* Largest and smallest rms of the small target's final residual rows (before output_norm) over a
 * probe of ordinary tokens. */
static pf_rc probe_residual(const pf_model *m, double *rho_max, double *rho_min, char *err) {
    int32_t toks[PROBE_TOKENS];
    int n = 0;
    for (int64_t i = 0; n < PROBE_TOKENS && i < 64 * PROBE_TOKENS; i++) {
        int32_t id = (int32_t)((i * 7919 + 13) % m->hp.n_vocab);
        int ty = m->tok ? pf_tokenizer_token_type(m->tok, id) : PF_TOKEN_NORMAL;
        if (ty == PF_TOKEN_NORMAL || ty == 0) toks[n++] = id;
    }
    const int H = m->hp.n_embd, tap = m->hp.n_layer - 1;
    float *x = malloc((size_t)n * H * sizeof(float));
    pf_ctx *c = x ? pf_ctx_new(m, n, 1, NULL, err) : NULL;
    pf_batch b = {.tokens = toks, .n = n, .tap_layers = &tap, .n_taps = 1, .taps = x};
    pf_rc rc = c ? pf_forward(c, &b, err) : PF_RC_OOM; /* pf_ctx_new fails only for memory */
    if (!x) snprintf(err, PF_ERR_LEN, "expand: out of memory for the probe");
    *rho_max = 0;
    *rho_min = INFINITY;
    for (int r = 0; rc == PF_RC_OK && r < n; r++) {
        double ss = 0;
        for (int i = 0; i < H; i++) ss += (double)x[(size_t)r * H + i] * x[(size_t)r * H + i];
        double rho = sqrt(ss / H);
        if (rho > *rho_max) *rho_max = rho;
        if (rho < *rho_min) *rho_min = rho;
    }
    if (rc == PF_RC_OK && !(*rho_max > 0 && isfinite(*rho_max))) {
        snprintf(err, PF_ERR_LEN, "expand: the source's final residual is zero or not finite on the probe");
        rc = PF_RC_FORMAT;
    }
    pf_ctx_free(c);
    free(x);
    return rc;
}

/* Largest L2 norm of rows 0..V-1 of w, and rms / smallest squared norm of those rows. */
static void row_stats(const pf_weight *w, double *max_norm, double *rms, double *min_sq) {
    float *row = malloc((size_t)w->cols * sizeof(float));
    double total = 0, mx = 0, mn = INFINITY;
    for (int64_t r = 0; row && r < w->rows; r++) {
        pf_dequantize_row(w->type, (const char *)w->data + (size_t)r * w->row_bytes, row, w->cols);
        double ss = 0;
        for (int64_t i = 0; i < w->cols; i++) ss += (double)row[i] * row[i];
        total += ss;
        if (ss > mx) mx = ss;
        if (ss < mn) mn = ss;
    }
    free(row);
    *max_norm = sqrt(mx);
    if (rms) *rms = sqrt(total / ((double)w->rows * w->cols));
    if (min_sq) *min_sq = mn;
}

double expand_max_abs(const float *v, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs(v[i]));
    return m;
}

/* The guard value c as the output type stores it: one block [c, 0 x 31] through the quantizer. */
static float stored_guard(uint32_t type, float c) {
    float blk[PF_QK] = {c}, back[PF_QK];
    uint8_t q[PF_QK * 4];
    if (pf_quantize_row(type, blk, q, PF_QK) < 0 || pf_dequantize_row(type, q, back, PF_QK) < 0) return 0.0f;
    return back[0];
}

/* u_G needed so that A*u_G exceeds twice the logit bound plus 100 nats, sized (times the margin)
 * for the largest residual measured; returned as the output_norm weight at the guard. */
float expand_guard_weight(const pf_expand_info *in, double logit_bound, const pf_synth_shape *d) {
    double need = (2.0 * logit_bound + 100.0) / in->guard_a;
    return (float)(need * PF_EXPAND_GUARD_MARGIN * in->rho * sqrt((double)in->src.n_embd / d->n_embd) / in->guard_c);
}

/* The q/k rows are scaled by sqrt(H/H') so the QK-norm sees the scaled eps exactly, unless that
 * would re-round stored weights (a non-power-of-two scale into f16, bf16 or a block format): a
 * quantized block scaled by 0.65 changes by up to 1 part in 2^11, far more than the QK-norm's
 * eps*(1 - H/H') / mean(q^2) that leaving them alone costs. */
float expand_qk_scale_for(const pf_expand_opts *o, float norm_scale) {
    if (o->keep_eps) return 1.0f;
    int e;
    bool pow2 = frexpf(norm_scale, &e) == 0.5f;
    return o->type == PF_TYPE_F32 || pow2 ? norm_scale : 1.0f;
}

pf_rc expand_open_target(const char *path, const pf_synth_shape *d, pf_model **m, char *err) {
    pf_rc rc = pf_model_open(path, m, err);
    if (rc != PF_RC_OK) return rc;
    if ((*m)->bundle) {
        snprintf(err, PF_ERR_LEN, "%s: expand reads GGUF files, not bundles", path);
        return PF_RC_FORMAT;
    }
    return pf_expand_check(&(*m)->hp, d, err) < 0 ? PF_RC_ARG : PF_RC_OK;
}

/* Guard numbers. c is the smallest power of two >= 2^-20 of the embedding rms that the output
 * type stores as a positive value (f16 and the block scales limit it): its share of a norm's
 * mean square, c^2/||x||^2 ~ 1e-12/H for f32, stays far below float rounding, so the norms
 * (and the f16 KV cache that would turn a 1-ulp change into a 1e-3 one) do not see it.
 * Every real logit minus the tied shift is bounded for every input by
 * sqrt(H) * max|output_norm| * max||output row|| (||x/rms(x)|| = sqrt(H)), so an extra token
 * loses by A*u_G - 2*bound or more; u_G = c*w_G/rms(x) is sized for a residual
 * PF_EXPAND_GUARD_MARGIN times the largest the probe measured. */
static pf_rc size_guard(const pf_model *m, const pf_expand_opts *o, pf_expand_info *info, char *err) {
    const int H = m->hp.n_embd;
    double min_sq = 0;
    row_stats(&m->tok_embd, &info->out_row_max, &info->e_rms, &min_sq);
    if (!m->tied) row_stats(&m->output, &info->out_row_max, NULL, NULL);
    info->logit_bound = sqrt((double)H) * expand_max_abs(m->output_norm, H) * info->out_row_max;
    pf_rc rc = probe_residual(m, &info->rho, &info->rho_min, err);
    if (rc != PF_RC_OK || info->guard < 0) return rc;
    float c = exp2f(floorf(log2f((float)(0x1p-20 * info->e_rms))));
    while (c < 1.0f && !(stored_guard(o->type, c) >= 0.5f * c)) c *= 2.0f;
    info->guard_c = stored_guard(o->type, c);
    if (!(info->guard_c > 0)) {
        snprintf(err, PF_ERR_LEN, "expand: the guard value %g does not survive type %s", c, pf_type_info(o->type)->name);
        return PF_RC_ARG;
    }
    info->guard_w = expand_guard_weight(info, info->logit_bound, &o->shape);
    double u_min = info->guard_c * info->guard_w / (info->rho * info->norm_scale);
    info->guard_gap = info->guard_a * u_min - info->logit_bound;
    info->shift_max = m->tied ? info->guard_c * info->guard_w / (info->rho_min * info->norm_scale) * info->guard_c : 0;
    info->norm_perturb = (double)info->guard_c * info->guard_c / (2 * min_sq);
    return PF_RC_OK;
}

/* The expanded target's metadata: the big shape, the tokenizer padded to its vocabulary, and what the
 * expansion did (the source shape, the guard). */
static pf_rc write_target_meta(gguf_writer *w, const pf_model *m, const pf_expand_opts *o, const pf_expand_info *info,
                               char *err) {
    const pf_synth_shape *d = &o->shape;
    const pf_hparams *hp = &m->hp;
    gguf_w_copy_kv(w, m->file, expand_skip_target_key);
    expand_write_name(w, m->file, d, "target");
    gguf_w_u32(w, "general.file_type", pf_file_type_of(o->type));
    gguf_w_u32(w, "qwen3.block_count", (uint32_t)d->n_layer);
    pf_write_shape_keys(w, "qwen3", &(pf_shape_keys){(uint32_t)d->n_ctx, (uint32_t)d->n_embd, (uint32_t)d->n_ff,
                                                     (uint32_t)d->n_head, (uint32_t)d->n_head_kv, (uint32_t)d->head_dim});
    gguf_w_f32(w, "qwen3.attention.layer_norm_rms_epsilon", info->eps);
    pf_rc rc = expand_pad_tokenizer(w, m->file, d->n_vocab, err);
    if (rc != PF_RC_OK) return rc;
    char desc[160];
    snprintf(desc, sizeof desc, "%d layers, hidden %d, FFN %d, %d/%d heads of %d, vocabulary %d%s", hp->n_layer,
             hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv, hp->head_dim, hp->n_vocab, m->tied ? ", tied" : "");
    gguf_w_str(w, "pocketflash.expand.source_shape", desc);
    gguf_w_i32(w, "pocketflash.expand.guard_dim", info->guard);
    gguf_w_f32(w, "pocketflash.expand.guard_value", info->guard_c);
    gguf_w_f32(w, "pocketflash.expand.guard_logit_weight", -info->guard_a);
    gguf_w_u64(w, "pocketflash.expand.seed", o->seed);
    return PF_RC_OK;
}

/* token_embd (real rows keep their values and carry c at the guard), the untied output (real rows
 * 0 at the guard, extra rows -A there and zero elsewhere) and output_norm (w_G at the guard). */
static pf_rc emit_io(sink *s, const pf_model *m, const pf_expand_opts *o, const pf_expand_info *info,
                     const layer_maps *mp, const int32_t *vmap, pf_rng *rng, char *err) {
    const int H = m->hp.n_embd, V = m->hp.n_vocab, Hd = o->shape.n_embd, Vd = o->shape.n_vocab;
    float *src;
    pf_rc rc = expand_read_f32(m->file, "token_embd.weight", (int64_t)V * H, &src, err);
    if (rc != PF_RC_OK) return rc;
    float *e = expand_build_matrix(vmap, Vd, mp->hid_out, Hd, src, H, 1.0f, 0.0f, rng);
    free(src);
    if (e && info->guard >= 0)
        for (int64_t r = 0; r < Vd; r++) e[r * Hd + info->guard] = r < V ? info->guard_c : (m->tied ? -info->guard_a : 0.0f);
    expand_emit_matrix(s, "token_embd.weight", e, Vd, Hd, o->type);
    if (!m->tied) {
        if ((rc = expand_read_f32(m->file, "output.weight", (int64_t)V * H, &src, err)) != PF_RC_OK) return rc;
        float *ow = expand_build_matrix(vmap, Vd, mp->hid_out, Hd, src, H, 1.0f, 0.0f, rng);
        free(src);
        if (ow && info->guard >= 0)
            for (int64_t r = V; r < Vd; r++) ow[r * Hd + info->guard] = -info->guard_a;
        expand_emit_matrix(s, "output.weight", ow, Vd, Hd, o->type);
    }
    float *on = expand_hidden_norm(m->output_norm, mp, info->norm_scale, rng);
    if (on && info->guard >= 0) on[info->guard] = info->guard_w;
    int64_t ne = Hd;
    expand_emit_f32(s, "output_norm.weight", on, 1, &ne);
    return PF_RC_OK;
}

pf_rc pf_expand_target(const char *in, const char *out, const pf_expand_opts *o, pf_expand_info *info_out,
                       char err[PF_ERR_LEN]) {
    const pf_synth_shape *d = &o->shape;
    if (!expand_output_type_ok(o->type)) {
        snprintf(err, PF_ERR_LEN, "expand: output type %u is not one of f32, f16, bf16, q8_0, q4_0, q4_1", o->type);
        return PF_RC_ARG;
    }
    pf_model *m = NULL;
    sink s = {0};
    layer_maps mp = {0};
    int32_t *vmap = NULL;
    pf_rc rc = expand_open_target(in, d, &m, err);
    if (rc != PF_RC_OK) goto done;
    const pf_hparams *hp = &m->hp;
    const int H = hp->n_embd, Hd = d->n_embd, V = hp->n_vocab, Vd = d->n_vocab;
    pf_expand_info info = {.src = *hp, .tied = m->tied, .guard = Vd > V ? H : -1, .guard_a = GUARD_A};
    info.norm_scale = sqrtf((float)H / Hd);
    info.eps = o->keep_eps ? hp->rms_eps : (float)((double)hp->rms_eps * H / Hd);
    const float qk_scale = expand_qk_scale_for(o, info.norm_scale);
    if ((rc = size_guard(m, o, &info, err)) != PF_RC_OK) goto done;
    s.w = gguf_writer_new();
    mp = (layer_maps){.H = H, .Hd = Hd, .hd = hp->head_dim, .nh = hp->n_head, .nkv = hp->n_head_kv, .F = hp->n_ff,
                      .nh_d = d->n_head, .nkv_d = d->n_head_kv, .F_d = d->n_ff, .guard = info.guard};
    vmap = expand_map_new(Vd, V, MAP_ZERO);
    if (!s.w || !vmap || expand_maps_init(&mp) < 0) { /* expand_maps_init fails only for memory */
        snprintf(err, PF_ERR_LEN, "expand: out of memory");
        rc = PF_RC_OOM;
        goto done;
    }
    if ((rc = write_target_meta(s.w, m, o, &info, err)) != PF_RC_OK) goto done;
    pf_rng rng;
    pf_rng_seed(&rng, o->seed);
    if ((rc = emit_io(&s, m, o, &info, &mp, vmap, &rng, err)) != PF_RC_OK) goto done;
    for (int l = 0; rc == PF_RC_OK && l < d->n_layer; l++)
        rc = expand_write_layer(&s, l < hp->n_layer ? m->file : NULL, l, &mp, info.norm_scale, qk_scale, o->type, &rng, err);
    if (rc != PF_RC_OK) goto done;
    if (s.oom) {
        snprintf(err, PF_ERR_LEN, "expand: out of memory");
        rc = PF_RC_OOM;
        goto done;
    }
    rc = gguf_w_save(s.w, out, err);
    if (rc == PF_RC_OK && info_out) *info_out = info;
done:
    free(vmap);
    expand_maps_free(&mp);
    gguf_writer_free(s.w);
    pf_model_free(m);
    return rc;
}
