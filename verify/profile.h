/* Tuned profile: per task type the strategy and block size that maximised measured throughput on
 * this device (written by `pocketflash tune`, read by run and bench with --profile). */
#ifndef PF_PROFILE_H
#define PF_PROFILE_H

#include "draft/block.h"
#include "formats/gguf.h"
#include "formats/status.h"
#include "verify/spec.h"


typedef struct {
    char type[64];
    char spec[16]; /* "dflash", "ngram" or "dec" */
    int block;
    double predicted, measured; /* speedups (0 when unknown) */
    double alpha[PF_MAX_BLOCK]; /* P(position k+1 kept | k kept) of the chosen strategy */
    int n_alpha;                        /* 0: the profile has none (older profiles) */
} pf_profile_task;

typedef struct {
    char spec[16]; /* default for prompts of unknown type */
    int block;
    pf_profile_task *tasks;
    int n;
    /* the device's relative costs when tuned (0 = not measured): c[B] = t(B)/t(1) and the DFlash
     * draft's cost draft[B] / t(1); the prior of an adaptive strategy (pf_profile_prior) */
    double c[PF_MAX_BLOCK + 1], draft[PF_MAX_BLOCK + 1];
} pf_profile;

/* The profile in path into *p. PF_RC_OK, or with err: PF_RC_IO (it cannot be read), PF_RC_FORMAT
 * (not JSON, or not a tuned profile: an entry without its strategy and block), PF_RC_OOM. */
pf_rc pf_profile_load(const char *path, pf_profile *p, char err[PF_ERR_LEN]);
/* The task's entry, or NULL. */
const pf_profile_task *pf_profile_find(const pf_profile *p, const char *type);
void pf_profile_free(pf_profile *p);
/* The prior an adaptive strategy starts from for task `type` (NULL or unknown: the default):
 * the profile's relative costs and that task's acceptance by position. Points into p. */
void pf_profile_prior(const pf_profile *p, const char *type, pf_spec_prior *prior);

#endif
