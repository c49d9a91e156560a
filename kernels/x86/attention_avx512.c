/* AVX-512 attention for one task: up to 8 rows of one KV head with all query heads of its GQA
 * group, so each f16 key/value vector is converted once for many of them. Same chunked online
 * softmax as the scalar path (attention.c); per head the operations depend only on the visible key
 * range, never on B, the rows sharing the task, the group size or the thread.
 *   scores: keys come in dimension-major tiles of 16 (kernels.h), so one converted vector is one
 *           dimension of 16 keys: per (row, head) pair an fma with that query element broadcast,
 *           one chain over the head dim in order per key lane (the scalar reference's fmaf
 *           chain, bitwise), no horizontal sums; pairs in blocks of up to 8, 1-4 tiles at once so
 *           at least 8 independent chains hide the fma latency. The 8-bit cache: vpdpbusd of the
 *           keys (+128, four dimensions a lane) with the int8-rounded query, exact, then scaled
 *           (scores_block_q8)
 *   softmax: vec_attention.h (one source with the 256-bit levels): chunk max, one rescale
 *           (pf_exp_ref) when it grows, vf_exp over the chunk; the running sum is a 16-lane vector
 *           (lane = key index mod 16: float_order.h's partials), through its tree at the end
 *   values: heads in blocks of up to 4; each value row is loaded once per block and every output
 *           vector is one fma chain in key order (the block's chains hide the fma latency); 8-bit
 *           values are converted from int8 and their scale rides on the softmax weight. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels_impl.h"
#define PF_VEC_BITS 512
#include "kernels/x86/vec_attention.h"

#define MAX_GROUP 16
#define MAX_HD 256
#define MAX_ROWS 8 /* rows per task sharing the key/value conversion */
#define MAX_PAIRS 8 /* (row, head) pairs per score block */
#define SPAN (PF_ATTN_KCHUNK + PF_KV_TILE) /* a chunk's scores from its first tile's start */
#define VROWS 4096 /* floats of converted value rows */

/* 16 f16 values as f32 (exact). */
PF_FORCE_INLINE __m512 load_h16(const pf_half *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
/* 16 int8 values as f32 (exact). */
PF_FORCE_INLINE __m512 load_q16(const int8_t *p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}
/* Element i of a cache region of f16 (q8 = 0) or int8 (q8 = 1) values, and 16 from there as f32. */
PF_FORCE_INLINE const void *kv_at(const void *base, int64_t i, int q8) {
    return q8 ? (const void *)((const int8_t *)base + i) : (const void *)((const pf_half *)base + i);
}
PF_FORCE_INLINE __m512 load_kv16(const void *p, int q8) { return q8 ? load_q16(p) : load_h16(p); }

PF_FORCE_INLINE void convert_rows(const void *src, int64_t stride, int m, int nv, float *dst, int q8) {
    for (int t = 0; t < m; t++)
        for (int i = 0; i < nv; i++) _mm512_store_ps(dst + (t * nv + i) * 16, load_kv16(kv_at(src, t * stride + 16 * i, q8), q8));
}

/* Scores of NP (row, head) pairs for keys of nt <= NT consecutive tiles starting at tile: s[p] +
 * 16 i + lane = scale * sum_d q[p][d] * key(16 i + lane, d), each an fma chain over d in order. */
PF_FORCE_INLINE void scores_block(const pf_half *tile, int hd, int nt, int NT, int NP, const float *const *q,
                                  float *const *s, __m512 scale) {
    __m512 acc[4][MAX_PAIRS];
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
#pragma GCC unroll 8
        for (int p = 0; p < NP; p++) acc[t][p] = _mm512_setzero_ps();
    for (int d = 0; d < hd; d++) {
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            if (t >= nt) break;
            __m512 kd = load_h16(tile + (int64_t)t * PF_KV_TILE * hd + d * PF_KV_TILE);
#pragma GCC unroll 8
            for (int p = 0; p < NP; p++) acc[t][p] = _mm512_fmadd_ps(_mm512_set1_ps(q[p][d]), kd, acc[t][p]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) {
        if (t >= nt) break;
#pragma GCC unroll 8
        for (int p = 0; p < NP; p++) _mm512_storeu_ps(s[p] + 16 * t, _mm512_mul_ps(acc[t][p], scale));
    }
}

/* The 8-bit cache: the same for keys stored + 128 in [hd/4][16][4] tiles, the rounded queries q8
 * (4 bytes broadcast per step), integer dot products with vpdpbusd (exact), then per key
 * ((dot - 128 * qsum) * qs) * ks * scale in the scalar reference's order. */
PF_FORCE_INLINE void scores_block_q8(const uint8_t *tile, int hd, int nt, int NT, int NP, const int8_t *const *q8,
                                     const float *qs, const int32_t *qsum, float *const *s, __m512 scale,
                                     const float *ks) {
    __m512i acc[4][MAX_PAIRS];
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
#pragma GCC unroll 8
        for (int p = 0; p < NP; p++) acc[t][p] = _mm512_setzero_si512();
    for (int d4 = 0; d4 < hd / 4; d4++) {
        __m512i qb[MAX_PAIRS];
#pragma GCC unroll 8
        for (int p = 0; p < NP; p++) {
            int32_t w;
            memcpy(&w, q8[p] + 4 * d4, 4);
            qb[p] = _mm512_set1_epi32(w);
        }
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            if (t >= nt) break;
            __m512i kd = _mm512_loadu_si512(tile + (int64_t)t * PF_KV_TILE * hd + d4 * (PF_KV_TILE * 4));
#pragma GCC unroll 8
            for (int p = 0; p < NP; p++) acc[t][p] = _mm512_dpbusd_epi32(acc[t][p], kd, qb[p]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) {
        if (t >= nt) break;
        __m512 kscale = _mm512_loadu_ps(ks + 16 * t);
#pragma GCC unroll 8
        for (int p = 0; p < NP; p++) {
            __m512 x = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[t][p], _mm512_set1_epi32(128 * qsum[p])));
            x = _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(qs[p])), kscale);
            _mm512_storeu_ps(s[p] + 16 * t, _mm512_mul_ps(x, scale));
        }
    }
}

/* All tiles [0, ntile) for np pairs, blocks of up to 8 pairs, tiles 4 at a time for blocks of up to
 * 4 pairs (2 for more): at least 8 independent chains wherever the pairs allow.
 * pk, pv, pbytes: the next chunk's keys and values (pbytes of each), fetched into L2 a slice per
 * group of tiles while this chunk is scored. The layer's cache is cold here (its weights have streamed
 * through the caches since), and one chunk ahead is ~1 us of work. Measured interleaved against no
 * prefetch (kernel with cold caches, Pocket shape, 2 threads): B=1 at depth 2048 2.52 -> 2.36 ms,
 * B=4 at 512 1.65 -> 1.55, B=8 2.82 -> 2.76; into L1, or further ahead, no better. */
PF_FORCE_INLINE void scores_tiles(const void *tile, int hd, int ntile, int np, const float *const *q, float *const *s,
                                  __m512 scale, const char *pk, const char *pv, int64_t pbytes, int q8,
                                  const float *ks, const int8_t *const *q8p, const float *qs, const int32_t *qsum) {
    for (int p0 = 0; p0 < np; p0 += MAX_PAIRS) {
        int n = np - p0 < MAX_PAIRS ? np - p0 : MAX_PAIRS;
        const int NT = n <= 4 ? 4 : 2;
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
#define BLOCK(NT_, NP_)                                                                                           \
    (q8 ? scores_block_q8(tl, hd, nt, NT_, NP_, q8p + p0, qs + p0, qsum + p0, sp, scale, kst)                   \
        : scores_block(tl, hd, nt, NT_, NP_, q + p0, sp, scale))
            switch (n) {
            case 1: BLOCK(4, 1); break;
            case 2: BLOCK(4, 2); break;
            case 3: BLOCK(4, 3); break;
            case 4: BLOCK(4, 4); break;
            case 5: BLOCK(2, 5); break;
            case 6: BLOCK(2, 6); break;
            case 7: BLOCK(2, 7); break;
            default: BLOCK(2, 8); break;
            }
#undef BLOCK
        }
    }
}

/* o[q] += sum_{t < m} s[q][t0 + t] * value row t for NQ heads of one row (rows: the tile converted
 * to f32, hd = 16 * nv; direct: converted from vsrc on the fly, the same values); per output vector
 * one fma chain in key order. */
PF_FORCE_INLINE void values_block(float *const *o, float *const *s, int t0, const float *rows,
                                  const void *vsrc, int64_t vstride, int direct, int m, int nv, int NQ, int q8) {
    __m512 acc[4][MAX_HD / 16];
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
#pragma GCC unroll 16
        for (int i = 0; i < MAX_HD / 16; i++) acc[q][i] = q < NQ && i < nv ? _mm512_loadu_ps(o[q] + 16 * i) : _mm512_setzero_ps();
    for (int t = 0; t < m; t++) {
        __m512 v[MAX_HD / 16];
#pragma GCC unroll 16
        for (int i = 0; i < MAX_HD / 16; i++)
            v[i] = i >= nv ? _mm512_setzero_ps()
                   : direct ? load_kv16(kv_at(vsrc, t * vstride + 16 * i, q8), q8)
                            : _mm512_load_ps(rows + (size_t)t * 16 * nv + 16 * i);
        /* in registers, loaded once: GCC would otherwise fold the load into each head's fma, and
         * NQ loads of every vector make the loop load-bound (one 64-byte load per cycle) */
#pragma GCC unroll 16
        for (int i = 0; i < nv; i++) __asm__("" : "+v"(v[i]));
#pragma GCC unroll 4
        for (int q = 0; q < NQ; q++) {
            __m512 p = _mm512_set1_ps(s[q][t0 + t]);
#pragma GCC unroll 16
            for (int i = 0; i < nv; i++) acc[q][i] = _mm512_fmadd_ps(p, v[i], acc[q][i]);
        }
    }
#pragma GCC unroll 4
    for (int q = 0; q < NQ; q++)
#pragma GCC unroll 16
        for (int i = 0; i < nv; i++) _mm512_storeu_ps(o[q] + 16 * i, acc[q][i]);
}

/* Rows b0 .. b0+nr-1 (nr <= MAX_ROWS; with a window, nr = 1) for KV head kvh: all rows walk the
 * same chunks from the same lo, each only over its own visible keys, and share the f16 -> f32
 * conversion of every key and value vector. Each row's operations are those of the row alone.
 * nv = hd / 16; constant where the caller instantiates it, so the head's vectors live in
 * registers. Scores are computed for whole tiles, from the tile holding the chunk's first key
 * (lanes outside a row's visible keys are never read). */
PF_FORCE_INLINE void attend_rows(const pf_attn_job *j, int b0, int nr, int kvh, int nv, int direct, int q8) {
    const int hd = 16 * nv, g = j->n_head / j->n_kv_head, np = nr * g;
    int64_t lo = 0, hi[MAX_ROWS], hmax = 0;
    const float *qp[MAX_ROWS * MAX_GROUP];
    float *o[MAX_ROWS][MAX_GROUP];
    for (int r = 0; r < nr; r++) {
        int b = b0 + r;
        pf_attn_range(j, b, &lo, &hi[r]); /* lo is the same for every row (no window when nr > 1) */
        if (hi[r] > hmax) hmax = hi[r];
        for (int h = 0; h < g; h++) {
            qp[r * g + h] = j->q + b * j->ldq + (int64_t)(kvh * g + h) * hd;
            o[r][h] = j->out + b * j->ldo + (int64_t)(kvh * g + h) * hd;
            memset(o[r][h], 0, (size_t)hd * sizeof(float));
        }
    }
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
    __m512 lsum[MAX_ROWS][MAX_GROUP];
    float mx[MAX_ROWS][MAX_GROUP];
    for (int r = 0; r < nr; r++)
        for (int h = 0; h < g; h++) {
            lsum[r][h] = _mm512_setzero_ps();
            mx[r][h] = -INFINITY;
        }
    const int64_t hoff = (int64_t)kvh * j->head_stride;
    const void *Kh = q8 ? (const void *)(j->K8 + hoff) : (const void *)(j->K + hoff);
    const void *Vh = q8 ? (const void *)(j->V8 + hoff) : (const void *)(j->V + hoff);
    const float *ks = q8 ? j->ks + (int64_t)kvh * j->scale_stride : NULL;
    const float *vs = q8 ? j->vs + (int64_t)kvh * j->scale_stride : NULL;
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
    const __m512 scale = _mm512_set1_ps(j->scale);
    for (int64_t c0 = lo; c0 < hmax; c0 += PF_ATTN_KCHUNK) {
        int nc[MAX_ROWS], nmax = 0; /* keys of this chunk each row sees (<= 0: none) */
        for (int r = 0; r < nr; r++) {
            int64_t left = hi[r] - c0;
            nc[r] = left <= 0 ? 0 : left < PF_ATTN_KCHUNK ? (int)left : PF_ATTN_KCHUNK;
            if (nc[r] > nmax) nmax = nc[r];
        }
        {
            int64_t k1 = c0 - off + PF_ATTN_KCHUNK, left = hmax - k1; /* the next chunk, from its tile */
            int64_t pb = left <= 0 ? 0 : (left < SPAN ? left : SPAN) * hd * (q8 ? 1 : 2);
            if (left <= 0) k1 = 0;
            /* a tile starts at the same offset in both layouts (16 * hd elements a tile) */
            scores_tiles(kv_at(Kh, pf_kv_key_at(c0 - off, 0, hd), q8), hd, (off + nmax + PF_KV_TILE - 1) / PF_KV_TILE,
                         np, qp, sbp, scale, (const char *)kv_at(Kh, pf_kv_key_at(k1, 0, hd), q8),
                         (const char *)kv_at(Vh, k1 * hd, q8), pb, q8, q8 ? ks + (c0 - off) : NULL, q8p, qsc, qsm);
        }
        for (int r = 0; r < nr; r++) {
            if (nc[r] == 0) continue;
            for (int h = 0; h < g; h++)
                attn_softmax_chunk(s[r][h], nc[r], &mx[r][h], &lsum[r][h], o[r][h], hd, q8 ? vs + c0 : NULL);
        }
        for (int t0 = 0; t0 < nmax; t0 += VT) {
            int mm = nmax - t0 < VT ? nmax - t0 : VT;
            const void *vt0 = kv_at(Vh, (c0 + t0) * hd, q8);
            if (!direct) convert_rows(vt0, hd, mm, nv, rows, q8);
            for (int r = 0; r < nr; r++) {
                if (t0 >= nc[r]) continue;
                int m = nc[r] - t0 < VT ? nc[r] - t0 : VT;
                /* heads in blocks of up to 4 (2 for hd 128, 1 beyond): each value row is loaded
                 * once for the block and every output vector is one fma chain in key order, the
                 * block's independent chains hiding the latency */
                const int hb = nv <= 4 ? 4 : nv <= 8 ? 2 : 1;
                for (int h0 = 0; h0 < g; h0 += hb) {
                    int nq = g - h0 < hb ? g - h0 : hb;
                    switch (nq) {
                    case 1: values_block(o[r] + h0, s[r] + h0, t0, rows, vt0, hd, direct, m, nv, 1, q8); break;
                    case 2: values_block(o[r] + h0, s[r] + h0, t0, rows, vt0, hd, direct, m, nv, 2, q8); break;
                    case 3: values_block(o[r] + h0, s[r] + h0, t0, rows, vt0, hd, direct, m, nv, 3, q8); break;
                    default: values_block(o[r] + h0, s[r] + h0, t0, rows, vt0, hd, direct, m, nv, 4, q8); break;
                    }
                }
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int h = 0; h < g; h++)
            if (hi[r] > lo) attn_normalize(o[r][h], hd, &lsum[r][h]); /* else nothing visible: zeros */
}

int pf_attend_rows_avx512(const pf_attn_job *j, int b0, int nr, int kvh) {
    const int hd = j->hd, g = j->n_head / j->n_kv_head;
    if (hd % 16 || hd > MAX_HD || g > MAX_GROUP || nr > MAX_ROWS) return 0;
    if (nr > 1 && j->window > 0) return 0; /* rows would not share lo */
    /* Where few queries share each value row (GQA group x rows <= 4), converting them on the fly
     * beats converting a tile into a buffer and reading it back (Qwen3-0.6B shape, group 2: 1.56x
     * at B=1, 1.2x at B=2; Pocket's group of 7 keeps the buffer); the arithmetic is the same
     * (f16 -> f32 is exact), only where the f32 values come from differs, so B never changes it. */
    const int direct = g * nr <= 4;
    switch (hd) {
    case 64:
        if (j->q8) direct ? attend_rows(j, b0, nr, kvh, 4, 1, 1) : attend_rows(j, b0, nr, kvh, 4, 0, 1);
        else direct ? attend_rows(j, b0, nr, kvh, 4, 1, 0) : attend_rows(j, b0, nr, kvh, 4, 0, 0);
        break;
    case 128:
        if (j->q8) direct ? attend_rows(j, b0, nr, kvh, 8, 1, 1) : attend_rows(j, b0, nr, kvh, 8, 0, 1);
        else direct ? attend_rows(j, b0, nr, kvh, 8, 1, 0) : attend_rows(j, b0, nr, kvh, 8, 0, 0);
        break;
    default:
        if (j->q8) direct ? attend_rows(j, b0, nr, kvh, hd / 16, 1, 1) : attend_rows(j, b0, nr, kvh, hd / 16, 0, 1);
        else direct ? attend_rows(j, b0, nr, kvh, hd / 16, 1, 0) : attend_rows(j, b0, nr, kvh, hd / 16, 0, 0);
        break;
    }
    return 1;
}

int pf_attend_group_avx512(const pf_attn_job *j, int b, int kvh) { return pf_attend_rows_avx512(j, b, 1, kvh); }
