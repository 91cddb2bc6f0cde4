#include "engine/compute/membw.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#define LINE_FLOATS 64 /* floats per step: 8 vectors, 4 cache lines */

float membw_read_share(const void *buf, size_t bytes, int worker, int workers)
{
    size_t n = bytes / sizeof(float);
    size_t lo = n * (size_t)worker / (size_t)workers / LINE_FLOATS * LINE_FLOATS;
    size_t hi = n * (size_t)(worker + 1) / (size_t)workers / LINE_FLOATS * LINE_FLOATS;
    const float *p = buf;
#if defined(__AVX2__)
    /* eight independent sums: the adds never wait on each other */
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = lo; i < hi; i += LINE_FLOATS) {
        a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
        a4 = _mm256_add_ps(a4, _mm256_load_ps(p + i + 32));
        a5 = _mm256_add_ps(a5, _mm256_load_ps(p + i + 40));
        a6 = _mm256_add_ps(a6, _mm256_load_ps(p + i + 48));
        a7 = _mm256_add_ps(a7, _mm256_load_ps(p + i + 56));
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
#else
    float acc[16] = {0};
    for (size_t i = lo; i < hi; i += 16)
        for (int k = 0; k < 16; k++)
            acc[k] += p[i + k];
    float s = 0;
    for (int k = 0; k < 16; k++)
        s += acc[k];
    return s;
#endif
}
