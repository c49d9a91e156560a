/* libFuzzer target for the special-token and chat-template prompt path, with the committed
 * target's tokenizer (or $PF_FUZZ_MODEL's). The input's first byte holds flags, the rest splits at
 * NUL bytes into messages. pf_chat_tokenize (special-token texts parsed or not, with or without a
 * system message) either refuses invalid UTF-8 with one line or gives ids that decode to exactly
 * pf_chat_format_ex's text; pf_chat_render over up to four messages with roles from the flags
 * ("tool" among them; a message starting with '?' has an invalid one) renders ChatML ending in
 * the generation prompt or fails with one line. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/chat.h"
#include "engine/chat_tokens.h"
#include "engine/tokenizer.h"
#include "formats/gguf.h"
#include "tests/fuzz/fz_tokenizer.h"
#include "tests/fuzz/utf8.h"

static bool g_qwen3;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fz_tokenizer_init("fuzz_chat");
    g_qwen3 = pf_chat_template_qwen3(pf_tokenizer_chat_template(g_tok));
    return 0;
}

static void one_line(const char *err) {
    if (!err[0] || strchr(err, '\n')) {
        fprintf(stderr, "bad error message: '%s'\n", err);
        abort();
    }
}

static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && !memcmp(s + n - k, tail, k);
}

static void tokenize_path(const char *system, const char *user, bool special) {
    int32_t *ids = NULL;
    size_t n = 0;
    char err[PF_ERR_LEN] = "";
    int rc = pf_chat_tokenize(g_tok, system, user, special, &ids, &n, err);
    bool valid = fz_utf8_valid((const uint8_t *)user, strlen(user)) &&
                 (!system || fz_utf8_valid((const uint8_t *)system, strlen(system)));
    if (rc != 0) {
        if (valid) {
            fprintf(stderr, "valid messages refused: %s\n", err);
            abort();
        }
        one_line(err);
        free(ids);
        return;
    }
    if (!valid) abort(); /* invalid UTF-8 must not tokenize */
    char *want = pf_chat_format_ex(system, user, g_qwen3);
    fz_expect_token_bytes(ids, n, want, strlen(want));
    free(want);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t flags = data[0];
    /* NUL-separated messages (a final unterminated one too) */
    char *text = malloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    const char *msg[4] = {"", "", "", ""};
    int n_msg = 0;
    for (char *p = text; n_msg < 4 && p <= text + size - 1;) {
        msg[n_msg++] = p;
        p += strlen(p) + 1;
    }
    tokenize_path(flags & 2 ? msg[0] : NULL, flags & 2 ? msg[1] : msg[0], flags & 1);
    static const char *const roles[4] = {"system", "user", "assistant", "tool"};
    pf_chat_msg m[4];
    bool ok_roles = true;
    for (int i = 0; i < n_msg; i++) {
        m[i].role = roles[(flags >> (2 * (i % 3) + 2)) & 3];
        if (i == 3) m[i].role = "user";
        if (msg[i][0] == '?') m[i].role = "robot"; /* a message starting with '?' has an unknown role */
        m[i].content = msg[i];
        ok_roles &= strcmp(m[i].role, "robot") != 0;
    }
    char err[PF_ERR_LEN] = "";
    char *r = pf_chat_render(m, n_msg, flags & 1, err);
    if (!r) {
        one_line(err);
    } else {
        if (!ok_roles) abort(); /* an unknown role must be refused */
        if (strncmp(r, "<|im_start|>", 12) != 0) abort();
        if (!ends_with(r, (flags & 1) ? "<|im_start|>assistant\n<think>\n\n</think>\n\n" : "<|im_start|>assistant\n"))
            abort();
        free(r);
    }
    free(text);
    return 0;
}
