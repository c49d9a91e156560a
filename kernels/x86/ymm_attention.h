/* The 256-bit x86 levels' attention, written once: attention_avx2.c and attention_avxvnni.c
 * (which defines PF_YMM_VNNI first) include this file, each compiled with its level's flags, and
 * it defines that level's pf_attend_rows_* / pf_attend_group_* (YMM_NAME). One task: up to 8 rows
 * of one KV head with all query heads of its GQA group (the AVX-512 variant's structure,
 * attention_avx512.c, on 8 lanes and 16 registers), over the f16 cache or the 8-bit one. Same
 * chunked online softmax as the scalar reference (kernels_scalar.c); per head the operations
 * depend only on the visible key range, never on B, the rows sharing the task, the group size or
 * the thread.
 *   scores: a dimension of a 16-key tile is two converted vectors; per (row, head) pair an fma
 *           with that query element broadcast, one chain over the head dim in order per key lane
 *           (the scalar reference's fmaf chain, bitwise); pairs in blocks of up to 4 and 1, 2 or
 *           4 tiles at once, so 8 independent chains hide the fma latency in 8 accumulators.
 *           The 8-bit cache: exact integer dot products with the rounded query, then scaled as
 *           the scalar reference does. AVX2: keys (stored + 128) back to int8, maddubs(|k|,
 *           sign(q, k)) (pairs <= 2 * 127 * 127, no saturation), widened to int32 per dword.
 *           AVX-VNNI: vpdpbusd of the stored keys (k + 128, unsigned) with the query bytes, from
 *           -128 * sum(q), as the AVX-512 variant does.
 *   softmax: vec_attention.h (one source with the AVX-512 variant): chunk max, one rescale
 *           (pf_exp_ref) when it grows, vf_exp over the chunk; the running sum is float_order.h's
 *           16 partials (two vectors: key index mod 16), through its tree once at the end
 *   values: converted to f32 VT rows at a time (from f16 or int8, exact); heads two at a time
 *           over four output vectors, each output vector one fma chain in key order; 8-bit
 *           values' scales ride on the softmax weight. */
#ifndef PF_YMM_ATTENTION_H
#define PF_YMM_ATTENTION_H

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels_impl.h"
#define PF_VEC_BITS 256
#include "kernels/x86/vec_attention.h"

#ifdef PF_YMM_VNNI
#define YMM_NAME(f) f##_avxvnni
#define YMM_VNNI_ON 1
#else
#define YMM_VNNI_ON 0
#define YMM_NAME(f) f##_avx2
#endif

#define MAX_GROUP 16
#define MAX_HD 256
#define MAX_ROWS 8  /* rows per task sharing the key/value conversion */
#define MAX_PAIRS 4 /* (row, head) pairs per score block: 2 x 4 accumulators a tile */
#define SPAN (PF_ATTN_KCHUNK + PF_KV_TILE) /* a chunk's scores from its first tile's start */
#define VROWS 4096 /* floats of converted value rows */

/* 8 f16 or int8 values as f32 (exact). */
PF_FORCE_INLINE __m256 load_h8(const pf_half *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
PF_FORCE_INLINE __m256 load_q8(const int8_t *p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}
PF_FORCE_INLINE const void *kv_at(const void *base, int64_t i, int q8) {
    return q8 ? (const void *)((const int8_t *)base + i) : (const void *)((const pf_half *)base + i);
}
PF_FORCE_INLINE __m256 load_kv8(const void *p, int q8) { return q8 ? load_q8(p) : load_h8(p); }

/* Scores of NP (row, head) pairs for keys of nt <= NT consecutive f16 tiles from tile:
 * s[p][16 i + lane] = scale * sum_d q[p][d] * key(16 i + lane, d), each an fma chain over d. */
PF_FORCE_INLINE void scores_block(const pf_half *tile, int hd, int nt, int NT, int NP, const float *const *q,
                                  float *const *s, __m256 scale) {
    __m256 acc[4][MAX_PAIRS][2];
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
#pragma GCC unroll 4
        for (int p = 0; p < NP; p++) acc[t][p][0] = acc[t][p][1] = _mm256_setzero_ps();
    for (int d = 0; d < hd; d++) {
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            if (t >= nt) break;
            const pf_half *kd = tile + (int64_t)t * PF_KV_TILE * hd + d * PF_KV_TILE;
            __m256 k0 = load_h8(kd), k1 = load_h8(kd + 8);
#pragma GCC unroll 4
            for (int p = 0; p < NP; p++) {
                __m256 qd = _mm256_set1_ps(q[p][d]);
                acc[t][p][0] = _mm256_fmadd_ps(qd, k0, acc[t][p][0]);
                acc[t][p][1] = _mm256_fmadd_ps(qd, k1, acc[t][p][1]);
            }
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) {
        if (t >= nt) break;
#pragma GCC unroll 4
        for (int p = 0; p < NP; p++) {
            _mm256_storeu_ps(s[p] + 16 * t, _mm256_mul_ps(acc[t][p][0], scale));
            _mm256_storeu_ps(s[p] + 16 * t + 8, _mm256_mul_ps(acc[t][p][1], scale));
        }
    }
}

/* The 8-bit cache: the same for keys stored + 128 in [hd/4][16][4] tiles (a dword = 4 dimensions
 * of a key: keys 0-7 of a tile in one vector, 8-15 in the next) and the rounded queries q8 (4
 * bytes broadcast per step); then per key ((dot * qs) * ks) * scale in the scalar reference's
 * order. */
PF_FORCE_INLINE void scores_block_q8(const uint8_t *tile, int hd, int nt, int NT, int NP, const int8_t *const *q8,
                                     const float *qs, const int32_t *qsum, float *const *s, __m256 scale,
                                     const float *ks) {
    __m256i acc[4][MAX_PAIRS][2];
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
#pragma GCC unroll 4
        for (int p = 0; p < NP; p++)
            acc[t][p][0] = acc[t][p][1] = YMM_VNNI_ON ? _mm256_set1_epi32(-128 * qsum[p]) : _mm256_setzero_si256();
    const __m256i bias = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi16(1);
    (void)bias, (void)ones;
    for (int d4 = 0; d4 < hd / 4; d4++) {
        __m256i qb[MAX_PAIRS];
#pragma GCC unroll 4
        for (int p = 0; p < NP; p++) {
            int32_t w;
            memcpy(&w, q8[p] + 4 * d4, 4);
            qb[p] = _mm256_set1_epi32(w);
        }
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            if (t >= nt) break;
            const uint8_t *kd = tile + (int64_t)t * PF_KV_TILE * hd + d4 * (PF_KV_TILE * 4);
#ifdef PF_YMM_VNNI
            __m256i u0 = _mm256_loadu_si256((const __m256i *)kd), u1 = _mm256_loadu_si256((const __m256i *)(kd + 32));
#pragma GCC unroll 4
            for (int p = 0; p < NP; p++) {
                acc[t][p][0] = _mm256_dpbusd_avx_epi32(acc[t][p][0], u0, qb[p]);
                acc[t][p][1] = _mm256_dpbusd_avx_epi32(acc[t][p][1], u1, qb[p]);
            }
#else
            __m256i k0 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)kd), bias);
            __m256i k1 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(kd + 32)), bias);
            __m256i a0 = _mm256_abs_epi8(k0), a1 = _mm256_abs_epi8(k1);
#pragma GCC unroll 4
            for (int p = 0; p < NP; p++) {
                acc[t][p][0] = _mm256_add_epi32(
                    acc[t][p][0], _mm256_madd_epi16(_mm256_maddubs_epi16(a0, _mm256_sign_epi8(qb[p], k0)), ones));
                acc[t][p][1] = _mm256_add_epi32(
                    acc[t][p][1], _mm256_madd_epi16(_mm256_maddubs_epi16(a1, _mm256_sign_epi8(qb[p], k1)), ones));
            }
#endif
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) {
        if (t >= nt) break;
        __m256 ks0 = _mm256_loadu_ps(ks + 16 * t), ks1 = _mm256_loadu_ps(ks + 16 * t + 8);
#pragma GCC unroll 4
        for (int p = 0; p < NP; p++) {
            __m256 qv = _mm256_set1_ps(qs[p]);
            __m256 x0 = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc[t][p][0]), qv), ks0);
            __m256 x1 = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc[t][p][1]), qv), ks1);
            _mm256_storeu_ps(s[p] + 16 * t, _mm256_mul_ps(x0, scale));
            _mm256_storeu_ps(s[p] + 16 * t + 8, _mm256_mul_ps(x1, scale));
        }
    }
}

/* All tiles [0, ntile) for np pairs: blocks of up to 4 pairs, 1 tile at a time for 3-4 pairs, 2
 * for 2, 4 for 1 (8 accumulators each). pk, pv, pbytes: the next chunk's keys and values, fetched
 * into L2 a slice per group of tiles while this chunk is scored (as the AVX-512 variant). The
 * 8-bit scales ks are read for whole tiles: the cache's scale rows are padded to whole tiles. */
PF_FORCE_INLINE void scores_tiles(const void *tile, int hd, int ntile, int np, const float *const *q, float *const *s,
                                  __m256 scale, const char *pk, const char *pv, int64_t pbytes, int q8,
                                  const float *ks, const int8_t *const *q8p, const float *qs, const int32_t *qsum) {
    for (int p0 = 0; p0 < np; p0 += MAX_PAIRS) {
        int n = np - p0 < MAX_PAIRS ? np - p0 : MAX_PAIRS;
        const int NT = n >= 3 ? 1 : n == 2 ? 2 : 4;
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
#define BLOCK(NT_, NP_)                                                                   \
    (q8 ? scores_block_q8(tl, hd, nt, NT_, NP_, q8p + p0, qs + p0, qsum + p0, sp, scale, kst)      \
        : scores_block(tl, hd, nt, NT_, NP_, q + p0, sp, scale))
            switch (n) {
            case 1: BLOCK(4, 1); break;
            case 2: BLOCK(2, 2); break;
            case 3: BLOCK(1, 3); break;
            default: BLOCK(1, 4); break;
            }
#undef BLOCK
        }
    }
}

/* o[q][8 (i0 + i) ..] += sum_{t < m} s[q][t0 + t] * value row t, for NQ heads of one row and CV
 * output vectors from vector i0 (rows: value rows converted to f32, nv vectors each); per output
 * vector one fma chain in key order. */
PF_FORCE_INLINE void values_block(float *const *o, float *const *s, int t0, const float *rows, int m, int nv, int i0,
                                  int CV, int NQ) {
    __m256 acc[2][4];
#pragma GCC unroll 2
    for (int q = 0; q < NQ; q++)
#pragma GCC unroll 4
        for (int i = 0; i < CV; i++) acc[q][i] = _mm256_loadu_ps(o[q] + 8 * (i0 + i));
    for (int t = 0; t < m; t++) {
        __m256 v[4];
#pragma GCC unroll 4
        for (int i = 0; i < CV; i++) v[i] = _mm256_load_ps(rows + (size_t)t * 8 * nv + 8 * (i0 + i));
#pragma GCC unroll 2
        for (int q = 0; q < NQ; q++) {
            __m256 p = _mm256_set1_ps(s[q][t0 + t]);
#pragma GCC unroll 4
            for (int i = 0; i < CV; i++) acc[q][i] = _mm256_fmadd_ps(p, v[i], acc[q][i]);
        }
    }
#pragma GCC unroll 2
    for (int q = 0; q < NQ; q++)
#pragma GCC unroll 4
        for (int i = 0; i < CV; i++) _mm256_storeu_ps(o[q] + 8 * (i0 + i), acc[q][i]);
}

/* One row's heads [0, g) over value rows t0 .. t0+m-1: pairs of heads, four output vectors at a
 * time (then single vectors for hd not a multiple of 32, and the last head alone when g is odd). */
static inline void values_heads(float *const *o, float *const *s, int g, int t0, const float *rows, int m, int nv) {
    for (int h0 = 0; h0 < g; h0 += 2) {
        int two = h0 + 1 < g;
        int i0 = 0;
        for (; i0 + 4 <= nv; i0 += 4)
            two ? values_block(o + h0, s + h0, t0, rows, m, nv, i0, 4, 2)
                : values_block(o + h0, s + h0, t0, rows, m, nv, i0, 4, 1);
        for (; i0 < nv; i0++)
            two ? values_block(o + h0, s + h0, t0, rows, m, nv, i0, 1, 2)
                : values_block(o + h0, s + h0, t0, rows, m, nv, i0, 1, 1);
    }
}

/* Rows b0 .. b0+nr-1 (nr <= MAX_ROWS; with a window, nr = 1) of KV head kvh: all rows walk the
 * same chunks from the same lo, each only over its own visible keys, and share the conversion of
 * every key and value vector. Each row's operations are those of the row alone. Scores are
 * computed for whole tiles, from the tile holding the chunk's first key (lanes outside a row's
 * visible keys are never read). */
PF_FORCE_INLINE void attend_rows(const pf_attn_job *j, int b0, int nr, int kvh, int q8) {
    const int hd = j->hd, nv = hd / 8, g = j->n_head / j->n_kv_head, np = nr * g;
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
     * first key (off = lo mod 16, the same for every chunk) */
    _Alignas(32) float sb[MAX_ROWS * MAX_GROUP][SPAN];
    const int off = (int)(lo % PF_KV_TILE);
    float *sbp[MAX_ROWS * MAX_GROUP], *s[MAX_ROWS][MAX_GROUP];
    for (int p = 0; p < np; p++) {
        sbp[p] = sb[p];
        s[p / g][p % g] = sb[p] + off;
    }
    _Alignas(32) float rows[VROWS];
    const int VT = VROWS / hd < PF_ATTN_KCHUNK ? VROWS / hd : PF_ATTN_KCHUNK;
    __m256 lsum[MAX_ROWS][MAX_GROUP][VNP]; /* the running sum's 16 partials (float_order.h) */
    float mx[MAX_ROWS][MAX_GROUP];
    for (int r = 0; r < nr; r++)
        for (int h = 0; h < g; h++) {
            lsum[r][h][0] = lsum[r][h][1] = _mm256_setzero_ps();
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
    const __m256 scale = _mm256_set1_ps(j->scale);
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
            scores_tiles(kv_at(Kh, pf_kv_key_at(c0 - off, 0, hd), q8), hd, (off + nmax + PF_KV_TILE - 1) / PF_KV_TILE,
                         np, qp, sbp, scale, (const char *)kv_at(Kh, pf_kv_key_at(k1, 0, hd), q8),
                         (const char *)kv_at(Vh, k1 * hd, q8), pb, q8, q8 ? ks + (c0 - off) : NULL, q8p, qsc,
                         qsm);
        }
        for (int r = 0; r < nr; r++) {
            if (nc[r] == 0) continue;
            for (int h = 0; h < g; h++)
                attn_softmax_chunk(s[r][h], nc[r], &mx[r][h], lsum[r][h], o[r][h], hd, q8 ? vs + c0 : NULL);
        }
        for (int t0 = 0; t0 < nmax; t0 += VT) {
            int mm = nmax - t0 < VT ? nmax - t0 : VT;
            const void *vt0 = kv_at(Vh, (c0 + t0) * hd, q8);
            for (int t = 0; t < mm; t++)
                for (int i = 0; i < nv; i++)
                    _mm256_store_ps(rows + (t * nv + i) * 8, load_kv8(kv_at(vt0, (int64_t)t * hd + 8 * i, q8), q8));
            for (int r = 0; r < nr; r++) {
                if (t0 >= nc[r]) continue;
                int m = nc[r] - t0 < VT ? nc[r] - t0 : VT;
                values_heads(o[r], s[r], g, t0, rows, m, nv);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int h = 0; h < g; h++)
            if (hi[r] > lo) attn_normalize(o[r][h], hd, lsum[r][h]); /* else nothing visible: zeros */
}

int YMM_NAME(pf_attend_rows)(const pf_attn_job *j, int b0, int nr, int kvh) {
    const int hd = j->hd, g = j->n_head / j->n_kv_head;
    if (hd % 8 || hd > MAX_HD || g > MAX_GROUP || nr > MAX_ROWS) return 0;
    if (nr > 1 && j->window > 0) return 0; /* rows would not share lo */
    if (j->q8) attend_rows(j, b0, nr, kvh, 1);
    else attend_rows(j, b0, nr, kvh, 0);
    return 1;
}

int YMM_NAME(pf_attend_group)(const pf_attn_job *j, int b, int kvh) { return YMM_NAME(pf_attend_rows)(j, b, 1, kvh); }

#endif
