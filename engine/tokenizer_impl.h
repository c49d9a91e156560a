/* The tokenizer's state, shared by its parts: loading (tokenizer.c), pre-tokenizers
 * (pretokenize.c), BPE encoding (bpe.c) and stream decoding (detok.c). Not for other modules:
 * they use engine/tokenizer.h. */
#ifndef PF_TOKENIZER_IMPL_H
#define PF_TOKENIZER_IMPL_H

#include "engine/tokenizer.h"

/* A pre-tokenizer returns the end of the piece that starts at s[i] (i < end, s valid UTF-8). */
typedef size_t (*pretok_fn)(const char *s, size_t i, size_t end);

/* The pre-tokenizer a GGUF's tokenizer.ggml.pre names, or NULL. */
pretok_fn pf_pretokenizer_named(gguf_str name);

/* ---------------------------------------------------------------------------------------------
 * Tokenizer state. */
typedef struct {
    uint64_t key; /* left << 32 | right; empty slot: rank < 0 */
    int32_t rank, result;
} merge_slot;

struct pf_tokenizer {
    int32_t n_vocab;
    void *tables;         /* one block: the six piece tables below (text .. piece_slots) and specials */
    char *text;           /* all pieces, each NUL-terminated */
    size_t *text_off;     /* n_vocab + 1 */
    char *bytes;          /* all decoded token bytes */
    size_t *bytes_off;    /* n_vocab + 1 */
    uint8_t *type;

    int32_t *piece_slots; /* open addressing: token id or -1 */
    size_t piece_mask;
    merge_slot *merge_slots;
    size_t merge_mask;
    size_t n_merges, n_merges_skipped;
    int32_t byte_id[256];

    int32_t *specials;    /* control + user-defined ids with valid UTF-8 text, sorted */
    size_t n_specials;
    uint32_t special_first[257]; /* specials[special_first[b] .. special_first[b+1]) start with b */

    pretok_fn pretok;
    int32_t eos, eot, im_start, endoftext, pad, mask;
    char *chat_template;
};

/* The vocabulary spelling's length of a valid id. */
static inline size_t tok_piece_len(const pf_tokenizer *t, int32_t id) {
    return t->text_off[id + 1] - t->text_off[id] - 1;
}

/* The merge of pieces a and b, or NULL. */
const merge_slot *tok_merge_find(const pf_tokenizer *t, int32_t a, int32_t b);

/* err = "FILE: " (when f names one) + the formatted message; err may be NULL. */
void tok_err(char err[PF_ERR_LEN], const gguf_file *f, const char *fmt, ...);

#endif
