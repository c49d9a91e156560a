/* Dec: the decision head of a draft (docs/dflash-format.md). Per drafted position k it predicts the
 * probability that the target keeps draft k given that it kept drafts 1..k-1:
 *     s_k = sigmoid(w_t . h_target + w_d . h_draft_k + pos_bias[k-1] + bias)
 * with h_target the target's final residual row of the last committed position (before the
 * output norm) and h_draft_k the draft's final normed row k. Stored in the draft GGUF as
 * dec.weight [2H] (f32: w_t then w_d), dec.bias [1], dec.pos_bias [P] (P positions; later
 * positions use the last), so one file carries the draft and its head. */
#ifndef PF_DEC_H
#define PF_DEC_H

#include "formats/gguf.h"

typedef struct pf_dec pf_dec;

/* The Dec head of f into *out: PF_RC_OK, or with err PF_RC_FORMAT (no dec.* tensors, or they do
 * not fit n_embd) / PF_RC_OOM. */
pf_rc pf_dec_load(const gguf_file *f, int n_embd, pf_dec **out, char err[PF_ERR_LEN]);
/* pf_dec_load of the draft GGUF at path: gguf_open_file's kinds too. */
pf_rc pf_dec_load_path(const char *path, int n_embd, pf_dec **out, char err[PF_ERR_LEN]);
void pf_dec_free(pf_dec *d);
/* s[k-1] for k = 1..n: draft rows are h_draft + k*n_embd (row 0 = bonus row, not scored). */
void pf_dec_survival(const pf_dec *d, const float *h_target, const float *h_draft, int n, float *s);
/* The two halves of s_k's logit, for a decision before drafting: w_t . h_target + bias (known
 * before the draft runs), and z[k-1] = w_d . h_draft_k + pos_bias[k-1] for k = 1..n. */
double pf_dec_target_logit(const pf_dec *d, const float *h_target);
void pf_dec_draft_logits(const pf_dec *d, const float *h_draft, int n, double *z);
/* pos_bias of position k (1-based; later positions use the last). */
double pf_dec_pos_bias(const pf_dec *d, int k);

#endif
