/* Expanding a DFlash / DFlash2 draft with its target's maps (convert/expand.h). */
#include "convert/expand_impl.h"

/* ---------------------------------------------------------------- drafts */

static uint32_t meta_u32(const gguf_file *f, const char *key, uint32_t dflt) {
    uint32_t v;
    return gguf_get_u32(f, key, &v) == 0 ? v : dflt;
}

/* Every tensor of the draft must be one this expansion understands (a new kind of tensor would
 * otherwise be dropped or copied at the wrong shape). */
static int check_draft_tensors(const gguf_file *f, int n_layer, int v2, char *err) {
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
        if (!ok) snprintf(err, PF_ERR_LEN, "%s: tensor '%s' is not part of the dflash layout expand knows", f->path,
                          name ? name : "?");
        free(name);
        if (!ok) return -1;
    }
    return 0;
}

int pf_expand_draft(const char *in, const char *small_target, const char *out, const pf_expand_opts *o,
                    const pf_expand_info *info, char err[PF_ERR_LEN]) {
    const pf_synth_shape *d = &o->shape;
    pf_model *tm = NULL;
    gguf_file *f = NULL;
    sink s = {0};
    layer_maps mp = {0};
    int32_t *vmap = NULL, *id_rows = NULL, *fc_cols = NULL, *proj_rows = NULL;
    float *src = NULL;
    int rc = -1;
    if (!expand_output_type_ok(o->type)) {
        snprintf(err, PF_ERR_LEN, "expand: output type %u is not one of f32, f16, bf16, q8_0, q4_0, q4_1", o->type);
        return -1;
    }
    if (expand_open_target(small_target, d, &tm, err) < 0) goto done;
    if (tm->hp.n_embd != info->src.n_embd || tm->hp.n_vocab != info->src.n_vocab || tm->hp.n_layer != info->src.n_layer) {
        snprintf(err, PF_ERR_LEN, "%s: not the target this expansion's info was made from", small_target);
        goto done;
    }
    pf_dflash *chk = pf_dflash_load(in, tm, err); /* the draft must be valid for its small target */
    if (!chk) goto done;
    const int version = pf_dflash_version(chk), n_layer = pf_dflash_n_layer(chk);
    int n_taps;
    pf_dflash_tap_layers(chk, &n_taps);
    pf_dflash_free(chk);
    if (!(f = gguf_open(in, err))) goto done;
    const pf_hparams *th = &tm->hp;
    const int H = th->n_embd, Hd = d->n_embd, V = th->n_vocab, Vd = d->n_vocab, guard = info->guard;
    const int nh = (int)meta_u32(f, "dflash.attention.head_count", 0), F = (int)meta_u32(f, "dflash.feed_forward_length", 0);
    const int nkv = (int)meta_u32(f, "dflash.attention.head_count_kv", (uint32_t)nh);
    const int hd = (int)meta_u32(f, "dflash.attention.key_length", (uint32_t)(H / nh));
    float eps = th->rms_eps;
    gguf_get_f32(f, "dflash.attention.layer_norm_rms_epsilon", &eps);
    if (check_draft_tensors(f, n_layer, version == 2, err) < 0) goto done;
    /* heads and FFN follow the target's expansion when the draft was built like the small target */
    const bool like_target = nh == th->n_head && nkv == th->n_head_kv && hd == th->head_dim;
    mp = (layer_maps){.H = H, .Hd = Hd, .hd = hd, .nh = nh, .nkv = nkv, .F = F,
                      .nh_d = like_target ? d->n_head : nh, .nkv_d = like_target ? d->n_head_kv : nkv,
                      .F_d = F == th->n_ff ? d->n_ff : F, .guard = guard};
    const uint32_t conv_k = meta_u32(f, "dflash.conv_kernel_size", 2), gs = meta_u32(f, "dflash.conv_group_size", 16);
    if (version == 2 && Hd % (int)gs) {
        snprintf(err, PF_ERR_LEN, "%s: dflash.conv_group_size %u does not divide the target shape's hidden %d", in, gs, Hd);
        goto done;
    }
    const float norm_scale = info->norm_scale, qk_scale = expand_qk_scale_for(o, norm_scale);
    const float eps_d = o->keep_eps ? eps : (float)((double)eps * H / Hd);

    s.w = gguf_writer_new();
    vmap = expand_map_new(Vd, V, MAP_ZERO);
    id_rows = expand_map_new(Hd, Hd, MAP_ZERO);
    const int64_t fc_in = (int64_t)n_taps * Hd;
    fc_cols = malloc((size_t)fc_in * sizeof *fc_cols);
    if (!s.w || !vmap || !id_rows || !fc_cols || expand_maps_init(&mp) < 0) {
        snprintf(err, PF_ERR_LEN, "expand: out of memory");
        goto done;
    }
    /* tap t's big residual: small dims, the guard (c, must not enter fc), zero dims */
    for (int t = 0; t < n_taps; t++)
        for (int i = 0; i < Hd; i++)
            fc_cols[(int64_t)t * Hd + i] = i < H ? t * H + i : i == guard ? MAP_ZERO : MAP_RANDOM;

    gguf_writer *w = s.w;
    gguf_w_copy_kv(w, f, expand_skip_draft_key);
    expand_write_name(w, f, d, "draft");
    gguf_w_u32(w, "general.file_type", pf_file_type_of(o->type));
    gguf_w_u32(w, "dflash.context_length", (uint32_t)d->n_ctx);
    gguf_w_u32(w, "dflash.embedding_length", (uint32_t)Hd);
    gguf_w_u32(w, "dflash.feed_forward_length", (uint32_t)mp.F_d);
    gguf_w_u32(w, "dflash.attention.head_count", (uint32_t)mp.nh_d);
    gguf_w_u32(w, "dflash.attention.head_count_kv", (uint32_t)mp.nkv_d);
    gguf_w_u32(w, "dflash.attention.key_length", (uint32_t)hd);
    gguf_w_u32(w, "dflash.attention.value_length", (uint32_t)hd);
    gguf_w_f32(w, "dflash.attention.layer_norm_rms_epsilon", eps_d);
    if (expand_pad_tokenizer(w, f, Vd, err) < 0) goto done;
    gguf_w_u64(w, "pocketflash.expand.seed", o->seed);

    pf_rng rng;
    pf_rng_seed(&rng, o->seed ^ 0x0d4af7ull);
    const gguf_tensor *fct = gguf_find_tensor(f, "fc.weight");
    if (!(src = expand_read_f32(f, "fc.weight", (int64_t)H * n_taps * H, err))) goto done;
    /* fc stays in its own float type (the recipe keeps it precise); a quantized one takes --type */
    const bool fc_float = fct->type == PF_TYPE_F32 || fct->type == PF_TYPE_F16 || fct->type == PF_TYPE_BF16;
    float *fc = expand_build_matrix(mp.hid_out, Hd, fc_cols, fc_in, src, (int64_t)n_taps * H, 1.0f,
                                    1.0f / sqrtf((float)fc_in), &rng);
    expand_emit_matrix(&s, "fc.weight", fc, Hd, fc_in, fc_float ? fct->type : o->type);
    free(src);
    src = NULL;
    int64_t ne[3] = {Hd, 1, 1};
    for (int k = 0; k < 2; k++) { /* enc.output_norm reads fc's output (zero beyond H); output_norm feeds the head */
        const char *nm = k ? "output_norm.weight" : "enc.output_norm.weight";
        if (!(src = expand_read_f32(f, nm, H, err))) goto done;
        float *v = expand_hidden_norm(src, &mp, norm_scale, &rng);
        if (v && k == 1 && guard >= 0) {
            double bound = sqrt((double)H) * expand_max_abs(src, H) * info->out_row_max;
            v[guard] = expand_guard_weight(info, bound, d);
        }
        free(src);
        src = NULL;
        expand_emit_f32(&s, nm, v, 1, ne);
    }
    if (gguf_find_tensor(f, "dec.weight")) { /* Dec head (draft/dec.h): w_t . h_target + w_d . h_draft */
        if (!(src = expand_read_f32(f, "dec.weight", 2 * (int64_t)H, err))) goto done;
        float *dw = calloc(2 * (size_t)Hd, sizeof(float)); /* zero on extra dims: both rows carry the guard */
        for (int i = 0; dw && i < H; i++) {
            dw[i] = src[i];
            dw[Hd + i] = src[H + i];
        }
        free(src);
        src = NULL;
        const int64_t dne = 2 * (int64_t)Hd;
        expand_emit_f32(&s, "dec.weight", dw, 1, &dne);
        for (int k = 0; k < 2; k++) {
            const gguf_tensor *t = gguf_find_tensor(f, k ? "dec.pos_bias" : "dec.bias");
            if (!t || !(src = expand_read_f32(f, k ? "dec.pos_bias" : "dec.bias", t->ne[0], err))) {
                if (!t) snprintf(err, PF_ERR_LEN, "%s: tensor '%s' is missing", in, k ? "dec.pos_bias" : "dec.bias");
                goto done;
            }
            expand_emit_f32(&s, k ? "dec.pos_bias" : "dec.bias", src, 1, t->ne);
            src = NULL;
        }
    }
    for (int l = 0; l < n_layer; l++)
        if (expand_write_layer(&s, f, l, &mp, norm_scale, qk_scale, o->type, &rng, err) < 0) goto done;
    if (version == 2) {
        const int G = H / (int)gs, Gd = Hd / (int)gs, K = (int)conv_k;
        proj_rows = malloc((size_t)2 * K * Gd * sizeof *proj_rows);
        if (!proj_rows) {
            snprintf(err, PF_ERR_LEN, "expand: out of memory");
            goto done;
        }
        /* dyn rows [side][tap][group]: an old group keeps its row, so channel c < H keeps group c / gs */
        for (int st = 0; st < 2 * K; st++)
            for (int g = 0; g < Gd; g++) proj_rows[st * Gd + g] = g < G ? st * G + g : MAP_RANDOM;
        char name[96];
        for (int l = 0; l < n_layer; l++)
            for (int k = 0; k < 2; k++) {
                const char *sub = k ? "ffn" : "attn";
                snprintf(name, sizeof name, "blk.%d.%s_conv_base", l, sub);
                if (!(src = expand_read_f32(f, name, (int64_t)2 * K * H, err))) goto done;
                float *b = malloc((size_t)2 * K * Hd * sizeof(float));
                for (int st = 0; b && st < 2 * K; st++) /* extra channels: identity tap (their inputs are 0) */
                    for (int c = 0; c < Hd; c++) b[st * Hd + c] = c < H ? src[st * H + c] : (st % K == 0 ? 1.0f : 0.0f);
                free(src);
                src = NULL;
                const int64_t bne[3] = {Hd, K, 2};
                expand_emit_f32(&s, name, b, 3, bne);
                snprintf(name, sizeof name, "blk.%d.%s_conv_proj.weight", l, sub);
                if (!(src = expand_read_f32(f, name, (int64_t)2 * K * G * H, err))) goto done;
                float *proj = expand_build_matrix(proj_rows, 2 * K * Gd, mp.hid_in, Hd, src, H, 1.0f,
                                                  0.2f / sqrtf((float)Hd), &rng);
                expand_emit_matrix(&s, name, proj, 2 * K * Gd, Hd, o->type);
                free(src);
                src = NULL;
            }
        const gguf_tensor *sh = gguf_find_tensor(f, "selector_hidden.weight");
        const int R = (int)sh->ne[1];
        /* the final-normed row carries u_G at the guard: the selector must not read it */
        if (!(src = expand_read_f32(f, "selector_hidden.weight", (int64_t)R * H, err))) goto done;
        expand_emit_matrix(&s, "selector_hidden.weight", expand_build_matrix(id_rows, R, mp.hid_out, Hd, src, H, 1.0f, 0.0f, &rng), R, Hd, o->type);
        free(src);
        src = NULL;
        int32_t *rank_cols = expand_map_new(R, R, MAP_ZERO);
        for (int k = 0; k < 2; k++) { /* extra tokens are never candidates or predecessors: zero rows */
            const char *nm = k ? "selector_successor.weight" : "selector_predecessor.weight";
            if (!rank_cols || !(src = expand_read_f32(f, nm, (int64_t)V * R, err))) {
                if (!rank_cols) snprintf(err, PF_ERR_LEN, "expand: out of memory");
                free(rank_cols);
                goto done;
            }
            expand_emit_matrix(&s, nm, expand_build_matrix(vmap, Vd, rank_cols, R, src, R, 1.0f, 0.0f, &rng), Vd, R, o->type);
            free(src);
            src = NULL;
        }
        free(rank_cols);
    }
    if (s.oom) {
        snprintf(err, PF_ERR_LEN, "expand: out of memory");
        goto done;
    }
    rc = gguf_w_write(w, out, err);
done:
    free(src);
    free(vmap);
    free(id_rows);
    free(fc_cols);
    free(proj_rows);
    expand_maps_free(&mp);
    gguf_writer_free(s.w);
    gguf_close(f);
    pf_model_free(tm);
    return rc;
}
