/* AVX-512 attention for one (row, KV head) task: all query heads of the GQA group at once, so
 * each f16 key/value row is converted once per group. Same chunked online softmax as the scalar
 * path (attention.c); per head the operations depend only on the visible key range.
 *   scores: 16-lane fma over the head dim, one fixed horizontal sum per (key, head), then * scale
 *   softmax: chunk max, one rescale (expf) when it grows, exp512 over the chunk; the running sum
 *            is a 16-lane vector (lane = key index mod 16), reduced once at the end
 *   values: out += p * v per key, in key order. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels_impl.h"
#include "kernels/simd_avx512.h"

#define MAX_GROUP 16
#define MAX_HD 256

int pf_attend_group_avx512(const pf_attn_job *j, int b, int kvh) {
    const int hd = j->hd, g = j->n_head / j->n_kv_head, nv = hd / 16;
    if (hd % 16 || hd > MAX_HD || g > MAX_GROUP) return 0;
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

    _Alignas(64) float s[MAX_GROUP][PF_ATTN_KCHUNK];
    _Alignas(64) float row[MAX_HD];
    __m512 lsum[MAX_GROUP];
    float mx[MAX_GROUP];
    for (int h = 0; h < g; h++) {
        lsum[h] = _mm512_setzero_ps();
        mx[h] = -INFINITY;
    }
    const pf_half *Kh = j->K + (int64_t)kvh * hd, *Vh = j->V + (int64_t)kvh * hd;
    for (int64_t c0 = lo; c0 < hi; c0 += PF_ATTN_KCHUNK) {
        int n = hi - c0 < PF_ATTN_KCHUNK ? (int)(hi - c0) : PF_ATTN_KCHUNK;
        for (int t = 0; t < n; t++) {
            const pf_half *kr = Kh + (c0 + t) * j->kv_stride;
            for (int i = 0; i < nv; i++)
                _mm512_store_ps(row + 16 * i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(kr + 16 * i))));
            for (int h = 0; h < g; h++) {
                __m512 acc = _mm512_mul_ps(_mm512_load_ps(row), _mm512_loadu_ps(qh[h]));
                for (int i = 1; i < nv; i++)
                    acc = _mm512_fmadd_ps(_mm512_load_ps(row + 16 * i), _mm512_loadu_ps(qh[h] + 16 * i), acc);
                s[h][t] = _mm512_reduce_add_ps(acc) * j->scale;
            }
        }
        for (int h = 0; h < g; h++) {
            __m512 vm = _mm512_set1_ps(-INFINITY);
            for (int t = 0; t < n; t += 16)
                vm = _mm512_max_ps(vm, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail_mask(n - t), s[h] + t));
            float cmax = _mm512_reduce_max_ps(vm);
            if (cmax > mx[h]) {
                if (mx[h] != -INFINITY) {
                    __m512 f = _mm512_set1_ps(expf(mx[h] - cmax));
                    lsum[h] = _mm512_mul_ps(lsum[h], f);
                    for (int i = 0; i < nv; i++)
                        _mm512_storeu_ps(o[h] + 16 * i, _mm512_mul_ps(_mm512_loadu_ps(o[h] + 16 * i), f));
                }
                mx[h] = cmax;
            }
            __m512 mv = _mm512_set1_ps(mx[h]);
            for (int t = 0; t < n; t += 16) {
                __mmask16 m = tail_mask(n - t);
                __m512 p = _mm512_maskz_mov_ps(m, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s[h] + t), mv)));
                _mm512_store_ps(s[h] + t, p);
                lsum[h] = _mm512_add_ps(lsum[h], p);
            }
        }
        for (int t = 0; t < n; t++) {
            const pf_half *vr = Vh + (c0 + t) * j->kv_stride;
            for (int i = 0; i < nv; i++)
                _mm512_store_ps(row + 16 * i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(vr + 16 * i))));
            for (int h = 0; h < g; h++) {
                __m512 p = _mm512_set1_ps(s[h][t]);
                for (int i = 0; i < nv; i++)
                    _mm512_storeu_ps(o[h] + 16 * i, _mm512_fmadd_ps(p, _mm512_load_ps(row + 16 * i),
                                                                    _mm512_loadu_ps(o[h] + 16 * i)));
            }
        }
    }
    for (int h = 0; h < g; h++) {
        __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(lsum[h]));
        for (int i = 0; i < nv; i++)
            _mm512_storeu_ps(o[h] + 16 * i, _mm512_mul_ps(_mm512_loadu_ps(o[h] + 16 * i), inv));
    }
    return 1;
}
