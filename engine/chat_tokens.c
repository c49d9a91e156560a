#include "engine/chat_tokens.h"
#include "formats/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/chat.h"

typedef struct {
    int32_t *ids;
    size_t n, cap;
} idvec;

static pf_rc push(idvec *v, const int32_t *ids, size_t n, char err[PF_ERR_LEN]) {
    int32_t *p = pf_grow(v->ids, &v->cap, v->n + n, sizeof *p, 16);
    if (!p) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    v->ids = p;
    if (n) memcpy(v->ids + v->n, ids, n * sizeof *ids);
    v->n += n;
    return PF_RC_OK;
}

/* head + body as one text span, no special tokens parsed (special splitting cuts the template's
 * text at its markers, so each span between them is tokenized on its own, as here). */
static pf_rc push_text(idvec *v, const pf_tokenizer *t, const char *head, const char *body, char err[PF_ERR_LEN]) {
    size_t a = strlen(head), b = strlen(body);
    char *s = malloc(a + b + 1);
    if (!s) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    memcpy(s, head, a);
    memcpy(s + a, body, b + 1);
    int32_t *ids = NULL;
    size_t n = 0;
    pf_rc r = pf_tokenize(t, s, a + b, false, &ids, &n, err);
    free(s);
    if (r == PF_RC_OK) r = push(v, ids, n, err);
    free(ids);
    return r;
}

/* A piece of the template itself, its special-token texts parsed. */
static pf_rc push_special(idvec *v, const pf_tokenizer *t, const char *text, char err[PF_ERR_LEN]) {
    int32_t *ids = NULL;
    size_t n = 0;
    pf_rc r = pf_tokenize(t, text, strlen(text), true, &ids, &n, err);
    if (r == PF_RC_OK) r = push(v, ids, n, err);
    free(ids);
    return r;
}

pf_rc pf_chat_tokenize(const pf_tokenizer *t, const char *system, const char *user, bool parse_special,
                     int32_t **ids, size_t *n_ids, char err[PF_ERR_LEN]) {
    int32_t open = pf_tokenizer_find(t, "<|im_start|>", 12), close = pf_tokenizer_find(t, "<|im_end|>", 10);
    /* Qwen3's template opens the reply with an empty think block (its non-thinking form) */
    bool qwen3 = pf_chat_template_qwen3(pf_tokenizer_chat_template(t));
    *ids = NULL;
    *n_ids = 0;
    if (parse_special || open < 0 || close < 0) {
        /* without the ChatML tokens the markers are text in either mode */
        char *text = pf_chat_format_ex(system, user, qwen3);
        if (!text) {
            snprintf(err, PF_ERR_LEN, "out of memory");
            return PF_RC_OOM;
        }
        pf_rc r = pf_tokenize(t, text, strlen(text), parse_special, ids, n_ids, err);
        free(text);
        return r;
    }
    /* the spans of pf_chat_format's template between its markers */
    idvec v = {0};
    pf_rc r = PF_RC_OK;
    if (system && (r = push(&v, &open, 1, err)) == PF_RC_OK && (r = push_text(&v, t, "system\n", system, err)) == PF_RC_OK &&
        (r = push(&v, &close, 1, err)) == PF_RC_OK)
        r = push_text(&v, t, "\n", "", err);
    if (r == PF_RC_OK && (r = push(&v, &open, 1, err)) == PF_RC_OK &&
        (r = push_text(&v, t, "user\n", user ? user : "", err)) == PF_RC_OK && (r = push(&v, &close, 1, err)) == PF_RC_OK &&
        (r = push_text(&v, t, "\n", "", err)) == PF_RC_OK && (r = push(&v, &open, 1, err)) == PF_RC_OK)
        r = push_text(&v, t, "assistant\n", "", err);
    if (r == PF_RC_OK && qwen3) r = push_special(&v, t, "<think>\n\n</think>\n\n", err); /* template text, not the user's */
    if (r != PF_RC_OK) {
        free(v.ids);
        return r;
    }
    *ids = v.ids;
    *n_ids = v.n;
    return PF_RC_OK;
}
