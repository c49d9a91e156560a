#include "verify/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "verify/kind.h"

static int get_choice(const pf_json *o, char spec[16], int *block, const char *path, const char *where,
                      char err[PF_ERR_LEN]) {
    const pf_json *s = pf_json_get(o, "spec"), *b = pf_json_get(o, "block");
    pf_kind kind = PF_KIND_DEFAULT;
    char kerr[PF_ERR_LEN];
    if (s && s->type == PF_JSON_STRING && pf_kind_parse(s->u.str.s, &kind, kerr) < 0) kind = PF_KIND_DEFAULT;
    /* a tuned choice is a strategy with a draft or the lookup: dflash, ngram, dec or hybrid */
    if (!s || s->type != PF_JSON_STRING ||
        (kind != PF_KIND_DFLASH && kind != PF_KIND_NGRAM && kind != PF_KIND_DEC && kind != PF_KIND_HYBRID) || !b ||
        b->type != PF_JSON_NUMBER || !b->u.num.is_int || pf_block_check("block", b->u.num.i, kerr) < 0) {
        snprintf(err, PF_ERR_LEN, "%.120s: %.40s: needs \"spec\" (dflash|ngram|dec|hybrid) and \"block\" (2..%d)", path, where,
                 PF_MAX_BLOCK);
        return -1;
    }
    snprintf(spec, 16, "%s", s->u.str.s);
    *block = (int)b->u.num.i;
    return 0;
}

/* {"2": v, "4": v, ...} into v[B] (entries outside 1..PF_MAX_BLOCK or not numbers are skipped). */
static void block_table(const pf_json *o, double *v) {
    if (!o || o->type != PF_JSON_OBJECT) return;
    for (size_t i = 0; i < o->u.obj.n; i++) {
        char *end;
        long b = strtol(o->u.obj.members[i].key, &end, 10);
        const pf_json *x = &o->u.obj.members[i].val;
        if (*end || b < 1 || b > PF_MAX_BLOCK || x->type != PF_JSON_NUMBER || !(x->u.num.d > 0) || x->u.num.d > 1e6)
            continue;
        v[b] = x->u.num.d;
    }
}

static void alpha_list(const pf_json *o, pf_profile_task *t) {
    if (!o || o->type != PF_JSON_ARRAY) return;
    for (size_t i = 0; i < o->u.arr.n && t->n_alpha < PF_MAX_BLOCK; i++) {
        const pf_json *x = &o->u.arr.items[i];
        if (x->type != PF_JSON_NUMBER || !(x->u.num.d >= 0 && x->u.num.d <= 1)) break;
        t->alpha[t->n_alpha++] = x->u.num.d;
    }
}

static double num(const pf_json *o, const char *k) {
    const pf_json *v = pf_json_get(o, k);
    return v && v->type == PF_JSON_NUMBER ? v->u.num.d : 0;
}

pf_rc pf_profile_load(const char *path, pf_profile *p, char err[PF_ERR_LEN]) {
    memset(p, 0, sizeof *p);
    pf_json_doc *doc;
    pf_rc rc = pf_json_load(path, &doc, err);
    if (rc != PF_RC_OK) return rc;
    const pf_json *root = pf_json_root(doc), *def = pf_json_get(root, "default"), *tasks = pf_json_get(root, "tasks");
    rc = PF_RC_FORMAT;
    if (!def || get_choice(def, p->spec, &p->block, path, "default", err) < 0) {
        if (!def) snprintf(err, PF_ERR_LEN, "%.200s: no \"default\" entry (not a tuned profile)", path);
        goto done;
    }
    block_table(pf_json_get(root, "c"), p->c);
    block_table(pf_json_get(pf_json_get(root, "draft_cost"), "dflash"), p->draft);
    if (tasks && tasks->type == PF_JSON_OBJECT && tasks->u.obj.n) {
        p->tasks = calloc(tasks->u.obj.n, sizeof *p->tasks);
        if (!p->tasks) {
            snprintf(err, PF_ERR_LEN, "out of memory");
            rc = PF_RC_OOM;
            goto done;
        }
        for (size_t i = 0; i < tasks->u.obj.n; i++) {
            pf_profile_task *t = &p->tasks[p->n];
            snprintf(t->type, sizeof t->type, "%s", tasks->u.obj.members[i].key);
            if (get_choice(&tasks->u.obj.members[i].val, t->spec, &t->block, path, t->type, err) < 0) goto done;
            t->predicted = num(&tasks->u.obj.members[i].val, "predicted_speedup");
            t->measured = num(&tasks->u.obj.members[i].val, "measured_speedup");
            alpha_list(pf_json_get(&tasks->u.obj.members[i].val, "alpha"), t);
            p->n++;
        }
    }
    rc = PF_RC_OK;
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

void pf_profile_prior(const pf_profile *p, const char *type, pf_spec_prior *prior) {
    memset(prior, 0, sizeof *prior);
    int any = 0;
    for (int b = 2; b <= PF_MAX_BLOCK; b++) any |= p->c[b] > 0;
    if (any) {
        prior->c = p->c;
        prior->draft = p->draft;
        prior->n = PF_MAX_BLOCK + 1;
    }
    const pf_profile_task *t = type ? pf_profile_find(p, type) : NULL;
    if (t && t->n_alpha) {
        prior->alpha = t->alpha;
        prior->n_alpha = t->n_alpha;
    }
}
