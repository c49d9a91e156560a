/* Writing a draft's head vocabulary (dflash.head_tokens, dflash.head_vocab) into its GGUF. */
#include "convert/head_vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"

static bool is_head_key(const char *key) { return !strcmp(key, "dflash.head_tokens") || !strcmp(key, "dflash.head_vocab"); }

pf_rc pf_draft_head_attach(const char *draft_path, const int32_t *ranked, int n, int head_vocab, int n_vocab,
                         const char *out, char err[PF_ERR_LEN]) {
    if (n < 1 || n > n_vocab) {
        snprintf(err, PF_ERR_LEN, "draft head: %d ranked tokens, expected 1..%d (the vocabulary)", n, n_vocab);
        return PF_RC_ARG;
    }
    if (head_vocab < 1 || head_vocab > n) {
        snprintf(err, PF_ERR_LEN, "draft head: -n %d is outside 1..%d (the ranked tokens)", head_vocab, n);
        return PF_RC_ARG;
    }
    uint8_t *seen = calloc((size_t)n_vocab, 1);
    if (!seen) {
        snprintf(err, PF_ERR_LEN, "out of memory");
        return PF_RC_OOM;
    }
    for (int i = 0; i < n; i++) {
        if (ranked[i] < 0 || ranked[i] >= n_vocab || seen[ranked[i]]) {
            snprintf(err, PF_ERR_LEN, "draft head: token %d (rank %d) is %s", ranked[i], i,
                     ranked[i] < 0 || ranked[i] >= n_vocab ? "outside the vocabulary" : "listed twice");
            free(seen);
            return PF_RC_ARG;
        }
        seen[ranked[i]] = 1;
    }
    free(seen);
    gguf_file *f;
    gguf_writer *wr;
    pf_rc rc = gguf_writer_from(draft_path, is_head_key, &f, &wr, err);
    if (rc != PF_RC_OK) return rc;
    gguf_w_arr(wr, "dflash.head_tokens", GGUF_I32, ranked, (uint64_t)n);
    gguf_w_u32(wr, "dflash.head_vocab", (uint32_t)head_vocab);
    gguf_w_copy_tensors(wr, f, NULL);
    rc = gguf_w_save(wr, out, err);
    gguf_writer_free(wr);
    gguf_close(f);
    return rc;
}
