/* libFuzzer target for the JSON reader as its users read it. The input's first byte picks the
 * use, the rest is the document: 0 pf_json_parse with the whole tree walked; 1 tokenizer.json
 * and 2 tokenizer_config.json of vocab-import (pf_vocab_import_into, the other file valid);
 * 3 config.json of convert (pf_hf_convert over a tiny valid checkpoint written at start-up).
 * Every use works or fails with a one-line message. `make fuzz` (FUZZ_TIME seconds). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "convert/hf_convert.h"
#include "formats/json.h"
#include "convert/vocab_import.h"
#include "tests/fuzz/bpe_json.h"

static char g_dir[128], g_tok[200], g_cfg[200], g_in[200], g_out[200], g_hf[200], g_hf_cfg[220];

static void one_line(const char *err) {
    if (!err[0] || strchr(err, '\n')) {
        fprintf(stderr, "bad error message: '%s'\n", err);
        abort();
    }
}

static void put(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) abort();
}

/* tokenizer.json of a byte-level BPE: the 256 GPT-2 byte tokens, one merge, four specials */
static void write_tokenizer(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) abort();
    write_bpe_json(f, 257, ",\"ab\":256", "\"a b\"");
    fclose(f);
}

/* A tiny Qwen3ForCausalLM checkpoint (hidden 32, 1 layer, vocab 264; F32 zeros and ones) */
static void write_checkpoint(const char *dir) {
    enum { H = 32, FF = 64, NH = 2, NKV = 1, HD = 16, V = 264 };
    static const struct { const char *name; int64_t a, b; } t[] = {
        {"model.embed_tokens.weight", V, H}, {"model.norm.weight", H, 0},
        {"model.layers.0.input_layernorm.weight", H, 0}, {"model.layers.0.post_attention_layernorm.weight", H, 0},
        {"model.layers.0.self_attn.q_proj.weight", NH * HD, H}, {"model.layers.0.self_attn.k_proj.weight", NKV * HD, H},
        {"model.layers.0.self_attn.v_proj.weight", NKV * HD, H}, {"model.layers.0.self_attn.o_proj.weight", H, NH * HD},
        {"model.layers.0.self_attn.q_norm.weight", HD, 0}, {"model.layers.0.self_attn.k_norm.weight", HD, 0},
        {"model.layers.0.mlp.gate_proj.weight", FF, H}, {"model.layers.0.mlp.up_proj.weight", FF, H},
        {"model.layers.0.mlp.down_proj.weight", H, FF},
    };
    char h[8192], path[300];
    size_t len = (size_t)snprintf(h, sizeof h, "{\"__metadata__\":{\"format\":\"pt\"}"), off = 0, total = 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        size_t nb = (size_t)t[i].a * (size_t)(t[i].b ? t[i].b : 1) * 4;
        if (t[i].b)
            len += (size_t)snprintf(h + len, sizeof h - len, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld,%lld],\"data_offsets\":[%zu,%zu]}",
                                    t[i].name, (long long)t[i].a, (long long)t[i].b, off, off + nb);
        else
            len += (size_t)snprintf(h + len, sizeof h - len, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld],\"data_offsets\":[%zu,%zu]}",
                                    t[i].name, (long long)t[i].a, off, off + nb);
        off += nb;
    }
    total = off;
    len += (size_t)snprintf(h + len, sizeof h - len, "}");
    while (len % 8) h[len++] = ' ';
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    uint64_t hl = len;
    float one = 1.0f;
    if (!f) abort();
    fwrite(&hl, 8, 1, f);
    fwrite(h, 1, len, f);
    for (size_t i = 0; i < total / 4; i++) fwrite(&one, 4, 1, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    write_tokenizer(path);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    static const char cfg[] = "{\"eos_token\":\"<|im_end|>\",\"pad_token\":\"<|endoftext|>\"}";
    put(path, cfg, sizeof cfg - 1);
}

static void cleanup(void) {
    static const char *const hf[] = {"model.safetensors", "tokenizer.json", "tokenizer_config.json", "config.json"};
    char p[300];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", g_hf, hf[i]);
        unlink(p);
    }
    rmdir(g_hf);
    unlink(g_tok);
    unlink(g_cfg);
    unlink(g_in);
    unlink(g_out);
    rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    atexit(cleanup);
    snprintf(g_dir, sizeof g_dir, "/dev/shm/pf-fuzz-json-%d", (int)getpid());
    if (mkdir(g_dir, 0700) != 0) abort();
    snprintf(g_tok, sizeof g_tok, "%s/tokenizer.json", g_dir);
    snprintf(g_cfg, sizeof g_cfg, "%s/tokenizer_config.json", g_dir);
    snprintf(g_in, sizeof g_in, "%s/input.json", g_dir);
    snprintf(g_out, sizeof g_out, "%s/out.gguf", g_dir);
    snprintf(g_hf, sizeof g_hf, "%s/hf", g_dir);
    snprintf(g_hf_cfg, sizeof g_hf_cfg, "%s/config.json", g_hf);
    mkdir(g_hf, 0700);
    write_tokenizer(g_tok);
    static const char cfg[] = "{\"eos_token\":\"<|im_end|>\",\"pad_token\":\"<|endoftext|>\",\"chat_template\":\"x\"}";
    put(g_cfg, cfg, sizeof cfg - 1);
    write_checkpoint(g_hf);
    return 0;
}

static size_t walk(const pf_json *v, int depth) {
    if (depth > PF_JSON_MAX_DEPTH + 1) abort(); /* the reader limits nesting */
    size_t n = 1;
    switch (v->type) {
    case PF_JSON_STRING:
        if (v->u.str.s[v->u.str.len] != 0) abort();
        break;
    case PF_JSON_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++) n += walk(&v->u.arr.items[i], depth + 1);
        break;
    case PF_JSON_OBJECT:
        for (size_t i = 0; i < v->u.obj.n; i++) {
            const pf_json_member *m = &v->u.obj.members[i];
            if (m->key[m->key_len] != 0) abort();
            if (pf_json_get(v, m->key) == NULL && strlen(m->key) == m->key_len) abort();
            n += walk(&m->val, depth + 1);
        }
        break;
    default:
        break;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *doc = (const char *)data + 1;
    size_t len = size - 1;
    char err[PF_ERR_LEN] = "";
    switch (data[0] & 3) {
    case 0: {
        char *copy = malloc(len ? len : 1); /* exact size: ASan sees any read past the end */
        memcpy(copy, doc, len);
        pf_json_doc *d = pf_json_parse(copy, len, err);
        if (d) walk(pf_json_root(d), 0);
        else one_line(err);
        pf_json_free(d);
        free(copy);
        break;
    }
    case 1:
    case 2: {
        put(g_in, doc, len);
        gguf_writer *w = gguf_writer_new();
        int64_t n_tok = 0;
        pf_rc rc = (data[0] & 3) == 1 ? pf_vocab_import_into(w, g_in, g_cfg, 0, &n_tok, err)
                                      : pf_vocab_import_into(w, g_tok, g_in, 0, &n_tok, err);
        if (rc != PF_RC_OK) one_line(err);
        if (rc != PF_RC_OK && rc != PF_RC_FORMAT && rc != PF_RC_OOM) abort(); /* both files are there: only their text can fail */
        gguf_writer_free(w);
        break;
    }
    default: {
        put(g_hf_cfg, doc, len);
        pf_convert_opts o = {.type = PF_TYPE_F32};
        if (pf_hf_convert(g_hf, g_out, &o, NULL, err) != 0) one_line(err);
        unlink(g_out);
        break;
    }
    }
    return 0;
}
