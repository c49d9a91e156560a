#include "eval/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"

static int get_choice(const pf_json *o, char spec[16], int *block, const char *path, const char *where,
                      char err[PF_ERR_LEN]) {
    const pf_json *s = pf_json_get(o, "spec"), *b = pf_json_get(o, "block");
    if (!s || s->type != PF_JSON_STRING ||
        (strcmp(s->u.str.s, "dflash") && strcmp(s->u.str.s, "ngram") && strcmp(s->u.str.s, "dec") && strcmp(s->u.str.s, "hybrid")) || !b ||
        b->type != PF_JSON_NUMBER || !b->u.num.is_int || b->u.num.i < 2 || b->u.num.i > 64) {
        snprintf(err, PF_ERR_LEN, "%.120s: %.40s: needs \"spec\" (dflash|ngram|dec|hybrid) and \"block\" (2..64)", path, where);
        return -1;
    }
    snprintf(spec, 16, "%s", s->u.str.s);
    *block = (int)b->u.num.i;
    return 0;
}

static double num(const pf_json *o, const char *k) {
    const pf_json *v = pf_json_get(o, k);
    return v && v->type == PF_JSON_NUMBER ? v->u.num.d : 0;
}

int pf_profile_load(const char *path, pf_profile *p, char err[PF_ERR_LEN]) {
    memset(p, 0, sizeof *p);
    pf_json_doc *doc = pf_json_parse_file(path, err);
    if (!doc) return -1;
    const pf_json *root = pf_json_root(doc), *def = pf_json_get(root, "default"), *tasks = pf_json_get(root, "tasks");
    int rc = -1;
    if (!def || get_choice(def, p->spec, &p->block, path, "default", err) < 0) {
        if (!def) snprintf(err, PF_ERR_LEN, "%.200s: no \"default\" entry (not a tuned profile)", path);
        goto done;
    }
    if (tasks && tasks->type == PF_JSON_OBJECT && tasks->u.obj.n) {
        p->tasks = calloc(tasks->u.obj.n, sizeof *p->tasks);
        if (!p->tasks) { snprintf(err, PF_ERR_LEN, "out of memory"); goto done; }
        for (size_t i = 0; i < tasks->u.obj.n; i++) {
            pf_profile_task *t = &p->tasks[p->n];
            snprintf(t->type, sizeof t->type, "%s", tasks->u.obj.members[i].key);
            if (get_choice(&tasks->u.obj.members[i].val, t->spec, &t->block, path, t->type, err) < 0) goto done;
            t->predicted = num(&tasks->u.obj.members[i].val, "predicted_speedup");
            t->measured = num(&tasks->u.obj.members[i].val, "measured_speedup");
            p->n++;
        }
    }
    rc = 0;
done:
    pf_json_free(doc);
    if (rc) pf_profile_free(p);
    return rc;
}

const pf_profile_task *pf_profile_find(const pf_profile *p, const char *type) {
    for (int i = 0; p && i < p->n; i++)
        if (!strcmp(p->tasks[i].type, type)) return &p->tasks[i];
    return NULL;
}

void pf_profile_free(pf_profile *p) {
    free(p->tasks);
    memset(p, 0, sizeof *p);
}
