/* Token ids of a ChatML prompt (pf_chat_format's text), with the choice llama.cpp's users expect:
 * special-token texts typed inside the messages are special tokens (parse_special), or plain text
 * while the template's own <|im_start|> / <|im_end|> stay special (--no-special). */
#ifndef PF_CHAT_TOKENS_H
#define PF_CHAT_TOKENS_H

#include "engine/tokenizer.h"

/* parse_special: the ids of tokenizing pf_chat_format_ex(system, user, the template is Qwen3's) with
 * special tokens parsed.
 * Otherwise the template's markers are special and every message byte is text; for messages that
 * hold no special-token text the ids are the same as with parse_special. *ids is malloc'd;
 * PF_RC_OK, or pf_tokenize's codes with err. */
pf_rc pf_chat_tokenize(const pf_tokenizer *t, const char *system, const char *user, bool parse_special,
                     int32_t **ids, size_t *n_ids, char err[PF_ERR_LEN]);

#endif
