/* Task suites: eval/tasks/<type>.jsonl, one JSON object per line with at least "type" and
 * "prompt" (also "id", "lang", "reference", and "schema": a JSON Schema the answer is held to under
 * structured output, eval/tasks/structured/). Files whose records have no "prompt" are skipped. */
#ifndef PF_TASKS_H
#define PF_TASKS_H

#include <stddef.h>

#include "formats/gguf.h"
#include "formats/json.h"

typedef struct {
    char *id, *lang, *prompt;
    char *schema; /* compact JSON text of the record's "schema", NULL when it has none */
} pf_task_prompt;

typedef struct {
    char *type;
    pf_task_prompt *prompts;
    int n;
    int constrained; /* decode each prompt under its schema (pf_tasks_add_constrained) */
    int twin;        /* a constrained copy's free type (its index in the suite) */
} pf_task_type;

typedef struct {
    pf_task_type *types;
    int n;
} pf_task_suite;

/* Loads every *.jsonl in dir, grouped by "type" (types sorted by name, prompts in file order).
 * max_per_type > 0 keeps the first max_per_type prompts of each type. PF_RC_OK, or with err
 * PF_RC_IO (the folder or a file cannot be opened), PF_RC_FORMAT (a line that is not a task
 * record), PF_RC_OOM, PF_RC_ARG (no task prompts in the folder). */
pf_rc pf_tasks_load(const char *dir, int max_per_type, pf_task_suite *out, char err[PF_ERR_LEN]);
void pf_tasks_free(pf_task_suite *s);
/* The "schema" of record rec (parsed from line[0..len)) as compact JSON text, malloc'd into *out
 * (NULL when the record has none): 0, -1 when it is not a JSON Schema (an object or a boolean),
 * -2 when out of memory. */
int pf_task_schema_text(const pf_json *rec, const char *line, size_t len, char **out);
/* Every type whose prompts all carry a schema gets a copy named "<type>+schema", decoded under the
 * schemas (bench measures the same prompts free and constrained in one run); -1 when none has
 * schemas or out of memory. */
int pf_tasks_add_constrained(pf_task_suite *s, char err[PF_ERR_LEN]);

#endif
