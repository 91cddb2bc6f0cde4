#include "harness/calibrate.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/rng.h"

double measure_row_copy(size_t row_bytes, double seconds, double *ns_per_row)
{
    /* 512 MiB of rows: well past any last-level cache. */
    size_t n_rows = ((size_t)512 << 20) / row_bytes;
    if (n_rows < 64)
        n_rows = 64;
    char *buf = malloc(n_rows * row_bytes);
    if (!buf)
        return 0;
    memset(buf, 1, n_rows * row_bytes);
    struct rng r;
    rng_seed(&r, 42);
    uint64_t copies = 0, t0 = now_ns(), deadline = t0 + (uint64_t)(seconds * 1e9), t = t0;
    while (t < deadline) {
        for (int i = 0; i < 64; i++) {
            size_t dst = (size_t)rng_below(&r, n_rows), src = (size_t)rng_below(&r, n_rows);
            if (dst != src)
                memcpy(buf + dst * row_bytes, buf + src * row_bytes, row_bytes);
        }
        copies += 64;
        t = now_ns();
    }
    /* Keep the copies observable so they are not optimised away. */
    volatile char sink = buf[rng_below(&r, n_rows * row_bytes)];
    (void)sink;
    free(buf);
    double secs = (double)(t - t0) * 1e-9;
    if (ns_per_row)
        *ns_per_row = secs * 1e9 / (double)copies;
    return (double)copies * (double)row_bytes / secs;
}

/* IEEE half to float, for the f16 matrix-vector product. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        float sub = (float)man * 5.9604645e-8f; /* man x 2^-24 */
        return sign ? -sub : sub;
    }
    if (exp == 31)
        bits = sign | 0x7f800000u | (man << 13);
    else
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

struct mv_job {
    const void *w;
    const float *x;
    float *y;
    size_t row0, row1, cols;
    int half;
};

static void *mv_worker(void *arg)
{
    struct mv_job *j = arg;
    for (size_t r = j->row0; r < j->row1; r++) {
        float acc = 0;
        if (j->half) {
            const uint16_t *row = (const uint16_t *)j->w + r * j->cols;
            for (size_t c = 0; c < j->cols; c++)
                acc += half_to_float(row[c]) * j->x[c];
        } else {
            const float *row = (const float *)j->w + r * j->cols;
            for (size_t c = 0; c < j->cols; c++)
                acc += row[c] * j->x[c];
        }
        j->y[r] = acc;
    }
    return NULL;
}

double measure_matvec(size_t rows, size_t cols, int half, unsigned threads, double seconds,
                      double *flops)
{
    size_t esize = half ? 2 : 4;
    void *w = malloc(rows * cols * esize);
    float *x = malloc(cols * sizeof *x), *y = malloc(rows * sizeof *y);
    if (!w || !x || !y) {
        free(w);
        free(x);
        free(y);
        return 0;
    }
    for (size_t i = 0; i < cols; i++)
        x[i] = 1.0f / (float)(i + 1);
    if (half) {
        uint16_t *h = w;
        for (size_t i = 0; i < rows * cols; i++)
            h[i] = 0x3c00; /* 1.0 */
    } else {
        float *f = w;
        for (size_t i = 0; i < rows * cols; i++)
            f[i] = 1.0f;
    }
    if (threads < 1)
        threads = 1;
    struct mv_job *jobs = calloc(threads, sizeof *jobs);
    pthread_t *tids = calloc(threads, sizeof *tids);
    uint64_t passes = 0, t0 = now_ns(), t = t0;
    while (jobs && tids && (t - t0 < (uint64_t)(seconds * 1e9) || passes < 2)) {
        for (unsigned i = 0; i < threads; i++) {
            jobs[i] = (struct mv_job){w, x, y, rows * i / threads, rows * (i + 1) / threads, cols, half};
            pthread_create(&tids[i], NULL, mv_worker, &jobs[i]);
        }
        for (unsigned i = 0; i < threads; i++)
            pthread_join(tids[i], NULL);
        passes++;
        t = now_ns();
    }
    double secs = (double)(t - t0) * 1e-9;
    free(jobs);
    free(tids);
    free(w);
    free(x);
    free(y);
    if (flops)
        *flops = 2.0 * (double)rows * (double)cols * (double)passes / secs;
    return (double)rows * (double)cols * (double)esize * (double)passes / secs;
}
