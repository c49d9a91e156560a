#include "cli/spec_flags.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "engine/model.h"
#include "verify/kind.h"

int cli_spec_params(const char *cmd, const pf_model *m, const cli_spec_flags *fl, pf_gen_params *p, pf_draft **draft) {
    char err[PF_ERR_LEN];
    pf_kind kind = PF_KIND_DEFAULT;
    *draft = NULL;
    if (fl->spec && pf_kind_parse(fl->spec, &kind, err) < 0) return cli_fail("%s: %s", cmd, err);
    p->spec = (pf_spec_kind)kind; /* the same values (api/strategy.c asserts it) */
    p->block = fl->block;
    p->draft_head = fl->draft_head;
    p->ngram_n = fl->ngram_n;
    p->profile = fl->profile;
    p->task = fl->task;
    /* plain decoding and the lookup never read a draft; a bundled one is used when it is there */
    if (kind == PF_KIND_PLAIN || kind == PF_KIND_NGRAM || (!fl->draft && !pf_model_bundles_draft(m))) return 0;
    pf_status st = pf_load_draft(m, fl->draft, draft, err);
    if (st != PF_OK) return cli_fail_status(st, err);
    p->draft = *draft;
    return 0;
}

int cli_print_plan(const pf_gen_params *p) {
    char err[PF_ERR_LEN], line[160];
    pf_status st = pf_gen_plan(p, line, sizeof line, err);
    if (st != PF_OK) return cli_fail_status(st, err);
    printf("plan: %s\n", line);
    return 0;
}

int cli_round_log(pf_spec *spec, const char *path, FILE **f) {
    char err[PF_ERR_LEN];
    if (!(*f = fopen(path, "ab")))
        return cli_fail_kind(errno == ENOMEM ? PF_ERR_OOM : PF_ERR_IO, "%s: cannot open for appending: %s", path, strerror(errno));
    pf_rc rc = pf_spec_set_log(spec, *f, err);
    return rc == PF_RC_OK ? 0 : cli_fail_status(pf_api_status(rc), err);
}
