/* Internal to kernels/: the per-level dispatch tables. Each lives in the file compiled for its
 * level and is handed out by dispatch.c only after pf_level_supported() says the CPU can run it. */
#ifndef PF_KERNELS_IMPL_H
#define PF_KERNELS_IMPL_H

#include "kernels/kernels.h"

extern const pf_kernels pf_kernels_scalar_table;
extern const pf_kernels pf_kernels_avx2_table;
extern const pf_kernels pf_kernels_avx512_table;

#define PF_FORCE_INLINE static inline __attribute__((always_inline))

#endif
