#include "eval/md_table.h"

#include <stdarg.h>
#include <stdio.h>

void pf_md_cell(pf_md_head *h, const char *fmt, ...) {
    if (!h->cols) putchar('|');
    putchar(' ');
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputs(" |", stdout);
    h->cols++;
}

void pf_md_rule(const pf_md_head *h) {
    fputs("\n|", stdout);
    for (int i = 0; i < h->cols; i++) fputs("---|", stdout);
    putchar('\n');
}

void pf_md_head_line(const char *cells) {
    pf_md_head h = {1};
    for (const char *p = cells; *p; p++) h.cols += *p == '|';
    printf("| %s |", cells);
    pf_md_rule(&h);
}
