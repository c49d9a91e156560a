/* The one resolver (verify/plan.h): one rule set for every front end. The default is dec with a Dec
 * head, adaptive without, plain without a draft; a profile's DFlash choice becomes the adaptive prior
 * only when kind and block are both open, and the draft's head then decides dec or adaptive;
 * otherwise the profile fills what is open; names parse in one place; the plan's block is final
 * (the kind's default for the draft's trained block) and every wrong value is one message. */
#include <stdio.h>
#include <string.h>

#include "draft/block.h"
#include "verify/strategies.h"
#include "test.h"

static int plan(pf_strategy_desc d, pf_strategy_plan *p) {
    char err[PF_ERR_LEN];
    return pf_strategy_plan_make(&d, p, err);
}

TEST(strategy_factory_defaults_profiles_and_names) {
    pf_strategy_plan p;
    /* the default */
    CHECK(plan((pf_strategy_desc){.has_draft = 1, .draft_has_dec = 1, .draft_block = 16}, &p) == 0 &&
          p.kind == PF_KIND_DEC && p.block == 16);
    CHECK(plan((pf_strategy_desc){.has_draft = 1, .draft_block = 16}, &p) == 0 && p.kind == PF_KIND_ADAPTIVE &&
          !p.use_prior && p.block == 16);
    CHECK(plan((pf_strategy_desc){0}, &p) == 0 && p.kind == PF_KIND_PLAIN && p.block == 1);
    CHECK(plan((pf_strategy_desc){.kind = PF_KIND_DFLASH, .block = 5, .has_draft = 1}, &p) == 0 && p.kind == PF_KIND_DFLASH &&
          p.block == 5);
    /* the kind's default block for the draft: fixed at most 4, adaptive the trained block up to the bound */
    CHECK(plan((pf_strategy_desc){.kind = PF_KIND_DFLASH, .has_draft = 1, .draft_block = 16}, &p) == 0 && p.block == 4);
    CHECK(plan((pf_strategy_desc){.kind = PF_KIND_ADAPTIVE, .has_draft = 1, .draft_block = 100}, &p) == 0 &&
          p.block == PF_MAX_BLOCK);
    CHECK(plan((pf_strategy_desc){.kind = PF_KIND_NGRAM, .draft_head = 7}, &p) == 0 && p.block == PF_NGRAM_BLOCK &&
          p.ngram_n == PF_NGRAM_N_DEFAULT && p.draft_head == 0);
    CHECK(plan((pf_strategy_desc){.kind = PF_KIND_HYBRID, .has_draft = 1, .draft_block = 3, .ngram_n = 5, .draft_head = -1},
               &p) == 0 && p.block == 3 && p.ngram_n == 5 && p.draft_head == -1);
    CHECK(plan((pf_strategy_desc){.kind = PF_KIND_DFLASH, .has_draft = 1}, &p) < 0); /* no trained block to default to */
    /* wrong values: one message each */
    char why[PF_ERR_LEN];
    static const struct { pf_strategy_desc d; const char *msg; } bad[] = {
        {{.block = 1, .has_draft = 1}, "block 1 is outside 2..64"},
        {{.block = PF_MAX_BLOCK + 1}, "block 65 is outside 2..64"},
        {{.block = -3, .kind = PF_KIND_NGRAM}, "block -3 is outside 2..64"},
        {{.ngram_n = 17, .kind = PF_KIND_NGRAM}, "ngram_n 17 is outside 1..16"},
        {{.draft_head = -2, .has_draft = 1, .draft_block = 4}, "draft_head -2: expected"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECKF(pf_strategy_plan_make(&bad[i].d, &p, why) < 0 && strstr(why, bad[i].msg) && !strchr(why, '\n'), "%zu: %s", i, why);
    CHECK(pf_block_check("--block", 2, why) == 0 && pf_block_check("--block", PF_MAX_BLOCK, why) == 0);
    CHECK(pf_block_check("--block", 0, why) < 0 && !strcmp(why, "--block 0 is outside 2..64"));
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
    pf_strategy_desc d = {.profile = &prof, .task = "math", .has_draft = 1, .draft_block = 16};
    pf_spec_prior prior;
    CHECK(plan(d, &p) == 0 && p.kind == PF_KIND_ADAPTIVE && p.use_prior && p.profile_block == 4 && p.block == 16 &&
          p.n_alpha == 1 && p.alpha[0] == 0.9 && p.c[4] == 1.5 &&
          pf_plan_prior(&p, &prior) == &prior && prior.c == p.c && prior.n_alpha == 1); /* a "dec" entry without a head: adaptive */
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
    CHECK(plan(d, &p) == 0 && p.kind == PF_KIND_DEC && p.use_prior && p.profile_block == 3 && p.n_alpha == 0);
    d.profile_fixed = 1;
    CHECK(plan(d, &p) == 0 && !p.use_prior && pf_plan_prior(&p, &prior) == NULL);
    d.profile_fixed = 0;
    d.task = "poetry";
    CHECK(pf_strategy_plan_make(&d, &p, err) < 0 && strstr(err, "not in the profile"));
    pf_profile_free(&prof);
    /* the names */
    pf_kind k;
    static const char *const names[] = {"default", "plain", "dflash", "ngram", "hybrid", "dec", "adaptive"};
    for (int i = 0; i < 7; i++) CHECK(pf_kind_parse(names[i], &k, err) == 0 && !strcmp(pf_kind_name(k), names[i]));
    CHECK(pf_kind_parse("ar", &k, err) == 0 && k == PF_KIND_PLAIN); /* plain's earlier name, still taken */
    CHECK(pf_kind_parse("bogus", &k, err) < 0 && strstr(err, "unknown strategy 'bogus'"));
    /* default blocks: a fixed DFlash block at most 4, the adaptive ones and ngram their own */
    CHECK(pf_default_block(PF_KIND_DFLASH, 16) == 4 && pf_default_block(PF_KIND_HYBRID, 3) == 3 &&
          pf_default_block(PF_KIND_DEC, 16) == 16 && pf_default_block(PF_KIND_NGRAM, 0) == 8 &&
          pf_default_block(PF_KIND_DEC, 4096) == PF_MAX_BLOCK);
}
