/* Chat prompts: a list of messages rendered as the model's chat template renders them (ChatML,
 * Qwen2/Qwen3), ending with the generation prompt. */
#ifndef PF_CHAT_H
#define PF_CHAT_H

#include <stdbool.h>

#include "engine/chat_msg.h"
#include "formats/errf.h" /* PF_ERR_LEN */

/* True when a tokenizer.chat_template is Qwen3's (it has the enable_thinking switch): prompts then
 * take its non-thinking form (below). NULL (no template) is plain ChatML. */
bool pf_chat_template_qwen3(const char *chat_template);

/* messages[0..n) with roles "system", "user", "assistant" or "tool" (the last one not "assistant"),
 * each as "<|im_start|>{role}\n{content}<|im_end|>\n", then "<|im_start|>assistant\n"; a run of
 * "tool" messages (tool results) is one user turn, each result as
 * "\n<tool_response>\n{content}\n</tool_response>" after "<|im_start|>user", as Qwen3's template
 * writes them (a call is the assistant's content: engine/tools.h). With qwen3, as
 * Qwen3's template renders them with enable_thinking=false (its model card's non-thinking mode):
 * the generation prompt ends with an empty "<think>\n\n</think>\n\n" block, and an assistant
 * message of the history keeps only what follows its last "</think>" (the template drops earlier
 * turns' reasoning). A malloc'd string, or NULL with err (bad role, out of memory). */
char *pf_chat_render(const pf_chat_msg *messages, int n, bool qwen3, char err[PF_ERR_LEN]);
/* What pf_chat_render refuses (no messages, a bad role, no content, the assistant's last): 0, or
 * -1 with err. Past it, rendering fails only for memory. */
int pf_chat_check(const pf_chat_msg *messages, int n, char err[PF_ERR_LEN]);

/* "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
 * "<|im_start|>assistant\n"; the system block is omitted when system is NULL.
 * Returns a malloc'd string, or NULL if out of memory. */
char *pf_chat_format(const char *system, const char *user);
/* As pf_chat_format; with empty_think the result also ends with "<think>\n\n</think>\n\n", which
 * is what Qwen3's template appends after "<|im_start|>assistant\n" for enable_thinking=false
 * (the non-thinking form speculative drafts are trained on). */
char *pf_chat_format_ex(const char *system, const char *user, bool empty_think);

#endif
