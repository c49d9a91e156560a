/* Expanding a DFlash / DFlash2 draft with its target's maps (convert/expand.h). */
#include "convert/expand_impl.h"
#include "convert/shape_keys.h"

/* ---------------------------------------------------------------- drafts */

static uint32_t meta_u32(const gguf_file *f, const char *key, uint32_t dflt) {
    uint32_t v;
    return gguf_get_u32(f, key, &v) == 0 ? v : dflt;
}

/* Every tensor of the draft must be one this expansion understands (a new kind of tensor would
 * otherwise be dropped or copied at the wrong shape). */
static pf_rc check_draft_tensors(const gguf_file *f, int n_layer, int v2, char *err) {
    static const char *const globals[] = {"fc.weight", "enc.output_norm.weight", "output_norm.weight",
                                          "dec.weight", "dec.bias", "dec.pos_bias",
                                          "selector_hidden.weight", "selector_predecessor.weight",
                                          "selector_successor.weight"};
    static const char *const per_layer[] = {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                                            "attn_output.weight", "attn_q_norm.weight", "attn_k_norm.weight",
                                            "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight",
                                            "attn_conv_base", "attn_conv_proj.weight", "ffn_conv_base",
                                            "ffn_conv_proj.weight"};
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        char *name = gguf_str_dup(f->tensors[i].name);
        bool ok = false;
        for (size_t k = 0; name && !ok && k < sizeof globals / sizeof globals[0]; k++)
            ok = !strcmp(name, globals[k]) && (v2 || k < 6);
        int l, n = 0;
        char rest[64];
        if (name && !ok && sscanf(name, "blk.%d.%63s%n", &l, rest, &n) == 2 && !name[n] && l >= 0 && l < n_layer)
            for (size_t k = 0; !ok && k < sizeof per_layer / sizeof per_layer[0]; k++)
                ok = !strcmp(rest, per_layer[k]) && (v2 || k < 11);
        if (!name) return snprintf(err, PF_ERR_LEN, "expand: out of memory"), PF_RC_OOM;
        if (!ok) snprintf(err, PF_ERR_LEN, "%s: tensor '%s' is not part of the dflash layout expand knows", f->path, name);
        free(name);
        if (!ok) return PF_RC_FORMAT;
    }
    return PF_RC_OK;
}

/* What the steps of one draft expansion share: the draft file, its small target's shape and the
 * big shape's, the maps between them and the output. */
typedef struct {
    const pf_expand_opts *o;
    const pf_expand_info *info;
    const char *in;
    gguf_file *f;
    sink s;
    layer_maps mp;
    pf_rng rng;
    int version, n_layer, n_taps;
    int H, Hd, V, Vd;
    uint32_t conv_k, gs; /* DFlash2's conv taps and channels per group */
    float norm_scale, qk_scale, eps;
    int32_t *vmap, *id_rows;
} draft_job;

static pf_rc oom(char *err) {
    snprintf(err, PF_ERR_LEN, "expand: out of memory");
    return PF_RC_OOM;
}

/* Reads the draft (valid for its small target tm), its attention and FFN shapes and the maps of its
 * layers (heads and FFN follow the target's expansion when the draft was built like the small target). */
static pf_rc read_draft(draft_job *j, const pf_model *tm, char *err) {
    const pf_synth_shape *d = &j->o->shape;
    pf_dflash *chk;
    pf_rc rc = pf_dflash_open(j->in, tm, &chk, err);
    if (rc != PF_RC_OK) return rc;
    j->version = pf_dflash_version(chk);
    j->n_layer = pf_dflash_n_layer(chk);
    pf_dflash_tap_layers(chk, &j->n_taps);
    pf_dflash_free(chk);
    if ((rc = gguf_open_file(j->in, &j->f, err)) != PF_RC_OK) return rc;
    const gguf_file *f = j->f;
    const pf_hparams *th = &tm->hp;
    j->H = th->n_embd, j->Hd = d->n_embd, j->V = th->n_vocab, j->Vd = d->n_vocab;
    const int nh = (int)meta_u32(f, "dflash.attention.head_count", 0), F = (int)meta_u32(f, "dflash.feed_forward_length", 0);
    const int nkv = (int)meta_u32(f, "dflash.attention.head_count_kv", (uint32_t)nh);
    const int hd = (int)meta_u32(f, "dflash.attention.key_length", (uint32_t)(j->H / nh));
    j->eps = th->rms_eps;
    gguf_get_f32(f, "dflash.attention.layer_norm_rms_epsilon", &j->eps);
    if ((rc = check_draft_tensors(f, j->n_layer, j->version == 2, err)) != PF_RC_OK) return rc;
    const bool like_target = nh == th->n_head && nkv == th->n_head_kv && hd == th->head_dim;
    j->mp = (layer_maps){.H = j->H, .Hd = j->Hd, .hd = hd, .nh = nh, .nkv = nkv, .F = F,
                         .nh_d = like_target ? d->n_head : nh, .nkv_d = like_target ? d->n_head_kv : nkv,
                         .F_d = F == th->n_ff ? d->n_ff : F, .guard = j->info->guard};
    j->conv_k = meta_u32(f, "dflash.conv_kernel_size", 2);
    j->gs = meta_u32(f, "dflash.conv_group_size", 16);
    if (j->version == 2 && j->Hd % (int)j->gs) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.conv_group_size %u does not divide the target shape's hidden %d", j->in,
                 j->gs, j->Hd);
        return PF_RC_ARG;
    }
    j->norm_scale = j->info->norm_scale;
    j->qk_scale = expand_qk_scale_for(j->o, j->norm_scale);
    return PF_RC_OK;
}

/* The draft's metadata at the big shape (its tokenizer padded to the big vocabulary). */
static pf_rc write_draft_meta(draft_job *j, char *err) {
    const pf_synth_shape *d = &j->o->shape;
    gguf_writer *w = j->s.w;
    const float eps_d = j->o->keep_eps ? j->eps : (float)((double)j->eps * j->H / j->Hd);
    gguf_w_copy_kv(w, j->f, expand_skip_draft_key);
    expand_write_name(w, j->f, d, "draft");
    gguf_w_u32(w, "general.file_type", pf_file_type_of(j->o->type));
    pf_write_shape_keys(w, "dflash", &(pf_shape_keys){(uint32_t)d->n_ctx, (uint32_t)j->Hd, (uint32_t)j->mp.F_d,
                                                      (uint32_t)j->mp.nh_d, (uint32_t)j->mp.nkv_d, (uint32_t)j->mp.hd});
    gguf_w_f32(w, "dflash.attention.layer_norm_rms_epsilon", eps_d);
    pf_rc rc = expand_pad_tokenizer(w, j->f, j->Vd, err);
    gguf_w_u64(w, "pocketflash.expand.seed", j->o->seed);
    return rc;
}

/* fc: tap t's big residual has the small dims, the guard (which must not enter fc) and zero dims.
 * fc stays in its own float type (the recipe keeps it precise); a quantized one takes --type. */
static pf_rc emit_fc(draft_job *j, char *err) {
    const int H = j->H, Hd = j->Hd, n_taps = j->n_taps;
    const int64_t fc_in = (int64_t)n_taps * Hd;
    int32_t *fc_cols = malloc((size_t)fc_in * sizeof *fc_cols);
    if (!fc_cols) return oom(err);
    for (int t = 0; t < n_taps; t++)
        for (int i = 0; i < Hd; i++)
            fc_cols[(int64_t)t * Hd + i] = i < H ? t * H + i : i == j->mp.guard ? MAP_ZERO : MAP_RANDOM;
    const gguf_tensor *fct = gguf_find_tensor(j->f, "fc.weight");
    float *src;
    pf_rc rc = expand_read_f32(j->f, "fc.weight", (int64_t)H * n_taps * H, &src, err);
    if (rc != PF_RC_OK) {
        free(fc_cols);
        return rc;
    }
    const bool fc_float = fct->type == PF_TYPE_F32 || fct->type == PF_TYPE_F16 || fct->type == PF_TYPE_BF16;
    float *fc = expand_build_matrix(j->mp.hid_out, Hd, fc_cols, fc_in, src, (int64_t)n_taps * H, 1.0f,
                                    1.0f / sqrtf((float)fc_in), &j->rng);
    expand_emit_matrix(&j->s, "fc.weight", fc, Hd, fc_in, fc_float ? fct->type : j->o->type);
    free(src);
    free(fc_cols);
    return PF_RC_OK;
}

/* enc.output_norm reads fc's output (zero beyond H); output_norm feeds the head and carries the guard. */
static pf_rc emit_norms(draft_job *j, char *err) {
    const int64_t ne[3] = {j->Hd, 1, 1};
    for (int k = 0; k < 2; k++) {
        const char *nm = k ? "output_norm.weight" : "enc.output_norm.weight";
        float *src;
        pf_rc rc = expand_read_f32(j->f, nm, j->H, &src, err);
        if (rc != PF_RC_OK) return rc;
        float *v = expand_hidden_norm(src, &j->mp, j->norm_scale, &j->rng);
        if (v && k == 1 && j->mp.guard >= 0) {
            double bound = sqrt((double)j->H) * expand_max_abs(src, j->H) * j->info->out_row_max;
            v[j->mp.guard] = expand_guard_weight(j->info, bound, &j->o->shape);
        }
        free(src);
        expand_emit_f32(&j->s, nm, v, 1, ne);
    }
    return PF_RC_OK;
}

/* The Dec head (draft/dec.h), w_t . h_target + w_d . h_draft: zero on the extra dims, so both rows
 * carry the guard; its biases as they are. */
static pf_rc emit_dec_head(draft_job *j, char *err) {
    const int H = j->H, Hd = j->Hd;
    float *src;
    pf_rc rc = expand_read_f32(j->f, "dec.weight", 2 * (int64_t)H, &src, err);
    if (rc != PF_RC_OK) return rc;
    float *dw = calloc(2 * (size_t)Hd, sizeof(float));
    for (int i = 0; dw && i < H; i++) {
        dw[i] = src[i];
        dw[Hd + i] = src[H + i];
    }
    free(src);
    const int64_t dne = 2 * (int64_t)Hd;
    expand_emit_f32(&j->s, "dec.weight", dw, 1, &dne);
    for (int k = 0; k < 2; k++) {
        const char *nm = k ? "dec.pos_bias" : "dec.bias";
        const gguf_tensor *t = gguf_find_tensor(j->f, nm);
        if (!t) {
            snprintf(err, PF_ERR_LEN, "%s: tensor '%s' is missing", j->in, nm);
            return PF_RC_FORMAT;
        }
        if ((rc = expand_read_f32(j->f, nm, t->ne[0], &src, err)) != PF_RC_OK) return rc;
        expand_emit_f32(&j->s, nm, src, 1, t->ne);
    }
    return PF_RC_OK;
}

/* DFlash2's conv of one sublayer (sub "attn" or "ffn") of layer l: the base taps, with the identity
 * tap on the extra channels (their inputs are 0), and the dynamic projection whose rows proj_rows maps. */
static pf_rc emit_conv(draft_job *j, int l, const char *sub, const int32_t *proj_rows, char *err) {
    const int H = j->H, Hd = j->Hd, K = (int)j->conv_k, G = H / (int)j->gs, Gd = Hd / (int)j->gs;
    char name[96];
    snprintf(name, sizeof name, "blk.%d.%s_conv_base", l, sub);
    float *src;
    pf_rc rc = expand_read_f32(j->f, name, (int64_t)2 * K * H, &src, err);
    if (rc != PF_RC_OK) return rc;
    float *b = malloc((size_t)2 * K * Hd * sizeof(float));
    for (int st = 0; b && st < 2 * K; st++)
        for (int c = 0; c < Hd; c++) b[st * Hd + c] = c < H ? src[st * H + c] : (st % K == 0 ? 1.0f : 0.0f);
    free(src);
    const int64_t bne[3] = {Hd, K, 2};
    expand_emit_f32(&j->s, name, b, 3, bne);
    snprintf(name, sizeof name, "blk.%d.%s_conv_proj.weight", l, sub);
    if ((rc = expand_read_f32(j->f, name, (int64_t)2 * K * G * H, &src, err)) != PF_RC_OK) return rc;
    float *proj = expand_build_matrix(proj_rows, 2 * K * Gd, j->mp.hid_in, Hd, src, H, 1.0f, 0.2f / sqrtf((float)Hd),
                                      &j->rng);
    expand_emit_matrix(&j->s, name, proj, 2 * K * Gd, Hd, j->o->type);
    free(src);
    return PF_RC_OK;
}

/* Every layer's two convs. The dynamic rows are [side][tap][group]: an old group keeps its row, so
 * channel c < H keeps group c / gs. */
static pf_rc emit_convs(draft_job *j, char *err) {
    const int K = (int)j->conv_k, G = j->H / (int)j->gs, Gd = j->Hd / (int)j->gs;
    int32_t *proj_rows = malloc((size_t)2 * K * Gd * sizeof *proj_rows);
    if (!proj_rows) return oom(err);
    for (int st = 0; st < 2 * K; st++)
        for (int g = 0; g < Gd; g++) proj_rows[st * Gd + g] = g < G ? st * G + g : MAP_RANDOM;
    pf_rc rc = PF_RC_OK;
    for (int l = 0; rc == PF_RC_OK && l < j->n_layer; l++)
        for (int k = 0; rc == PF_RC_OK && k < 2; k++) rc = emit_conv(j, l, k ? "ffn" : "attn", proj_rows, err);
    free(proj_rows);
    return rc;
}

/* DFlash2's selector. The final-normed row carries u_G at the guard: the selector must not read it;
 * extra tokens are never candidates or predecessors (zero rows). */
static pf_rc emit_selector(draft_job *j, char *err) {
    const int H = j->H, Hd = j->Hd, V = j->V, Vd = j->Vd;
    const gguf_tensor *sh = gguf_find_tensor(j->f, "selector_hidden.weight");
    const int R = (int)sh->ne[1];
    float *src;
    pf_rc rc = expand_read_f32(j->f, "selector_hidden.weight", (int64_t)R * H, &src, err);
    if (rc != PF_RC_OK) return rc;
    expand_emit_matrix(&j->s, "selector_hidden.weight",
                       expand_build_matrix(j->id_rows, R, j->mp.hid_out, Hd, src, H, 1.0f, 0.0f, &j->rng), R, Hd,
                       j->o->type);
    free(src);
    int32_t *rank_cols = expand_map_new(R, R, MAP_ZERO);
    if (!rank_cols) return oom(err);
    for (int k = 0; k < 2; k++) {
        const char *nm = k ? "selector_successor.weight" : "selector_predecessor.weight";
        if ((rc = expand_read_f32(j->f, nm, (int64_t)V * R, &src, err)) != PF_RC_OK) {
            free(rank_cols);
            return rc;
        }
        expand_emit_matrix(&j->s, nm, expand_build_matrix(j->vmap, Vd, rank_cols, R, src, R, 1.0f, 0.0f, &j->rng), Vd,
                           R, j->o->type);
        free(src);
    }
    free(rank_cols);
    return PF_RC_OK;
}

/* The expanded draft's tensors, in the order of the file. */
static pf_rc emit_draft(draft_job *j, char *err) {
    pf_rc rc = emit_fc(j, err);
    if (rc == PF_RC_OK) rc = emit_norms(j, err);
    if (rc == PF_RC_OK && gguf_find_tensor(j->f, "dec.weight")) rc = emit_dec_head(j, err);
    for (int l = 0; rc == PF_RC_OK && l < j->n_layer; l++)
        rc = expand_write_layer(&j->s, j->f, l, &j->mp, j->norm_scale, j->qk_scale, j->o->type, &j->rng, err);
    if (rc == PF_RC_OK && j->version == 2) rc = emit_convs(j, err);
    if (rc == PF_RC_OK && j->version == 2) rc = emit_selector(j, err);
    if (rc == PF_RC_OK && j->s.oom) rc = oom(err);
    return rc;
}

pf_rc pf_expand_draft(const char *in, const char *small_target, const char *out, const pf_expand_opts *o,
                      const pf_expand_info *info, char err[PF_ERR_LEN]) {
    if (!expand_output_type_ok(o->type)) {
        snprintf(err, PF_ERR_LEN, "expand: output type %u is not one of f32, f16, bf16, q8_0, q4_0, q4_1", o->type);
        return PF_RC_ARG;
    }
    draft_job j = {.o = o, .info = info, .in = in};
    pf_model *tm = NULL;
    pf_rc rc = expand_open_target(small_target, &o->shape, &tm, err);
    if (rc != PF_RC_OK) goto done;
    if (tm->hp.n_embd != info->src.n_embd || tm->hp.n_vocab != info->src.n_vocab || tm->hp.n_layer != info->src.n_layer) {
        snprintf(err, PF_ERR_LEN, "%s: not the target this expansion's info was made from", small_target);
        rc = PF_RC_ARG;
        goto done;
    }
    if ((rc = read_draft(&j, tm, err)) != PF_RC_OK) goto done;
    j.s.w = gguf_writer_new();
    j.vmap = expand_map_new(j.Vd, j.V, MAP_ZERO);
    j.id_rows = expand_map_new(j.Hd, j.Hd, MAP_ZERO);
    if (!j.s.w || !j.vmap || !j.id_rows || expand_maps_init(&j.mp) < 0) { /* expand_maps_init fails only for memory */
        rc = oom(err);
        goto done;
    }
    if ((rc = write_draft_meta(&j, err)) != PF_RC_OK) goto done;
    pf_rng_seed(&j.rng, o->seed ^ 0x0d4af7ull);
    if ((rc = emit_draft(&j, err)) != PF_RC_OK) goto done;
    rc = gguf_w_save(j.s.w, out, err);
done:
    free(j.vmap);
    free(j.id_rows);
    expand_maps_free(&j.mp);
    gguf_writer_free(j.s.w);
    gguf_close(j.f);
    pf_model_free(tm);
    return rc;
}
