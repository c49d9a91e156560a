#include "eval/tasks.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "formats/json_write.h"

static char *dup_json_str(const pf_json *v, const char *fallback) {
    if (v && v->type == PF_JSON_STRING) {
        char *r = malloc(v->u.str.len + 1);
        if (r) {
            memcpy(r, v->u.str.s, v->u.str.len);
            r[v->u.str.len] = 0;
        }
        return r;
    }
    return strdup(fallback);
}

static pf_task_type *find_type(pf_task_suite *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->types[i].type, name)) return &s->types[i];
    pf_task_type *t = realloc(s->types, (size_t)(s->n + 1) * sizeof *t);
    if (!t) return NULL;
    s->types = t;
    t = &s->types[s->n++];
    memset(t, 0, sizeof *t);
    t->type = strdup(name);
    return t;
}

int pf_task_schema_text(const pf_json *rec, const char *line, size_t len, char **out) {
    const pf_json *v = pf_json_get(rec, "schema");
    *out = NULL;
    if (!v) return 0;
    if (v->type != PF_JSON_OBJECT && v->type != PF_JSON_BOOL) return -1;
    pf_sbuf b = {0};
    pf_json_compact(&b, v, line, len);
    if (b.oom) {
        free(b.p);
        return -2;
    }
    *out = b.p;
    return 0;
}

static int add_prompt(pf_task_type *t, const pf_json *rec, char *schema, int max_per_type) {
    if (max_per_type > 0 && t->n >= max_per_type) {
        free(schema);
        return 0;
    }
    pf_task_prompt *p = realloc(t->prompts, (size_t)(t->n + 1) * sizeof *p);
    if (!p) {
        free(schema);
        return -1;
    }
    t->prompts = p;
    p = &t->prompts[t->n++];
    p->id = dup_json_str(pf_json_get(rec, "id"), "");
    p->lang = dup_json_str(pf_json_get(rec, "lang"), "");
    p->prompt = dup_json_str(pf_json_get(rec, "prompt"), "");
    p->schema = schema;
    return p->id && p->lang && p->prompt ? 0 : -1;
}

static pf_rc load_file(const char *path, int max_per_type, pf_task_suite *s, char err[PF_ERR_LEN]) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, PF_ERR_LEN, "%.200s: cannot open: %s", path, strerror(errno));
        return PF_RC_IO;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0;
    pf_rc rc = PF_RC_OK;
    while ((len = getline(&line, &cap, f)) > 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        if (len == 0) continue;
        char jerr[PF_ERR_LEN];
        pf_json_doc *doc = pf_json_parse(line, (size_t)len, jerr);
        if (!doc) { /* a line is small: the parser's failure is the line's */
            snprintf(err, PF_ERR_LEN, "%.120s:%d: %.120s", path, lineno, jerr);
            rc = PF_RC_FORMAT;
            break;
        }
        const pf_json *rec = pf_json_root(doc), *type = pf_json_get(rec, "type"), *prompt = pf_json_get(rec, "prompt");
        if (!prompt || prompt->type != PF_JSON_STRING || !type || type->type != PF_JSON_STRING) {
            pf_json_free(doc);
            if (lineno == 1) break; /* not a task file (e.g. token id dumps) */
            snprintf(err, PF_ERR_LEN, "%.160s:%d: a record needs string fields \"type\" and \"prompt\"", path, lineno);
            rc = PF_RC_FORMAT;
            break;
        }
        char *schema;
        if (pf_task_schema_text(rec, line, (size_t)len, &schema) < 0) {
            snprintf(err, PF_ERR_LEN, "%.160s:%d: \"schema\" must be a JSON Schema object", path, lineno);
            rc = PF_RC_FORMAT;
        }
        pf_task_type *t = rc ? NULL : find_type(s, type->u.str.s);
        if (!rc && (!t || add_prompt(t, rec, schema, max_per_type) < 0)) {
            snprintf(err, PF_ERR_LEN, "out of memory");
            rc = PF_RC_OOM;
        }
        pf_json_free(doc);
        if (rc) break;
    }
    free(line);
    fclose(f);
    return rc;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static int cmp_type(const void *a, const void *b) {
    return strcmp(((const pf_task_type *)a)->type, ((const pf_task_type *)b)->type);
}

/* The *.jsonl names in dir, sorted, into *names / *n. */
static pf_rc list_task_files(const char *dir, char ***names, int *n, char err[PF_ERR_LEN]) {
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, PF_ERR_LEN, "%s: cannot open the task folder: %s", dir, strerror(errno));
        return PF_RC_IO;
    }
    pf_rc rc = PF_RC_OK;
    struct dirent *e;
    while (rc == PF_RC_OK && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= 6 || strcmp(e->d_name + l - 6, ".jsonl")) continue;
        char **nn = realloc(*names, (size_t)(*n + 1) * sizeof *nn);
        if (nn) *names = nn;
        if (!nn || !((*names)[*n] = strdup(e->d_name))) {
            snprintf(err, PF_ERR_LEN, "%s: out of memory", dir);
            rc = PF_RC_OOM;
        } else {
            ++*n;
        }
    }
    closedir(d);
    if (*n) qsort(*names, (size_t)*n, sizeof **names, cmp_str);
    return rc;
}

pf_rc pf_tasks_load(const char *dir, int max_per_type, pf_task_suite *out, char err[PF_ERR_LEN]) {
    memset(out, 0, sizeof *out);
    char **names;
    int n;
    pf_rc rc = list_task_files(dir, &names, &n, err);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (rc == PF_RC_OK) rc = load_file(path, max_per_type, out, err);
        free(names[i]);
    }
    free(names);
    if (rc == PF_RC_OK && out->n == 0) { /* a folder, but not of tasks: the argument is wrong */
        snprintf(err, PF_ERR_LEN, "%s: no task prompts found (*.jsonl with \"type\" and \"prompt\")", dir);
        rc = PF_RC_ARG;
    }
    if (rc) pf_tasks_free(out);
    else qsort(out->types, (size_t)out->n, sizeof *out->types, cmp_type);
    return rc;
}

void pf_tasks_free(pf_task_suite *s) {
    for (int i = 0; i < s->n; i++) {
        for (int j = 0; j < s->types[i].n; j++) {
            free(s->types[i].prompts[j].id);
            free(s->types[i].prompts[j].lang);
            free(s->types[i].prompts[j].prompt);
            free(s->types[i].prompts[j].schema);
        }
        free(s->types[i].prompts);
        free(s->types[i].type);
    }
    free(s->types);
    memset(s, 0, sizeof *s);
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

int pf_tasks_add_constrained(pf_task_suite *s, char err[PF_ERR_LEN]) {
    int n = s->n, added = 0;
    for (int i = 0; i < n; i++) {
        int all = s->types[i].n > 0 && !s->types[i].constrained;
        for (int j = 0; all && j < s->types[i].n; j++) all = s->types[i].prompts[j].schema != NULL;
        if (!all) continue;
        char name[256];
        snprintf(name, sizeof name, "%s+schema", s->types[i].type);
        pf_task_type *t = realloc(s->types, (size_t)(s->n + 1) * sizeof *t);
        if (!t) goto oom;
        s->types = t;
        t = &s->types[s->n];
        const pf_task_type *src = &s->types[i];
        memset(t, 0, sizeof *t);
        t->constrained = 1;
        t->twin = i;
        if (!(t->type = strdup(name)) || !(t->prompts = calloc((size_t)src->n, sizeof *t->prompts))) {
            free(t->type);
            goto oom;
        }
        s->n++;
        for (int j = 0; j < src->n; j++) {
            const pf_task_prompt *a = &src->prompts[j];
            pf_task_prompt *b = &t->prompts[t->n++];
            b->id = dup_or_null(a->id);
            b->lang = dup_or_null(a->lang);
            b->prompt = dup_or_null(a->prompt);
            b->schema = dup_or_null(a->schema);
            if (!b->id || !b->lang || !b->prompt || !b->schema) goto oom;
        }
        added++;
    }
    if (!added) {
        snprintf(err, PF_ERR_LEN, "no task type whose every prompt has a \"schema\" (eval/tasks/structured)");
        return -1;
    }
    qsort(s->types, (size_t)s->n, sizeof *s->types, cmp_type);
    return 0;
oom:
    snprintf(err, PF_ERR_LEN, "out of memory");
    return -1;
}
