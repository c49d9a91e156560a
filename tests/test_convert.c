/* `convert` (HF checkpoint -> GGUF): tiny checkpoints of each architecture written here in C
 * (config.json, safetensors, tokenizer.json) convert, load and run (drafts speculate losslessly
 * with the converted target); broken ones are refused with the field named and no output; the
 * committed models, exported to HF by train/export_hf.py and converted back, are bitwise the
 * committed tensors and decode the same. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "draft/dflash.h"
#include "engine/model.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "convert/hf_convert.h"
#include "convert/vocab_import.h"
#include "fault.h"
#include "fuzz/bpe_json.h"
#include "test.h"
#include "util.h"

enum { F32, F16, BF16, I64, I8 };
static const char *k_dt[] = {"F32", "F16", "BF16", "I64", "I8"};
static const size_t k_es[] = {4, 2, 2, 8, 1};

typedef struct {
    char name[96];
    int dt, nd;
    int64_t sh[3];
    uint8_t *data;
    size_t nb;
} ent;

typedef struct {
    ent e[200];
    int n;
    uint64_t seed;
} ckpt;

static float frand(ckpt *c) {
    c->seed = c->seed * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((c->seed >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

static void ck_free(ckpt *c) {
    for (int i = 0; i < c->n; i++) free(c->e[i].data);
    c->n = 0;
}

/* A tensor of random values offset + scale * U(-1, 1) in dtype dt. */
static ent *ck_add(ckpt *c, const char *name, int dt, int nd, int64_t d0, int64_t d1, int64_t d2, float scale, float offset) {
    ent *e = &c->e[c->n++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->dt = dt;
    e->nd = nd;
    e->sh[0] = d0, e->sh[1] = d1, e->sh[2] = d2;
    size_t nel = 1;
    for (int d = 0; d < nd; d++) nel *= (size_t)e->sh[d];
    e->nb = nel * k_es[dt];
    e->data = malloc(e->nb ? e->nb : 1);
    for (size_t i = 0; i < nel; i++) {
        float v = offset + scale * frand(c);
        if (dt == F32) memcpy(e->data + 4 * i, &v, 4);
        else if (dt == F16) { pf_half h = pf_fp32_to_fp16(v); memcpy(e->data + 2 * i, &h, 2); }
        else if (dt == BF16) { uint16_t h = pf_fp32_to_bf16(v); memcpy(e->data + 2 * i, &h, 2); }
    }
    return e;
}

static ent *ck_find(ckpt *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].name, name)) return &c->e[i];
    return NULL;
}

static void ck_drop(ckpt *c, const char *name) {
    ent *e = ck_find(c, name);
    if (!e) return;
    free(e->data);
    *e = c->e[--c->n];
}

/* Tensors [from, to) of c as one safetensors file. */
static int write_st(const char *path, const ckpt *c, int from, int to) {
    size_t cap = 1 << 16, len = 0;
    char *h = malloc(cap);
    len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    size_t off = 0;
    for (int i = from; i < to; i++) {
        const ent *e = &c->e[i];
        len += (size_t)snprintf(h + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", e->name, k_dt[e->dt]);
        for (int d = 0; d < e->nd; d++) len += (size_t)snprintf(h + len, cap - len, "%s%lld", d ? "," : "", (long long)e->sh[d]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%zu,%zu]}", off, off + e->nb);
        off += e->nb;
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    while (len % 8) h[len++] = ' ';
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    uint64_t hl = len;
    fwrite(&hl, 8, 1, f);
    fwrite(h, 1, len, f);
    for (int i = from; i < to; i++) fwrite(c->e[i].data, 1, c->e[i].nb, f);
    free(h);
    return fclose(f);
}

static void write_text(const char *dir, const char *name, const char *fmt, ...) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

static void mkdir_p(const char *d) {
    char cmd[800];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", d, d);
    if (system(cmd) != 0) fprintf(stderr, "mkdir %s failed\n", d);
}

/* A byte-level BPE tokenizer.json: the 256 GPT-2 byte tokens (ids 0..255, no merges) and four
 * specials at 256..259 (<|endoftext|>, <|im_start|>, <|im_end|>, <|fim_pad|>). */
static void write_tokenizer(const char *dir) {
    char p[512];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    FILE *f = fopen(p, "w");
    if (!f) return;
    write_bpe_json(f, 256, "", "");
    fclose(f);
    write_text(dir, "tokenizer_config.json", "{\"eos_token\":\"<|im_end|>\",\"pad_token\":\"<|endoftext|>\"}");
}

enum { H = 64, NH = 4, NKV = 2, HD = 16, FF = 128, TL = 4, NTOK = 260, V = 262 };

static void add_layers(ckpt *c, const char *prefix, int L, int dt) {
    char n[128];
    for (int l = 0; l < L; l++) {
#define T(s, nd, a, b, sc, off) (snprintf(n, sizeof n, "%slayers.%d.%s", prefix, l, s), ck_add(c, n, dt, nd, a, b, 0, sc, off))
        T("input_layernorm.weight", 1, H, 0, 0.1f, 1.0f);
        T("self_attn.q_proj.weight", 2, NH * HD, H, 0.2f, 0);
        T("self_attn.k_proj.weight", 2, NKV * HD, H, 0.2f, 0);
        T("self_attn.v_proj.weight", 2, NKV * HD, H, 0.2f, 0);
        T("self_attn.o_proj.weight", 2, H, NH * HD, 0.2f, 0);
        T("self_attn.q_norm.weight", 1, HD, 0, 0.1f, 1.0f);
        T("self_attn.k_norm.weight", 1, HD, 0, 0.1f, 1.0f);
        T("post_attention_layernorm.weight", 1, H, 0, 0.1f, 1.0f);
        T("mlp.gate_proj.weight", 2, FF, H, 0.2f, 0);
        T("mlp.up_proj.weight", 2, FF, H, 0.2f, 0);
        T("mlp.down_proj.weight", 2, H, FF, 0.2f, 0);
#undef T
    }
}

static const char *k_shape_cfg = "\"hidden_size\":%d,\"intermediate_size\":%d,\"num_hidden_layers\":%d,"
                                 "\"num_attention_heads\":%d,\"num_key_value_heads\":%d,\"head_dim\":%d,"
                                 "\"rms_norm_eps\":1e-06,\"rope_theta\":1000000.0,\"max_position_embeddings\":512,"
                                 "\"hidden_act\":\"silu\",\"model_type\":\"qwen3\"";

/* A tiny Qwen3ForCausalLM folder; shards > 1 splits the tensors over that many files + index. */
static void build_target(ckpt *c, const char *dir, bool tied, int dt, int shards) {
    mkdir_p(dir);
    ck_free(c);
    c->seed = 12345 + (uint64_t)tied;
    ck_add(c, "model.embed_tokens.weight", dt, 2, V, H, 0, 0.8f, 0);
    add_layers(c, "model.", TL, dt);
    ck_add(c, "model.norm.weight", dt, 1, H, 0, 0, 0.1f, 1.0f);
    if (!tied) ck_add(c, "lm_head.weight", dt, 2, V, H, 0, 0.8f, 0);
    char shape[600];
    snprintf(shape, sizeof shape, k_shape_cfg, H, FF, TL, NH, NKV, HD);
    write_text(dir, "config.json", "{\"architectures\":[\"Qwen3ForCausalLM\"],%s,\"vocab_size\":%d,\"tie_word_embeddings\":%s}",
               shape, V, tied ? "true" : "false");
    write_tokenizer(dir);
    char p[512];
    if (shards <= 1) {
        snprintf(p, sizeof p, "%s/model.safetensors", dir);
        write_st(p, c, 0, c->n);
        return;
    }
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    FILE *f = fopen(p, "w");
    fputs("{\"metadata\":{},\"weight_map\":{", f);
    for (int s = 0; s < shards; s++) {
        int a = c->n * s / shards, b = c->n * (s + 1) / shards;
        char sp[512];
        snprintf(sp, sizeof sp, "%s/model-%05d-of-%05d.safetensors", dir, s + 1, shards);
        write_st(sp, c, a, b);
        for (int i = a; i < b; i++)
            fprintf(f, "%s\"%s\":\"model-%05d-of-%05d.safetensors\"", i ? "," : "", c->e[i].name, s + 1, shards);
    }
    fputs("}}", f);
    fclose(f);
}

typedef struct {
    int version, dt, causal, swa, reduced;
} draft_kind;

/* A tiny z-lab draft folder for the tiny target: 1 layer, taps target layers 0 and 2, block 4. */
static void build_draft(ckpt *c, const char *dir, draft_kind k) {
    mkdir_p(dir);
    ck_free(c);
    c->seed = 777 + (uint64_t)k.version * 10 + (uint64_t)k.reduced;
    ck_add(c, "fc.weight", k.dt, 2, H, 2 * H, 0, 0.2f, 0);
    ck_add(c, "hidden_norm.weight", k.dt, 1, H, 0, 0, 0.1f, 1.0f);
    ck_add(c, "norm.weight", k.dt, 1, H, 0, 0, 0.1f, 1.0f);
    add_layers(c, "", 1, k.dt);
    const int K = 2, G = H / 16, R = 32;
    if (k.version == 2) {
        ck_add(c, "layers.0.attention_conv.base_kernel", k.dt, 3, 2, K, H, 0.3f, 0.5f);
        ck_add(c, "layers.0.attention_conv.kernel_projection.weight", k.dt, 2, 2 * K * G, H, 0, 0.1f, 0);
        ck_add(c, "layers.0.mlp_conv.base_kernel", k.dt, 3, 2, K, H, 0.3f, 0.5f);
        ck_add(c, "layers.0.mlp_conv.kernel_projection.weight", k.dt, 2, 2 * K * G, H, 0, 0.1f, 0);
        ck_add(c, "candidate_selector.hidden_projection.weight", k.dt, 2, R, H, 0, 0.2f, 0);
        ck_add(c, "candidate_selector.predecessor_codebook", k.dt, 2, V, R, 0, 0.5f, 0);
        ck_add(c, "candidate_selector.successor_codebook", k.dt, 2, V, R, 0, 0.5f, 0);
    }
    if (k.reduced) { /* its own head over 100 tokens: row i scores target id 2i (HF d2t offsets: i) */
        ck_add(c, "lm_head.weight", k.dt, 2, 100, H, 0, 0.8f, 0);
        ent *e = ck_add(c, "d2t", I64, 1, 100, 0, 0, 0, 0);
        for (int64_t i = 0; i < 100; i++) memcpy(e->data + 8 * i, &i, 8);
    }
    char shape[600], extra[400] = "";
    snprintf(shape, sizeof shape, k_shape_cfg, H, FF, 1, NH, NKV, HD);
    if (k.version == 2)
        snprintf(extra, sizeof extra, ",\"conv_kernel_size\":%d,\"conv_group_size\":16,\"selector_rank\":%d,\"selector_top_k\":4", K, R);
    write_text(dir, "config.json",
               "{\"architectures\":[\"%s\"],%s,\"vocab_size\":%d,\"num_target_layers\":%d,\"is_causal\":%s,"
               "\"layer_types\":[\"%s\"],\"sliding_window\":%s,"
               "\"dflash_config\":{\"block_size\":4,\"mask_token_id\":259,\"target_layer_ids\":[0,2]%s}}",
               k.version == 2 ? "DFlash2DraftModel" : "DFlashDraftModel", shape, V, TL, k.causal ? "true" : "false",
               k.swa ? "sliding_attention" : "full_attention", k.swa ? "3" : "null", extra);
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    write_st(p, c, 0, c->n);
}

/* `pocketflash ARGS` with stdout into out_path (NULL: discarded); the exit status. */
static int run_cli(const char *out_path, const char *fmt, ...) {
    char args[1500], cmd[2000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s/cli-convert.err </dev/null", test_cli(), args, out_path ? out_path : "/dev/null",
             pf_test_tmpdir());
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static bool same_file(const char *a, const char *b) {
    size_t na, nb;
    char *x = test_slurp(a, &na), *y = test_slurp(b, &nb);
    bool same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

static pf_rc convert(const char *dir, const char *out, uint32_t type, const char *target, char *err) {
    pf_convert_opts o = {.type = type, .target = target};
    return pf_hf_convert(dir, out, &o, NULL, err);
}

/* A target checkpoint built in <tmp>/hf_t_<tag> (build_target's tied, dt and shards; the folder's
 * path to dir[300]) and converted to `type` at <tmp>/t_<tag>.gguf (its path to out[320]). */
static int convert_target(ckpt *c, const char *tag, bool tied, int dt, int shards, uint32_t type, char *dir, char *out,
                          char *err) {
    snprintf(dir, 300, "%s/hf_t_%s", pf_test_tmpdir(), tag);
    snprintf(out, 320, "%s/t_%s.gguf", pf_test_tmpdir(), tag);
    build_target(c, dir, tied, dt, shards);
    return convert(dir, out, type, NULL, err);
}

/* convert_target, then its file loaded: the model, or NULL with err filled. */
static pf_model *converted_target(ckpt *c, const char *tag, bool tied, int dt, int shards, uint32_t type, char *dir,
                                  char *out, char *err) {
    return convert_target(c, tag, tied, dt, shards, type, dir, out, err) == 0 ? pf_model_load(out, err) : NULL;
}

TEST(convert_target_tied_bf16_runs) {
    ckpt c = {0};
    char dir[300], out[320], err[PF_ERR_LEN];
    pf_model *m = converted_target(&c, "tied", true, BF16, 1, PF_TYPE_F16, dir, out, err);
    CHECKF(m, "%s", err);
    CHECK(m->hp.n_vocab == V && m->hp.n_layer == TL && m->hp.n_embd == H && m->hp.n_head_kv == NKV);
    pf_model_free(m);
    gguf_file *g;
    gguf_open_file(out, &g, err);
    CHECK(g);
    const gguf_tensor *emb = gguf_find_tensor(g, "token_embd.weight"), *nrm = gguf_find_tensor(g, "blk.1.ffn_norm.weight");
    CHECK(emb && emb->type == PF_TYPE_F16 && emb->ne[0] == H && emb->ne[1] == V && !gguf_find_tensor(g, "output.weight"));
    CHECK(nrm && nrm->type == PF_TYPE_F32 && nrm->ne[0] == H);
    /* BF16 -> f16 rounds each value; norms widen exactly */
    const ent *se = ck_find(&c, "model.embed_tokens.weight"), *sn = ck_find(&c, "model.layers.1.post_attention_layernorm.weight");
    for (int i = 0; i < V * H; i += 97) {
        uint16_t b;
        memcpy(&b, se->data + 2 * i, 2);
        CHECK(((const pf_half *)emb->data)[i] == pf_fp32_to_fp16(pf_bf16_to_fp32(b)));
    }
    for (int i = 0; i < H; i++) {
        uint16_t b;
        memcpy(&b, sn->data + 2 * i, 2);
        CHECK(((const float *)nrm->data)[i] == pf_bf16_to_fp32(b));
    }
    const gguf_kv *toks = gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_STR);
    CHECK(toks && toks->v.arr.n == V && gguf_str_eq(toks->v.arr.strs[258], "<|im_end|>"));
    CHECK(gguf_str_eq(toks->v.arr.strs[261], "[PAD261]")); /* the embedding's extra rows: unused tokens */
    uint32_t eos;
    CHECK(gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eos) == 0 && eos == 258);
    gguf_close(g);
    CHECK(run_cli(NULL, "run -m %s -p hello -n 8", out) == 0);
    ck_free(&c);
}

TEST(convert_target_untied_sharded_f16) {
    ckpt c = {0};
    char dir[300], out[320], err[PF_ERR_LEN];
    CHECKF(convert_target(&c, "untied", false, F16, 3, PF_TYPE_F16, dir, out, err) == 0, "%s", err);
    gguf_file *g;
    gguf_open_file(out, &g, err);
    CHECK(g);
    CHECK(g->n_tensors == (uint64_t)c.n);
    /* same type: the bytes of every matrix are the checkpoint's, in ggml orientation (dims reversed) */
    static const char *pairs[][2] = {{"lm_head.weight", "output.weight"}, {"model.layers.3.mlp.down_proj.weight", "blk.3.ffn_down.weight"},
                                     {"model.layers.0.self_attn.k_proj.weight", "blk.0.attn_k.weight"}};
    for (int i = 0; i < 3; i++) {
        const ent *e = ck_find(&c, pairs[i][0]);
        const gguf_tensor *t = gguf_find_tensor(g, pairs[i][1]);
        CHECKF(t && t->ne[0] == e->sh[1] && t->ne[1] == e->sh[0] && t->nbytes == e->nb && !memcmp(t->data, e->data, e->nb),
               "%s", pairs[i][1]);
    }
    gguf_close(g);
    char q[320];
    snprintf(q, sizeof q, "%s/t_untied_q8.gguf", pf_test_tmpdir());
    CHECKF(convert(dir, q, PF_TYPE_Q8_0, NULL, err) == 0, "%s", err);
    CHECK(run_cli(NULL, "run -m %s -p hello -n 8", q) == 0);
    ck_free(&c);
}

/* Greedy output of a speculative run with the draft equals the plain run. */
static int spec_equals_plain(const char *target, const char *draft, const char *tag) {
    char a[320], b[320];
    snprintf(a, sizeof a, "%s/%s-spec.txt", pf_test_tmpdir(), tag);
    snprintf(b, sizeof b, "%s/%s-ar.txt", pf_test_tmpdir(), tag);
    if (run_cli(a, "run -m %s -d %s --block 4 -p 'the quick brown fox' -n 40 --ignore-eos --stats", target, draft) != 0)
        return -1;
    char ep[320];
    snprintf(ep, sizeof ep, "%s/cli-convert.err", pf_test_tmpdir());
    size_t n;
    char *stats = test_slurp(ep, &n);
    bool drafted = stats && strstr(stats, "speculation: ") && strstr(stats, "(block 4), ") && !strstr(stats, ", 0 drafted");
    free(stats);
    if (!drafted) return -4; /* the run must have speculated */
    if (run_cli(b, "run -m %s --spec ar -p 'the quick brown fox' -n 40 --ignore-eos", target) != 0) return -2;
    char *s = test_slurp(a, &n);
    free(s);
    return same_file(a, b) && n > 0 ? 0 : -3;
}

TEST(convert_drafts_load_and_speculate_losslessly) {
    ckpt c = {0};
    char tdir[300], tout[320], err[PF_ERR_LEN];
    pf_model *m = converted_target(&c, "for_drafts", true, F32, 1, PF_TYPE_F32, tdir, tout, err);
    CHECKF(m, "%s", err);
    static const struct { draft_kind k; const char *tag; } kinds[] = {
        {{1, F16, 0, 0, 0}, "v1"},
        {{1, F32, 1, 1, 0}, "v1-causal-swa"},
        {{2, BF16, 0, 0, 0}, "v2"},
        {{1, F16, 0, 0, 1}, "v1-d2t"},
        {{2, F32, 0, 1, 1}, "v2-d2t-swa"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        char dir[320], out[340];
        snprintf(dir, sizeof dir, "%s/hf_d_%s", pf_test_tmpdir(), kinds[i].tag);
        snprintf(out, sizeof out, "%s/d_%s.gguf", pf_test_tmpdir(), kinds[i].tag);
        build_draft(&c, dir, kinds[i].k);
        CHECKF(convert(dir, out, PF_TYPE_F16, tout, err) == 0, "%s: %s", kinds[i].tag, err);
        pf_dflash *d = pf_dflash_load(out, m, err);
        CHECKF(d, "%s: %s", kinds[i].tag, err);
        int nt;
        const int *taps = pf_dflash_tap_layers(d, &nt);
        CHECK(nt == 2 && taps[0] == 0 && taps[1] == 2); /* HF ids 0, 2 = GGUF target_layers 1, 3 */
        CHECK(pf_dflash_version(d) == kinds[i].k.version && pf_dflash_block_size(d) == 4 && pf_dflash_mask_token(d) == 259);
        CHECK(pf_dflash_causal(d) == (bool)kinds[i].k.causal && pf_dflash_layer_window(d, 0) == (kinds[i].k.swa ? 3 : 0));
        pf_dflash_state *s = pf_dflash_state_new(d, 64, NULL, NULL, err);
        CHECK(s);
        const int32_t *ids;
        int nh = pf_dflash_head(s, &ids);
        CHECK(nh == (kinds[i].k.reduced ? 100 : 0));
        if (kinds[i].k.reduced) CHECK(ids[0] == 0 && ids[1] == 2 && ids[99] == 198); /* d2t: row i scores id 2i */
        pf_dflash_state_free(s);
        pf_dflash_free(d);
        gguf_file *g;
        gguf_open_file(out, &g, err);
        const gguf_kv *tl = gguf_get_arr(g, "dflash.target_layers", GGUF_I32);
        CHECK(tl && tl->v.arr.n == 2 && gguf_arr_int(tl, 0) == 1 && gguf_arr_int(tl, 1) == 3);
        CHECK(gguf_find(g, "tokenizer.ggml.tokens") && gguf_find(g, "tokenizer.ggml.merges")); /* self-contained */
        if (kinds[i].k.reduced) {
            const gguf_tensor *t = gguf_find_tensor(g, "d2t");
            CHECK(t && t->type == PF_TYPE_I64 && t->ne[0] == 100 && ((const int64_t *)t->data)[7] == 14);
        }
        gguf_close(g);
        int r = spec_equals_plain(tout, out, kinds[i].tag);
        CHECKF(r == 0, "%s: speculative output differs from plain decoding (%d)", kinds[i].tag, r);
    }
    pf_model_free(m);
    ck_free(&c);
}

/* ---- refusals: every broken checkpoint fails with the field named and leaves no output */

typedef void (*mutator)(ckpt *c, const char *dir);

static void rewrite(ckpt *c, const char *dir) {
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    write_st(p, c, 0, c->n);
}
static void m_missing_tensor(ckpt *c, const char *dir) { ck_drop(c, "model.layers.2.mlp.up_proj.weight"); rewrite(c, dir); }
static void m_wrong_dtype(ckpt *c, const char *dir) { /* an I8 weight of the right shape */
    ent *e = ck_find(c, "model.layers.0.self_attn.q_proj.weight");
    e->dt = I8;
    e->nb /= 2;
    rewrite(c, dir);
}
static void m_wrong_shape(ckpt *c, const char *dir) { ck_find(c, "model.norm.weight")->sh[0] = H / 2; ck_find(c, "model.norm.weight")->nb /= 2; rewrite(c, dir); }
static void m_extra_tensor(ckpt *c, const char *dir) { ck_add(c, "model.layers.0.mlp.bias", F32, 1, 4, 0, 0, 1, 0); rewrite(c, dir); }
static void m_no_heads(ckpt *c, const char *dir) {
    (void)c;
    write_text(dir, "config.json", "{\"architectures\":[\"Qwen3ForCausalLM\"],\"hidden_size\":64,\"intermediate_size\":128,"
                                   "\"num_hidden_layers\":4,\"vocab_size\":262}");
}
static void m_arch(ckpt *c, const char *dir) { (void)c; write_text(dir, "config.json", "{\"architectures\":[\"LlamaForCausalLM\"]}"); }
static void m_bad_json(ckpt *c, const char *dir) { (void)c; write_text(dir, "config.json", "{\"architectures\":[\"Qwen3ForCausalLM\"],}"); }
static void m_untied_no_head(ckpt *c, const char *dir) {
    char shape[600];
    (void)c;
    snprintf(shape, sizeof shape, k_shape_cfg, H, FF, TL, NH, NKV, HD);
    write_text(dir, "config.json", "{\"architectures\":[\"Qwen3ForCausalLM\"],%s,\"vocab_size\":%d,\"tie_word_embeddings\":false}", shape, V);
}
static void m_rope_scaling(ckpt *c, const char *dir) {
    char shape[600];
    (void)c;
    snprintf(shape, sizeof shape, k_shape_cfg, H, FF, TL, NH, NKV, HD);
    write_text(dir, "config.json", "{\"architectures\":[\"Qwen3ForCausalLM\"],%s,\"vocab_size\":%d,\"tie_word_embeddings\":true,"
                                   "\"rope_scaling\":{\"rope_type\":\"yarn\",\"factor\":4}}", shape, V);
}
static void m_vocab(ckpt *c, const char *dir) { /* more embedding rows than config's vocab_size says */
    char shape[600];
    (void)c;
    snprintf(shape, sizeof shape, k_shape_cfg, H, FF, TL, NH, NKV, HD);
    write_text(dir, "config.json", "{\"architectures\":[\"Qwen3ForCausalLM\"],%s,\"vocab_size\":%d,\"tie_word_embeddings\":true}", shape, 300);
}
static void m_no_tokenizer(ckpt *c, const char *dir) {
    (void)c;
    char p[512];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    remove(p);
}
static void m_offsets(ckpt *c, const char *dir) { /* a data_offsets pair beyond the file */
    rewrite(c, dir);
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    size_t n;
    char *b = test_slurp(p, &n);
    char *at = strstr(b + 8, "\"data_offsets\":[0,");
    if (at) memcpy(at + 16, "9", 1); /* "[0,N" -> "[9..." : begins at 9.. */
    FILE *f = fopen(p, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
    free(b);
}
static void m_header_len(ckpt *c, const char *dir) {
    rewrite(c, dir);
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    FILE *f = fopen(p, "r+b");
    uint64_t big = 1ull << 40;
    fwrite(&big, 8, 1, f);
    fclose(f);
}
static void m_truncated(ckpt *c, const char *dir) {
    rewrite(c, dir);
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    if (truncate(p, 4000) != 0) fprintf(stderr, "truncate failed\n");
}
static void m_tokenizer_cut(ckpt *c, const char *dir) {
    (void)c;
    char p[512];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    if (truncate(p, 100) != 0) fprintf(stderr, "truncate failed\n");
}
static void m_weights_folder(ckpt *c, const char *dir) { /* model.safetensors cannot be read: a folder */
    (void)c;
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    if (remove(p) != 0 || mkdir(p, 0755) != 0) fprintf(stderr, "mkdir %s failed\n", p);
}

TEST(convert_refuses_broken_target_checkpoints) {
    /* each with the kind it must keep: a file that cannot be read I/O, one that does not fit format */
    static const struct { mutator m; const char *want; pf_rc rc; } cases[] = {
        {m_missing_tensor, "tensor 'model.layers.2.mlp.up_proj.weight': missing", PF_RC_FORMAT},
        {m_wrong_dtype, "tensor 'model.layers.0.self_attn.q_proj.weight': dtype I8 is not supported (F32, F16, BF16)",
         PF_RC_FORMAT},
        {m_wrong_shape, "tensor 'model.norm.weight': shape [32], expected [64]", PF_RC_FORMAT},
        {m_extra_tensor, "tensor 'model.layers.0.mlp.bias': not part of a Qwen3ForCausalLM checkpoint", PF_RC_FORMAT},
        {m_no_heads, "config.json: num_attention_heads: missing", PF_RC_FORMAT},
        {m_arch, "architectures: \"LlamaForCausalLM\" is not supported", PF_RC_FORMAT},
        {m_bad_json, "config.json", PF_RC_FORMAT},
        {m_untied_no_head, "tensor 'lm_head.weight': missing (tie_word_embeddings is false)", PF_RC_FORMAT},
        {m_rope_scaling, "rope_scaling: type \"yarn\" is not supported", PF_RC_FORMAT},
        {m_vocab, "300", PF_RC_FORMAT},
        {m_no_tokenizer, "tokenizer.json: missing", PF_RC_IO},
        {m_offsets, "data_offsets", PF_RC_FORMAT},
        {m_header_len, "header length", PF_RC_FORMAT},
        {m_truncated, "model.safetensors", PF_RC_FORMAT},
        {m_tokenizer_cut, "tokenizer.json: byte ", PF_RC_FORMAT},
        {m_weights_folder, "model.safetensors: not a regular file", PF_RC_IO},
    };
    ckpt c = {0};
    char dir[300], out[320], err[PF_ERR_LEN];
    snprintf(dir, sizeof dir, "%s/hf_t_bad", pf_test_tmpdir());
    snprintf(out, sizeof out, "%s/t_bad.gguf", pf_test_tmpdir());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_free(&c);
        build_target(&c, dir, true, F16, 1);
        cases[i].m(&c, dir);
        err[0] = 0;
        pf_rc rc = convert(dir, out, PF_TYPE_F16, NULL, err);
        CHECKF(rc == cases[i].rc && strstr(err, cases[i].want), "case %zu: wanted %d '%s', got %d '%s'", i, cases[i].rc,
               cases[i].want, rc, err);
        CHECKF(!test_exists(out), "case %zu left an output", i);
    }
    ck_free(&c);
}

static void warn_collect(void *ctx, const char *msg) {
    char *buf = ctx;
    snprintf(buf + strlen(buf), 2048 - strlen(buf), "%s\n", msg);
}

/* A draft config with one field replaced: the dflash_config of build_draft(version 2) with `dc`. */
static void draft_cfg(const char *dir, const char *arch, int hidden, const char *dc) {
    char shape[600];
    snprintf(shape, sizeof shape, k_shape_cfg, hidden, FF, 1, NH, NKV, HD);
    write_text(dir, "config.json", "{\"architectures\":[\"%s\"],%s,\"dflash_config\":{%s}}", arch, shape, dc);
}

TEST(convert_refuses_broken_drafts_and_warns_on_last_layer_taps) {
    ckpt c = {0};
    char tdir[300], tout[320], dir[320], out[340], err[PF_ERR_LEN];
    snprintf(dir, sizeof dir, "%s/hf_d_bad", pf_test_tmpdir());
    snprintf(out, sizeof out, "%s/d_bad.gguf", pf_test_tmpdir());
    CHECKF(convert_target(&c, "dbad", true, F16, 1, PF_TYPE_F16, tdir, tout, err) == 0, "%s", err);
    const char *v2 = "\"conv_kernel_size\":2,\"conv_group_size\":16,\"selector_rank\":32,\"selector_top_k\":4";
    char dc[600];
    static const struct { const char *dc_fmt; int hidden; const char *drop; int no_target; const char *want; } cases[] = {
        {"\"block_size\":4,\"mask_token_id\":259,\"target_layer_ids\":[0,2],%s", H, NULL, 1, "--target: a draft needs"},
        {"\"block_size\":4,\"target_layer_ids\":[0,2],%s", H, NULL, 0, "dflash_config.mask_token_id: missing"},
        {"\"block_size\":4,\"mask_token_id\":259,%s", H, NULL, 0, "dflash_config.target_layer_ids: missing"},
        {"\"block_size\":4,\"mask_token_id\":259,\"target_layer_ids\":[0,4],%s", H, NULL, 0,
         "dflash_config.target_layer_ids[1]: out of range"},
        {"\"mask_token_id\":259,\"target_layer_ids\":[0,2],%s", H, NULL, 0, "dflash_config.block_size: missing"},
        {"\"block_size\":4,\"mask_token_id\":999,\"target_layer_ids\":[0,2],%s", H, NULL, 0,
         "dflash_config.mask_token_id: out of range"},
        {"\"block_size\":4,\"mask_token_id\":259,\"target_layer_ids\":[0,2],%s", 96, NULL, 0,
         "hidden_size: 96 differs from the target's 64"},
        {"\"block_size\":4,\"mask_token_id\":259,\"target_layer_ids\":[0,2],%s},\"num_target_layers\":36,\"x\":{", H,
         NULL, 0, "num_target_layers: 36, but the target"},
        {"\"block_size\":4,\"mask_token_id\":259,\"target_layer_ids\":[0,2],%s", H,
         "candidate_selector.successor_codebook", 0, "tensor 'candidate_selector.successor_codebook': missing"},
        {"\"block_size\":4,\"mask_token_id\":259,\"target_layer_ids\":[0,2],%s", H, "layers.0.mlp_conv.base_kernel", 0,
         "tensor 'layers.0.mlp_conv.base_kernel': missing"},
        {"\"block_size\":4,\"mask_token_id\":259,\"target_layer_ids\":[0,2],\"conv_kernel_size\":2,"
         "\"conv_group_size\":24,\"selector_rank\":32,\"selector_top_k\":4%s", H, NULL, 0,
         "dflash_config.conv_group_size: 24 does not divide hidden_size 64"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_free(&c);
        build_draft(&c, dir, (draft_kind){2, F16, 0, 0, 0});
        if (cases[i].drop) {
            ck_drop(&c, cases[i].drop);
            rewrite(&c, dir);
        }
        snprintf(dc, sizeof dc, cases[i].dc_fmt, strstr(cases[i].dc_fmt, "conv_group_size") ? "" : v2);
        draft_cfg(dir, "DFlash2DraftModel", cases[i].hidden, dc);
        err[0] = 0;
        pf_rc rc = convert(dir, out, PF_TYPE_F16, cases[i].no_target ? NULL : tout, err);
        CHECKF(rc == (cases[i].no_target ? PF_RC_ARG : PF_RC_FORMAT) && strstr(err, cases[i].want),
               "case %zu: wanted '%s', got '%s'", i, cases[i].want, err);
        CHECKF(!test_exists(out), "case %zu left an output", i);
    }
    /* tapping the last target layer (HF id 3 of 4) converts, with a warning naming llama.cpp's refusal */
    ck_free(&c);
    build_draft(&c, dir, (draft_kind){2, F16, 0, 0, 0});
    snprintf(dc, sizeof dc, "\"block_size\":4,\"mask_token_id\":259,\"target_layer_ids\":[0,3],%s", v2);
    draft_cfg(dir, "DFlash2DraftModel", H, dc);
    char warned[2048] = "";
    pf_convert_opts o = {.type = PF_TYPE_F16, .target = tout, .warn = warn_collect, .warn_ctx = warned};
    CHECKF(pf_hf_convert(dir, out, &o, NULL, err) == 0, "%s", err);
    CHECKF(strstr(warned, "target_layer_ids[1] = 3 taps the target's last layer (dflash.target_layers 4): llama.cpp's loader refuses"),
           "%s", warned);
    ck_free(&c);
}

/* ---- round trip of the committed models: GGUF -> export_hf.py -> convert -> GGUF */

/* Every tensor of `ref` (except names starting with `skip`, which must be missing from `got`) is in
 * `got` with the same type, dims and bytes, and `got` has no other tensor. "" when so, else what differs. */
static void compare_tensors(const char *ref, const char *got, const char *skip, char *msg, size_t n) {
    char err[PF_ERR_LEN];
    gguf_file *a, *b;
    if (gguf_open_file(ref, &a, err) == PF_RC_OK) gguf_open_file(got, &b, err);
    else b = NULL;
    msg[0] = 0;
    if (!a || !b) {
        snprintf(msg, n, "%s", err);
    } else {
        uint64_t matched = 0;
        for (uint64_t i = 0; i < a->n_tensors && !msg[0]; i++) {
            const gguf_tensor *t = &a->tensors[i];
            char *name = gguf_str_dup(t->name);
            const gguf_tensor *u = gguf_find_tensor(b, name);
            bool skipped = skip && !strncmp(name, skip, strlen(skip));
            if (skipped && u) snprintf(msg, n, "%s: present, expected it left out", name);
            else if (!skipped && !u) snprintf(msg, n, "%s: missing", name);
            else if (u && (u->type != t->type || u->n_dims != t->n_dims || memcmp(u->ne, t->ne, sizeof t->ne) ||
                           u->nbytes != t->nbytes || memcmp(u->data, t->data, t->nbytes)))
                snprintf(msg, n, "%s: differs (type %u vs %u)", name, u->type, t->type);
            matched += u != NULL;
            free(name);
        }
        if (!msg[0] && matched != b->n_tensors) snprintf(msg, n, "%s has %llu tensors, %llu matched", got,
                                                          (unsigned long long)b->n_tensors, (unsigned long long)matched);
        static const char *arrs[] = {"tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type"};
        for (int k = 0; k < 3 && !msg[0]; k++) {
            const gguf_kv *x = gguf_find(a, arrs[k]), *y = gguf_find(b, arrs[k]);
            bool same = x && y && x->type == GGUF_ARR && y->type == GGUF_ARR && x->v.arr.n == y->v.arr.n;
            for (uint64_t j = 0; same && j < x->v.arr.n; j++)
                same = x->v.arr.type == GGUF_STR ? x->v.arr.strs[j].len == y->v.arr.strs[j].len &&
                                                       !memcmp(x->v.arr.strs[j].ptr, y->v.arr.strs[j].ptr, x->v.arr.strs[j].len)
                                                 : gguf_arr_int(x, j) == gguf_arr_int(y, j);
            if (!same) snprintf(msg, n, "%s differs", arrs[k]);
        }
    }
    gguf_close(a);
    gguf_close(b);
}

static int export_hf(const char *gguf, const char *dir, const char *extra) {
    const char *py = getenv("PYTHON") ? getenv("PYTHON") : "/usr/bin/python3";
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s train/export_hf.py %s -o %s %s >/dev/null 2>%s/export_hf.err", py, gguf, dir, extra,
             pf_test_tmpdir());
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

TEST(convert_round_trip_of_the_committed_models) {
    static const char *T = "models/pf-target-f16.gguf";
    static const char *D[2] = {"models/pf-draft-dflash.gguf", "models/pf-draft-dflash2.gguf"};
    const char *tmp = pf_test_tmpdir();
    char hf[400], t16[400], tq8[400], ref_q8[400], d16[2][400], msg[512], err[PF_ERR_LEN];
    snprintf(hf, sizeof hf, "%s/rt_target", tmp);
    snprintf(t16, sizeof t16, "%s/rt_target_f16.gguf", tmp);
    snprintf(tq8, sizeof tq8, "%s/rt_target_q8.gguf", tmp);
    snprintf(ref_q8, sizeof ref_q8, "%s/rt_ref_q8.gguf", tmp);
    CHECK(export_hf(T, hf, "") == 0);
    CHECKF(convert(hf, t16, PF_TYPE_F16, NULL, err) == 0, "%s", err);
    compare_tensors(T, t16, NULL, msg, sizeof msg);
    CHECKF(!msg[0], "target, f16: %s", msg);
    /* the same type conversion as `quantize`: bitwise the same blocks */
    CHECKF(convert(hf, tq8, PF_TYPE_Q8_0, NULL, err) == 0, "%s", err);
    CHECK(run_cli(NULL, "quantize %s %s q8_0", T, ref_q8) == 0);
    compare_tensors(ref_q8, tq8, NULL, msg, sizeof msg);
    CHECKF(!msg[0], "target, q8_0: %s", msg);
    for (int v = 0; v < 2; v++) {
        char dir[400];
        snprintf(dir, sizeof dir, "%s/rt_draft%d", tmp, v + 1);
        snprintf(d16[v], sizeof d16[v], "%s/rt_draft%d_f16.gguf", tmp, v + 1);
        char extra[500];
        snprintf(extra, sizeof extra, "--target %s %s", T, v ? "--shard-bytes 2000000" : "");
        CHECK(export_hf(D[v], dir, extra) == 0);
        if (v) {
            char idx[500];
            snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", dir);
            CHECK(test_exists(idx)); /* the sharded path */
        }
        CHECKF(convert(dir, d16[v], PF_TYPE_F16, t16, err) == 0, "%s", err);
        /* everything but the Dec head (pocketflash-only, not in the HF layout) */
        compare_tensors(D[v], d16[v], "dec.", msg, sizeof msg);
        CHECKF(!msg[0], "%s: %s", D[v], msg);
    }
    /* identical greedy output: committed plain, converted plain, converted speculative (both drafts) */
    static const char *prompts[2] = {"A shop sells 12 apples for 3 dollars each. How much do the apples cost?",
                                     "Summarize: the package provides a library for parsing JSON documents."};
    for (int p = 0; p < 2; p++) {
        char ref[400], out[400];
        snprintf(ref, sizeof ref, "%s/rt_ref_%d.txt", tmp, p);
        CHECK(run_cli(ref, "run -m %s --spec ar --chat -p '%s' -n 48", T, prompts[p]) == 0);
        snprintf(out, sizeof out, "%s/rt_ar_%d.txt", tmp, p);
        CHECK(run_cli(out, "run -m %s --spec ar --chat -p '%s' -n 48", t16, prompts[p]) == 0);
        CHECKF(same_file(ref, out), "prompt %d: the converted target decodes differently", p);
        for (int v = 0; v < 2; v++) {
            snprintf(out, sizeof out, "%s/rt_spec_%d_%d.txt", tmp, p, v);
            CHECK(run_cli(out, "run -m %s -d %s --chat -p '%s' -n 48", t16, d16[v], prompts[p]) == 0);
            CHECKF(same_file(ref, out), "prompt %d, draft %d: speculative output differs", p, v + 1);
        }
    }
}

/* ---- what the runtime honours of the dflash format, and what it refuses by name */

/* The logits of one greedy block after 6 context rows (the same rows for every draft). */
static int draft_logits(const char *path, const pf_model *m, float *out, int *n_out, char *err) {
    pf_dflash *d = pf_dflash_load(path, m, err);
    if (!d) return -1;
    pf_dflash_state *s = pf_dflash_state_new(d, 64, NULL, NULL, err);
    int rc = -1;
    float taps[6 * 2 * H];
    ckpt r = {.seed = 99};
    for (int i = 0; i < 6 * 2 * H; i++) taps[i] = frand(&r);
    int32_t draft[3];
    if (s && pf_dflash_append_context(s, taps, 6, err) == 0 && pf_dflash_propose(s, 42, 4, NULL, NULL, draft, NULL, NULL, err) == 0) {
        int rows;
        const float *lg = pf_dflash_last_logits(s, &rows);
        const int32_t *ids;
        int nv = pf_dflash_head(s, &ids);
        *n_out = rows * (nv ? nv : m->hp.n_vocab);
        memcpy(out, lg, (size_t)*n_out * sizeof *out);
        rc = 0;
    }
    pf_dflash_state_free(s);
    pf_dflash_free(d);
    return rc;
}

/* `path` rewritten with one extra u32/f32 key or one extra tensor. */
static int add_to_gguf(const char *path, const char *out, const char *key, float fval, const char *tensor, uint32_t ttype,
                       const void *tdata, int64_t n, char *err) {
    gguf_file *f;
    gguf_writer *w;
    if (gguf_writer_from(path, NULL, &f, &w, err) != PF_RC_OK) return -1;
    if (key) gguf_w_f32(w, key, fval);
    gguf_w_copy_tensors(w, f, NULL);
    const int64_t ne[4] = {n, 1, 1, 1};
    if (tensor) gguf_w_tensor(w, tensor, ttype, 1, ne, tdata, (size_t)n * (ttype == PF_TYPE_I64 ? 8 : 4));
    int rc = gguf_w_write(w, out, err);
    gguf_writer_free(w);
    gguf_close(f);
    return rc;
}

TEST(convert_draft_runtime_honours_scales_and_refuses_what_it_cannot) {
    ckpt c = {0};
    const char *tmp = pf_test_tmpdir();
    char tdir[300], tout[320], dir[320], base[340], mod[340], err[PF_ERR_LEN];
    snprintf(dir, sizeof dir, "%s/hf_d_rt", tmp);
    snprintf(base, sizeof base, "%s/d_rt.gguf", tmp);
    snprintf(mod, sizeof mod, "%s/d_rt_mod.gguf", tmp);
    CHECKF(convert_target(&c, "rt", true, F32, 1, PF_TYPE_F32, tdir, tout, err) == 0, "%s", err);
    build_draft(&c, dir, (draft_kind){2, F32, 0, 0, 0});
    CHECKF(convert(dir, base, PF_TYPE_F32, tout, err) == 0, "%s", err);
    pf_model *m = pf_model_load(tout, err);
    CHECK(m);
    static float a[3 * V], b[3 * V];
    int na = 0, nb = 0;
    CHECKF(draft_logits(base, m, a, &na, err) == 0, "%s", err);
    /* logit scale 2: every logit doubles exactly */
    CHECK(add_to_gguf(base, mod, "dflash.logit_scale", 2.0f, NULL, 0, NULL, 0, err) == 0);
    CHECKF(draft_logits(mod, m, b, &nb, err) == 0, "%s", err);
    CHECK(na == nb && na == 3 * V);
    for (int i = 0; i < na; i++) CHECKF(b[i] == 2.0f * a[i], "logit %d: %g vs 2 x %g", i, b[i], a[i]);
    /* softcap 0.5: cap * tanh(z / cap) */
    CHECK(add_to_gguf(base, mod, "dflash.final_logit_softcapping", 0.5f, NULL, 0, NULL, 0, err) == 0);
    CHECKF(draft_logits(mod, m, b, &nb, err) == 0, "%s", err);
    for (int i = 0; i < na; i++) CHECK(b[i] == 0.5f * tanhf(a[i] / 0.5f) && fabsf(b[i]) <= 0.5f);
    /* embedding scale: 1 changes nothing, 3 changes the block's residual */
    CHECK(add_to_gguf(base, mod, "dflash.embedding_scale", 1.0f, NULL, 0, NULL, 0, err) == 0);
    CHECKF(draft_logits(mod, m, b, &nb, err) == 0, "%s", err);
    CHECK(!memcmp(a, b, (size_t)na * sizeof *a));
    CHECK(add_to_gguf(base, mod, "dflash.embedding_scale", 3.0f, NULL, 0, NULL, 0, err) == 0);
    CHECKF(draft_logits(mod, m, b, &nb, err) == 0, "%s", err);
    CHECK(memcmp(a, b, (size_t)na * sizeof *a) != 0);
    /* refused by name */
    static float zeros[8];
    static const struct { const char *key, *tensor; const char *want; } refused[] = {
        {"dflash.hyper_connection_count", NULL, "dflash.hyper_connection_count: DeepSeek-V4"},
        {NULL, "markov_w1.weight", "tensor 'markov_w1.weight': not supported"},
        {NULL, "fc.scale", "tensor 'fc.scale': not supported"},
        {NULL, "blk.0.attn_sinks.weight", "attention sinks are not supported"},
        {"dflash.target_hidden_size", NULL, "dflash.target_hidden_size"},
        {"dflash.logit_scale", NULL, "dflash.logit_scale: expected a positive f32"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        float v = i == 5 ? -1.0f : 7.0f;
        CHECK(add_to_gguf(base, mod, refused[i].key, v, refused[i].tensor, PF_TYPE_F32, zeros, 4, err) == 0);
        pf_dflash *d = pf_dflash_load(mod, m, err);
        CHECKF(!d && strstr(err, refused[i].want), "case %zu: wanted '%s', got '%s'", i, refused[i].want, d ? "(loaded)" : err);
    }
    /* an own head needs a d2t whose ids are distinct target ids */
    ck_free(&c);
    build_draft(&c, dir, (draft_kind){1, F32, 0, 0, 1});
    CHECKF(convert(dir, base, PF_TYPE_F32, tout, err) == 0, "%s", err);
    {
        gguf_file *f;
        gguf_writer *w;
        CHECKF(gguf_writer_from(base, NULL, &f, &w, err) == PF_RC_OK, "%s", err);
        for (uint64_t i = 0; i < f->n_tensors; i++) {
            const gguf_tensor *t = &f->tensors[i];
            char *name = gguf_str_dup(t->name);
            if (strcmp(name, "d2t")) {
                gguf_w_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
            } else {
                int64_t *dup = gguf_w_own(w, malloc(t->nbytes));
                memcpy(dup, t->data, t->nbytes);
                dup[5] = dup[4]; /* two rows for one target id */
                gguf_w_tensor(w, name, t->type, t->n_dims, t->ne, dup, t->nbytes);
            }
            free(name);
        }
        CHECK(gguf_w_write(w, mod, err) == 0);
        gguf_writer_free(w);
        gguf_close(f);
        pf_dflash *d = pf_dflash_load(mod, m, err);
        CHECKF(!d && strstr(err, "tensor 'd2t': entry 5 = 8 is listed twice"), "%s", d ? "(loaded)" : err);
    }
    pf_model_free(m);
    ck_free(&c);
}

TEST(convert_cli_errors_are_one_line) {
    ckpt c = {0};
    const char *tmp = pf_test_tmpdir();
    char tdir[300], tout[320], errp[320], cmd[1200];
    snprintf(tdir, sizeof tdir, "%s/hf_t_cli", tmp);
    snprintf(tout, sizeof tout, "%s/t_cli.gguf", tmp);
    snprintf(errp, sizeof errp, "%s/cli-convert.err", tmp);
    build_target(&c, tdir, false, F16, 1);
    CHECK(run_cli(NULL, "convert %s -o %s --type q4_1", tdir, tout) == 0);
    pf_model *m = NULL;
    char err[PF_ERR_LEN];
    CHECK((m = pf_model_load(tout, err)) != NULL);
    pf_model_free(m);
    /* exit status 1 for a bad argument, 2 for a file that cannot be read (docs/cli.md#exit-status) */
    static const struct { const char *args, *want; int status; } cases[] = {
        {"convert", "HF_DIR and -o OUT.gguf are required", 1},
        {"convert %s -o %s/x.gguf --type q5", "--type: unknown type 'q5'", 1},
        {"convert %s -o %s/x.gguf --frob 1", "unknown flag '--frob'", 1},
        {"convert %s/nowhere -o %s/x.gguf", "nowhere/config.json: No such file", 2},
        {"convert %s -o %s/x.gguf --target %s/t_cli.gguf", "--target: only a draft takes", 1},
        {"convert %s -o %s/t_cli.gguf --target %s/t_cli.gguf", "the output must differ from --target", 1},
        {"vocab-import %s/nowhere.json -o %s/x.gguf", "nowhere.json: No such file", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[900];
        snprintf(args, sizeof args, cases[i].args, tdir, tmp, tmp);
        snprintf(cmd, sizeof cmd, "%s", args);
        int st = run_cli(NULL, "%s", cmd);
        CHECKF(st == cases[i].status, "case %zu: exit status %d, wanted %d", i, st, cases[i].status);
        size_t n;
        char *e = test_slurp(errp, &n);
        bool one = e && n > 0 && strchr(e, '\n') == e + n - 1 && strstr(e, cases[i].want) && !strncmp(e, "pocketflash: ", 13);
        CHECKF(one, "case %zu: '%s'", i, e ? e : "");
        free(e);
        char x[340];
        snprintf(x, sizeof x, "%s/x.gguf", tmp);
        CHECK(!test_exists(x));
    }
    CHECK(test_exists(tout)); /* the refused -o TARGET left the target alone */
    ck_free(&c);
}

/* tokenizer.json replaced by one the JSON parser must hold whole before it can be refused: an
 * array of n zeros (some 40 bytes of tree per two bytes of text). */
static void write_big_tokenizer(const char *dir, size_t n) {
    char p[512];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    FILE *f = fopen(p, "w");
    if (!f) return;
    fputs("{\"model\":[", f);
    for (size_t i = 0; i < n; i++) fputs(i ? ",0" : "0", f);
    fputs("]}", f);
    fclose(f);
}

/* Each kind reaches the caller as itself: a truncated file is format (exit status 3), and an
 * allocation that fails while the tokenizer is read is out of memory, from the reader and through
 * convert. Unreadable paths (I/O, 2) are cases of the tests above. */
TEST(convert_failure_kinds_reach_the_caller) {
    ckpt c = {0};
    char dir[300], p[400], out[400], err[PF_ERR_LEN];
    snprintf(dir, sizeof dir, "%s/hf_t_kinds", pf_test_tmpdir());
    snprintf(out, sizeof out, "%s/t_kinds.gguf", pf_test_tmpdir());
    build_target(&c, dir, true, F16, 1);
    m_truncated(&c, dir);
    ck_free(&c);
    CHECK(run_cli(NULL, "convert %s -o %s", dir, out) == 3);
    snprintf(p, sizeof p, "%s/cli-convert.err", pf_test_tmpdir());
    size_t n;
    char *e = test_slurp(p, &n);
    CHECKF(e && test_count_lines(e) == 1 && strstr(e, "pocketflash: ") == e && strstr(e, "model.safetensors: "), "'%s'",
           e ? e : "");
    free(e);
    m_tokenizer_cut(NULL, dir);
    CHECK(run_cli(NULL, "vocab-import %s/tokenizer.json -o %s", dir, out) == 3);
    CHECK(!test_exists(out));

    build_target(&c, dir, true, F16, 1); /* a whole checkpoint again, with a big tokenizer */
    ck_free(&c);
    write_big_tokenizer(dir, (size_t)1 << 20);
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    if (pf_fault_cap_vm(8192) != 0) {
        pf_test_skip("no address-space cap here (a sanitizer, or no /proc/self/statm)");
        return;
    }
    pf_rc import_rc = pf_vocab_import(p, NULL, out, err);
    char import_err[PF_ERR_LEN];
    snprintf(import_err, sizeof import_err, "%s", err);
    pf_rc convert_rc = convert(dir, out, PF_TYPE_F16, NULL, err);
    pf_fault_uncap_vm();
    CHECKF(import_rc == PF_RC_OOM && strstr(import_err, "tokenizer.json: ") && strstr(import_err, "out of memory"), "%d '%s'",
           import_rc, import_err);
    CHECKF(convert_rc == PF_RC_OOM && strstr(err, "tokenizer.json: ") && strstr(err, "out of memory"), "%d '%s'", convert_rc,
           err);
    CHECK(!test_exists(out));
}

/* Under a file-size limit, into a missing folder and onto a folder, convert and vocab-import fail
 * with one line and leave neither the output nor a temporary (tests/fault.h). */
TEST(convert_writers_fail_with_one_line_and_leave_nothing) {
    ckpt c = {0};
    char tdir[300], args[900];
    snprintf(tdir, sizeof tdir, "%s/hf_t_fault", pf_test_tmpdir());
    build_target(&c, tdir, true, F16, 1);
    ck_free(&c);
    snprintf(args, sizeof args, "convert %s -o %%s --type q8_0", tdir);
    CHECK(pf_fault_writer("convert", 1, args) == 0);
    snprintf(args, sizeof args, "vocab-import %s/tokenizer.json %s/tokenizer_config.json -o %%s", tdir, tdir);
    CHECK(pf_fault_writer("vocab-import", 1, args) == 0);
}
