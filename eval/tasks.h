/* Task suites: eval/tasks/<type>.jsonl, one JSON object per line with at least "type" and
 * "prompt" (also "id", "lang", "reference"). Files whose records have no "prompt" are skipped. */
#ifndef PF_TASKS_H
#define PF_TASKS_H

#include <stddef.h>

#include "formats/gguf.h"

typedef struct {
    char *id, *lang, *prompt;
} pf_task_prompt;

typedef struct {
    char *type;
    pf_task_prompt *prompts;
    int n;
} pf_task_type;

typedef struct {
    pf_task_type *types;
    int n;
} pf_task_suite;

/* Loads every *.jsonl in dir, grouped by "type" (types sorted by name, prompts in file order).
 * max_per_type > 0 keeps the first max_per_type prompts of each type. */
int pf_tasks_load(const char *dir, int max_per_type, pf_task_suite *out, char err[PF_ERR_LEN]);
void pf_tasks_free(pf_task_suite *s);

#endif
