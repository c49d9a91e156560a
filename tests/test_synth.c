/* The synthetic tokenizer of `synth` is valid BPE at every shape's vocabulary size (Qwen3-0.6B's
 * 151,936 included): it loads, its merges all apply, and text round-trips. */
#include <stdlib.h>
#include <string.h>

#include "convert/synth.h"
#include "engine/tokenizer.h"
#include "test.h"

TEST(synth_tokenizer_valid_at_every_shape) {
    const char *const *names = pf_synth_shape_names();
    for (int i = 0; names[i]; i++) {
        const pf_synth_shape *sh = pf_synth_shape_find(names[i]);
        gguf_writer *w = gguf_writer_new();
        gguf_w_str(w, "general.architecture", "tokenizer");
        CHECKF(pf_synth_tokenizer(w, sh->n_vocab) == 0, "%s: vocabulary of %d", sh->name, sh->n_vocab);
        char path[300], err[PF_ERR_LEN];
        snprintf(path, sizeof path, "%s/synth-tok-%s.gguf", pf_test_tmpdir(), sh->name);
        CHECK(gguf_w_write(w, path, err) == 0);
        gguf_writer_free(w);
        gguf_file *f;
        gguf_open_file(path, &f, err);
        CHECK(f);
        pf_tokenizer *t = NULL;
        pf_tokenizer_load(f, &t, err);
        CHECKF(t, "%s: %s", sh->name, err);
        CHECK(pf_tokenizer_n_vocab(t) == sh->n_vocab && pf_tokenizer_n_merges_skipped(t) == 0);
        CHECK(pf_tokenizer_eot(t) == sh->n_vocab - 24);
        const char *text = "the quick brown fox <|im_end|> jumps 123 \xe4\xbd\xa0\xe5\xa5\xbd";
        int32_t *ids = NULL;
        size_t n = 0;
        CHECK(pf_tokenize(t, text, strlen(text), true, &ids, &n, err) == 0);
        CHECK(n < strlen(text)); /* merges applied */
        char back[256];
        size_t at = 0;
        for (size_t k = 0; k < n; k++) {
            size_t bl;
            const char *b = pf_token_bytes(t, ids[k], &bl);
            memcpy(back + at, b, bl);
            at += bl;
        }
        CHECK(at == strlen(text) && !memcmp(back, text, at));
        free(ids);
        pf_tokenizer_free(t);
        gguf_close(f);
    }
}
