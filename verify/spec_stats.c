/* Round statistics of a speculation object: per-round accounting, sums over runs, the report. */
#include "verify/spec.h"

#include <stdio.h>

void pf_spec_stats_round(pf_spec_stats *st, int nd, int a) {
    st->verified_rows[nd + 1]++;
    st->rounds++;
    st->tokens += a + 1;
    st->hist[a]++;
    st->drafted += nd;
    for (int k = 0; k < nd; k++) st->pos_tried[k]++;
    for (int k = 0; k < a; k++) st->pos_accepted[k]++;
}

void pf_spec_stats_add(pf_spec_stats *a, const pf_spec_stats *b) {
    a->rounds += b->rounds;
    a->tokens += b->tokens;
    a->drafted += b->drafted;
    a->forced += b->forced;
    for (int i = 0; i < PF_MAX_BLOCK + 2; i++) a->verified_rows[i] += b->verified_rows[i];
    for (int i = 0; i <= PF_MAX_BLOCK; i++) a->hist[i] += b->hist[i];
    for (int i = 0; i < PF_MAX_BLOCK; i++) {
        a->pos_tried[i] += b->pos_tried[i];
        a->pos_accepted[i] += b->pos_accepted[i];
    }
    a->t_draft += b->t_draft;
    a->t_ctx += b->t_ctx;
    a->t_prompt_ctx += b->t_prompt_ctx;
    a->t_verify += b->t_verify;
    a->t_accept += b->t_accept;
    a->t_other += b->t_other;
    a->t_total += b->t_total;
}

double pf_spec_tau(const pf_spec_stats *st) { return st->rounds ? (double)st->tokens / (double)st->rounds : 0.0; }

void pf_spec_stats_print(const pf_spec_stats *st, int block, void *file) {
    FILE *f = file;
    fprintf(f, "speculation: %lld rounds, %lld tokens, tau %.2f tokens/round (block %d), %lld drafted, acceptance %.1f%%\n",
            (long long)st->rounds, (long long)st->tokens, pf_spec_tau(st), block, (long long)st->drafted,
            st->drafted ? 100.0 * (double)(st->tokens - st->rounds) / (double)st->drafted : 0.0);
    if (st->forced)
        fprintf(f, "structured output: %lld of the drafted tokens forced by the schema (appended without the draft)\n",
                (long long)st->forced);
    fprintf(f, "accepted drafts per round:");
    for (int a = 0; a < block; a++) fprintf(f, " %d:%lld", a, (long long)st->hist[a]);
    fprintf(f, "\nacceptance by block position:");
    for (int k = 0; k < block - 1; k++) {
        if (st->pos_tried[k]) fprintf(f, " %d:%.0f%%", k + 1, 100.0 * (double)st->pos_accepted[k] / (double)st->pos_tried[k]);
        else fprintf(f, " %d:-", k + 1);
    }
    int64_t varied = 0;
    for (int n = 1; n <= block; n++) varied += st->verified_rows[n] && st->verified_rows[n] != st->rounds;
    if (varied) { /* an adaptive strategy: what it chose */
        fprintf(f, "\nrows verified per round (1 = plain step):");
        for (int n = 1; n <= block; n++)
            if (st->verified_rows[n]) fprintf(f, " %d:%lld", n, (long long)st->verified_rows[n]);
    }
    double other = st->t_total - st->t_draft - st->t_verify - st->t_accept - st->t_ctx;
    if (other < 0) other = 0;
    double T = st->t_total > 0 ? st->t_total : 1;
    fprintf(f, "\ntime in rounds %.3f s: draft %.1f%%, context %.1f%%, verify %.1f%%, accept/sample %.1f%%, other %.1f%%"
               " (and %.3f s building the draft's context from the prompt)\n",
            st->t_total, 100 * st->t_draft / T, 100 * st->t_ctx / T, 100 * st->t_verify / T, 100 * st->t_accept / T,
            100 * other / T, st->t_prompt_ctx);
}
