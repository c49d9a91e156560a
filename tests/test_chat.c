/* Chat rendering against the templates themselves: the expected strings are Jinja2's renders
 * (python3-jinja2 3.1) of the real Qwen3 tokenizer_config chat_template with enable_thinking=false
 * and of the stand-in target's plain ChatML template, for the same messages. Template detection on
 * the real Qwen3 vocabulary and the stand-in; bad message lists refused with a message. */
#include <stdlib.h>
#include <string.h>

#include "engine/chat.h"
#include "engine/model.h"
#include "engine/tokenizer.h"
#include "test.h"

static const pf_chat_msg k_msgs[6] = {
    {"system", "S"}, {"user", "U1"}, {"assistant", "<think>\nr\n</think>\n\nA1"},
    {"user", "U2"}, {"assistant", "\n\nA2 plain"}, {"user", "U3"},
};

TEST(chat_render_matches_templates) {
    char err[PF_ERR_LEN];
    char *q = pf_chat_render(k_msgs, 6, true, err);
    CHECK(q && !strcmp(q, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\nA1"
                          "<|im_end|>\n<|im_start|>user\nU2<|im_end|>\n<|im_start|>assistant\n\n\nA2 plain<|im_end|>\n"
                          "<|im_start|>user\nU3<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    free(q);
    char *c = pf_chat_render(k_msgs, 6, false, err);
    CHECK(c && !strcmp(c, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\n"
                          "<think>\nr\n</think>\n\nA1<|im_end|>\n<|im_start|>user\nU2<|im_end|>\n<|im_start|>assistant\n"
                          "\n\nA2 plain<|im_end|>\n<|im_start|>user\nU3<|im_end|>\n<|im_start|>assistant\n"));
    free(c);
    q = pf_chat_render(k_msgs + 1, 1, true, err);
    CHECK(q && !strcmp(q, "<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    /* a single turn is pf_chat_format's rendering */
    char *f = pf_chat_format_ex(NULL, "U1", true);
    CHECK(f && !strcmp(f, q));
    free(f);
    free(q);
    /* every earlier render is a prefix of the next turn's, but for the generation prompt */
    char *t1 = pf_chat_render(k_msgs, 2, false, err), *t2 = pf_chat_render(k_msgs, 4, false, err);
    CHECK(t1 && t2 && !strncmp(t1, t2, strlen(t1)));
    free(t1);
    free(t2);
}

TEST(chat_template_detection_and_errors) {
    char err[PF_ERR_LEN];
    pf_tokenizer *t;
    CHECKF(pf_tokenizer_load_file(".cache/qwen3-vocab.gguf", &t, err) == PF_RC_OK, "%s (make .cache/qwen3-vocab.gguf)", err);
    CHECK(pf_chat_template_qwen3(pf_tokenizer_chat_template(t)));
    pf_tokenizer_free(t);
    pf_model *m = pf_model_load("models/pf-target-f16.gguf", err);
    CHECK(m && pf_tokenizer_chat_template(m->tok) && !pf_chat_template_qwen3(pf_tokenizer_chat_template(m->tok)));
    pf_model_free(m);
    CHECK(!pf_chat_template_qwen3(NULL));
    pf_chat_msg bad[2] = {{"user", "x"}, {"robot", "y"}}, none[1] = {{"user", NULL}};
    CHECK(!pf_chat_render(bad, 2, false, err) && strstr(err, "message 1") && strstr(err, "robot"));
    CHECK(!pf_chat_render(bad, 0, false, err) && strstr(err, "no messages"));
    CHECK(!pf_chat_render(none, 1, false, err) && strstr(err, "no content"));
    CHECK(!pf_chat_render(k_msgs, 3, false, err) && strstr(err, "assistant"));
}
