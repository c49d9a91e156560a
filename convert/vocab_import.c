/* tokenizer.json -> tokenizer-only GGUF. See vocab_import.h. */
#include "convert/vocab_import.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/json.h"

/* A vocabulary larger than this is certainly a malformed file. */
#define MAX_VOCAB (1 << 24)

enum { TT_NONE = 0, TT_NORMAL = 1, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5 };

typedef struct {
    const char *path; /* for messages */
    char *err;
    int64_t n;          /* vocabulary size (max id + 1) */
    const char **text;  /* [n], NULL for a gap */
    uint64_t *len;
    int32_t *type;
} vocab;

/* The merges as GGUF spells them ("left right"), their lengths. */
typedef struct {
    char **text;
    uint64_t *len;
    uint64_t n;
} merge_list;

/* "PATH: message" into err; returns PF_RC_FORMAT (the file does not fit), so a check can
 * `return fail(...)`. */
static pf_rc fail(char err[PF_ERR_LEN], const char *path, const char *fmt, ...) {
    int n = snprintf(err, PF_ERR_LEN, "%s: ", path);
    if (n < 0 || n >= PF_ERR_LEN) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, PF_ERR_LEN - (size_t)n, fmt, ap);
    va_end(ap);
    /* the message quotes the file's own strings: a control character in one (a newline in a
     * pattern) would break the one-line error */
    pf_err_one_line(err);
    return PF_RC_FORMAT;
}

static pf_rc oom(char err[PF_ERR_LEN], const char *path) {
    snprintf(err, PF_ERR_LEN, "%s: out of memory", path);
    return PF_RC_OOM;
}

static bool get_int(const pf_json *v, int64_t *out) {
    if (!v || v->type != PF_JSON_NUMBER || !v->u.num.is_int) return false;
    *out = v->u.num.i;
    return true;
}

/* Walks pre_tokenizer (a single pre-tokenizer or a Sequence) recording the Split regex and
 * whether ByteLevel is present. */
static pf_rc check_pretok(const pf_json *p, const char *path, char err[PF_ERR_LEN], int *n_split,
                          bool *byte_level) {
    const pf_json *ty = pf_json_get(p, "type");
    if (!ty || ty->type != PF_JSON_STRING)
        return fail(err, path, "pre_tokenizer: missing \"type\"");
    if (pf_json_str_eq(ty, "Sequence")) {
        const pf_json *seq = pf_json_get(p, "pretokenizers");
        if (!seq || seq->type != PF_JSON_ARRAY)
            return fail(err, path, "pre_tokenizer: Sequence without a \"pretokenizers\" array");
        for (size_t i = 0; i < seq->u.arr.n; i++)
            if (check_pretok(&seq->u.arr.items[i], path, err, n_split, byte_level)) return PF_RC_FORMAT;
        return 0;
    }
    if (pf_json_str_eq(ty, "ByteLevel")) {
        const pf_json *ur = pf_json_get(p, "use_regex");
        if (ur && ur->type == PF_JSON_BOOL && ur->u.b)
            return fail(err, path, "pre_tokenizer: ByteLevel with use_regex (the GPT-2 pattern) is "
                                   "not supported; only the Qwen2 pre-tokenizer is");
        const pf_json *ap = pf_json_get(p, "add_prefix_space");
        if (ap && ap->type == PF_JSON_BOOL && ap->u.b)
            return fail(err, path, "pre_tokenizer: ByteLevel add_prefix_space is not supported");
        *byte_level = true;
        return 0;
    }
    if (pf_json_str_eq(ty, "Split")) {
        const pf_json *re = pf_json_get(pf_json_get(p, "pattern"), "Regex");
        const pf_json *beh = pf_json_get(p, "behavior"), *inv = pf_json_get(p, "invert");
        if (!pf_json_str_eq(re, PF_QWEN2_PRETOK_REGEX))
            return fail(err, path, "pre_tokenizer: unsupported Split pattern %s%.60s%s (only the "
                                   "Qwen2 regex is supported)",
                        re && re->type == PF_JSON_STRING ? "\"" : "",
                        re && re->type == PF_JSON_STRING ? re->u.str.s : "(not a regex)",
                        re && re->type == PF_JSON_STRING ? "\"" : "");
        if (!pf_json_str_eq(beh, "Isolated") || (inv && !(inv->type == PF_JSON_BOOL && !inv->u.b)))
            return fail(err, path, "pre_tokenizer: Split must have behavior \"Isolated\" and no invert");
        (*n_split)++;
        return 0;
    }
    return fail(err, path, "pre_tokenizer: unsupported type \"%s\"", ty->u.str.s);
}

static pf_rc check_model(const pf_json *root, const char *path, char err[PF_ERR_LEN]) {
    const pf_json *model = pf_json_get(root, "model");
    if (!model) return fail(err, path, "model: missing");
    if (!pf_json_str_eq(pf_json_get(model, "type"), "BPE"))
        return fail(err, path, "model.type: only \"BPE\" is supported");
    static const char *empty_str[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (size_t i = 0; i < 2; i++) {
        const pf_json *v = pf_json_get(model, empty_str[i]);
        if (v && v->type != PF_JSON_NULL && !pf_json_str_eq(v, ""))
            return fail(err, path, "model.%s: not supported by byte-level BPE", empty_str[i]);
    }
    static const char *false_flags[] = {"byte_fallback", "ignore_merges"};
    for (size_t i = 0; i < 2; i++) {
        const pf_json *v = pf_json_get(model, false_flags[i]);
        if (v && v->type == PF_JSON_BOOL && v->u.b)
            return fail(err, path, "model.%s: true is not supported", false_flags[i]);
    }
    const pf_json *norm = pf_json_get(root, "normalizer");
    if (norm && norm->type != PF_JSON_NULL && !pf_json_str_eq(pf_json_get(norm, "type"), "NFC"))
        return fail(err, path, "normalizer: only null or NFC is supported");
    const pf_json *pre = pf_json_get(root, "pre_tokenizer");
    if (!pre || pre->type == PF_JSON_NULL) return fail(err, path, "pre_tokenizer: missing");
    int n_split = 0;
    bool byte_level = false;
    if (check_pretok(pre, path, err, &n_split, &byte_level)) return PF_RC_FORMAT;
    if (n_split != 1 || !byte_level)
        return fail(err, path, "pre_tokenizer: expected the Qwen2 Split regex followed by ByteLevel");
    return 0;
}

static pf_rc set_token(vocab *v, int64_t id, const char *s, uint64_t len, int32_t type,
                       const char *what) {
    if (v->text[id]) {
        if (v->len[id] != len || memcmp(v->text[id], s, len) != 0)
            return fail(v->err, v->path, "%s: id %lld is already \"%.40s\"", what, (long long)id,
                        v->text[id]);
    }
    v->text[id] = s;
    v->len[id] = len;
    v->type[id] = type;
    return 0;
}

static pf_rc build_vocab(vocab *v, const pf_json *root) {
    const pf_json *jv = pf_json_get(pf_json_get(root, "model"), "vocab");
    if (!jv || jv->type != PF_JSON_OBJECT) return fail(v->err, v->path, "model.vocab: expected an object");
    const pf_json *added = pf_json_get(root, "added_tokens");
    if (added && added->type != PF_JSON_ARRAY && added->type != PF_JSON_NULL)
        return fail(v->err, v->path, "added_tokens: expected an array");
    size_t n_added = added && added->type == PF_JSON_ARRAY ? added->u.arr.n : 0;

    int64_t max_id = -1;
    for (size_t i = 0; i < jv->u.obj.n; i++) {
        int64_t id;
        if (!get_int(&jv->u.obj.members[i].val, &id) || id < 0 || id >= MAX_VOCAB)
            return fail(v->err, v->path, "model.vocab[\"%.40s\"]: id must be an integer in 0..%d",
                        jv->u.obj.members[i].key, MAX_VOCAB - 1);
        if (id > max_id) max_id = id;
    }
    for (size_t i = 0; i < n_added; i++) {
        const pf_json *a = &added->u.arr.items[i];
        int64_t id;
        const pf_json *c = pf_json_get(a, "content");
        if (!get_int(pf_json_get(a, "id"), &id) || id < 0 || id >= MAX_VOCAB)
            return fail(v->err, v->path, "added_tokens[%zu].id: expected an integer in 0..%d", i,
                        MAX_VOCAB - 1);
        if (!c || c->type != PF_JSON_STRING || c->u.str.len == 0)
            return fail(v->err, v->path, "added_tokens[%zu].content: expected a non-empty string", i);
        if (id > max_id) max_id = id;
    }
    if (max_id < 0) return fail(v->err, v->path, "model.vocab: empty vocabulary");
    v->n = max_id + 1;
    v->text = calloc((size_t)v->n, sizeof *v->text);
    v->len = calloc((size_t)v->n, sizeof *v->len);
    v->type = calloc((size_t)v->n, sizeof *v->type);
    if (!v->text || !v->len || !v->type) return oom(v->err, v->path);

    for (size_t i = 0; i < jv->u.obj.n; i++) {
        const pf_json_member *m = &jv->u.obj.members[i];
        int64_t id = m->val.u.num.i;
        if (set_token(v, id, m->key, m->key_len, TT_NORMAL, "model.vocab")) return PF_RC_FORMAT;
    }
    for (size_t i = 0; i < n_added; i++) {
        const pf_json *a = &added->u.arr.items[i];
        const pf_json *c = pf_json_get(a, "content"), *sp = pf_json_get(a, "special");
        int64_t id = pf_json_get(a, "id")->u.num.i;
        bool special = sp && sp->type == PF_JSON_BOOL && sp->u.b;
        if (set_token(v, id, c->u.str.s, c->u.str.len, special ? TT_CONTROL : TT_USER,
                      "added_tokens"))
            return PF_RC_FORMAT;
    }
    return 0;
}

/* Id of the token whose text is s, or -1. */
static int64_t find_token(const vocab *v, const char *s, size_t len) {
    for (int64_t i = 0; i < v->n; i++)
        if (v->text[i] && v->len[i] == len && memcmp(v->text[i], s, len) == 0) return i;
    return -1;
}

/* tokenizer_config.json token fields are a string or an AddedToken object {"content": ...}. */
static const pf_json *token_field(const pf_json *cfg, const char *key) {
    const pf_json *t = pf_json_get(cfg, key);
    if (t && t->type == PF_JSON_OBJECT) t = pf_json_get(t, "content");
    return t && t->type == PF_JSON_STRING ? t : NULL;
}

static pf_rc config_token(const vocab *v, const pf_json *cfg, const char *key, const char *cfg_path,
                          char err[PF_ERR_LEN], int64_t *id) {
    const pf_json *t = token_field(cfg, key);
    *id = -1;
    if (!t) return 0;
    *id = find_token(v, t->u.str.s, t->u.str.len);
    if (*id < 0) return fail(err, cfg_path, "%s: \"%.60s\" is not in the vocabulary", key, t->u.str.s);
    return 0;
}

/* chat_template is a string, or a list of {"name", "template"} from which "default" is taken. */
static const char *config_template(const pf_json *cfg) {
    const pf_json *t = pf_json_get(cfg, "chat_template");
    if (t && t->type == PF_JSON_STRING) return t->u.str.s;
    if (t && t->type == PF_JSON_ARRAY)
        for (size_t i = 0; i < t->u.arr.n; i++)
            if (pf_json_str_eq(pf_json_get(&t->u.arr.items[i], "name"), "default")) {
                const pf_json *s = pf_json_get(&t->u.arr.items[i], "template");
                if (s && s->type == PF_JSON_STRING) return s->u.str.s;
            }
    return NULL;
}

static pf_rc collect_merges(const pf_json *root, const char *path, char err[PF_ERR_LEN],
                            char ***out, uint64_t **out_len, uint64_t *n_out) {
    const pf_json *jm = pf_json_get(pf_json_get(root, "model"), "merges");
    *out = NULL;
    *out_len = NULL;
    *n_out = 0;
    if (!jm || jm->type == PF_JSON_NULL) return 0;
    if (jm->type != PF_JSON_ARRAY) return fail(err, path, "model.merges: expected an array");
    size_t n = jm->u.arr.n;
    char **m = calloc(n ? n : 1, sizeof *m);
    uint64_t *ml = calloc(n ? n : 1, sizeof *ml);
    if (!m || !ml) {
        free(m);
        free(ml);
        return oom(err, path);
    }
    *out = m;
    *out_len = ml;
    *n_out = n;
    for (size_t i = 0; i < n; i++) {
        const pf_json *e = &jm->u.arr.items[i];
        const char *a, *b;
        size_t la, lb;
        if (e->type == PF_JSON_STRING) {
            const char *sp = e->u.str.len > 1 ? memchr(e->u.str.s + 1, ' ', e->u.str.len - 1) : NULL;
            if (!sp) return fail(err, path, "model.merges[%zu]: expected \"left right\"", i);
            a = e->u.str.s;
            la = (size_t)(sp - a);
            b = sp + 1;
            lb = e->u.str.len - la - 1;
        } else if (e->type == PF_JSON_ARRAY && e->u.arr.n == 2 &&
                   e->u.arr.items[0].type == PF_JSON_STRING &&
                   e->u.arr.items[1].type == PF_JSON_STRING) {
            a = e->u.arr.items[0].u.str.s;
            la = e->u.arr.items[0].u.str.len;
            b = e->u.arr.items[1].u.str.s;
            lb = e->u.arr.items[1].u.str.len;
            /* GGUF spells a merge "left right": a space inside a part would be ambiguous. */
            if (!la || !lb || memchr(a, ' ', la) || memchr(b, ' ', lb))
                return fail(err, path, "model.merges[%zu]: parts must be non-empty and contain no space", i);
        } else {
            return fail(err, path, "model.merges[%zu]: expected \"left right\" or [left, right]", i);
        }
        if (!(m[i] = malloc(la + lb + 2))) return oom(err, path);
        memcpy(m[i], a, la);
        m[i][la] = ' ';
        memcpy(m[i] + la + 1, b, lb);
        m[i][la + lb + 1] = '\0';
        ml[i] = la + lb + 1;
    }
    return 0;
}

/* A model's embedding may have more rows than the tokenizer has tokens (Qwen3: 151,936 rows,
 * 151,669 tokens); the extra ids become gaps (then unused padding tokens, as llama.cpp's converter
 * writes). */
static pf_rc grow_vocab(vocab *v, int64_t min_vocab) {
    if (min_vocab <= v->n) return 0;
    if (min_vocab > MAX_VOCAB) return fail(v->err, v->path, "a vocabulary of %lld tokens is too large", (long long)min_vocab);
    const char **tx = realloc(v->text, (size_t)min_vocab * sizeof *tx);
    if (tx) v->text = tx;
    uint64_t *ln = realloc(v->len, (size_t)min_vocab * sizeof *ln);
    if (ln) v->len = ln;
    int32_t *ty = realloc(v->type, (size_t)min_vocab * sizeof *ty);
    if (ty) v->type = ty;
    if (!tx || !ln || !ty) return oom(v->err, v->path);
    for (int64_t i = v->n; i < min_vocab; i++) v->text[i] = NULL;
    v->n = min_vocab;
    return 0;
}

/* Fills the gaps with unused "[PADi]" tokens, so that ids stay positions in the token array; their
 * texts in pads[v->n] (allocated here, freed by the caller even on failure). */
static pf_rc fill_gaps(vocab *v, char ***pads) {
    if (!(*pads = calloc((size_t)v->n, sizeof **pads))) return oom(v->err, v->path);
    for (int64_t i = 0; i < v->n; i++) {
        if (v->text[i]) continue;
        char buf[32];
        int k = snprintf(buf, sizeof buf, "[PAD%lld]", (long long)i);
        if (!((*pads)[i] = strdup(buf))) return oom(v->err, v->path);
        v->text[i] = (*pads)[i];
        v->len[i] = (uint64_t)k;
        v->type[i] = TT_UNUSED;
    }
    return 0;
}

/* The tokenizer's keys: the tokens, their types and the merges; end of sequence and padding as
 * config.json names them, else the ChatML markers; the chat template when config.json has one. */
static pf_rc write_tokenizer(gguf_writer *w, const vocab *v, char **merges, const uint64_t *merge_len, uint64_t n_merges,
                             const pf_json *cfg, const char *config_json, char err[PF_ERR_LEN]) {
    int64_t eos = -1, pad = -1;
    pf_rc rc = PF_RC_OK;
    if (cfg && ((rc = config_token(v, cfg, "eos_token", config_json, err, &eos)) ||
                (rc = config_token(v, cfg, "pad_token", config_json, err, &pad))))
        return rc;
    if (eos < 0) eos = find_token(v, "<|im_end|>", 10);
    if (eos < 0) eos = find_token(v, "<|endoftext|>", 13);
    if (pad < 0) pad = find_token(v, "<|endoftext|>", 13);
    gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
    gguf_w_str(w, "tokenizer.ggml.pre", "qwen2");
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", v->text, v->len, (uint64_t)v->n);
    gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_I32, v->type, (uint64_t)v->n);
    gguf_w_arr_str(w, "tokenizer.ggml.merges", (const char *const *)merges, merge_len, n_merges);
    if (eos >= 0) gguf_w_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eos);
    if (pad >= 0) gguf_w_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)pad);
    gguf_w_bool(w, "tokenizer.ggml.add_bos_token", false);
    const char *tmpl = cfg ? config_template(cfg) : NULL;
    if (tmpl) gguf_w_str(w, "tokenizer.chat_template", tmpl);
    return PF_RC_OK;
}

/* A JSON file whose top level is an object into *doc: PF_RC_OK, or the reader's kind with err. */
static pf_rc load_object_file(const char *path, pf_json_doc **doc, char err[PF_ERR_LEN]) {
    pf_rc rc = pf_json_load(path, doc, err);
    if (rc != PF_RC_OK || pf_json_root(*doc)->type == PF_JSON_OBJECT) return rc;
    pf_json_free(*doc);
    *doc = NULL;
    return fail(err, path, "expected a JSON object at the top level");
}

/* The vocabulary and merges of tokenizer.json's root into v and *m, tokenizer_config.json (may be
 * NULL) into *cdoc, then the tokenizer's keys into w. */
static pf_rc import_vocab(gguf_writer *w, vocab *v, const pf_json *root, const char *config_json, pf_json_doc **cdoc,
                          int64_t min_vocab, merge_list *m, char ***pads) {
    pf_rc rc;
    if ((rc = check_model(root, v->path, v->err)) || (rc = build_vocab(v, root)) ||
        (rc = collect_merges(root, v->path, v->err, &m->text, &m->len, &m->n)) ||
        (config_json && (rc = load_object_file(config_json, cdoc, v->err))) || (rc = grow_vocab(v, min_vocab)) ||
        (rc = fill_gaps(v, pads)))
        return rc;
    return write_tokenizer(w, v, m->text, m->len, m->n, *cdoc ? pf_json_root(*cdoc) : NULL, config_json, v->err);
}

pf_rc pf_vocab_import_into(gguf_writer *w, const char *tokenizer_json, const char *config_json, int64_t min_vocab,
                           int64_t *n_tokens, char err[PF_ERR_LEN]) {
    pf_json_doc *doc = NULL, *cdoc = NULL;
    vocab v = {.path = tokenizer_json, .err = err};
    merge_list m = {0};
    char **pads = NULL;
    pf_rc rc = load_object_file(tokenizer_json, &doc, err);
    if (rc == PF_RC_OK) rc = import_vocab(w, &v, pf_json_root(doc), config_json, &cdoc, min_vocab, &m, &pads);
    if (rc == PF_RC_OK && n_tokens) *n_tokens = v.n;
    if (pads)
        for (int64_t i = 0; i < v.n; i++) free(pads[i]);
    free(pads);
    for (uint64_t i = 0; i < m.n; i++) free(m.text[i]);
    free(m.text);
    free(m.len);
    free(v.text);
    free(v.len);
    free(v.type);
    pf_json_free(cdoc);
    pf_json_free(doc);
    return rc;
}

pf_rc pf_vocab_import(const char *tokenizer_json, const char *config_json, const char *out_gguf,
                      char err[PF_ERR_LEN]) {
    gguf_writer *w = gguf_writer_new();
    if (!w) return oom(err, out_gguf);
    gguf_w_str(w, "general.architecture", "tokenizer");
    pf_rc rc = pf_vocab_import_into(w, tokenizer_json, config_json, 0, NULL, err);
    if (rc == PF_RC_OK) rc = gguf_w_save(w, out_gguf, err);
    gguf_writer_free(w);
    return rc;
}
