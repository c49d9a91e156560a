/* ChatML prompt formatting (Qwen2/Qwen3 chat template, single user turn, generation prompt). */
#ifndef PF_CHAT_H
#define PF_CHAT_H

#include <stdbool.h>

/* "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
 * "<|im_start|>assistant\n"; the system block is omitted when system is NULL.
 * Returns a malloc'd string, or NULL if out of memory. */
char *pf_chat_format(const char *system, const char *user);
/* As pf_chat_format; with empty_think the result also ends with "<think>\n\n</think>\n\n", which
 * is what Qwen3's template appends after "<|im_start|>assistant\n" for enable_thinking=false
 * (the non-thinking form speculative drafts are trained on). */
char *pf_chat_format_ex(const char *system, const char *user, bool empty_think);

#endif
