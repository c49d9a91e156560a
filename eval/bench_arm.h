/* One strategy of a comparison (`bench --compare`, tune's candidates): a description for the
 * strategy factory (verify/strategies.h), parsed from its name on the command line. */
#ifndef PF_BENCH_ARM_H
#define PF_BENCH_ARM_H

#include "include/pocketflash.h"
#include "verify/profile.h"
#include "verify/strategies.h"

#define PF_BENCH_MAX_ARMS 8

/* All arms of a comparison are measured interleaved per prompt. */
typedef struct {
    char name[64];             /* as written: fixed:4, dec, dec:8, adaptive, default, ngram:8, profile:FILE */
    pf_kind kind;              /* fixed:B is dflash; with a profile PF_KIND_DEFAULT */
    int block;                 /* 0 = the default for the kind */
    const pf_profile *profile; /* a tuned profile's choice per task: the adaptive prior, or fixed */
    int profile_fixed;         /* the profile's choices as fixed settings (what tune measures) */
} pf_bench_arm;

/* "fixed:B", "ngram[:B]", "hybrid:B", "dec[:B]", "adaptive[:B]", "default"; "profile:FILE" loads FILE into
 * *prof (the caller frees it with pf_profile_free). Defined in eval/bench.c. */
int pf_bench_arm_parse(const char *text, pf_bench_arm *arm, pf_profile *prof, char err[PF_ERR_LEN]);

#endif
