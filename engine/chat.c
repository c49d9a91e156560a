/* ChatML, as rendered by the Qwen2/Qwen3 chat templates for a message list +
 * add_generation_prompt (Qwen3's with enable_thinking=false). */
#include "engine/chat.h"

#include "formats/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pf_chat_template_qwen3(const char *chat_template) {
    return chat_template && strstr(chat_template, "enable_thinking");
}

typedef pf_sbuf sbuf;

static int put(sbuf *b, const char *s, size_t n) {
    pf_sbuf_put(b, s, n);
    return b->oom ? -1 : 0;
}

static int puts_(sbuf *b, const char *s) { return put(b, s, strlen(s)); }

/* Last occurrence of needle in [s, s+n), or NULL. */
static const char *last_of(const char *s, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = n >= k ? n - k + 1 : 0; i-- > 0;)
        if (!memcmp(s + i, needle, k)) return s + i;
    return NULL;
}

/* Qwen3's template on an assistant message: content = what follows the last "</think>" with
 * leading newlines dropped; reasoning = what precedes the first "</think>", after its last
 * "<think>", newlines stripped on both sides. */
static int qwen3_assistant(sbuf *b, const char *c, bool after_last_query) {
    const char *end_think = strstr(c, "</think>");
    if (!end_think) return puts_(b, c);
    const char *last_end = last_of(c, strlen(c), "</think>");
    const char *content = last_end + strlen("</think>");
    while (*content == '\n') content++;
    const char *r0 = c, *r1 = end_think;
    const char *open = last_of(c, (size_t)(end_think - c), "<think>");
    if (open) r0 = open + strlen("<think>");
    while (r0 < r1 && *r0 == '\n') r0++;
    while (r1 > r0 && r1[-1] == '\n') r1--;
    if (after_last_query && r1 > r0) { /* reasoning is kept only after the last user turn */
        if (puts_(b, "<think>\n") < 0 || put(b, r0, (size_t)(r1 - r0)) < 0 || puts_(b, "\n</think>\n\n") < 0) return -1;
    }
    return puts_(b, content);
}

/* A user message that only carries tool results (Qwen3's template skips it when it looks for the
 * last query). */
static bool tool_response(const char *c) {
    size_t n = strlen(c), a = strlen("<tool_response>"), z = strlen("</tool_response>");
    return n >= a + z && !memcmp(c, "<tool_response>", a) && !memcmp(c + n - z, "</tool_response>", z);
}

int pf_chat_check(const pf_chat_msg *messages, int n, char err[PF_ERR_LEN]) {
    if (n < 1 || !messages) {
        snprintf(err, PF_ERR_LEN, "chat: no messages");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *r = messages[i].role;
        if (!r || (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "tool"))) {
            snprintf(err, PF_ERR_LEN, "chat: message %d: role '%s' is not system, user, assistant or tool", i,
                     r ? r : "(null)");
            return -1;
        }
        if (!messages[i].content) {
            snprintf(err, PF_ERR_LEN, "chat: message %d: no content", i);
            return -1;
        }
    }
    if (!strcmp(messages[n - 1].role, "assistant")) {
        snprintf(err, PF_ERR_LEN, "chat: the last message is the assistant's (nothing to answer)");
        return -1;
    }
    return 0;
}

char *pf_chat_render(const pf_chat_msg *messages, int n, bool qwen3, char err[PF_ERR_LEN]) {
    if (pf_chat_check(messages, n, err) < 0) return NULL;
    int last_user = -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(messages[i].role, "user") && !tool_response(messages[i].content)) last_user = i;
    if (last_user < 0) last_user = n - 1; /* the template's default: no earlier reply keeps its reasoning */
    sbuf b = {0};
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        const pf_chat_msg *m = &messages[i];
        if (!strcmp(m->role, "tool")) { /* a run of tool results is one user turn */
            if (i == 0 || strcmp(messages[i - 1].role, "tool")) rc |= puts_(&b, "<|im_start|>user");
            rc |= puts_(&b, "\n<tool_response>\n") | puts_(&b, m->content) | puts_(&b, "\n</tool_response>");
            if (i == n - 1 || strcmp(messages[i + 1].role, "tool")) rc |= puts_(&b, "<|im_end|>\n");
            continue;
        }
        rc |= puts_(&b, "<|im_start|>") | puts_(&b, m->role) | puts_(&b, "\n");
        if (qwen3 && !strcmp(m->role, "assistant")) rc |= qwen3_assistant(&b, m->content, i > last_user);
        else rc |= puts_(&b, m->content);
        rc |= puts_(&b, "<|im_end|>\n");
    }
    rc |= puts_(&b, "<|im_start|>assistant\n");
    if (qwen3) rc |= puts_(&b, "<think>\n\n</think>\n\n");
    if (rc) {
        free(b.p);
        snprintf(err, PF_ERR_LEN, "out of memory");
        return NULL;
    }
    return b.p;
}

char *pf_chat_format_ex(const char *system, const char *user, bool empty_think) {
    pf_chat_msg m[2] = {{"system", system}, {"user", user ? user : ""}};
    char err[PF_ERR_LEN];
    return system ? pf_chat_render(m, 2, empty_think, err) : pf_chat_render(m + 1, 1, empty_think, err);
}

char *pf_chat_format(const char *system, const char *user) {
    return pf_chat_format_ex(system, user, false);
}
