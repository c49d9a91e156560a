/* The x86 levels' attention, written once on vec.h: attention_avx2.c, attention_avxvnni.c and
 * attention_avx512.c include it, each compiled with its level's flags, and it defines that level's
 * pf_attend_rows_* / pf_attend_group_* (VEC_NAME). One task: up to 8 rows of one KV head with all
 * query heads of its GQA group, so each key and value vector is converted once for many of them;
 * over the f16 cache or the 8-bit one. Same chunked online softmax as the scalar reference
 * (kernels_scalar.c); per head the operations depend only on the visible key range, never on B,
 * the rows sharing the task, the group size, the thread or the register width.
 *   scores: keys come in dimension-major tiles of 16 (kernels.h), so one dimension of a tile is
 *           KV = 16 / VL converted vectors: per (row, head) pair an fma with that query element
 *           broadcast, one chain over the head dim in order per key lane (the scalar reference's
 *           fmaf chain, bitwise), no horizontal sums; pairs in blocks of up to MAX_PAIRS, 1, 2 or
 *           4 tiles at once, as many as SCORE_ACCS accumulators allow, so enough independent
 *           chains hide the fma latency. The 8-bit cache: exact integer dot products of the keys
 *           (stored + 128) with the query rounded to int8, then scaled in the scalar reference's
 *           order; vpdpbusd from -128 * sum(q) where the level has it (VEC_VNNI), else (AVX2)
 *           the keys back to int8 and maddubs(|k|, sign(q, k)) (pairs <= 2 * 127 * 127, no
 *           saturation) widened to int32 per dword.
 *   softmax: chunk max, one rescale (pf_exp_ref) when it grows, vf_exp over the chunk; the running
 *           sum is float_order.h's 16 partials (VNP vectors: key index mod 16), through its tree
 *           once at the end.
 *   values: converted to f32 VT rows at a time (from f16 or int8, exact; on AVX-512, where few
 *           queries share a row, converted on the fly instead); blocks of up to 4 heads x CV
 *           output vectors (VALUE_ACCS accumulators), each output vector one fma chain in key
 *           order; 8-bit values' scales ride on the softmax weight. */
#ifndef PF_X86_VEC_ATTENTION_H
#define PF_X86_VEC_ATTENTION_H

#include <math.h>
#include <string.h>

#include "kernels/x86/vec.h"

#define MAX_GROUP 16
#define MAX_HD 256
#define MAX_ROWS 8 /* rows per task sharing the key/value conversion */
#define SPAN (PF_ATTN_KCHUNK + PF_KV_TILE) /* a chunk's scores from its first tile's start */
#define VROWS 4096 /* floats of converted value rows */
#define KV (PF_KV_TILE / VL) /* vectors per dimension of a key tile */
#if VL == 16
#define MAX_PAIRS 8   /* (row, head) pairs per score block */
#define SCORE_ACCS 16 /* accumulators of a score block (of 32 registers) */
#define VALUE_ACCS 16 /* accumulators of a value block */
#define VALUE_CV 16   /* output vectors of a value block at most: the widest head whole */
#define VALUE_CV_OF(nv) (nv) /* a head's vectors per block: all (nv a constant in the walk) */
#define VALUES_FN PF_FORCE_INLINE void
#define VALUES_DIRECT 1
#else
#define MAX_PAIRS 4
#define SCORE_ACCS 8 /* of 16 registers */
#define VALUE_ACCS 8
#define VALUE_CV 4
#define VALUE_CV_OF(nv) VALUE_CV
/* a function of its own: inlined into the walk, GCC keeps the value vectors on the stack */
#define VALUES_FN static __attribute__((noinline)) void
#define VALUES_DIRECT 0
#endif
/* tiles per score block for n pairs: the most of 4, 2, 1 whose accumulators fit */
#define TILES_FOR(n) ((n) * KV * 4 <= SCORE_ACCS ? 4 : (n) * KV * 2 <= SCORE_ACCS ? 2 : 1)
/* heads per value block of cv output vectors (at most 4) */
#define HEADS_FOR(cv) ((cv) * 4 <= VALUE_ACCS ? 4 : (cv) * 2 <= VALUE_ACCS ? 2 : 1)

/* Element i of a cache region of f16 (q8 = 0) or int8 (q8 = 1) values, and VL from there as f32. */
PF_FORCE_INLINE const void *kv_at(const void *base, int64_t i, int q8) {
    return q8 ? (const void *)((const int8_t *)base + i) : (const void *)((const pf_half *)base + i);
}
PF_FORCE_INLINE vf load_kv(const void *p, int q8) { return q8 ? vf_load_i8(p) : vf_load_h(p); }

/* Scores of NP (row, head) pairs for keys of nt <= NT consecutive f16 tiles from tile:
 * s[p][16 i + lane] = scale * sum_d q[p][d] * key(16 i + lane, d), each an fma chain over d. */
PF_FORCE_INLINE void scores_block(const pf_half *tile, int hd, int nt, int NT, int NP, const float *const *q,
                                  float *const *s, vf scale) {
    vf acc[4][MAX_PAIRS][KV];
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
#pragma GCC unroll 8
        for (int p = 0; p < NP; p++)
#pragma GCC unroll 2
            for (int v = 0; v < KV; v++) acc[t][p][v] = vf_zero();
    for (int d = 0; d < hd; d++) {
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            if (t >= nt) break;
            const pf_half *kd = tile + (int64_t)t * PF_KV_TILE * hd + d * PF_KV_TILE;
            vf k[KV];
#pragma GCC unroll 2
            for (int v = 0; v < KV; v++) k[v] = vf_load_h(kd + VL * v);
#pragma GCC unroll 8
            for (int p = 0; p < NP; p++) {
                vf qd = vf_set1(q[p][d]);
#pragma GCC unroll 2
                for (int v = 0; v < KV; v++) acc[t][p][v] = vf_fmadd(qd, k[v], acc[t][p][v]);
            }
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) {
        if (t >= nt) break;
#pragma GCC unroll 8
        for (int p = 0; p < NP; p++)
#pragma GCC unroll 2
            for (int v = 0; v < KV; v++) vf_store(s[p] + 16 * t + VL * v, vf_mul(acc[t][p][v], scale));
    }
}

/* One vector of the 8-bit keys (stored + 128, a dword = 4 dimensions of a key) ready for integer
 * dot products with 4 broadcast query bytes: kq_dot(acc, k, q) adds each lane's 4 products. */
#if VEC_VNNI
typedef vi kq_keys;
PF_FORCE_INLINE kq_keys kq_load(const uint8_t *p) { return vi_load(p); }
PF_FORCE_INLINE vi kq_init(int32_t qsum) { return vi_set1(-128 * qsum); } /* removes the + 128 */
PF_FORCE_INLINE vi kq_dot(vi acc, kq_keys k, vi q) { return vi_dpbusd(acc, k, q); }
#else
typedef struct { vi k, a; } kq_keys; /* the keys as int8 and their magnitudes */
PF_FORCE_INLINE kq_keys kq_load(const uint8_t *p) {
    vi k = vi_xor(vi_load(p), vi_set1_i8((int8_t)0x80));
    return (kq_keys){k, _mm256_abs_epi8(k)};
}
PF_FORCE_INLINE vi kq_init(int32_t qsum) { return (void)qsum, vi_zero(); }
PF_FORCE_INLINE vi kq_dot(vi acc, kq_keys k, vi q) {
    return vi_add(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(k.a, _mm256_sign_epi8(q, k.k)), _mm256_set1_epi16(1)));
}
#endif

/* The 8-bit cache: the same for keys in [hd/4][16][4] tiles (keys 0 .. VL-1 of a tile in one
 * vector) and the rounded queries q8 (4 bytes broadcast per step); then per key
 * ((dot * qs) * ks) * scale in the scalar reference's order. */
PF_FORCE_INLINE void scores_block_q8(const uint8_t *tile, int hd, int nt, int NT, int NP, const int8_t *const *q8,
                                     const float *qs, const int32_t *qsum, float *const *s, vf scale,
                                     const float *ks) {
    vi acc[4][MAX_PAIRS][KV];
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
#pragma GCC unroll 8
        for (int p = 0; p < NP; p++)
#pragma GCC unroll 2
            for (int v = 0; v < KV; v++) acc[t][p][v] = kq_init(qsum[p]);
    for (int d4 = 0; d4 < hd / 4; d4++) {
        vi qb[MAX_PAIRS];
#pragma GCC unroll 8
        for (int p = 0; p < NP; p++) {
            int32_t w;
            memcpy(&w, q8[p] + 4 * d4, 4);
            qb[p] = vi_set1(w);
        }
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            if (t >= nt) break;
            const uint8_t *kd = tile + (int64_t)t * PF_KV_TILE * hd + d4 * (PF_KV_TILE * 4);
            kq_keys k[KV];
#pragma GCC unroll 2
            for (int v = 0; v < KV; v++) k[v] = kq_load(kd + 4 * VL * v);
#pragma GCC unroll 8
            for (int p = 0; p < NP; p++)
#pragma GCC unroll 2
                for (int v = 0; v < KV; v++) acc[t][p][v] = kq_dot(acc[t][p][v], k[v], qb[p]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) {
        if (t >= nt) break;
#pragma GCC unroll 8
        for (int p = 0; p < NP; p++) {
            vf qv = vf_set1(qs[p]);
#pragma GCC unroll 2
            for (int v = 0; v < KV; v++) {
                vf x = vf_mul(vf_mul(vf_from_vi(acc[t][p][v]), qv), vf_load(ks + 16 * t + VL * v));
                vf_store(s[p] + 16 * t + VL * v, vf_mul(x, scale));
            }
        }
    }
}

/* All tiles [0, ntile) for np pairs: blocks of up to MAX_PAIRS pairs, TILES_FOR(pairs) tiles at a
 * time. pk, pv, pbytes: the next chunk's keys and values (pbytes of each), fetched into L2 a slice
 * per group of tiles while this chunk is scored: the layer's cache is cold here (its weights have
 * streamed through the caches since), and one chunk ahead is about a microsecond of work. The
 * 8-bit scales ks are read for whole tiles: the cache's scale rows are padded to whole tiles. */
PF_FORCE_INLINE void scores_tiles(const void *tile, int hd, int ntile, int np, const float *const *q, float *const *s,
                                  vf scale, const char *pk, const char *pv, int64_t pbytes, int q8, const float *ks,
                                  const int8_t *const *q8p, const float *qs, const int32_t *qsum) {
    for (int p0 = 0; p0 < np; p0 += MAX_PAIRS) {
        int n = np - p0 < MAX_PAIRS ? np - p0 : MAX_PAIRS;
        const int NT = TILES_FOR(n);
        for (int t0 = 0; t0 < ntile; t0 += NT) {
            if (p0 == 0) {
                const int es = q8 ? 1 : 2;
                int64_t from = (int64_t)t0 * PF_KV_TILE * hd * es, to = from + (int64_t)NT * PF_KV_TILE * hd * es;
                for (int64_t b = from; b < to && b < pbytes; b += 64) {
                    _mm_prefetch(pk + b, _MM_HINT_T1);
                    _mm_prefetch(pv + b, _MM_HINT_T1);
                }
            }
            const void *tl = kv_at(tile, (int64_t)t0 * PF_KV_TILE * hd, q8);
            const float *kst = q8 ? ks + 16 * t0 : NULL;
            int nt = ntile - t0 < NT ? ntile - t0 : NT;
            float *sp[MAX_PAIRS];
            for (int p = 0; p < n; p++) sp[p] = s[p0 + p] + 16 * t0;
#define BLOCK(NP_)                                                                                        \
    (q8 ? scores_block_q8(tl, hd, nt, TILES_FOR(NP_), NP_, q8p + p0, qs + p0, qsum + p0, sp, scale, kst) \
        : scores_block(tl, hd, nt, TILES_FOR(NP_), NP_, q + p0, sp, scale))
            switch (n) {
            case 1: BLOCK(1); break;
            case 2: BLOCK(2); break;
            case 3: BLOCK(3); break;
#if MAX_PAIRS > 4
            case 4: BLOCK(4); break;
            case 5: BLOCK(5); break;
            case 6: BLOCK(6); break;
            case 7: BLOCK(7); break;
#endif
            default: BLOCK(MAX_PAIRS); break;
            }
#undef BLOCK
        }
    }
}

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

/* o[q][VL (i0 + i) ..] += sum_{t < m} s[q][t0 + t] * value row t, for NQ heads of one row and CV
 * output vectors from vector i0 (rows: the value rows converted to f32, nv vectors each; direct:
 * converted from vsrc on the fly, the same values); per output vector one fma chain in key order. */
PF_FORCE_INLINE void values_block(float *const *o, float *const *s, int t0, const float *rows, const void *vsrc,
                                  int64_t vstride, int direct, int q8, int m, int nv, int i0, int CV, int NQ) {
    vf acc[4][VALUE_CV];
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
#pragma GCC unroll 16
        for (int i = 0; i < VALUE_CV; i++) acc[q][i] = q < NQ && i < CV ? vf_load(o[q] + (ptrdiff_t)VL * (i0 + i)) : vf_zero();
    for (int t = 0; t < m; t++) {
        vf v[VALUE_CV];
#pragma GCC unroll 16
        for (int i = 0; i < VALUE_CV; i++)
            v[i] = i >= CV ? vf_zero()
                   : VALUES_DIRECT && direct ? load_kv(kv_at(vsrc, t * vstride + (ptrdiff_t)VL * (i0 + i), q8), q8)
                            : vf_load_a(rows + (size_t)t * VL * nv + (ptrdiff_t)VL * (i0 + i));
        /* AVX-512: in registers, loaded once; GCC would otherwise fold the load into each head's
         * fma, and NQ loads of every vector make the loop load-bound (one 64-byte load a cycle) */
        if (VL == 16) {
#pragma GCC unroll 16
            for (int i = 0; i < CV; i++) __asm__("" : "+v"(v[i]));
        }
#pragma GCC unroll 4
        for (int q = 0; q < NQ; q++) {
            vf p = vf_set1(s[q][t0 + t]);
#pragma GCC unroll 16
            for (int i = 0; i < CV; i++) acc[q][i] = vf_fmadd(p, v[i], acc[q][i]);
        }
    }
#pragma GCC unroll 4
    for (int q = 0; q < NQ; q++)
#pragma GCC unroll 16
        for (int i = 0; i < CV; i++) vf_store(o[q] + (ptrdiff_t)VL * (i0 + i), acc[q][i]);
}

PF_FORCE_INLINE void values_nq(float *const *o, float *const *s, int t0, const float *rows, const void *vsrc,
                               int64_t vstride, int direct, int q8, int m, int nv, int i0, int CV, int nq) {
    switch (nq) {
    case 1: values_block(o, s, t0, rows, vsrc, vstride, direct, q8, m, nv, i0, CV, 1); break;
    case 2: values_block(o, s, t0, rows, vsrc, vstride, direct, q8, m, nv, i0, CV, 2); break;
    case 3: values_block(o, s, t0, rows, vsrc, vstride, direct, q8, m, nv, i0, CV, 3); break;
    default: values_block(o, s, t0, rows, vsrc, vstride, direct, q8, m, nv, i0, CV, 4); break;
    }
}

/* One row's heads [0, g) over value rows t0 .. t0+m-1: blocks of HEADS_FOR(cv) heads x cv output
 * vectors (AVX-512: the whole head), then single vectors for what is left. */
VALUES_FN values_heads(float *const *o, float *const *s, int g, int t0, const float *rows, const void *vsrc,
                       int64_t vstride, int direct, int q8, int m, int nv) {
    const int cv = VALUE_CV_OF(nv);
    const int hb = HEADS_FOR(cv);
    for (int h0 = 0; h0 < g; h0 += hb) {
        int nq = g - h0 < hb ? g - h0 : hb, i0 = 0;
        for (; i0 + cv <= nv; i0 += cv) values_nq(o + h0, s + h0, t0, rows, vsrc, vstride, direct, q8, m, nv, i0, cv, nq);
        for (; i0 < nv; i0++) values_nq(o + h0, s + h0, t0, rows, vsrc, vstride, direct, q8, m, nv, i0, 1, nq);
    }
}

/* The head's outputs divided by the running sum (its partials through the tree). */
PF_FORCE_INLINE void attn_normalize(float *o, int hd, vf *lsum) {
    const vf inv = vf_set1(1.0f / vf_tree16(lsum));
#pragma GCC unroll 16
    for (int i = 0; i < hd; i += VL) vf_store(o + i, vf_mul(vf_load(o + i), inv));
}

/* The rows' visible key ranges (lo is the same for every row: no window when nr > 1; hmax the
 * largest end), each pair's query, and its output zeroed. */
PF_FORCE_INLINE void attn_rows_open(const pf_attn_job *j, int b0, int nr, int kvh, int hd, int64_t *lo, int64_t *hi,
                                    int64_t *hmax, const float **qp, float *(*o)[MAX_GROUP]) {
    const int g = j->n_head / j->n_kv_head;
    for (int r = 0; r < nr; r++) {
        int b = b0 + r;
        pf_attn_range(j, b, lo, &hi[r]);
        if (hi[r] > *hmax) *hmax = hi[r];
        for (int h = 0; h < g; h++) {
            qp[r * g + h] = j->q + b * j->ldq + (int64_t)(kvh * g + h) * hd;
            o[r][h] = j->out + b * j->ldo + (int64_t)(kvh * g + h) * hd;
            memset(o[r][h], 0, (size_t)hd * sizeof(float));
        }
    }
}

/* A chunk's values (from vc, its first key's value row) into every row's outputs, VT keys at a
 * time: converted once to f32 (unless read directly), then each row over the keys it sees (nc[r]
 * of the chunk's nmax). */
PF_FORCE_INLINE void attn_chunk_values(float *(*o)[MAX_GROUP], float *(*s)[MAX_GROUP], int nr, int g, const int *nc,
                                       int nmax, int VT, float *rows, const void *vc, int hd, int direct, int q8,
                                       int nv) {
    for (int t0 = 0; t0 < nmax; t0 += VT) {
        int mm = nmax - t0 < VT ? nmax - t0 : VT;
        const void *vt0 = kv_at(vc, (int64_t)t0 * hd, q8);
        if (!direct)
            for (int t = 0; t < mm; t++)
                for (int i = 0; i < nv; i++) vf_store_a(rows + (t * nv + i) * VL, load_kv(kv_at(vt0, (int64_t)t * hd + VL * i, q8), q8));
        for (int r = 0; r < nr; r++) {
            if (t0 >= nc[r]) continue;
            int m = nc[r] - t0 < VT ? nc[r] - t0 : VT;
            values_heads(o[r], s[r], g, t0, rows, vt0, hd, direct, q8, m, nv);
        }
    }
}

/* KV head kvh's keys and values in the cache (and the 8-bit cache's scales, else NULL). */
PF_FORCE_INLINE void kv_head(const pf_attn_job *j, int kvh, int q8, const void **Kh, const void **Vh, const float **ks,
                             const float **vs) {
    const int64_t hoff = (int64_t)kvh * j->head_stride;
    *Kh = q8 ? (const void *)(j->K8 + hoff) : (const void *)(j->K + hoff);
    *Vh = q8 ? (const void *)(j->V8 + hoff) : (const void *)(j->V + hoff);
    *ks = q8 ? j->ks + (int64_t)kvh * j->scale_stride : NULL;
    *vs = q8 ? j->vs + (int64_t)kvh * j->scale_stride : NULL;
}

/* The keys of the chunk from c0 each of the nr rows sees into nc (0: none; rows see up to hi[r]);
 * returns the most. */
PF_FORCE_INLINE int chunk_keys(const int64_t *hi, int nr, int64_t c0, int *nc) {
    int nmax = 0;
    for (int r = 0; r < nr; r++) {
        int64_t left = hi[r] - c0;
        nc[r] = left <= 0 ? 0 : left < PF_ATTN_KCHUNK ? (int)left : PF_ATTN_KCHUNK;
        if (nc[r] > nmax) nmax = nc[r];
    }
    return nmax;
}

/* The np pairs' scores over the chunk from c0 (its first nmax keys, from the tile holding c0: off
 * keys before it) into sbp, the next chunk's keys and values prefetched. */
PF_FORCE_INLINE void chunk_scores(const void *Kh, const void *Vh, const float *ks, int64_t c0, int off, int nmax,
                                  int64_t hmax, int hd, int np, const float *const *qp, float *const *sbp, vf scale,
                                  int q8, const int8_t *const *q8p, const float *qsc, const int32_t *qsm) {
    int64_t k1 = c0 - off + PF_ATTN_KCHUNK, left = hmax - k1; /* the next chunk, from its tile */
    int64_t pb = left <= 0 ? 0 : (left < SPAN ? left : SPAN) * hd * (q8 ? 1 : 2);
    if (left <= 0) k1 = 0;
    /* a tile starts at the same offset in both layouts (16 * hd elements a tile) */
    scores_tiles(kv_at(Kh, pf_kv_key_at(c0 - off, 0, hd), q8), hd, (off + nmax + PF_KV_TILE - 1) / PF_KV_TILE, np, qp,
                 sbp, scale, (const char *)kv_at(Kh, pf_kv_key_at(k1, 0, hd), q8), (const char *)kv_at(Vh, k1 * hd, q8),
                 pb, q8, q8 ? ks + (c0 - off) : NULL, q8p, qsc, qsm);
}

/* Rows b0 .. b0+nr-1 (nr <= MAX_ROWS; with a window, nr = 1) of KV head kvh: all rows walk the
 * same chunks from the same lo, each only over its own visible keys, and share the conversion of
 * every key and value vector. Each row's operations are those of the row alone. nv = hd / VL,
 * constant where the caller instantiates it, so the head's vectors live in registers. Scores are
 * computed for whole tiles, from the tile holding the chunk's first key (lanes outside a row's
 * visible keys are never read). */
PF_FORCE_INLINE void attend_rows(const pf_attn_job *j, int b0, int nr, int kvh, int nv, int direct, int q8) {
    const int hd = VL * nv, g = j->n_head / j->n_kv_head, np = nr * g;
    int64_t lo = 0, hi[MAX_ROWS], hmax = 0;
    const float *qp[MAX_ROWS * MAX_GROUP];
    float *o[MAX_ROWS][MAX_GROUP];
    attn_rows_open(j, b0, nr, kvh, hd, &lo, hi, &hmax, qp, o);
    if (lo >= hmax) return;

    /* sb[pair]: scores from the start of the chunk's first tile; s[r][h] points at the chunk's
     * first key (off = lo mod 16, the same for every chunk: they start at lo + 64 k) */
    _Alignas(64) float sb[MAX_ROWS * MAX_GROUP][SPAN];
    const int off = (int)(lo % PF_KV_TILE);
    float *sbp[MAX_ROWS * MAX_GROUP], *s[MAX_ROWS][MAX_GROUP];
    for (int p = 0; p < np; p++) {
        sbp[p] = sb[p];
        s[p / g][p % g] = sb[p] + off;
    }
    /* value rows converted VT at a time (16 KiB of f32): each output block's accumulators stay in
     * registers over VT keys (64 for hd 64) */
    _Alignas(64) float rows[VROWS];
    const int VT = VROWS / hd < PF_ATTN_KCHUNK ? VROWS / hd : PF_ATTN_KCHUNK;
    vf lsum[MAX_ROWS][MAX_GROUP][VNP]; /* the running sum's 16 partials (float_order.h) */
    float mx[MAX_ROWS][MAX_GROUP];
    for (int r = 0; r < nr; r++)
        for (int h = 0; h < g; h++) {
            for (int k = 0; k < VNP; k++) lsum[r][h][k] = vf_zero();
            mx[r][h] = -INFINITY;
        }
    const void *Kh, *Vh;
    const float *ks, *vs;
    kv_head(j, kvh, q8, &Kh, &Vh, &ks, &vs);
    /* 8-bit cache: each pair's query rounded once (pf_attn_quantize_q, as the scalar path) */
    int8_t q8b[q8 ? MAX_ROWS * MAX_GROUP : 1][q8 ? PF_KV_Q8_MAX_HD : 1];
    const int8_t *q8p[MAX_ROWS * MAX_GROUP];
    float qsc[MAX_ROWS * MAX_GROUP];
    int32_t qsm[MAX_ROWS * MAX_GROUP];
    if (q8)
        for (int p = 0; p < np; p++) {
            pf_attn_quantize_q(qp[p], hd, q8b[p], &qsc[p], &qsm[p]);
            q8p[p] = q8b[p];
        }
    const vf scale = vf_set1(j->scale);
    for (int64_t c0 = lo; c0 < hmax; c0 += PF_ATTN_KCHUNK) {
        int nc[MAX_ROWS], nmax = chunk_keys(hi, nr, c0, nc);
        chunk_scores(Kh, Vh, ks, c0, off, nmax, hmax, hd, np, qp, sbp, scale, q8, q8p, qsc, qsm);
        for (int r = 0; r < nr; r++) {
            if (nc[r] == 0) continue;
            for (int h = 0; h < g; h++)
                attn_softmax_chunk(s[r][h], nc[r], &mx[r][h], lsum[r][h], o[r][h], hd, q8 ? vs + c0 : NULL);
        }
        attn_chunk_values(o, s, nr, g, nc, nmax, VT, rows, kv_at(Vh, c0 * hd, q8), hd, direct, q8, nv);
    }
    for (int r = 0; r < nr; r++)
        for (int h = 0; h < g; h++)
            if (hi[r] > lo) attn_normalize(o[r][h], hd, lsum[r][h]); /* else nothing visible: zeros */
}

/* The walk for one cache type and value source at the head sizes of the models (constant nv). */
PF_FORCE_INLINE void attend_rows_hd(const pf_attn_job *j, int b0, int nr, int kvh, int direct, int q8) {
    switch (j->hd) {
    case 64: attend_rows(j, b0, nr, kvh, 64 / VL, direct, q8); break;
    case 128: attend_rows(j, b0, nr, kvh, 128 / VL, direct, q8); break;
    default: attend_rows(j, b0, nr, kvh, j->hd / VL, direct, q8); break;
    }
}

int VEC_NAME(pf_attend_rows)(const pf_attn_job *j, int b0, int nr, int kvh) {
    const int hd = j->hd, g = j->n_head / j->n_kv_head;
    if (hd % VL || hd > MAX_HD || g > MAX_GROUP || nr > MAX_ROWS) return 0;
    if (nr > 1 && j->window > 0) return 0; /* rows would not share lo */
    /* Where few queries share each value row (GQA group x rows <= 4), converting them on the fly
     * beats converting a tile into a buffer and reading it back on AVX-512 (Qwen3-0.6B shape,
     * group 2); the arithmetic is the same (the conversions are exact), only where the f32 values
     * come from differs, so B never changes it. */
    const int direct = VALUES_DIRECT && g * nr <= 4;
    if (j->q8) direct ? attend_rows_hd(j, b0, nr, kvh, 1, 1) : attend_rows_hd(j, b0, nr, kvh, 0, 1);
    else direct ? attend_rows_hd(j, b0, nr, kvh, 1, 0) : attend_rows_hd(j, b0, nr, kvh, 0, 0);
    return 1;
}

int VEC_NAME(pf_attend_group)(const pf_attn_job *j, int b, int kvh) { return VEC_NAME(pf_attend_rows)(j, b, 1, kvh); }

#endif
