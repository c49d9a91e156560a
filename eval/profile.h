/* Tuned profile: per task type the strategy and block size that maximised measured throughput on
 * this device (written by `pocketflash tune`, read by run and bench with --profile). */
#ifndef PF_PROFILE_H
#define PF_PROFILE_H

#include "formats/gguf.h"

typedef struct {
    char type[64];
    char spec[16]; /* "dflash" or "ngram" */
    int block;
    double predicted, measured; /* speedups (0 when unknown) */
} pf_profile_task;

typedef struct {
    char spec[16]; /* default for prompts of unknown type */
    int block;
    pf_profile_task *tasks;
    int n;
} pf_profile;

int pf_profile_load(const char *path, pf_profile *p, char err[PF_ERR_LEN]);
/* The task's entry, or NULL. */
const pf_profile_task *pf_profile_find(const pf_profile *p, const char *type);
void pf_profile_free(pf_profile *p);

#endif
