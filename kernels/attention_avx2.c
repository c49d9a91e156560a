/* AVX2 attention for one (row, KV head) task: the AVX-512 variant's structure with 8 lanes (see
 * attention_avx512.c). Head dims that are multiples of 8, up to 256. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels_impl.h"
#include "kernels/simd_avx2.h"

#define MAX_GROUP 16
#define MAX_HD 256

static inline float hmax256(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
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

    _Alignas(32) float s[MAX_GROUP][PF_ATTN_KCHUNK];
    _Alignas(32) float row[MAX_HD];
    __m256 lsum[MAX_GROUP];
    float mx[MAX_GROUP];
    for (int h = 0; h < g; h++) {
        lsum[h] = _mm256_setzero_ps();
        mx[h] = -INFINITY;
    }
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const pf_half *Kh = j->K + (int64_t)kvh * hd, *Vh = j->V + (int64_t)kvh * hd;
    for (int64_t c0 = lo; c0 < hi; c0 += PF_ATTN_KCHUNK) {
        int n = hi - c0 < PF_ATTN_KCHUNK ? (int)(hi - c0) : PF_ATTN_KCHUNK;
        int n8 = (n + 7) & ~7;
        for (int t = 0; t < n; t++) {
            const pf_half *kr = Kh + (c0 + t) * j->kv_stride;
            for (int i = 0; i < nv; i++)
                _mm256_store_ps(row + 8 * i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kr + 8 * i))));
            for (int h = 0; h < g; h++) {
                __m256 acc = _mm256_mul_ps(_mm256_load_ps(row), _mm256_loadu_ps(qh[h]));
                for (int i = 1; i < nv; i++)
                    acc = _mm256_fmadd_ps(_mm256_load_ps(row + 8 * i), _mm256_loadu_ps(qh[h] + 8 * i), acc);
                s[h][t] = hsum256(acc) * j->scale;
            }
        }
        for (int h = 0; h < g; h++) {
            for (int t = n; t < n8; t++) s[h][t] = -INFINITY;
            __m256 vm = _mm256_set1_ps(-INFINITY);
            for (int t = 0; t < n8; t += 8) vm = _mm256_max_ps(vm, _mm256_load_ps(s[h] + t));
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
                __m256 p = _mm256_and_ps(valid, exp256(_mm256_sub_ps(_mm256_load_ps(s[h] + t), mv)));
                _mm256_store_ps(s[h] + t, p);
                lsum[h] = _mm256_add_ps(lsum[h], p);
            }
        }
        for (int t = 0; t < n; t++) {
            const pf_half *vr = Vh + (c0 + t) * j->kv_stride;
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
