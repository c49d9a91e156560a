/* A markdown table's head written cell by cell, with the rule under it drawn from the same count,
 * so a report's head and rule cannot disagree (bench, bench-model, tune, demo). Writes to stdout. */
#ifndef PF_MD_TABLE_H
#define PF_MD_TABLE_H

typedef struct { int cols; } pf_md_head;

/* One head cell, printf-style: the first prints the opening '|'. */
void pf_md_cell(pf_md_head *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Ends the head line and draws the rule: "|---|" once per cell. */
void pf_md_rule(const pf_md_head *h);
/* A fixed head in one string, cells separated by " | " ("task | tau"), then its rule. */
void pf_md_head_line(const char *cells);

#endif
