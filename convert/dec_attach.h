/* Attaching a Dec head (draft/dec.h) to a draft GGUF, so one file carries the draft and its head. */
#ifndef PF_DEC_ATTACH_H
#define PF_DEC_ATTACH_H

#include "formats/gguf.h"

/* Write draft + head: copies every key and tensor of `draft_path` (replacing dec.* ones); w holds
 * 2*n_embd floats (w_t then w_d), pos_bias n_pos. PF_RC_OK, or with err the reader's kinds for
 * draft_path, the writer's for out (so for pf_dec_strip). */
pf_rc pf_dec_attach(const char *draft_path, const float *w, int n_embd, float bias, const float *pos_bias, int n_pos,
                  const char *out, char err[PF_ERR_LEN]);

/* Write the draft without its Dec head (no dec.* keys or tensors): the file llama.cpp-family loaders
 * take, which refuse tensors they do not know. */
pf_rc pf_dec_strip(const char *draft_path, const char *out, char err[PF_ERR_LEN]);

#endif
