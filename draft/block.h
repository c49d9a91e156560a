/* The bound on a speculative round's block: its lowest user is a drafter (a DFlash drafter keeps
 * the hidden rows of a whole block and room for one past the target's context); the strategies,
 * the plan, the statistics, the cost model, the planner and the profiles above size their tables
 * by it, and verify/kind.h checks a block against it. */
#ifndef PF_BLOCK_H
#define PF_BLOCK_H

/* The most rows a speculative round drafts and verifies (block sizes are 2..PF_MAX_BLOCK); every
 * table sized by the block (statistics, cost model, planner, profile) uses this one bound. */
#define PF_MAX_BLOCK 64

#endif
