/* A tuned profile as the adaptive strategy's prior: its c(B), DFlash draft costs and per-task
 * acceptance by position are read (entries out of range skipped), and pf_profile_prior hands
 * them over; a profile without them (older files) gives an empty prior. */
#include <stdio.h>
#include <string.h>

#include "draft/block.h"
#include "verify/profile.h"
#include "test.h"
#include "util.h"

TEST(profile_prior_reads_costs_and_acceptance) {
    char path[400], err[PF_ERR_LEN];
    snprintf(path, sizeof path, "%s/prior-profile.json", pf_test_tmpdir());
    test_write_file(path, "{\"c\": {\"2\": 1.1, \"4\": 1.5, \"99\": 3, \"x\": 2, \"8\": -1},\n"
                     " \"draft_cost\": {\"ngram\": {\"4\": 0.001}, \"dflash\": {\"4\": 0.2, \"16\": 0.3}},\n"
                     " \"default\": {\"spec\": \"dflash\", \"block\": 3},\n"
                     " \"tasks\": {\"math\": {\"spec\": \"dflash\", \"block\": 4, \"alpha\": [0.9, 0.8, 2.0, 0.5]},\n"
                     "           \"chat\": {\"spec\": \"dec\", \"block\": 6}}}\n", (size_t)-1);
    pf_profile p;
    CHECKF(pf_profile_load(path, &p, err) == 0, "%s", err);
    CHECK(p.c[2] == 1.1 && p.c[4] == 1.5 && p.c[8] == 0 && p.c[3] == 0);
    CHECK(p.draft[4] == 0.2 && p.draft[16] == 0.3 && p.draft[2] == 0);
    const pf_profile_task *m = pf_profile_find(&p, "math");
    CHECK(m && m->n_alpha == 2 && m->alpha[0] == 0.9 && m->alpha[1] == 0.8); /* stops at the bad 2.0 */
    pf_spec_prior pr;
    pf_profile_prior(&p, "math", &pr);
    CHECK(pr.c == p.c && pr.draft == p.draft && pr.n == PF_MAX_BLOCK + 1 && pr.alpha == m->alpha && pr.n_alpha == 2);
    pf_profile_prior(&p, "chat", &pr);
    CHECK(pr.c == p.c && !pr.alpha && pr.n_alpha == 0);
    pf_profile_free(&p);
    /* an older profile: no costs, no acceptance */
    test_write_file(path, "{\"default\": {\"spec\": \"dflash\", \"block\": 4}, \"tasks\": {\"code\": {\"spec\": \"dflash\", \"block\": 6}}}", (size_t)-1);
    CHECKF(pf_profile_load(path, &p, err) == 0, "%s", err);
    pf_profile_prior(&p, "code", &pr);
    CHECK(!pr.c && !pr.draft && !pr.alpha && pr.n == 0);
    pf_profile_free(&p);
}
