/* AVX2 attention for one (row, KV head) task: the AVX-512 variant's structure with 8 lanes (see
 * attention_avx512.c): scores per dimension-major key tile (two 8-lane halves), heads in blocks of
 * up to 4. Head dims that are multiples of 8, up to 256. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels_impl.h"
#include "kernels/simd_avx2.h"

#define MAX_GROUP 16
#define MAX_HD 256
#define SPAN (PF_ATTN_KCHUNK + PF_KV_TILE)

static inline float hmax256(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

/* s[h][16 i + lane] = scale * sum_d q[h][d] * key(16 i + lane, d) for NH heads, tiles [0, ntile):
 * per lane an fma chain over d in order (the scalar reference's fmaf chain). */
static inline void scores_heads(const pf_half *tile, int hd, int ntile, int NH, const float *const *q, float (*s)[SPAN],
                                float scale) {
    const __m256 sc = _mm256_set1_ps(scale);
    for (int t = 0; t < ntile; t++) {
        const pf_half *kt = tile + (int64_t)t * PF_KV_TILE * hd;
        __m256 acc[4][2];
        for (int h = 0; h < 4; h++) acc[h][0] = acc[h][1] = _mm256_setzero_ps();
        for (int d = 0; d < hd; d++) {
            __m256 k0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kt + d * PF_KV_TILE)));
            __m256 k1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kt + d * PF_KV_TILE + 8)));
            for (int h = 0; h < NH; h++) {
                __m256 qd = _mm256_set1_ps(q[h][d]);
                acc[h][0] = _mm256_fmadd_ps(qd, k0, acc[h][0]);
                acc[h][1] = _mm256_fmadd_ps(qd, k1, acc[h][1]);
            }
        }
        for (int h = 0; h < NH; h++) {
            _mm256_storeu_ps(s[h] + 16 * t, _mm256_mul_ps(acc[h][0], sc));
            _mm256_storeu_ps(s[h] + 16 * t + 8, _mm256_mul_ps(acc[h][1], sc));
        }
    }
}

int pf_attend_group_avx2(const pf_attn_job *j, int b, int kvh) {
    const int hd = j->hd, g = j->n_head / j->n_kv_head, nv = hd / 8;
    if (hd % 8 || hd > MAX_HD || g > MAX_GROUP) return 0;
    int64_t lo, hi;
    pf_attn_range(j, b, &lo, &hi);
    const float *qh[MAX_GROUP];
    float *o[MAX_GROUP];
    for (int h = 0; h < g; h++) {
        qh[h] = j->q + b * j->ldq + (int64_t)(kvh * g + h) * hd;
        o[h] = j->out + b * j->ldo + (int64_t)(kvh * g + h) * hd;
        memset(o[h], 0, (size_t)hd * sizeof(float));
    }
    if (lo >= hi) return 1;

    /* sb[h]: scores from the start of the chunk's first tile; s[h] = the chunk's first key */
    _Alignas(32) float sb[MAX_GROUP][SPAN];
    _Alignas(32) float row[MAX_HD];
    const int off = (int)(lo % PF_KV_TILE);
    float *s[MAX_GROUP];
    for (int h = 0; h < g; h++) s[h] = sb[h] + off;
    __m256 lsum[MAX_GROUP];
    float mx[MAX_GROUP];
    for (int h = 0; h < g; h++) {
        lsum[h] = _mm256_setzero_ps();
        mx[h] = -INFINITY;
    }
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const pf_half *Kh = j->K + (int64_t)kvh * j->head_stride, *Vh = j->V + (int64_t)kvh * j->head_stride;
    for (int64_t c0 = lo; c0 < hi; c0 += PF_ATTN_KCHUNK) {
        int n = hi - c0 < PF_ATTN_KCHUNK ? (int)(hi - c0) : PF_ATTN_KCHUNK;
        int n8 = (n + 7) & ~7;
        const pf_half *tile = Kh + pf_kv_key_at(c0 - off, 0, hd);
        int ntile = (off + n + PF_KV_TILE - 1) / PF_KV_TILE;
        for (int h0 = 0; h0 < g; h0 += 4) {
            int nh = g - h0 < 4 ? g - h0 : 4;
            scores_heads(tile, hd, ntile, nh, qh + h0, sb + h0, j->scale);
        }
        for (int h = 0; h < g; h++) {
            for (int t = n; t < n8; t++) s[h][t] = -INFINITY;
            __m256 vm = _mm256_set1_ps(-INFINITY);
            for (int t = 0; t < n8; t += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(s[h] + t));
            float cmax = hmax256(vm);
            if (cmax > mx[h]) {
                if (mx[h] != -INFINITY) {
                    __m256 f = _mm256_set1_ps(expf(mx[h] - cmax));
                    lsum[h] = _mm256_mul_ps(lsum[h], f);
                    for (int i = 0; i < nv; i++)
                        _mm256_storeu_ps(o[h] + 8 * i, _mm256_mul_ps(_mm256_loadu_ps(o[h] + 8 * i), f));
                }
                mx[h] = cmax;
            }
            __m256 mv = _mm256_set1_ps(mx[h]);
            for (int t = 0; t < n8; t += 8) {
                /* lanes past n (score -inf) must contribute exactly 0 */
                __m256 valid = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n - t), iota));
                __m256 p = _mm256_and_ps(valid, exp256(_mm256_sub_ps(_mm256_loadu_ps(s[h] + t), mv)));
                _mm256_storeu_ps(s[h] + t, p);
                lsum[h] = _mm256_add_ps(lsum[h], p);
            }
        }
        for (int t = 0; t < n; t++) {
            const pf_half *vr = Vh + (c0 + t) * hd;
            for (int i = 0; i < nv; i++)
                _mm256_store_ps(row + 8 * i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vr + 8 * i))));
            for (int h = 0; h < g; h++) {
                __m256 p = _mm256_set1_ps(s[h][t]);
                for (int i = 0; i < nv; i++)
                    _mm256_storeu_ps(o[h] + 8 * i, _mm256_fmadd_ps(p, _mm256_load_ps(row + 8 * i),
                                                                   _mm256_loadu_ps(o[h] + 8 * i)));
            }
        }
    }
    for (int h = 0; h < g; h++) {
        __m256 inv = _mm256_set1_ps(1.0f / hsum256(lsum[h]));
        for (int i = 0; i < nv; i++)
            _mm256_storeu_ps(o[h] + 8 * i, _mm256_mul_ps(_mm256_loadu_ps(o[h] + 8 * i), inv));
    }
    return 1;
}
