/* The bench command's reports: SVG chart, JSON records and the --compare table (eval/bench_report.h). */
#include "eval/bench_report.h"
#include "eval/md_table.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "draft/block.h"
#include "kernels/cpu.h"

/* The chart names what it measured: the CPU's model name (Linux /proc/cpuinfo; "unknown CPU" elsewhere). */
static void cpu_model_name(char *buf, size_t n) {
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        const char *c = strchr(line, ':');
        if (!c || (strncmp(line, "model name", 10) && strncmp(line, "Model", 5))) continue;
        for (c++; *c == ' ' || *c == '\t'; c++) {}
        size_t len = strcspn(c, "\r\n");
        if (len) snprintf(buf, n, "%.*s", (int)len, c);
        break;
    }
    fclose(f);
}

/* Text for an SVG <text> element: the XML metacharacters escaped. */
static void svg_text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    }
}

static const char *base_name(const char *path) {
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* The chart's geometry: n bars of width bw, gap apart, from x = left; the plot h high below top;
 * the axis up to mx with n_ticks 0.5x ticks; W x H in all. */
typedef struct {
    int arms, n, bw, gap, left, top, h, W, H, n_ticks;
    double mx;
} svg_layout;

/* Bar i's speedup: a strategy's geomean with --compare, else a task type's median, the last the overall geomean. */
static double bar_speedup(const pf_bench_result *r, const svg_layout *L, int i) {
    return L->arms ? r->arms[i].speedup_geomean : i == r->n ? r->speedup_geomean : r->tasks[i].speedup.median;
}

static svg_layout svg_layout_of(const pf_bench_result *r, const pf_bench_opts *o) {
    /* one bar per task type and the overall geomean; with --compare one bar per strategy (its geomean) */
    svg_layout L = {.arms = r->n_arms > 0 && o->n_arms > 0, .bw = 60, .gap = 30, .left = 60, .top = 74, .h = 260};
    L.n = L.arms ? r->n_arms : r->n + 1;
    double mx = 0;
    for (int i = 0; i < L.n; i++)
        if (bar_speedup(r, &L, i) > mx) mx = bar_speedup(r, &L, i);
    if (!(mx <= 100)) mx = 100; /* a degenerate run (inf, nan) still draws a bounded axis */
    L.n_ticks = (int)(mx * 1.15 / 0.5) + 1; /* 0.5x steps; the top tick above the tallest bar and its labels */
    if (L.n_ticks < 3) L.n_ticks = 3;
    L.mx = 0.5 * L.n_ticks;
    L.W = L.left + L.n * (L.bw + L.gap) + L.gap + 150; /* 150: the baseline's label */
    L.H = L.top + L.h + 40;
    if (L.W < 640) L.W = 640;
    return L;
}

/* The title (the model files) and the captions: CPU, kernel level, threads, date, the settings. */
static void svg_titles(FILE *f, const pf_bench_result *r, const pf_bench_opts *o, const svg_layout *L) {
    char cpu[256], date[64];
    cpu_model_name(cpu, sizeof cpu);
    time_t now = time(NULL);
    struct tm tm;
    if (!gmtime_r(&now, &tm) || !strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tm)) snprintf(date, sizeof date, "unknown date");
    fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"15\" class=\"title\">Speedup over plain decoding per %s: ",
            L->arms ? "strategy (geomean over task types)" : "task type");
    svg_text(f, base_name(r->model));
    if (r->draft[0]) {
        fputs(" + ", f);
        svg_text(f, base_name(r->draft));
    }
    fprintf(f, "</text>\n<text x=\"10\" y=\"40\" fill=\"#444\" class=\"caption\">");
    svg_text(f, cpu);
    fprintf(f, ", PF_KERNELS=%s, %d threads, %s</text>\n", pf_level_name(r->level), o->threads, date);
    fprintf(f, "<text x=\"10\" y=\"56\" fill=\"#444\" class=\"caption\">");
    if (!L->arms) fprintf(f, "strategy %s, block %d, ", o->profile ? "profile" : o->spec ? o->spec : "?", r->block);
    fprintf(f, "%s, %d tokens per prompt, %d interleaved repetitions; bar label: tau (tokens per round)</text>\n",
            o->temp > 0 ? "sampled" : "greedy", o->max_tokens, o->reps);
}

/* The ticks and the 1.0x line labelled as plain decoding. */
static void svg_axis(FILE *f, const svg_layout *L) {
    for (int k = 0; k <= L->n_ticks; k++) {
        double v = 0.5 * k;
        int y = L->top + L->h - (int)(L->h * v / L->mx);
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>\n", L->left, y, L->W - 150, y);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"tick\">%.1fx</text>\n", L->left - 6, y + 4, v);
    }
    int y1 = L->top + L->h - (int)(L->h / L->mx);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#c00\" stroke-dasharray=\"4 3\"/>\n", L->left, y1,
            L->W - 150, y1);
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#c00\" class=\"baseline\">plain decoding (1.0x)</text>\n", L->W - 146, y1 + 4);
}

/* Bar i with its speedup, tau and name. */
static void svg_bar(FILE *f, const pf_bench_result *r, const svg_layout *L, int i) {
    int overall = !L->arms && i == r->n, top = L->top, h = L->h, bw = L->bw;
    double v = bar_speedup(r, L, i);
    double tau = L->arms ? r->arms[i].tau : overall ? r->tau : pf_spec_tau(&r->tasks[i].st);
    const char *name = L->arms ? r->arms[i].name : overall ? "overall" : r->tasks[i].type;
    if (L->arms && !strncmp(name, "profile:", 8)) name = "profile"; /* the file is in the JSON */
    int x = L->left + L->gap + i * (bw + L->gap), bh = (int)(h * v / L->mx);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", x, top + h - bh, bw, bh,
            overall ? "#555" : "#3a7bd5");
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%.2fx</text>\n", x + bw / 2, top + h - bh - 16, v);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#666\">tau %.2f</text>\n", x + bw / 2, top + h - bh - 3, tau);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", x + bw / 2, top + h + 18);
    svg_text(f, name);
    fputs("</text>\n", f);
}

/* Bar chart of speedup per task type. Ticks every 0.5x from 0, the 1.0x line labelled as plain
 * decoding, and the title and caption name the model files, CPU, kernel level, threads and date. */
void pf_bench_write_svg(FILE *f, const pf_bench_result *r, const pf_bench_opts *o) {
    svg_layout L = svg_layout_of(r, o);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", L.W, L.H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    svg_titles(f, r, o, &L);
    svg_axis(f, &L);
    for (int i = 0; i < L.n; i++) svg_bar(f, r, &L, i);
    fprintf(f, "</svg>\n");
}

static double forced_share(const pf_spec_stats *st) { return st->tokens ? (double)st->forced / (double)st->tokens : 0; }

/* A split side's speedup (per-token decode times summed over its prompts and repetitions) and tau. */
static double side_speedup(const pf_bench_split_side *d) {
    return d->plain_tok > 0 && d->spec_s > 0 && d->spec_tok > 0 ? (d->plain_s / (double)d->plain_tok) / (d->spec_s / (double)d->spec_tok)
                                                             : 0;
}
static double side_tau(const pf_bench_split_side *d) { return d->rounds ? (double)d->round_toks / (double)d->rounds : 0; }

static void split_json(FILE *f, const char *name, const pf_bench_split *g) {
    fprintf(f, "\"%s\": {\"prompts\": %d, \"speedup\": %.4f, \"tau\": %.4f, \"free_speedup\": %.4f, \"free_tau\": %.4f}", name,
            g->n, side_speedup(&g->con), side_tau(&g->con), side_speedup(&g->free), side_tau(&g->free));
}

/* The "by_input_length" field: one object per group of prompt lengths that holds prompts. */
static void by_length_json(FILE *f, const pf_bench_arm_result *ar) {
    fprintf(f, ", \"by_input_length\": [");
    for (int g = 0, first = 1; g < PF_BENCH_LEN_GROUPS; g++) {
        const pf_bench_len_group *lg = &ar->by_len[g];
        if (!lg->n) continue;
        fprintf(f, "%s{\"min_tokens\": %d, \"max_tokens\": %d, \"prompts\": %d, \"speedup\": %.4f, \"tau\": %.4f}",
                first ? "" : ", ", pf_bench_len_lo[g], g + 1 < PF_BENCH_LEN_GROUPS ? pf_bench_len_lo[g + 1] - 1 : -1, lg->n,
                side_speedup(&lg->side), side_tau(&lg->side));
        first = 0;
    }
    fputc(']', f);
}

void pf_bench_print_by_length(const pf_bench_result *r) {
    pf_md_head h = {0};
    pf_md_cell(&h, "input tokens");
    pf_md_cell(&h, "prompts");
    for (int k = 0; k < r->n_arms; k++) pf_md_cell(&h, "%s: speedup (tau)", r->arms[k].name);
    pf_md_rule(&h);
    for (int g = 0; g < PF_BENCH_LEN_GROUPS; g++) {
        int n = r->arms[0].by_len[g].n;
        if (!n) continue;
        if (g + 1 < PF_BENCH_LEN_GROUPS) printf("| %d-%d | %d |", pf_bench_len_lo[g], pf_bench_len_lo[g + 1] - 1, n);
        else printf("| %d and more | %d |", pf_bench_len_lo[g], n);
        for (int k = 0; k < r->n_arms; k++)
            printf(" %.2fx (%.2f) |", side_speedup(&r->arms[k].by_len[g].side), side_tau(&r->arms[k].by_len[g].side));
        printf("\n");
    }
    printf("\n");
}

/* The JSON fields of a task decoded under its schemas (nothing for a free one). */
static void structured_json(FILE *f, const pf_bench_task *t) {
    if (!t->constrained) return;
    const pf_bench_docs *p = &t->plain_docs, *s = &t->spec_docs;
    fprintf(f, ", \"constrained\": true, \"forced_share\": %.4f, \"docs_plain\": {\"valid\": %d, \"invalid\": %d, \"cut\": %d}, "
               "\"docs_spec\": {\"valid\": %d, \"invalid\": %d, \"cut\": %d}",
            forced_share(&t->st), p->valid, p->invalid, p->cut, s->valid, s->invalid, s->cut);
    fprintf(f, ", \"split\": {");
    split_json(f, "text_unchanged", &t->split[0]);
    fprintf(f, ", ");
    split_json(f, "text_changed", &t->split[1]);
    fprintf(f, "}");
}

void pf_bench_write_json(FILE *f, const pf_bench_result *r, const pf_bench_opts *o) {
    fprintf(f, "{\"model\": \"%s\", \"draft\": \"%s\", \"spec\": \"%s\", \"block\": %d, \"threads\": %d, \"temp\": %g, "
               "\"max_tokens\": %d, \"reps\": %d, \"compute_gfma_s\": [%.2f, %.2f],\n \"tasks\": {", r->model, r->draft,
            o->spec, r->block, o->threads, o->temp, o->max_tokens, o->reps, r->compute_start, r->compute_end);
    for (int i = 0; i < r->n; i++) {
        const pf_bench_task *t = &r->tasks[i];
        fprintf(f, "%s\n  \"%s\": {\"spec\": \"%s\", \"block\": %d, \"prompts\": %d, \"speedup\": %.4f, \"speedup_min\": %.4f, \"speedup_max\": %.4f, "
                   "\"tau\": %.4f, \"ar_tok_s\": %.3f, \"spec_tok_s\": %.3f, \"identical\": %s, \"rounds\": %lld, "
                   "\"prefill_tok_s\": %.1f, \"ttft_ar_ms\": %.2f, \"ttft_spec_ms\": %.2f, \"accepted_hist\": [",
                i ? "," : "", t->type, t->spec, t->block, t->n_prompts, t->speedup.median, t->speedup.lo, t->speedup.hi, pf_spec_tau(&t->st),
                t->plain_tok_s.median, t->spec_tok_s.median, t->identical < 0 ? "null" : t->identical ? "true" : "false",
                (long long)t->st.rounds, t->prefill_tok_s, t->ttft_plain_ms, t->ttft_spec_ms);
        for (int a = 0; a < t->block; a++) fprintf(f, "%s%lld", a ? ", " : "", (long long)t->st.hist[a]);
        fprintf(f, "], \"acceptance_by_position\": [");
        for (int k = 0; k < t->block - 1; k++)
            fprintf(f, "%s%.4f", k ? ", " : "", t->st.pos_tried[k] ? (double)t->st.pos_accepted[k] / (double)t->st.pos_tried[k] : 0.0);
        double T = t->st.t_total > 0 ? t->st.t_total : 1;
        double other = t->st.t_total - t->st.t_draft - t->st.t_ctx - t->st.t_verify - t->st.t_accept;
        fprintf(f, "], \"time_split\": {\"draft\": %.4f, \"context\": %.4f, \"verify\": %.4f, \"accept\": %.4f, \"other\": %.4f}",
                t->st.t_draft / T, t->st.t_ctx / T, t->st.t_verify / T, t->st.t_accept / T, (other > 0 ? other : 0) / T);
        structured_json(f, t);
        fputc('}', f);
    }
    fprintf(f, "\n },\n \"overall\": {\"speedup_geomean\": %.4f, \"tau\": %.4f, \"identical\": %s}", r->speedup_geomean, r->tau,
            r->identical < 0 ? "null" : r->identical ? "true" : "false");
    by_length_json(f, &r->arms[0]);
    fprintf(f, ", \"load\": [%.2f, %.2f]}\n", r->load_start, r->load_end);
}

static const char *yes_no(int identical) { return identical < 0 ? "n/a (sampled)" : identical ? "yes" : "NO"; }
static const char *json_bool(int identical) { return identical < 0 ? "null" : identical ? "true" : "false"; }

/* Mean rows verified per round (1 = a plain step) and the share of plain steps. */
static void rows_summary(const pf_spec_stats *st, double *mean, double *plain) {
    int64_t n = 0, sum = 0;
    for (int k = 1; k <= PF_MAX_BLOCK + 1; k++) {
        n += st->verified_rows[k];
        sum += (int64_t)k * st->verified_rows[k];
    }
    *mean = n ? (double)sum / (double)n : 0;
    *plain = n ? (double)st->verified_rows[1] / (double)n : 0;
}

void pf_bench_write_compare_json(FILE *f, const pf_bench_result *r, const pf_bench_opts *o) {
    fprintf(f, "{\"model\": \"%s\", \"draft\": \"%s\", \"threads\": %d, \"temp\": %g, \"max_tokens\": %d, \"reps\": %d, "
               "\"compute_gfma_s\": [%.2f, %.2f], \"load\": [%.2f, %.2f],\n \"plain_tok_s\": {",
            r->model, r->draft, o->threads, o->temp, o->max_tokens, o->reps, r->compute_start, r->compute_end, r->load_start,
            r->load_end);
    for (int i = 0; i < r->n; i++) fprintf(f, "%s\"%s\": %.3f", i ? ", " : "", r->tasks[i].type, r->tasks[i].plain_tok_s.median);
    fprintf(f, "},\n \"strategies\": [");
    for (int k = 0; k < r->n_arms; k++) {
        const pf_bench_arm_result *ar = &r->arms[k];
        fprintf(f, "%s\n  {\"name\": \"%s\", \"overall\": {\"speedup_geomean\": %.4f, \"tau\": %.4f, \"identical\": %s}, \"tasks\": {",
                k ? "," : "", ar->name, ar->speedup_geomean, ar->tau, json_bool(ar->identical));
        for (int i = 0; i < r->n; i++) {
            const pf_bench_task *t = &ar->tasks[i];
            double mean, plain;
            rows_summary(&t->st, &mean, &plain);
            fprintf(f, "%s\n   \"%s\": {\"spec\": \"%s\", \"block\": %d, \"speedup\": %.4f, \"speedup_min\": %.4f, "
                       "\"speedup_max\": %.4f, \"tau\": %.4f, \"spec_tok_s\": %.3f, \"identical\": %s, \"rounds\": %lld, "
                       "\"mean_rows_verified\": %.3f, \"plain_step_share\": %.4f",
                    i ? "," : "", t->type, t->spec, t->block, t->speedup.median, t->speedup.lo, t->speedup.hi,
                    pf_spec_tau(&t->st), t->spec_tok_s.median, json_bool(t->identical), (long long)t->st.rounds, mean, plain);
            structured_json(f, t);
            fputc('}', f);
        }
        fprintf(f, "}");
        by_length_json(f, ar);
        fprintf(f, "}");
    }
    fprintf(f, "\n ]}\n");
}

/* One table: a row per strategy, a column per task type, speedups over the same run's plain decoding. */
void pf_bench_print_compare(const pf_bench_result *r) {
    pf_md_head h = {0};
    pf_md_cell(&h, "strategy");
    for (int i = 0; i < r->n; i++) pf_md_cell(&h, "%s", r->tasks[i].type);
    static const char *const tail[] = {"**overall** (geomean)", "tau", "rows verified (mean)", "plain steps", "identical"};
    for (size_t i = 0; i < sizeof tail / sizeof *tail; i++) pf_md_cell(&h, "%s", tail[i]);
    pf_md_rule(&h);
    printf("| plain tok/s |");
    for (int i = 0; i < r->n; i++) printf(" %.1f |", r->tasks[i].plain_tok_s.median);
    printf(" | | | | |\n");
    for (int k = 0; k < r->n_arms; k++) {
        const pf_bench_arm_result *ar = &r->arms[k];
        pf_spec_stats all = {0};
        printf("| %s |", ar->name);
        for (int i = 0; i < r->n; i++) {
            printf(" %.2fx |", ar->tasks[i].speedup.median);
            for (int n = 0; n < PF_MAX_BLOCK + 2; n++) all.verified_rows[n] += ar->tasks[i].st.verified_rows[n];
        }
        double mean, plain;
        rows_summary(&all, &mean, &plain);
        printf(" **%.2fx** | %.2f | %.2f | %.0f%% | %s |\n", ar->speedup_geomean, ar->tau, mean, 100 * plain, yes_no(ar->identical));
    }
    printf("\n");
}

static void print_docs(const pf_bench_docs *d) {
    printf(" %d/%d", d->valid, d->valid + d->invalid + d->cut);
    if (d->cut) printf(" (%d cut)", d->cut);
    printf(" |");
}

void pf_bench_print_structured(const pf_bench_result *r) {
    pf_md_head_line("strategy | task | plain tok/s | spec tok/s | speedup (min-max) | tau | forced (appended) | valid plain | valid spec");
    for (int k = 0; k < r->n_arms; k++)
        for (int i = 0; i < r->n; i++) {
            const pf_bench_task *t = &r->arms[k].tasks[i];
            printf("| %s | %s | %.1f | %.1f | %.2fx (%.2f-%.2f) | %.2f |", r->arms[k].name, t->type, t->plain_tok_s.median,
                   t->spec_tok_s.median, t->speedup.median, t->speedup.lo, t->speedup.hi, pf_spec_tau(&t->st));
            if (!t->constrained) {
                printf(" | | |\n");
                continue;
            }
            printf(" %.0f%% |", 100 * forced_share(&t->st));
            print_docs(&t->plain_docs);
            print_docs(&t->spec_docs);
            printf("\n");
        }
    printf("\n");
    for (int k = 0; k < r->n_arms; k++)
        for (int i = 0; i < r->n; i++) {
            const pf_bench_task *c = &r->arms[k].tasks[i];
            if (!c->constrained) continue;
            const pf_bench_task *f = &r->arms[k].tasks[c->twin];
            printf("%s, %s: constrained speculative over constrained plain %.2fx (tau %.2f), free speculative over free "
                   "plain %.2fx (tau %.2f) on the same prompts: %s\n", r->arms[k].name, f->type, c->speedup.median,
                   pf_spec_tau(&c->st), f->speedup.median, pf_spec_tau(&f->st),
                   c->speedup.median >= f->speedup.median ? "constrained >= free" : "constrained < free");
            static const char *const what[2] = {"whose plain output the schema leaves as the free one",
                                                "whose text the schema changes"};
            for (int g = 0; g < 2; g++) {
                const pf_bench_split *sp = &c->split[g];
                if (!sp->n) continue;
                printf("  the %d prompt%s %s: constrained %.2fx (tau %.2f), free %.2fx (tau %.2f)\n", sp->n,
                       sp->n == 1 ? "" : "s", what[g], side_speedup(&sp->con), side_tau(&sp->con),
                       side_speedup(&sp->free), side_tau(&sp->free));
            }
        }
    printf("\n");
}
