/* The truncated SVD (engine/predictor/svd.h) on matrices of known spectrum:
 * W = U diag(s) V^T from random orthonormal U, V. The top singular values
 * come back to within rounding, the vectors are orthonormal and span
 * W's; a full-rank request reconstructs W; thread counts give the same
 * bits; bad ranks are refused. */
#include "check.h"

#include <math.h>
#include <stdlib.h>

#include "common/rng.h"
#include "engine/compute/threadpool.h"
#include "engine/predictor/svd.h"

enum { M = 150, N = 48 };

static double gauss(struct rng *r)
{
    double u1 = rng_unit(r), u2 = rng_unit(r);
    return sqrt(-2 * log(1 - u1)) * cos(6.283185307179586 * u2);
}

/* k orthonormal columns of length n (column-major) by Gram-Schmidt. */
static void random_orthonormal(double *q, int n, int k, struct rng *r)
{
    for (int j = 0; j < k; j++) {
        double *v = q + (size_t)j * n;
        for (int i = 0; i < n; i++)
            v[i] = gauss(r);
        for (int pass = 0; pass < 2; pass++)
            for (int p = 0; p < j; p++) {
                double d = 0;
                for (int i = 0; i < n; i++)
                    d += v[i] * q[(size_t)p * n + i];
                for (int i = 0; i < n; i++)
                    v[i] -= d * q[(size_t)p * n + i];
            }
        double norm = 0;
        for (int i = 0; i < n; i++)
            norm += v[i] * v[i];
        for (int i = 0; i < n; i++)
            v[i] /= sqrt(norm);
    }
}

/* W (M x N, row-major f32) with singular values s[0..N). */
static void planted(float *w, const double *s, uint64_t seed)
{
    static double u[M * N], v[N * N];
    struct rng r;
    rng_seed(&r, seed);
    random_orthonormal(u, M, N, &r);
    random_orthonormal(v, N, N, &r);
    for (int i = 0; i < M; i++)
        for (int t = 0; t < N; t++) {
            double acc = 0;
            for (int k = 0; k < N; k++)
                acc += u[(size_t)k * M + i] * s[k] * v[(size_t)k * N + t];
            w[(size_t)i * N + t] = (float)acc;
        }
}

/* max |Q^T Q - I| over the k columns of q (stride between elements of a column: step). */
static double orthonormality(const float *q, int len, int k, size_t col_step, size_t elem_step)
{
    double worst = 0;
    for (int a = 0; a < k; a++)
        for (int b = 0; b < k; b++) {
            double d = 0;
            for (int i = 0; i < len; i++)
                d += (double)q[a * col_step + i * elem_step] * q[b * col_step + i * elem_step];
            worst = fmax(worst, fabs(d - (a == b)));
        }
    return worst;
}

static void test_decaying(void)
{
    double s[N];
    for (int k = 0; k < N; k++)
        s[k] = 10.0 * pow(0.8, k);
    static float w[M * N], u[M * N], vt[N * N], sv[N];
    planted(w, s, 3);
    char err[256];
    struct svd_config c = SVD_CONFIG_DEFAULT;
    enum { K = 8 };
    CHECK(svd_truncated(w, M, N, K, &c, NULL, u, sv, vt, err, sizeof err) == 0);
    for (int k = 0; k < K; k++)
        CHECK_NEAR(sv[k] / s[k], 1.0, 1e-5);
    CHECK(orthonormality(vt, N, K, N, 1) < 1e-5);      /* rows of V^T */
    CHECK(orthonormality(u, M, K, 1, K) < 1e-5);       /* columns of U */
    /* W^T u_k = s_k v_k: the pairs belong together */
    double worst = 0;
    for (int k = 0; k < K; k++)
        for (int t = 0; t < N; t++) {
            double acc = 0;
            for (int i = 0; i < M; i++)
                acc += (double)w[(size_t)i * N + t] * u[(size_t)i * K + k];
            worst = fmax(worst, fabs(acc - sv[k] * vt[(size_t)k * N + t]));
        }
    CHECK(worst < 1e-4);
}

/* k + oversample >= min(M, N): the whole SVD, exact; W comes back. */
static void test_full(void)
{
    double s[N];
    for (int k = 0; k < N; k++)
        s[k] = 1.0 + (N - k) * 0.25; /* a flat spectrum: no gap helps */
    static float w[M * N], u[M * N], vt[N * N], sv[N];
    planted(w, s, 5);
    char err[256];
    struct svd_config c = SVD_CONFIG_DEFAULT;
    c.iterations = 0;
    CHECK(svd_truncated(w, M, N, N, &c, NULL, u, sv, vt, err, sizeof err) == 0);
    for (int k = 0; k < N; k++)
        CHECK_NEAR(sv[k], s[k], 1e-4 * s[k]);
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int t = 0; t < N; t++) {
            double acc = 0;
            for (int k = 0; k < N; k++)
                acc += (double)u[(size_t)i * N + k] * sv[k] * vt[(size_t)k * N + t];
            worst = fmax(worst, fabs(acc - w[(size_t)i * N + t]));
        }
    CHECK(worst < 1e-5);
}

/* Rank-deficient W: its three values, then rounding noise. */
static void test_rank_deficient(void)
{
    double s[N] = {0};
    s[0] = 4, s[1] = 2, s[2] = 1;
    static float w[M * N], u[M * N], vt[N * N], sv[N];
    planted(w, s, 7);
    char err[256];
    struct svd_config c = SVD_CONFIG_DEFAULT;
    CHECK(svd_truncated(w, M, N, 6, &c, NULL, u, sv, vt, err, sizeof err) == 0);
    CHECK_NEAR(sv[0], 4, 1e-5);
    CHECK_NEAR(sv[2], 1, 1e-5);
    /* W in f32 is rank 3 only to its rounding: the rest are at that level */
    CHECK(sv[3] < 1e-5 && sv[5] < 1e-5);
}

static void test_threads_and_refusals(void)
{
    double s[N];
    for (int k = 0; k < N; k++)
        s[k] = 3.0 / (1 + k);
    static float w[M * N], u1[M * 12], u3[M * 12], v1[12 * N], v3[12 * N], s1[12], s3[12];
    planted(w, s, 9);
    char err[256];
    struct svd_config c = SVD_CONFIG_DEFAULT;
    struct threadpool *pool = threadpool_create(3);
    CHECK(svd_truncated(w, M, N, 12, &c, NULL, u1, s1, v1, err, sizeof err) == 0);
    CHECK(svd_truncated(w, M, N, 12, &c, pool, u3, s3, v3, err, sizeof err) == 0);
    CHECK(memcmp(u1, u3, sizeof u1) == 0 && memcmp(s1, s3, sizeof s1) == 0 && memcmp(v1, v3, sizeof v1) == 0);
    threadpool_destroy(pool);
    CHECK(svd_truncated(w, M, N, 0, &c, NULL, u1, s1, v1, err, sizeof err) == -1);
    CHECK(svd_truncated(w, M, N, N + 1, &c, NULL, u1, s1, v1, err, sizeof err) == -1);
    CHECK(strstr(err, "rank 49 is not 1 to 48") != NULL);
}

int main(void)
{
    test_decaying();
    test_full();
    test_rank_deficient();
    test_threads_and_refusals();
    return check_report("test_svd");
}
