/* Writing a Dec head (dec.weight, dec.bias, dec.pos_bias; draft/dec.h) into its draft's GGUF. */
#include "convert/dec_attach.h"

#include <string.h>

#include "formats/ggml_types.h"

static bool is_dec(const char *key) { return !strncmp(key, "dflash.dec.", 11); }
static bool is_dec_tensor(const char *name) { return !strncmp(name, "dec.", 4); }

pf_rc pf_dec_attach(const char *draft_path, const float *w, int n_embd, float bias, const float *pos_bias, int n_pos,
                  const char *out, char err[PF_ERR_LEN]) {
    gguf_file *f;
    gguf_writer *wr;
    pf_rc rc = gguf_writer_from(draft_path, is_dec, &f, &wr, err);
    if (rc != PF_RC_OK) return rc;
    gguf_w_u32(wr, "dflash.dec.positions", (uint32_t)n_pos);
    gguf_w_copy_tensors(wr, f, is_dec_tensor);
    int64_t nw = 2 * (int64_t)n_embd, nb = 1, np = n_pos;
    gguf_w_tensor(wr, "dec.weight", PF_TYPE_F32, 1, &nw, w, (size_t)nw * sizeof(float));
    gguf_w_tensor(wr, "dec.bias", PF_TYPE_F32, 1, &nb, &bias, sizeof(float));
    gguf_w_tensor(wr, "dec.pos_bias", PF_TYPE_F32, 1, &np, pos_bias, (size_t)np * sizeof(float));
    rc = gguf_w_save(wr, out, err);
    gguf_writer_free(wr);
    gguf_close(f);
    return rc;
}

pf_rc pf_dec_strip(const char *draft_path, const char *out, char err[PF_ERR_LEN]) {
    gguf_file *f;
    gguf_writer *wr;
    pf_rc rc = gguf_writer_from(draft_path, is_dec, &f, &wr, err);
    if (rc != PF_RC_OK) return rc;
    gguf_w_copy_tensors(wr, f, is_dec_tensor);
    rc = gguf_w_save(wr, out, err);
    gguf_writer_free(wr);
    gguf_close(f);
    return rc;
}
