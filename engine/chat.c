/* ChatML, as rendered by Qwen3's chat_template for [system?, user] + add_generation_prompt. */
#include "engine/chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *pf_chat_format_ex(const char *system, const char *user, bool empty_think) {
    static const char sys_open[] = "<|im_start|>system\n", user_open[] = "<|im_start|>user\n",
                      close[] = "<|im_end|>\n", gen[] = "<|im_start|>assistant\n",
                      think[] = "<think>\n\n</think>\n\n";
    if (!user) user = "";
    size_t n = strlen(user_open) + strlen(user) + strlen(close) + strlen(gen) + 1;
    if (system) n += strlen(sys_open) + strlen(system) + strlen(close);
    if (empty_think) n += strlen(think);
    char *out = malloc(n);
    if (!out) return NULL;
    char *p = out;
    if (system) p += sprintf(p, "%s%s%s", sys_open, system, close);
    p += sprintf(p, "%s%s%s%s", user_open, user, close, gen);
    if (empty_think) strcpy(p, think);
    return out;
}

char *pf_chat_format(const char *system, const char *user) {
    return pf_chat_format_ex(system, user, false);
}
