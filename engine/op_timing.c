/* The forward's per-operation timing (op_timing.h). */
#include "engine/op_timing.h"

#include "engine/clock.h"

const char *const pf_op_names[PF_OP_COUNT] = {"q/k/v", "attention", "o", "gate/up", "down", "head", "elementwise"};

pf_op_clock pf_op_clock_start(double *op_s) { return (pf_op_clock){op_s, op_s ? pf_now_s() : 0}; }

void pf_op_mark(pf_op_clock *clk, int op) {
    if (!clk->op_s) return;
    double n = pf_now_s();
    clk->op_s[op] += n - clk->t;
    clk->t = n;
}
