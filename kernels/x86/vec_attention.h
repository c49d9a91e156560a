/* The online-softmax step of the x86 attention kernels, written once on vec.h for both widths
 * (ymm_attention.h, attention_avx512.c): per (row, head) and chunk of keys, in float_order.h's
 * order. The running sum is 16 float partials (VNP vectors; key t of a chunk in partial t % 16,
 * chunks being whole multiples of 16 keys from the row's first visible key). */
#ifndef PF_X86_VEC_ATTENTION_H
#define PF_X86_VEC_ATTENTION_H

#include <math.h>

#include "kernels/x86/vec.h"

/* Scores sh[0 .. n) of one chunk in, softmax weights out (times the value rows' scales vs[t] for
 * the 8-bit cache, vs NULL for f16; lanes from n to the next whole vector become 0). When the
 * chunk raises the running maximum *mx, the partials lsum and the head's hd outputs o (hd a
 * multiple of VL) are rescaled by pf_exp_ref(old - new) first. */
PF_FORCE_INLINE void attn_softmax_chunk(float *sh, int n, float *mx, vf *lsum, float *o, int hd, const float *vs) {
    vf vm = vf_set1(-INFINITY);
    for (int t = 0; t < n; t += VL) vm = vf_max(vf_load_n_or(sh + t, n - t, -INFINITY), vm); /* a NaN score is skipped, as by the reference */
    float cmax = vf_hmax(vm);
    if (cmax > *mx) {
        if (*mx != -INFINITY) {
            const vf f = vf_set1(pf_exp_ref(*mx - cmax));
#pragma GCC unroll 2
            for (int k = 0; k < VNP; k++) lsum[k] = vf_mul(lsum[k], f);
#pragma GCC unroll 16
            for (int i = 0; i < hd; i += VL) vf_store(o + i, vf_mul(vf_load(o + i), f));
        }
        *mx = cmax;
    }
    const vf mv = vf_set1(*mx);
    for (int t = 0; t < n; t += VL) {
        vmask m = vmask_n(n - t);
        vf p = vf_keep(m, vf_exp(vf_sub(vf_maskz_load(m, sh + t), mv)));
        lsum[(t / VL) % VNP] = vf_add(lsum[(t / VL) % VNP], p);
        if (vs) p = vf_mul(p, vf_maskz_load(m, vs + t)); /* the sum stays unscaled */
        vf_store(sh + t, p);
    }
}

/* The head's outputs divided by the running sum (its partials through the tree). */
PF_FORCE_INLINE void attn_normalize(float *o, int hd, vf *lsum) {
    const vf inv = vf_set1(1.0f / vf_tree16(lsum));
#pragma GCC unroll 16
    for (int i = 0; i < hd; i += VL) vf_store(o + i, vf_mul(vf_load(o + i), inv));
}

#endif
