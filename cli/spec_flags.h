/* The strategy flags of the commands that decode (run, gen): what they ask for, turned into
 * pf_gen_params for the library's one resolver (verify/plan.h through api/strategy.c), the draft
 * loaded the library's one way (pf_load_draft). No command decides a strategy itself. */
#ifndef PF_CLI_SPEC_FLAGS_H
#define PF_CLI_SPEC_FLAGS_H

#include <stdbool.h>
#include <stdio.h>

#include "include/pocketflash.h"
#include "verify/spec.h"

typedef struct {
    const char *spec;    /* --spec NAME, or NULL: the default */
    const char *draft;   /* -d FILE, or NULL: the target bundle's draft when it holds one */
    const char *profile; /* --profile FILE */
    const char *task;    /* --task TYPE */
    int block;           /* --block / --draft-max, 0: the strategy's default */
    int draft_head;      /* --draft-head */
    int ngram_n;         /* --ngram, 0: the default */
    bool print_plan;     /* --print-plan */
} cli_spec_flags;

/* fl into p, with *draft the draft it loads (pf_free_draft it after the session; NULL when the
 * strategy asked for cannot use one or none is at hand). 0, or 1 (reported, cmd: the command's
 * name for the message). */
int cli_spec_params(const char *cmd, const pf_model *m, const cli_spec_flags *fl, pf_gen_params *p, pf_draft **draft);

/* --print-plan: "plan: " and pf_gen_plan's line on stdout; 0, or 1 (reported). */
int cli_print_plan(const pf_gen_params *p);

/* --log-rounds: every round of spec appended to path (*f, to fclose after the run; appended to, so
 * not written whole like the other outputs). 0, or after a one-line error the exit status of its
 * kind (2 path cannot be opened). */
int cli_round_log(pf_spec *spec, const char *path, FILE **f);

#endif
