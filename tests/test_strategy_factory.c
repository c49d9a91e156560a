/* The strategy factory's resolution (verify/strategies.h): one rule set for every front end. The
 * default is dec with a Dec head, adaptive without, plain without a draft; a profile's DFlash
 * choice becomes the adaptive prior only when kind and block are both open, and the draft's head
 * then decides dec or adaptive; otherwise the profile fills what is open; names parse in one place. */
#include <stdio.h>
#include <string.h>

#include "verify/strategies.h"
#include "test.h"

static int plan(pf_strategy_desc d, pf_strategy_plan *p) {
    char err[PF_ERR_LEN];
    return pf_strategy_plan_make(&d, p, err);
}

TEST(strategy_factory_defaults_profiles_and_names) {
    pf_strategy_plan p;
    /* the default */
    CHECK(plan((pf_strategy_desc){.has_draft = 1, .draft_has_dec = 1}, &p) == 0 && p.kind == PF_KIND_DEC && !p.block);
    CHECK(plan((pf_strategy_desc){.has_draft = 1}, &p) == 0 && p.kind == PF_KIND_ADAPTIVE && !p.use_prior);
    CHECK(plan((pf_strategy_desc){0}, &p) == 0 && p.kind == PF_KIND_AR);
    CHECK(plan((pf_strategy_desc){.kind = PF_KIND_DFLASH, .block = 5, .has_draft = 1}, &p) == 0 && p.kind == PF_KIND_DFLASH &&
          p.block == 5);
    /* what needs a draft or a head */
    CHECK(plan((pf_strategy_desc){.kind = PF_KIND_DFLASH}, &p) < 0);
    CHECK(plan((pf_strategy_desc){.kind = PF_KIND_DEC, .has_draft = 1}, &p) < 0);
    CHECK(plan((pf_strategy_desc){.kind = PF_KIND_NGRAM}, &p) == 0 && p.kind == PF_KIND_NGRAM);
    CHECK(plan((pf_strategy_desc){.task = "math"}, &p) < 0); /* a task needs a profile */
    /* a profile */
    char path[400], err[PF_ERR_LEN];
    snprintf(path, sizeof path, "%s/factory-profile.json", pf_test_tmpdir());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("{\"c\": {\"2\": 1.1, \"4\": 1.5}, \"default\": {\"spec\": \"dflash\", \"block\": 3},\n"
          " \"tasks\": {\"math\": {\"spec\": \"dec\", \"block\": 4, \"alpha\": [0.9]}, \"code\": {\"spec\": \"ngram\", \"block\": 6}}}\n",
          f);
    fclose(f);
    pf_profile prof;
    CHECKF(pf_profile_load(path, &prof, err) == 0, "%s", err);
    pf_strategy_desc d = {.profile = &prof, .task = "math", .has_draft = 1};
    CHECK(plan(d, &p) == 0 && p.kind == PF_KIND_ADAPTIVE && p.use_prior && p.profile_block == 4 && !p.block &&
          p.prior.n_alpha == 1 && p.prior.c == prof.c); /* a "dec" entry without a head: adaptive */
    d.draft_has_dec = 1;
    CHECK(plan(d, &p) == 0 && p.kind == PF_KIND_DEC && p.use_prior);
    d.profile_fixed = 1; /* the entry as it is */
    CHECK(plan(d, &p) == 0 && p.kind == PF_KIND_DEC && !p.use_prior && p.block == 4);
    d.profile_fixed = 0;
    d.block = 8; /* a block given: the entry's kind at that block */
    CHECK(plan(d, &p) == 0 && p.kind == PF_KIND_DEC && !p.use_prior && p.block == 8);
    d.block = 0;
    d.kind = PF_KIND_DFLASH; /* a kind given: the entry's block */
    CHECK(plan(d, &p) == 0 && p.kind == PF_KIND_DFLASH && p.block == 4);
    d.kind = PF_KIND_DEFAULT;
    d.task = "code"; /* an ngram entry is taken as it is */
    CHECK(plan(d, &p) == 0 && p.kind == PF_KIND_NGRAM && p.block == 6 && !p.use_prior);
    d.task = NULL; /* the default entry */
    CHECK(plan(d, &p) == 0 && p.kind == PF_KIND_DEC && p.use_prior && p.profile_block == 3 && p.prior.n_alpha == 0);
    d.task = "poetry";
    CHECK(pf_strategy_plan_make(&d, &p, err) < 0 && strstr(err, "not in the profile"));
    pf_profile_free(&prof);
    /* the names */
    pf_kind k;
    static const char *const names[] = {"default", "ar", "dflash", "ngram", "hybrid", "dec", "adaptive"};
    for (int i = 0; i < 7; i++) CHECK(pf_kind_parse(names[i], &k, err) == 0 && !strcmp(pf_kind_name(k), names[i]));
    CHECK(pf_kind_parse("bogus", &k, err) < 0 && strstr(err, "unknown strategy 'bogus'"));
    /* default blocks: a fixed DFlash block at most 4, the adaptive ones and ngram their own */
    CHECK(pf_default_block(PF_KIND_DFLASH, 16) == 4 && pf_default_block(PF_KIND_HYBRID, 3) == 3 &&
          pf_default_block(PF_KIND_DEC, 16) == 16 && pf_default_block(PF_KIND_NGRAM, PF_NGRAM_BLOCK) == 8);
}
