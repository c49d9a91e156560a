#include "convert/synth.h"
#include "formats/errf.h"
#include "formats/grow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"
#include "formats/ggml_types.h"
#include "convert/requantize.h"
#include "convert/shape_keys.h"

static const pf_synth_shape k_shapes[] = {
    {"pocket", 28, 896, 2560, 14, 2, 64, 65536, 40960},
    {"qwen3-0.6b", 28, 1024, 3072, 16, 8, 128, 151936, 40960},
    {"tiny", 2, 128, 384, 4, 2, 32, 512, 2048},
};
static const char *const k_names[] = {"pocket", "qwen3-0.6b", "tiny", NULL};

const pf_synth_shape *pf_synth_shape_find(const char *name) {
    for (size_t i = 0; i < sizeof k_shapes / sizeof k_shapes[0]; i++)
        if (strcmp(k_shapes[i].name, name) == 0) return &k_shapes[i];
    return NULL;
}

const char *const *pf_synth_shape_names(void) { return k_names; }

/* Qwen3's 26 added tokens in their original order; the last six are not "special" (user-defined). */
static const char *const k_specials[26] = {
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
    "<tool_response>", "</tool_response>", "<think>", "</think>"};

/* GPT-2 byte-to-unicode map as UTF-8 strings. */
static void byte_piece(int b, char out[4]) {
    int cp;
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) {
        cp = b;
    } else {
        int n = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) n++;
        cp = 256 + n;
    }
    if (cp < 0x80) { out[0] = (char)cp; out[1] = 0; }
    else { out[0] = (char)(0xc0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3f)); out[2] = 0; }
}

typedef struct {
    char **strs;
    int n;
    size_t cap;
} strlist;

static int sl_push(strlist *l, char *s) {
    if (!s) return -1;
    char **p = pf_grow(l->strs, &l->cap, (size_t)l->n + 1, sizeof *p, 1024);
    if (!p) { free(s); return -1; }
    l->strs = p;
    l->strs[l->n++] = s;
    return 0;
}

static void sl_free(strlist *l) {
    for (int i = 0; i < l->n; i++) free(l->strs[i]);
    free(l->strs);
}

static char *cat2(const char *a, const char *b, char sep) {
    size_t la = strlen(a), lb = strlen(b);
    char *r = malloc(la + lb + 2);
    if (!r) return NULL;
    memcpy(r, a, la);
    size_t o = la;
    if (sep) r[o++] = sep;
    memcpy(r + o, b, lb + 1);
    return r;
}

/* Merges in a fixed order: letter pairs, "Ġ"+letter, "Ġ"+pair, letter triples, then "Ġ"+triple;
 * every result is made of two pieces that already exist, so BPE stays consistent. */
int pf_synth_tokenizer(gguf_writer *w, int n_vocab) {
    int n_merge = n_vocab - 256 - 26;
    if (n_merge < 0) return -1;
    static const char letters[] = "etaoinshrdlucmfwypvbgkqjxzETAOINSHRDLUCMFWYPVBGKQJXZ";
    const int NL = 52;
    strlist toks = {0}, merges = {0};
    int rc = -1;
    for (int b = 0; b < 256; b++) {
        char p[4];
        byte_piece(b, p);
        if (sl_push(&toks, strdup(p)) < 0) goto done;
    }
    const char *G = "\xc4\xa0"; /* byte-mapped space */
    for (int stage = 0; stage < 5 && merges.n < n_merge; stage++) {
        int total = stage == 0 ? NL * NL : stage == 1 ? NL : stage == 2 ? NL * NL : NL * NL * NL;
        for (int i = 0; i < total && merges.n < n_merge; i++) {
            char l[12], r[8];
            if (stage == 0) { snprintf(l, sizeof l, "%c", letters[i / NL]); snprintf(r, sizeof r, "%c", letters[i % NL]); }
            else if (stage == 1) { snprintf(l, sizeof l, "%s", G); snprintf(r, sizeof r, "%c", letters[i]); }
            else if (stage == 2) { snprintf(l, sizeof l, "%s%c", G, letters[i / NL]); snprintf(r, sizeof r, "%c", letters[i % NL]); }
            else if (stage == 3) { snprintf(l, sizeof l, "%c%c", letters[i / (NL * NL)], letters[i / NL % NL]); snprintf(r, sizeof r, "%c", letters[i % NL]); }
            else { snprintf(l, sizeof l, "%s%c%c", G, letters[i / (NL * NL)], letters[i / NL % NL]); snprintf(r, sizeof r, "%c", letters[i % NL]); }
            if (sl_push(&merges, cat2(l, r, ' ')) < 0 || sl_push(&toks, cat2(l, r, 0)) < 0) goto done;
        }
    }
    if (merges.n < n_merge) goto done;
    for (int i = 0; i < 26; i++)
        if (sl_push(&toks, strdup(k_specials[i])) < 0) goto done;
    int32_t *types = malloc((size_t)n_vocab * sizeof *types);
    if (!types) goto done;
    for (int i = 0; i < n_vocab; i++) types[i] = i < n_vocab - 26 ? 1 : (i < n_vocab - 6 ? 3 : 4);
    gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
    gguf_w_str(w, "tokenizer.ggml.pre", "qwen2");
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)toks.strs, NULL, (uint64_t)toks.n);
    gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_I32, types, (uint64_t)n_vocab);
    gguf_w_arr_str(w, "tokenizer.ggml.merges", (const char *const *)merges.strs, NULL, (uint64_t)merges.n);
    gguf_w_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)(n_vocab - 26 + 2));
    gguf_w_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)(n_vocab - 26));
    gguf_w_bool(w, "tokenizer.ggml.add_bos_token", false);
    gguf_w_str(w, "tokenizer.chat_template",
               "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
               "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");
    free(types);
    rc = 0;
done:
    sl_free(&toks);
    sl_free(&merges);
    return rc;
}

static float gauss(pf_rng *r) {
    double u1 = pf_rng_uniform(r), u2 = pf_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* What the tensors are written with: the writer (which owns their data), the random stream every
 * value is drawn from in file order, one scratch matrix of floats. */
typedef struct {
    gguf_writer *w;
    pf_rng rng;
    float *tmp;
    uint32_t type; /* of the matrices */
} synth;

/* A rows x cols matrix of N(0, std) values as `type`. 0, or -1 out of memory. */
static int put_mat(synth *s, const char *name, int64_t rows, int64_t cols, float std) {
    for (int64_t i = 0; i < rows * cols; i++) s->tmp[i] = gauss(&s->rng) * std;
    size_t nb = 0;
    void *d = gguf_w_own(s->w, pf_convert_matrix(s->type, s->tmp, rows, cols, &nb));
    if (!d) return -1;
    int64_t ne[2] = {cols, rows};
    gguf_w_tensor(s->w, name, s->type, 2, ne, d, nb);
    return 0;
}

/* A norm's weight vector (1 + 0.1 N(0, 1)) as F32. 0, or -1 out of memory. */
static int put_vec(synth *s, const char *name, int64_t n) {
    float *v = gguf_w_own(s->w, malloc((size_t)n * sizeof(float)));
    if (!v) return -1;
    for (int64_t i = 0; i < n; i++) v[i] = 1.0f + 0.1f * gauss(&s->rng);
    gguf_w_tensor(s->w, name, PF_TYPE_F32, 1, &n, v, (size_t)n * sizeof(float));
    return 0;
}

/* Layer l's tensors, in llama.cpp's order. 0, or -1 out of memory. */
static int put_layer(synth *s, const pf_synth_shape *sh, int l) {
    int64_t qd = (int64_t)sh->n_head * sh->head_dim, kvd = (int64_t)sh->n_head_kv * sh->head_dim, E = sh->n_embd;
    float sh_in = 1.0f / sqrtf((float)sh->n_embd), sq_in = 1.0f / sqrtf((float)qd), sf_in = 1.0f / sqrtf((float)sh->n_ff);
    char name[96];
#define LN(S) (snprintf(name, sizeof name, "blk.%d." S, l), name)
    int rc = put_vec(s, LN("attn_norm.weight"), E) || put_mat(s, LN("attn_q.weight"), qd, E, sh_in) ||
             put_mat(s, LN("attn_k.weight"), kvd, E, sh_in) || put_mat(s, LN("attn_v.weight"), kvd, E, sh_in) ||
             put_vec(s, LN("attn_q_norm.weight"), sh->head_dim) || put_vec(s, LN("attn_k_norm.weight"), sh->head_dim) ||
             put_mat(s, LN("attn_output.weight"), E, qd, sq_in) || put_vec(s, LN("ffn_norm.weight"), E) ||
             put_mat(s, LN("ffn_gate.weight"), sh->n_ff, E, sh_in) || put_mat(s, LN("ffn_up.weight"), sh->n_ff, E, sh_in) ||
             put_mat(s, LN("ffn_down.weight"), E, sh->n_ff, sf_in);
#undef LN
    return rc ? -1 : 0;
}

/* The metadata: architecture, name, shape keys and the synthetic tokenizer. 0, or -1 (vocabulary too small). */
static int put_keys(gguf_writer *w, const pf_synth_shape *sh, uint32_t type) {
    gguf_w_str(w, "general.architecture", "qwen3");
    char nm[96];
    snprintf(nm, sizeof nm, "synthetic-%s-%s", sh->name, pf_type_info(type)->name);
    gguf_w_str(w, "general.name", nm);
    gguf_w_u32(w, "qwen3.block_count", (uint32_t)sh->n_layer);
    pf_write_shape_keys(w, "qwen3", &(pf_shape_keys){(uint32_t)sh->n_ctx, (uint32_t)sh->n_embd, (uint32_t)sh->n_ff,
                                                     (uint32_t)sh->n_head, (uint32_t)sh->n_head_kv, (uint32_t)sh->head_dim});
    gguf_w_f32(w, "qwen3.rope.freq_base", 1e6f);
    gguf_w_f32(w, "qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
    return pf_synth_tokenizer(w, sh->n_vocab);
}

pf_rc pf_synth_save(const pf_synth_shape *sh, uint32_t type, bool untied, uint64_t seed, const char *path,
                    char err[PF_ERR_LEN]) {
    synth s = {.w = gguf_writer_new(), .type = type};
    pf_rng_seed(&s.rng, seed);
    /* one scratch buffer of floats large enough for the biggest matrix */
    int64_t big = (int64_t)sh->n_vocab * sh->n_embd;
    if ((int64_t)sh->n_ff * sh->n_embd > big) big = (int64_t)sh->n_ff * sh->n_embd;
    pf_rc rc;
    if (!s.w || !(s.tmp = malloc((size_t)big * sizeof(float)))) {
        rc = pf_err_rc(err, PF_RC_OOM, "%s: out of memory", path);
    } else if (put_keys(s.w, sh, type) < 0) {
        rc = pf_err_rc(err, PF_RC_ARG, "%s: tokenizer: vocabulary too small", path);
    } else {
        bool ok = put_mat(&s, "token_embd.weight", sh->n_vocab, sh->n_embd, 0.05f) == 0 &&
                  (!untied || put_mat(&s, "output.weight", sh->n_vocab, sh->n_embd, 0.05f) == 0) &&
                  put_vec(&s, "output_norm.weight", sh->n_embd) == 0;
        for (int l = 0; ok && l < sh->n_layer; l++) ok = put_layer(&s, sh, l) == 0;
        rc = ok ? gguf_w_save(s.w, path, err) : pf_err_rc(err, PF_RC_OOM, "%s: out of memory", path);
    }
    free(s.tmp);
    gguf_writer_free(s.w);
    return rc;
}

int pf_synth_write(const pf_synth_shape *sh, uint32_t type, bool untied, uint64_t seed, const char *path,
                   char err[PF_ERR_LEN]) {
    return pf_synth_save(sh, type, untied, seed, path, err) == PF_RC_OK ? 0 : -1;
}
