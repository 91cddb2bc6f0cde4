#include "engine/membw.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/clock.h"
#include "engine/threadpool.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

struct read_job {
    const float *buf;
    size_t n;        /* floats */
    float sums[256]; /* one per worker, so the loads cannot be optimized away */
};

static void read_part(void *arg, int worker, int workers)
{
    struct read_job *j = arg;
    size_t lo = j->n * (size_t)worker / (size_t)workers / 64 * 64;
    size_t hi = j->n * (size_t)(worker + 1) / (size_t)workers / 64 * 64;
    const float *p = j->buf;
#if defined(__AVX2__)
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = lo; i < hi; i += 64) {
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
    j->sums[worker] = out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
#else
    float acc[16] = {0};
    for (size_t i = lo; i < hi; i += 16)
        for (int k = 0; k < 16; k++)
            acc[k] += p[i + k];
    float s = 0;
    for (int k = 0; k < 16; k++)
        s += acc[k];
    j->sums[worker] = s;
#endif
}

double dram_read_bandwidth(int threads, size_t bytes, int passes)
{
    if (threads < 1)
        threads = 1;
    if (threads > 256)
        threads = 256;
    bytes = bytes / 256 * 256;
    void *buf = NULL;
    if (posix_memalign(&buf, 2u << 20, bytes) != 0)
        return 0;
#ifdef MADV_HUGEPAGE
    madvise(buf, bytes, MADV_HUGEPAGE); /* as the model's weights get */
#endif
    memset(buf, 1, bytes);
    struct threadpool *pool = threadpool_create(threads);
    if (!pool) {
        free(buf);
        return 0;
    }
    struct read_job j = {.buf = buf, .n = bytes / sizeof(float)};
    threadpool_run(pool, read_part, &j); /* warm-up */
    double best = 0;
    for (int p = 0; p < passes; p++) {
        uint64_t t0 = now_ns();
        threadpool_run(pool, read_part, &j);
        double bw = (double)bytes / ((double)(now_ns() - t0) * 1e-9);
        if (bw > best)
            best = bw;
    }
    threadpool_destroy(pool);
    free(buf);
    return best;
}
