/* The x86 levels' quantized gemm (Q8_0, Q4_0, Q4_1) and activation quantization, written once on
 * vec.h and compiled for AVX2, AVX-VNNI and AVX-512 (through vec_kernels.h).
 *
 * A group of 16 consecutive weight rows is one row per 32-bit lane: NS = 16 / VL slices of VL
 * lanes (one AVX-512 vector, two 256-bit halves). Per block each slice's weights are decoded once
 * into 8 registers of unsigned bytes w[j] (lane i = bytes 4j .. 4j+3 of row i's block: Q4 nibbles;
 * Q8_0 w + 128 where the level has vpdpbusd, else |w| with the signs put on the activations), then
 * every activation row b of the pass takes 8 integer dot steps against broadcast dwords of its q8
 * block, read in place:
 *   VEC_VNNI: isum = c_b + sum_j vpdpbusd(w[j], dword j of x_b)   (c_b = -128 sum(x) for Q8_0)
 *   AVX2:     isum = sum_j madd(maddubs(w[j], dword j of x_b))     (Q8_0: the signs on x_b)
 * exact int32 block sums, one per lane; then the scalar reference's float ops per block, in its
 * order, each rounded (the build's -ffp-contract=off: no fused multiply-adds):
 *   Q8_0: acc_b += (d_w * x.d) * float(isum)
 *   Q4_0: acc_b += (d_w * x.d) * float(isum) + (-8 * d_w) * x.s     (isum over the nibbles 0..15)
 *   Q4_1: acc_b += (d_w * x.d) * float(isum) + m_w * x.s
 * So an output is one lane's chain of the reference's float ops in block order, with no
 * horizontal sums, whatever B, the pass, the slice, the group, the row split or the width: the
 * reference's bits. No pair sum can saturate: Q4 nibbles sum all 8 maddubs in int16
 * (|sum| <= 16 * 15 * 128 < 2^15); Q8_0 pairs are |w| <= 128 times |x| <= 127, widened to int32
 * per dword; vpdpbusd (not the saturating vpdpbusds) sums in int32.
 *
 * Weights come from the packed layout (kernels.h: per group and block the 16 scales, then the
 * quants as dword columns: plain loads). GGUF-layout weights are packed a group at a time on the
 * fly (pf_pack_group), except on AVX-512 (QGROUP_INPLACE), which reads a whole group in place: 16
 * bytes per row transposed in registers and the scales gathered (the same bytes, bit for bit). */
#ifndef PF_X86_VEC_GEMM_QUANT_H
#define PF_X86_VEC_GEMM_QUANT_H

#include "formats/quant.h"
#include "kernels/x86/vec.h"
#include "kernels/x86/x86_quant.h"

#define NS (QRG / VL)    /* slices of a row group */
#define QNB 16           /* activation rows per pass over a group's blocks */
#define QKS 512          /* blocks per k super-chunk (accumulators parked in y between them) */
#define ASUM_INTS (16 * 1024) /* activation block sums per pass (QASUM) */
#define QPAD_BYTES (32 * 1024) /* one group packed on the fly, per k chunk */
/* Activation block sums per pass: Q8_0's + 128 offset (the vpdpbusd levels). */
#define QASUM(wt) (VEC_VNNI && (wt) == PF_TYPE_Q8_0)
#if VL == 16
#define QGROUP_INPLACE 1
#ifndef QPF_PACKED
#define QPF_PACKED 2     /* groups ahead that the weight prefetch reads (0: none) */
#endif
#ifndef QPF_AHEAD
#define QPF_AHEAD 2      /* the same for GGUF-layout weights read in place */
#endif
#else
#define QGROUP_INPLACE 0
#ifndef QPF_PACKED
#define QPF_PACKED 4
#endif
#endif
#ifndef QPF_MIN_B
#define QPF_MIN_B 1      /* software prefetch from this many rows (see gemm_quant): from one row on
                            (decode at 33 GB/s faster with it at every level; earlier, in another
                            memory regime, one row measured slower with it: docs/performance.md) */
#endif

#if QGROUP_INPLACE
/* 16 bytes at byte offset off of each of 16 rows: row i at p[i / 4] + (i % 4) * rb. Returns
 * t[g] with lane i = dword g of row i. */
PF_FORCE_INLINE void load_transposed(const uint8_t *const p[4], size_t rb, size_t off, __m512i t[4]) {
    __m512i z[4];
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) { /* 128-bit lane l of z[m] = row 4l + m */
        size_t o = off + (size_t)m * rb;
        __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(p[0] + o)));
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p[1] + o)), 1);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p[2] + o)), 2);
        z[m] = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p[3] + o)), 3);
    }
    __m512i a = _mm512_unpacklo_epi32(z[0], z[1]), b = _mm512_unpackhi_epi32(z[0], z[1]);
    __m512i c = _mm512_unpacklo_epi32(z[2], z[3]), d = _mm512_unpackhi_epi32(z[2], z[3]);
    t[0] = _mm512_unpacklo_epi64(a, c);
    t[1] = _mm512_unpackhi_epi64(a, c);
    t[2] = _mm512_unpacklo_epi64(b, d);
    t[3] = _mm512_unpackhi_epi64(b, d);
}
#endif

/* Q8_0 weight bytes as the dot steps take them */
#if VEC_VNNI
PF_FORCE_INLINE vi q8_weights(vi w) { return vi_xor(w, vi_set1_i8((int8_t)0x80)); }
#else
PF_FORCE_INLINE vi q8_weights(vi w) { return _mm256_abs_epi8(w); }
#endif

/* The exact int32 block sums of one activation row's block xb against the decoded weights w. */
PF_FORCE_INLINE vi block_isum(uint32_t wt, const vi *w, const uint8_t *xb, const uint8_t *q, int32_t asum) {
    vi s, s1 = vi_zero(); /* two dependency chains (exact int32 sums: the split changes nothing) */
#if VEC_VNNI
    (void)q;
    s = wt == PF_TYPE_Q8_0 ? vi_set1(asum) : vi_zero();
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        s = vi_dpbusd(s, w[j], vi_set1((int32_t)load_u32(xb + 8 + 4 * j)));
        s1 = vi_dpbusd(s1, w[4 + j], vi_set1((int32_t)load_u32(xb + 24 + 4 * j)));
    }
    return vi_add(s, s1);
#else
    (void)asum;
    const __m256i ones = _mm256_set1_epi16(1);
    if (wt == PF_TYPE_Q8_0) { /* |w| against x given w's signs (q: the signed weights) */
        s = vi_zero();
#pragma GCC unroll 8
        for (int j = 0; j < 8; j += 2) {
            __m256i x0 = _mm256_sign_epi8(vi_set1((int32_t)load_u32(xb + 8 + 4 * j)), vi_load(q + 64 * j));
            __m256i x1 = _mm256_sign_epi8(vi_set1((int32_t)load_u32(xb + 12 + 4 * j)), vi_load(q + 64 * j + 64));
            s = vi_add(s, _mm256_madd_epi16(_mm256_maddubs_epi16(w[j], x0), ones));
            s1 = vi_add(s1, _mm256_madd_epi16(_mm256_maddubs_epi16(w[j + 1], x1), ones));
        }
        return vi_add(s, s1);
    }
    __m256i p0 = _mm256_maddubs_epi16(w[0], vi_set1((int32_t)load_u32(xb + 8)));
    __m256i p1 = _mm256_maddubs_epi16(w[4], vi_set1((int32_t)load_u32(xb + 24)));
#pragma GCC unroll 4
    for (int j = 1; j < 4; j++) {
        p0 = _mm256_add_epi16(p0, _mm256_maddubs_epi16(w[j], vi_set1((int32_t)load_u32(xb + 8 + 4 * j))));
        p1 = _mm256_add_epi16(p1, _mm256_maddubs_epi16(w[4 + j], vi_set1((int32_t)load_u32(xb + 24 + 4 * j))));
    }
    return _mm256_madd_epi16(_mm256_add_epi16(p0, p1), ones);
#endif
}

/* Q4 weights from one vector of packed bytes: byte j of a block holds weights j (low nibble) and
 * j + 16 (high). */
PF_FORCE_INLINE void q4_nibbles(vi v, vi lo4, vi *lo, vi *hi) {
    *lo = vi_and(v, lo4);
    *hi = vi_and(vi_srli16(v, 4), lo4);
}

/* Block k of slice h of a packed group (blk: the block, q: the slice's quants in it): the weights
 * w as the dot steps take them and the scales d (and m for Q4_1; mv is left as it is otherwise). */
PF_FORCE_INLINE void decode_packed(uint32_t wt, const uint8_t *blk, const uint8_t *q, int h, vi lo4, vi w[8],
                                   vf *dv, vf *mv) {
    *dv = vf_load_h((const pf_half *)(blk + 2 * VL * h));
    if (wt == PF_TYPE_Q4_1) *mv = vf_load_h((const pf_half *)(blk + 32 + 2 * VL * h));
    if (wt == PF_TYPE_Q8_0) {
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) w[j] = q8_weights(vi_load(q + 64 * j));
    } else {
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) q4_nibbles(vi_load(q + 64 * j), lo4, &w[j], &w[4 + j]);
    }
}

#if QGROUP_INPLACE
/* The block at byte offset ko of 16 GGUF rows read in place (p: rows 0 .. 3's quants, rows rb bytes
 * apart, as load_transposed takes them; g: row 0's block start; gidx: the rows' byte offsets): the
 * weights w as the dot steps take them (16 bytes per row transposed in registers) and the scales d
 * (and m for Q4_1) gathered, the same bytes as the packed layout's, bit for bit. */
PF_FORCE_INLINE void decode_inplace(uint32_t wt, const uint8_t *const p[4], size_t rb, const uint8_t *g,
                                    __m512i gidx, size_t ko, vi lo4, vi w[8], vf *dv, vf *mv) {
    __m512i t[4];
    if (wt == PF_TYPE_Q8_0) {
        load_transposed(p, rb, ko, t);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) w[j] = q8_weights(t[j]);
        load_transposed(p, rb, ko + 16, t);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) w[4 + j] = q8_weights(t[j]);
    } else {
        load_transposed(p, rb, ko, t);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) q4_nibbles(t[j], lo4, &w[j], &w[4 + j]);
    }
    /* scales: lane i = the first dword of row i's block (d | m << 16 for Q4_1) */
    __m512i dm = _mm512_i32gather_epi32(gidx, g + ko, 1);
    *dv = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm));
    if (wt == PF_TYPE_Q4_1) *mv = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16)));
}
#endif

/* Lines [o, e) of p, step bytes apart, into L2. */
PF_FORCE_INLINE void prefetch_l2(const uint8_t *p, size_t o, size_t e, size_t step) {
    for (; o < e; o += step) _mm_prefetch((const char *)p + o, _MM_HINT_T1);
}

/* Block k of NB activation rows (row b at act + b*stride; asum[b * ald + k] its block sum) against
 * one slice's decoded block (w, its quants q, scales dv and mv): acc[b] += the reference's float ops
 * for the block, in its order (see the top). */
PF_FORCE_INLINE void accumulate_rows(uint32_t wt, const vi w[8], const uint8_t *q, vf dv, vf mv, int64_t k,
                                     const uint8_t *act, size_t stride, const int32_t *asum, int64_t ald,
                                     vf *acc, int NB) {
    if (wt == PF_TYPE_Q4_0) mv = vf_mul(vf_set1(-8.0f), dv); /* nibble - 8: -8 d per x.s */
#pragma GCC unroll 16
    for (int b = 0; b < NB; b++) {
        const uint8_t *xb = act + (size_t)b * stride + (size_t)k * XB;
        vi s = block_isum(wt, w, xb, q, QASUM(wt) ? asum[b * ald + k] : 0);
        vf sc = vf_mul(dv, vf_set1(load_f32(xb)));
        vf t = vf_mul(sc, vf_from_vi(s));
        if (wt != PF_TYPE_Q8_0) t = vf_add(t, vf_mul(mv, vf_set1(load_f32(xb + 4))));
        acc[b] = vf_add(acc[b], t);
    }
}

/* Slices h0 .. h0 + NH - 1 (slice h: rows VL h .. VL h + VL-1 of the group, one per lane; NH > 1
 * only for packed groups: each block decoded and summed slice after slice, so the group's lines are
 * read in one pass) against NB activation rows (row b at act + b*stride, at its block k0) over nk
 * blocks. packed: g is the packed group at its block k0 (blocks 16 * ts bytes apart); else
 * (QGROUP_INPLACE) g is row 0's block k0 of 16 GGUF rows rb bytes apart. acc starts at 0 if first,
 * else from y (parked by the previous k super-chunk); lanes outside mask[slice] are not stored. y
 * is at slice h0's first row. pf: the same slices of a group ahead, prefetched into L2 a block
 * column per block. */
PF_FORCE_INLINE void qslice(uint32_t wt, int packed, const uint8_t *g, size_t rb, int h0, int64_t nk,
                            const uint8_t *act, size_t stride, const int32_t *asum, int64_t ald, int first,
                            const vmask *mask, float *y, int64_t ldy, const uint8_t *pf, int NB, int NH) {
    const size_t ts = qtype_size(wt), gb = QRG * ts; /* one block of the group */
    vf acc[NS > 1 ? NS : 1][QNB];
#pragma GCC unroll 2
    for (int hh = 0; hh < NH; hh++)
#pragma GCC unroll 16
        for (int b = 0; b < NB; b++)
            acc[hh][b] = first ? vf_zero() : vf_maskz_load(mask[hh], y + b * ldy + VL * hh);
    const vi lo4 = vi_set1_i8(0x0f);
#if QGROUP_INPLACE
    const uint8_t *p0 = g + (wt == PF_TYPE_Q4_1 ? 4 : 2);
    const uint8_t *const p[4] = {p0, p0 + 4 * rb, p0 + 8 * rb, p0 + 12 * rb}; /* rows 0, 4, 8, 12 */
    /* gather offsets of the 16 rows (15 * rb < 2^31: see gemm_quant) */
    const __m512i gidx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32((int)rb));
#else
    (void)rb;
#endif
    for (int64_t k = 0; k < nk; k++) {
#pragma GCC unroll 2
      for (int hh = 0; hh < NH; hh++) { /* decode slice h's block k once, then take it to every row */
        const int h = h0 + hh;
        vi w[8];
        vf dv, mv = vf_zero();
        const uint8_t *q = NULL;
        if (packed) {
            const uint8_t *blk = g + (size_t)k * gb;
            q = blk + (wt == PF_TYPE_Q4_1 ? 64 : 32) + 4 * VL * (size_t)h;
            if (pf) /* the same slice of a group ahead (the slices take alternate lines) */
                prefetch_l2(pf + (size_t)k * gb, 64 * (size_t)h, gb, 64 * NS);
            decode_packed(wt, blk, q, h, lo4, w, &dv, &mv);
        } else { /* GGUF rows in place */
#if QGROUP_INPLACE
            size_t ko = (size_t)k * ts;
            if (pf) /* the group QPF_AHEAD ahead, a block column of it per block: into L2 */
                prefetch_l2(pf + QRG * ko, 0, gb, 64);
            decode_inplace(wt, p, rb, g, gidx, ko, lo4, w, &dv, &mv);
#else
            dv = vf_zero(); /* not reached: the 256-bit levels pack GGUF groups first */
#endif
        }
        accumulate_rows(wt, w, q, dv, mv, k, act, stride, asum, ald, acc[hh], NB);
      }
    }
#pragma GCC unroll 2
    for (int hh = 0; hh < NH; hh++)
#pragma GCC unroll 16
        for (int b = 0; b < NB; b++) vf_mask_store(y + b * ldy + VL * hh, mask[hh], acc[hh][b]);
}

#define QSLICE_CASE(N) \
    case N: qslice(wt, packed, g, rb, h, nk, act, stride, asum, ald, first, &mask, y, ldy, pf, N, 1); break;

/* Passes of at most this many rows over a packed group at 256 bits take both slices block by block
 * (qslice_joint), so one pass reads the group's lines once, in order, like the 512-bit level's
 * single slice; more rows would need more accumulators than the 16 registers hold. */
#define QJOINT_NB 2

PF_FORCE_INLINE void qslice_joint(uint32_t wt, int nb, const uint8_t *g, int64_t nk, const uint8_t *act,
                                  size_t stride, const int32_t *asum, int64_t ald, int first, const vmask *mask,
                                  float *y, int64_t ldy, const uint8_t *pf) {
    if (nb == 1)
        qslice(wt, 1, g, 0, 0, nk, act, stride, asum, ald, first, mask, y, ldy, pf, 1, NS);
    else
        qslice(wt, 1, g, 0, 0, nk, act, stride, asum, ald, first, mask, y, ldy, pf, QJOINT_NB, NS);
}

PF_FORCE_INLINE void qslice_nb(uint32_t wt, int packed, int nb, const uint8_t *g, size_t rb, int h, int64_t nk,
                               const uint8_t *act, size_t stride, const int32_t *asum, int64_t ald, int first,
                               vmask mask, float *y, int64_t ldy, const uint8_t *pf) {
    switch (nb) {
        QSLICE_CASE(1) QSLICE_CASE(2) QSLICE_CASE(3) QSLICE_CASE(4) QSLICE_CASE(5) QSLICE_CASE(6)
        QSLICE_CASE(7) QSLICE_CASE(8) QSLICE_CASE(9) QSLICE_CASE(10) QSLICE_CASE(11) QSLICE_CASE(12)
        QSLICE_CASE(13) QSLICE_CASE(14) QSLICE_CASE(15)
        default: qslice(wt, packed, g, rb, h, nk, act, stride, asum, ald, first, &mask, y, ldy, pf, QNB, 1); break;
    }
}

/* One group (its 16 rows from gs, of which [a, e) are stored; y at row gs) against sb activation
 * rows (act at their block k0, asum their block sums), slice by slice, in balanced passes of at
 * most QNB rows (17 rows go as 9 + 8) while the group's weights are hot in L1; only the first
 * pass prefetches. */
PF_FORCE_INLINE void group_passes(uint32_t wt, int packed, const uint8_t *g, size_t rb, int64_t gs, int64_t a,
                                  int64_t e, int64_t nk, const uint8_t *act, size_t stride, const int32_t *asum,
                                  int sb, int first, float *y, int64_t ldy, const uint8_t *pf) {
    int npass = (sb + QNB - 1) / QNB;
    if (NS > 1 && packed && sb <= QJOINT_NB && a == gs && e == gs + QRG) { /* a whole group, few rows */
        vmask mask[NS > 1 ? NS : 1];
        for (int h = 0; h < NS; h++) mask[h] = vmask_range(0, VL);
        qslice_joint(wt, sb, g, nk, act, stride, asum, nk, first, mask, y, ldy, pf);
        return;
    }
    for (int h = 0; h < NS; h++) {
        int64_t ha = a - gs - VL * h, he = e - gs - VL * h; /* stored lanes of this slice */
        ha = ha < 0 ? 0 : ha, he = he > VL ? VL : he;
        if (ha >= he) continue;
        vmask mask = vmask_range((int)ha, (int)he);
        for (int c = 0, left = npass, nb; c < sb; c += nb, left--) {
            nb = (sb - c + left - 1) / left;
            qslice_nb(wt, packed, nb, g, rb, h, nk, act + (size_t)c * stride, stride, asum + (size_t)c * nk, nk, first,
                      mask, y + c * ldy + VL * h, ldy, c ? NULL : pf);
        }
    }
}

/* y's rows [r0, r1) of B activation rows set to 0. */
PF_FORCE_INLINE void zero_rows(int B, float *y, int64_t ldy, int64_t r0, int64_t r1) {
    for (int b = 0; b < B; b++)
        for (int64_t r = r0; r < r1; r++) y[b * ldy + r] = 0.0f;
}

/* Rows [r0, r1) in groups of 16 rows. Packed (or packed on the fly) groups start at multiples of
 * 16 rows; lanes outside [r0, r1) are computed (zero rows past the matrix) but never stored. GGUF
 * groups read in place start at r0 + 16 k, a partial one shifted back to end at W's last row
 * (recomputing rows outside [r0, r1), bitwise the same values, never stored). Rows over kc blocks
 * run in k super-chunks, the accumulators parked in y in between (a float store and reload changes
 * nothing). */
PF_FORCE_INLINE void gemm_quant(uint32_t wt, const pf_weight *W, const void *act_, size_t stride,
                                int B, float *y, int64_t ldy, int64_t r0, int64_t r1) {
    const uint8_t *act = act_;
    const size_t ts = qtype_size(wt), rb = W->row_bytes;
    const int64_t nblk = W->cols / PF_QK;
    if (nblk == 0) { /* no columns: empty sums */
        zero_rows(B, y, ldy, r0, r1);
        return;
    }
    _Alignas(64) int32_t asum[QASUM(wt) ? ASUM_INTS : 1];
    /* in place: gather offsets up to 15 * row_bytes must fit in int32, and 16 rows must exist */
    const int inplace = QGROUP_INPLACE && !W->packed && W->rows >= QRG && rb <= (size_t)INT32_MAX / QRG;
    const int on_the_fly = !W->packed && !inplace;
    _Alignas(64) uint8_t pad[on_the_fly ? QPAD_BYTES : 1];
    const int64_t kc = on_the_fly ? (int64_t)(QPAD_BYTES / (ts * QRG)) : QKS;
    const size_t gbytes = (size_t)nblk * QRG * ts; /* one packed group, all blocks */
    const int64_t ngroups = (W->rows + QRG - 1) / QRG;
    for (int64_t k0 = 0; k0 < nblk; k0 += kc) {
        int64_t nk = nblk - k0 < kc ? nblk - k0 : kc;
        int first = k0 == 0;
        int sbmax = QASUM(wt) ? (int)(ASUM_INTS / nk) : B; /* >= 32 */
        for (int s0 = 0; s0 < B; s0 += sbmax) {
            int sb = B - s0 < sbmax ? B - s0 : sbmax;
            const uint8_t *as = act + (size_t)s0 * stride;
            if (QASUM(wt)) act_sums(as, stride, sb, k0, nk, -128, asum);
#if QGROUP_INPLACE
            if (inplace) {
                for (int64_t g0 = r0; g0 < r1; g0 += QRG) {
                    int64_t e = r1 < g0 + QRG ? r1 : g0 + QRG;
                    int64_t gs = g0 > W->rows - QRG ? W->rows - QRG : g0; /* a partial group ends at the last row */
                    const uint8_t *g = (const uint8_t *)W->data + (size_t)gs * rb + (size_t)k0 * ts;
                    /* prefetch: rows [gs + 16*QPF_AHEAD, +16) of this k chunk, when whole in W */
                    const uint8_t *pf = gs + QRG * (QPF_AHEAD + 1) <= W->rows && nk == nblk
                                            ? g + (size_t)QPF_AHEAD * QRG * rb
                                            : NULL;
                    group_passes(wt, 0, g, rb, gs, g0, e, nk, as + (size_t)k0 * XB, stride, asum, sb, first,
                                 y + s0 * ldy + gs, ldy, pf);
                }
                continue;
            }
#endif
            for (int64_t gs = r0 / QRG * QRG; gs < r1; gs += QRG) {
                int64_t a = r0 > gs ? r0 : gs, e = r1 < gs + QRG ? r1 : gs + QRG;
                const uint8_t *g, *pf = NULL;
                if (W->packed) {
                    g = (const uint8_t *)W->packed + (size_t)(gs / QRG) * gbytes + (size_t)k0 * QRG * ts;
                    /* the next groups into L2 ahead of the loop: the hardware prefetcher alone
                     * left one row's forward below a two-row one; every row count from
                     * QPF_MIN_B on takes the same path, so t(n) grows with n */
                    if (QPF_PACKED && B >= QPF_MIN_B && gs / QRG + QPF_PACKED < ngroups) pf = g + QPF_PACKED * gbytes;
                } else {
                    pf_pack_group(W, gs / QRG, k0, nk, pad);
                    g = pad;
                }
                group_passes(wt, 1, g, 0, gs, a, e, nk, as + (size_t)k0 * XB, stride, asum, sb, first,
                             y + s0 * ldy + gs, ldy, pf);
            }
        }
    }
}

PF_GEMM_ENTRIES_QUANT(gemm_quant)

/* ---- activation quantization: bitwise equal to pf_quantize_row_q8_act ---- */

/* roundf (half away from zero) as an integer: t - trunc(t) is exact for |t| < 2^23. */
PF_FORCE_INLINE vi round_half_away(vf t) {
    vf r = vf_trunc(t);
    vmask up = vf_ge(vf_abs(vf_sub(t, r)), vf_set1(0.5f));
    return vi_cvtt(vf_add(r, vf_keep(up, vf_one_signed(t))));
}

static void quantize_act(const float *x, pf_block_q8_act *y, int64_t n) {
    for (int64_t i = 0; i < n / PF_QK; i++, x += PF_QK) {
        vf v[PF_QK / VL], mx = vf_zero();
#pragma GCC unroll 4
        for (int j = 0; j < PF_QK / VL; j++) {
            v[j] = vf_load(x + VL * j);
            mx = vf_max(mx, vf_abs(v[j]));
        }
        float amax = vf_hmax(mx);
        float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
        const vf idv = vf_set1(id);
        vi q[PF_QK / VL], s = vi_zero();
#pragma GCC unroll 4
        for (int j = 0; j < PF_QK / VL; j++) {
            q[j] = round_half_away(vf_mul(v[j], idv));
            s = vi_add(s, q[j]);
        }
        vi_store_i8x32(y[i].qs, q);
        y[i].d = d;
        y[i].s = d * (float)vi_hsum(s);
    }
}

#endif
