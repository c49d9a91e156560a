/* Per-operation wall time of the forward (bench-model --ops, tools/forward_prof): the operations
 * a pf_ctx's op_s array is indexed by, and the marks that fill it. */
#ifndef PF_OP_TIMING_H
#define PF_OP_TIMING_H

enum {
    PF_OP_QKV,       /* q, k, v projections (activation quantization included) */
    PF_OP_ATTENTION, /* attention over the cache */
    PF_OP_O,         /* output projection */
    PF_OP_GATE_UP,   /* FFN gate and up projections */
    PF_OP_DOWN,      /* FFN down projection */
    PF_OP_HEAD,      /* final norm and the output head */
    PF_OP_ELEMENT,   /* embedding, norms, RoPE, cache writes, residual adds, SwiGLU */
    PF_OP_COUNT
};
extern const char *const pf_op_names[PF_OP_COUNT];

/* A running clock over op_s (NULL: timing off, marks cost nothing). */
typedef struct {
    double *op_s;
    double t; /* the previous mark */
} pf_op_clock;

/* Starts the clock for op_s (PF_OP_COUNT seconds the caller owns, or NULL). */
pf_op_clock pf_op_clock_start(double *op_s);
/* The time since the previous mark goes to op. */
void pf_op_mark(pf_op_clock *clk, int op);

#endif
