/* One row budget per step across sequences: every decoding sequence has its plain row, and draft
 * rows go where they add the most expected tokens per second of the step. The step's seconds are
 * the shared verify forward's cost of all its rows, verify(R) (a running estimate of this
 * machine's c(R)), plus each sequence's own drafting and bookkeeping. Pure arithmetic: the same
 * estimates give the same rows. */
#ifndef PF_ROW_SHARE_H
#define PF_ROW_SHARE_H

#include "draft/block.h"

typedef struct {
    int bmax;  /* the most rows the sequence may verify (>= 1; 1: a plain step only) */
    int fixed; /* a fixed block: bmax rows, not traded */
    double s[PF_MAX_BLOCK];             /* survival of draft position k at s[k-1] */
    double draft_s[PF_MAX_BLOCK + 1];   /* seconds of drafting a B-row block, B = 2..bmax */
    double over_spec, over_plain;       /* seconds of a drafting round's / a plain step's own work */
} pf_share_seq;

/* Rows of each of the n sequences into rows[i]: 1 (plain) or B >= 2 (B-1 drafts verified), the
 * total at most max_rows (1..PF_MAX_BLOCK) unless plain rows and fixed blocks alone exceed it.
 * verify_s[R], R = 1..PF_MAX_BLOCK: seconds of an R-row forward (past max_rows the last slope).
 * Start from every sequence plain; while it raises expected tokens / seconds, extend the one
 * sequence (by any number of rows) that raises it most. Returns that rate (tokens / s). */
double pf_share_rows(const pf_share_seq *q, int n, const double *verify_s, int max_rows, int *rows);

#endif
