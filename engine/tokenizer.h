/* Byte-level BPE tokenizer (GGUF `tokenizer.ggml.model = "gpt2"`) with the Qwen2 pre-tokenizer.
 *
 * Encoding (pf_tokenize) follows Hugging Face `tokenizers` for Qwen2/Qwen3 tokenizer.json:
 *   1. special-token split: control (type 3) and user-defined (type 4) token texts are matched in
 *      the raw input, leftmost-longest; with parse_special = false only user-defined tokens are
 *      matched (like HF's split_special_tokens = true, which only affects `special` added tokens);
 *   2. each remaining span is cut by the pre-tokenizer regex (docs/target.md), implemented as a
 *      hand-written matcher with the regex's alternation/backtracking semantics;
 *   3. each piece's bytes go through the GPT-2 byte-to-unicode map and merges are applied by
 *      lowest rank, leftmost first on ties (a heap, so long pieces stay O(n log n)).
 * No Unicode normalization is applied (tokenizer.json declares NFC; like llama.cpp we encode the
 * exact bytes given, so decode(encode(s)) == s for every valid UTF-8 string).
 *
 * Loading validates the GGUF metadata and copies everything it keeps: the gguf_file may be closed
 * right after pf_tokenizer_load returns. A merge whose left part, right part or concatenation is
 * not in the vocabulary is skipped (counted: pf_tokenizer_n_merges_skipped), as is a duplicate of
 * an earlier merge; a vocabulary piece that appears twice maps to its first id. */
#ifndef PF_TOKENIZER_H
#define PF_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/gguf.h"
#include "formats/status.h"

typedef struct pf_tokenizer pf_tokenizer;

/* GGUF tokenizer.ggml.token_type values. */
enum {
    PF_TOKEN_NORMAL = 1,
    PF_TOKEN_UNKNOWN = 2,
    PF_TOKEN_CONTROL = 3,
    PF_TOKEN_USER_DEFINED = 4,
    PF_TOKEN_UNUSED = 5,
    PF_TOKEN_BYTE = 6,
};

/* PF_RC_OK, or PF_RC_FORMAT (a missing or malformed tokenizer.* field, an unsupported tokenizer) /
 * PF_RC_OOM with err. */
pf_rc pf_tokenizer_load(const gguf_file *f, pf_tokenizer **out, char err[PF_ERR_LEN]);
/* pf_tokenizer_load of the GGUF file at path, opened and closed here (the tokenizer keeps no
 * pointer into it): PF_RC_OK, or gguf_open_file's kinds and pf_tokenizer_load's with err. */
pf_rc pf_tokenizer_load_file(const char *path, pf_tokenizer **out, char err[PF_ERR_LEN]);
void pf_tokenizer_free(pf_tokenizer *t);

int pf_tokenizer_n_vocab(const pf_tokenizer *t);
/* Special ids, -1 when absent. eos = tokenizer.ggml.eos_token_id; eot = <|im_end|> (end of turn);
 * im_start = <|im_start|>; endoftext = <|endoftext|>; pad = tokenizer.ggml.padding_token_id;
 * mask = tokenizer.ggml.mask_token_id. */
int32_t pf_tokenizer_eos(const pf_tokenizer *t);
int32_t pf_tokenizer_eot(const pf_tokenizer *t);
int32_t pf_tokenizer_im_start(const pf_tokenizer *t);
int32_t pf_tokenizer_endoftext(const pf_tokenizer *t);
int32_t pf_tokenizer_pad(const pf_tokenizer *t);
int32_t pf_tokenizer_mask(const pf_tokenizer *t);
/* tokenizer.chat_template, or NULL. */
const char *pf_tokenizer_chat_template(const pf_tokenizer *t);
/* Token type (PF_TOKEN_*), 0 for an out-of-range id. */
int pf_tokenizer_token_type(const pf_tokenizer *t, int32_t id);
/* True for control tokens (HF "special" added tokens such as <|im_end|>); false for user-defined
 * tokens like <think>, which are ordinary text to a reader. */
bool pf_tokenizer_is_special(const pf_tokenizer *t, int32_t id);
/* Id of the vocabulary entry spelled exactly text[0..len) as stored in the GGUF (byte-mapped form
 * for normal tokens, e.g. "Ġthe"; literal text for special tokens), or -1. */
int32_t pf_tokenizer_find(const pf_tokenizer *t, const char *text, size_t len);
/* The vocabulary spelling of a token (NUL-terminated), or NULL for a bad id. */
const char *pf_tokenizer_piece(const pf_tokenizer *t, int32_t id, size_t *len);
/* Merges that were dropped at load time because they referenced missing pieces or repeated. */
size_t pf_tokenizer_n_merges_skipped(const pf_tokenizer *t);

/* Encode text[0..len) (exact bytes). On success *ids is a malloc'd array the caller frees (may be
 * NULL when *n_ids == 0). PF_RC_OK, or with err PF_RC_UTF8 ("invalid UTF-8 at byte N"), PF_RC_ARG
 * (a byte this vocabulary has no token for), PF_RC_OOM. */
pf_rc pf_tokenize(const pf_tokenizer *t, const char *text, size_t len, bool parse_special,
                int32_t **ids, size_t *n_ids, char err[PF_ERR_LEN]);

/* Raw bytes of a token (the byte map reversed; control and user-defined tokens give their text).
 * Not NUL-terminated in general (a token may hold a 0x00 byte). NULL for a bad id. */
const char *pf_token_bytes(const pf_tokenizer *t, int32_t id, size_t *len);

/* Stream decoder: emits only complete UTF-8 sequences, holding back an incomplete tail (at most
 * 3 bytes) until the next token completes it. Bytes that can never become valid UTF-8 are emitted
 * as they are (replace_invalid = false: the concatenated output then equals the concatenated
 * pf_token_bytes exactly) or as U+FFFD, one per maximal ill-formed subpart (replace_invalid =
 * true). The returned pointer is valid until the next call on d. */
typedef struct pf_detok {
    const pf_tokenizer *t;
    bool replace_invalid;
    uint8_t pend[4];
    size_t n_pend;
    char *buf;
    size_t cap;
} pf_detok;

void pf_detok_init(pf_detok *d, const pf_tokenizer *t, bool replace_invalid);
/* Feed one token. Returns the bytes now complete (possibly *len == 0), or NULL (with *len = 0) for
 * an out-of-range id or an allocation failure; the decoder state is unchanged then. */
const char *pf_detok_push(pf_detok *d, int32_t id, size_t *len);
/* End of stream: returns the held-back bytes (as-is or U+FFFD) and resets the state. */
const char *pf_detok_flush(pf_detok *d, size_t *len);
void pf_detok_free(pf_detok *d);

#endif
