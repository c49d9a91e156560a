/* Hugging Face tokenizer.json (byte-level BPE with the Qwen2 pre-tokenizer) -> tokenizer-only GGUF.
 *
 * The GGUF holds general.architecture = "tokenizer" (model loaders reject it; tokenize accepts it)
 * and the tokenizer.ggml.* keys of docs/target.md: model "gpt2", pre "qwen2", tokens by id (gaps filled
 * with "[PAD{id}]", type 5 unused), token_type (3 special added token, 4 other added token,
 * 1 normal), merges as "left right" (rank = index), eos_token_id (tokenizer_config's eos_token,
 * else <|im_end|>, else <|endoftext|>), padding_token_id (tokenizer_config's pad_token, else
 * <|endoftext|>), add_bos_token = false, and tokenizer.chat_template from tokenizer_config.
 *
 * Accepted tokenizer.json: model.type "BPE" without continuing_subword_prefix,
 * end_of_word_suffix, byte_fallback or ignore_merges; a pre_tokenizer made of the Qwen2 Split
 * regex and ByteLevel; normalizer null or NFC (the engine does not apply NFC, like llama.cpp).
 * Anything else is rejected with a message naming the field. */
#ifndef PF_VOCAB_IMPORT_H
#define PF_VOCAB_IMPORT_H

#include "formats/gguf.h"
#include "formats/status.h"

/* The Qwen2/Qwen3 pre-tokenizer regex, as tokenizer.json spells it. */
#define PF_QWEN2_PRETOK_REGEX                                                                      \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" \
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* config_json (tokenizer_config.json) may be NULL. PF_RC_OK, or with err filled (out_gguf
 * untouched) PF_RC_IO (a file cannot be read or the output written), PF_RC_FORMAT (a file is
 * malformed or holds what is not accepted) or PF_RC_OOM. */
pf_rc pf_vocab_import(const char *tokenizer_json, const char *config_json, const char *out_gguf,
                      char err[PF_ERR_LEN]);
/* The same tokenizer.* keys appended to w (no general.architecture), the token list padded with
 * unused tokens up to min_vocab entries (0: no padding): for `convert`, whose model's embedding may
 * have more rows than the tokenizer has tokens; *n_tokens (may be NULL) receives the token count written.
 * PF_RC_OK, PF_RC_IO, PF_RC_FORMAT or PF_RC_OOM as pf_vocab_import (err filled). */
pf_rc pf_vocab_import_into(gguf_writer *w, const char *tokenizer_json, const char *config_json, int64_t min_vocab,
                           int64_t *n_tokens, char err[PF_ERR_LEN]);

#endif
