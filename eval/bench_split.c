#include "eval/bench_split.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static size_t at(const pf_bench_record *rec, int t, int i) { return (size_t)t * rec->max_prompts + (size_t)i; }

int pf_bench_record_init(pf_bench_record *rec, const pf_task_suite *suite, int n_arms, int max_tokens) {
    memset(rec, 0, sizeof *rec);
    for (int t = 0; t < suite->n; t++)
        if (suite->types[t].n > rec->max_prompts) rec->max_prompts = suite->types[t].n;
    rec->runs = n_arms + 1;
    /* the plain outputs are only compared for a constrained type and its twin: none kept without */
    for (int t = 0; t < suite->n; t++)
        if (suite->types[t].constrained) rec->max_tokens = max_tokens;
    size_t cells = (size_t)suite->n * rec->max_prompts;
    rec->sum = calloc(cells * rec->runs + 1, sizeof *rec->sum);
    rec->plain = calloc(cells * (size_t)rec->max_tokens + 1, sizeof *rec->plain);
    rec->n_plain = calloc(cells + 1, sizeof *rec->n_plain);
    if (rec->sum && rec->plain && rec->n_plain) return 0;
    pf_bench_record_free(rec);
    return -1;
}

void pf_bench_record_free(pf_bench_record *rec) {
    free(rec->sum);
    free(rec->plain);
    free(rec->n_plain);
    memset(rec, 0, sizeof *rec);
}

void pf_bench_record_add(pf_bench_record *rec, int t, int i, int j, double s, int64_t toks, int64_t rounds,
                         int64_t round_toks) {
    pf_bench_prompt_sum *p = &rec->sum[at(rec, t, i) * rec->runs + j];
    p->s += s;
    p->toks += toks;
    p->rounds += rounds;
    p->round_toks += round_toks;
}

void pf_bench_record_plain(pf_bench_record *rec, int t, int i, const int32_t *toks, int n) {
    if (n > rec->max_tokens) n = rec->max_tokens;
    memcpy(rec->plain + at(rec, t, i) * rec->max_tokens, toks, (size_t)n * sizeof *toks);
    rec->n_plain[at(rec, t, i)] = n;
}

static int same_plain(const pf_bench_record *rec, int a, int b, int i) {
    int n = rec->n_plain[at(rec, a, i)];
    return n == rec->n_plain[at(rec, b, i)] &&
           !memcmp(rec->plain + at(rec, a, i) * rec->max_tokens, rec->plain + at(rec, b, i) * rec->max_tokens,
                   (size_t)n * sizeof *rec->plain);
}

static void add_side(pf_bench_split_side *d, const pf_bench_prompt_sum *plain, const pf_bench_prompt_sum *spec) {
    d->plain_s += plain->s;
    d->plain_tok += plain->toks;
    d->spec_s += spec->s;
    d->spec_tok += spec->toks;
    d->rounds += spec->rounds;
    d->round_toks += spec->round_toks;
}

void pf_bench_record_split(const pf_bench_record *rec, const pf_task_suite *suite, int k, pf_bench_task *tasks) {
    for (int c = 0; c < suite->n; c++) {
        if (!suite->types[c].constrained) continue;
        int f = suite->types[c].twin;
        pf_bench_split *sp = tasks[c].split;
        memset(sp, 0, 2 * sizeof *sp);
        for (int i = 0; i < suite->types[c].n; i++) {
            pf_bench_split *g = &sp[same_plain(rec, c, f, i) ? 0 : 1];
            g->n++;
            const pf_bench_prompt_sum *cs = &rec->sum[at(rec, c, i) * rec->runs];
            const pf_bench_prompt_sum *fs = &rec->sum[at(rec, f, i) * rec->runs];
            add_side(&g->con, &cs[0], &cs[k + 1]);
            add_side(&g->free, &fs[0], &fs[k + 1]);
        }
    }
}

const int pf_bench_len_lo[PF_BENCH_LEN_GROUPS + 1] = {0, 128, 512, 1024, INT_MAX};

void pf_bench_record_by_length(const pf_bench_record *rec, const pf_task_suite *suite, int *const *np, int k,
                               pf_bench_len_group *groups) {
    memset(groups, 0, PF_BENCH_LEN_GROUPS * sizeof *groups);
    for (int t = 0; t < suite->n; t++)
        for (int i = 0; i < suite->types[t].n; i++) {
            int g = 0;
            while (g + 1 < PF_BENCH_LEN_GROUPS && np[t][i] >= pf_bench_len_lo[g + 1]) g++;
            const pf_bench_prompt_sum *ps = &rec->sum[at(rec, t, i) * rec->runs];
            groups[g].n++;
            add_side(&groups[g].side, &ps[0], &ps[k + 1]);
        }
}
