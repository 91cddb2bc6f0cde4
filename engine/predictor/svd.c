/* Truncated SVD by randomized subspace iteration and one-sided Jacobi
 * (svd.h). Vectors are kept as arrays of columns (each contiguous) in
 * double: the orthogonalisations and rotations work on whole columns. */
#include "engine/predictor/svd.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/rng.h"
#include "engine/compute/threadpool.h"

#define JACOBI_MAX_SWEEPS 80
#define JACOBI_TOL 1e-14 /* |c_p . c_q| below this times |c_p| |c_q|: orthogonal */

struct svd_work {
    const float *w;
    uint32_t m, n, l; /* W is m x n; l columns in the subspace */
    double *q;        /* l columns of length m */
    double *z;        /* l columns of length n */
    struct rng rng;
};

static double gaussian(struct rng *r)
{
    double u1 = rng_unit(r), u2 = rng_unit(r);
    return sqrt(-2 * log(1 - u1)) * cos(6.283185307179586 * u2);
}

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* q[j][i] = sum_t W[i][t] z[j][t] for rows i in [lo, hi). Four rows at a
 * time: each sum is still one chain over t ascending (the same bits as one
 * row at a time), but four chains run side by side instead of each waiting
 * on its own additions, and each z column is read once per four rows. */
static void mul_w(void *ctx, size_t lo, size_t hi)
{
    const struct svd_work *s = ctx;
    size_t i = lo;
    for (; i + 4 <= hi; i += 4) {
        const float *r0 = s->w + i * s->n, *r1 = r0 + s->n, *r2 = r1 + s->n, *r3 = r2 + s->n;
        for (uint32_t j = 0; j < s->l; j++) {
            const double *zj = s->z + (size_t)j * s->n;
            double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            for (uint32_t t = 0; t < s->n; t++) {
                a0 += (double)r0[t] * zj[t];
                a1 += (double)r1[t] * zj[t];
                a2 += (double)r2[t] * zj[t];
                a3 += (double)r3[t] * zj[t];
            }
            double *qj = s->q + (size_t)j * s->m + i;
            qj[0] = a0, qj[1] = a1, qj[2] = a2, qj[3] = a3;
        }
    }
    for (; i < hi; i++) {
        const float *row = s->w + i * s->n;
        for (uint32_t j = 0; j < s->l; j++) {
            const double *zj = s->z + (size_t)j * s->n;
            double acc = 0;
            for (uint32_t t = 0; t < s->n; t++)
                acc += (double)row[t] * zj[t];
            s->q[(size_t)j * s->m + i] = acc;
        }
    }
}

/* z[j][t] = sum_i W[i][t] q[j][i] for columns t in [lo, hi): rows of W are
 * streamed in order, so each z element sums over i ascending. */
static void mul_wt(void *ctx, size_t lo, size_t hi)
{
    const struct svd_work *s = ctx;
    for (uint32_t j = 0; j < s->l; j++)
        memset(s->z + (size_t)j * s->n + lo, 0, (hi - lo) * sizeof(double));
    /* four rows per pass over z, added one after another as before (the
     * same bits): a quarter of the traffic through z */
    uint32_t i = 0;
    for (; i + 4 <= s->m; i += 4) {
        const float *r0 = s->w + (size_t)i * s->n, *r1 = r0 + s->n, *r2 = r1 + s->n, *r3 = r2 + s->n;
        for (uint32_t j = 0; j < s->l; j++) {
            const double *qj = s->q + (size_t)j * s->m + i;
            double y0 = qj[0], y1 = qj[1], y2 = qj[2], y3 = qj[3];
            double *zj = s->z + (size_t)j * s->n;
            for (size_t t = lo; t < hi; t++)
                zj[t] = zj[t] + y0 * r0[t] + y1 * r1[t] + y2 * r2[t] + y3 * r3[t];
        }
    }
    for (; i < s->m; i++) {
        const float *row = s->w + (size_t)i * s->n;
        for (uint32_t j = 0; j < s->l; j++) {
            double y = s->q[(size_t)j * s->m + i];
            double *zj = s->z + (size_t)j * s->n;
            for (size_t t = lo; t < hi; t++)
                zj[t] += y * row[t];
        }
    }
}

static void fill_gaussian(double *v, size_t n, struct rng *r)
{
    for (size_t i = 0; i < n; i++)
        v[i] = gaussian(r);
}

/* Orthonormal columns v[0..l) of length n by modified Gram-Schmidt, twice
 * per column; a column that vanishes (W of lower rank than l) is replaced
 * by a fresh random one, so the basis stays full. */
static void orthonormalize(double *v, uint32_t l, size_t n, struct rng *r)
{
    for (uint32_t j = 0; j < l; j++) {
        double *vj = v + (size_t)j * n;
        for (int attempt = 0; attempt < 8; attempt++) {
            double before = sqrt(dot(vj, vj, n));
            for (int pass = 0; pass < 2; pass++)
                for (uint32_t i = 0; i < j; i++) {
                    const double *vi = v + (size_t)i * n;
                    double p = dot(vj, vi, n);
                    for (size_t t = 0; t < n; t++)
                        vj[t] -= p * vi[t];
                }
            double norm = sqrt(dot(vj, vj, n));
            if (norm > 1e-10 * before && norm > 1e-300) {
                for (size_t t = 0; t < n; t++)
                    vj[t] /= norm;
                break;
            }
            fill_gaussian(vj, n, r);
        }
    }
}

/* Rotates columns c_p, c_q (and J's) so that c_p . c_q = 0; 1 if it did. */
static int jacobi_pair(double *cp, double *cq, size_t n, double *jp, double *jq, uint32_t l)
{
    /* the three sums in one pass, each still in index order */
    double a = 0, b = 0, g = 0;
    for (size_t i = 0; i < n; i++) {
        a += cp[i] * cp[i];
        b += cq[i] * cq[i];
        g += cp[i] * cq[i];
    }
    if (a == 0 || b == 0 || fabs(g) <= JACOBI_TOL * sqrt(a * b))
        return 0;
    double zeta = (b - a) / (2 * g);
    double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1 + zeta * zeta));
    double cs = 1 / sqrt(1 + t * t), sn = cs * t;
    for (size_t i = 0; i < n; i++) {
        double x = cp[i];
        cp[i] = cs * x - sn * cq[i];
        cq[i] = sn * x + cs * cq[i];
    }
    for (uint32_t i = 0; i < l; i++) {
        double x = jp[i];
        jp[i] = cs * x - sn * jq[i];
        jq[i] = sn * x + cs * jq[i];
    }
    return 1;
}

/* One-sided Jacobi on the l columns of c (length n): afterwards they are
 * mutually orthogonal and j (l columns of length l) holds the rotation. */
static void jacobi(double *c, size_t n, double *j, uint32_t l)
{
    memset(j, 0, (size_t)l * l * sizeof *j);
    for (uint32_t i = 0; i < l; i++)
        j[(size_t)i * l + i] = 1;
    for (int sweep = 0; sweep < JACOBI_MAX_SWEEPS; sweep++) {
        int rotated = 0;
        for (uint32_t p = 0; p + 1 < l; p++)
            for (uint32_t q = p + 1; q < l; q++)
                rotated += jacobi_pair(c + (size_t)p * n, c + (size_t)q * n, n, j + (size_t)p * l,
                                       j + (size_t)q * l, l);
        if (!rotated)
            break;
    }
}

/* The column order by descending norm (ties: the lower index first). */
static void order_by_norm(const double *norm, uint32_t l, uint32_t *idx)
{
    for (uint32_t i = 0; i < l; i++) {
        uint32_t at = i;
        while (at > 0 && norm[idx[at - 1]] < norm[i]) {
            idx[at] = idx[at - 1];
            at--;
        }
        idx[at] = i;
    }
}

/* Writes the top k triplets from C J = V S (c) and U = Q J; acc: m
 * doubles of scratch (U's column is summed over Q's columns in order, a
 * whole column at a time: Q's columns are contiguous, its rows are not). */
static void emit(const struct svd_work *s, const double *j, double *norm, uint32_t *idx, uint32_t k, float *u,
                 float *sv, float *vt, double *acc)
{
    uint32_t l = s->l;
    for (uint32_t i = 0; i < l; i++)
        norm[i] = sqrt(dot(s->z + (size_t)i * s->n, s->z + (size_t)i * s->n, s->n));
    order_by_norm(norm, l, idx);
    double top = norm[idx[0]];
    for (uint32_t o = 0; o < k; o++) {
        uint32_t c = idx[o];
        bool zero = norm[c] <= 1e-13 * top || norm[c] == 0;
        sv[o] = zero ? 0.0f : (float)norm[c];
        const double *col = s->z + (size_t)c * s->n;
        for (uint32_t t = 0; t < s->n; t++)
            vt[(size_t)o * s->n + t] = zero ? 0.0f : (float)(col[t] / norm[c]);
        const double *jc = j + (size_t)c * l;
        memset(acc, 0, s->m * sizeof *acc);
        for (uint32_t r = 0; r < l; r++) {
            const double *qr = s->q + (size_t)r * s->m;
            for (uint32_t i = 0; i < s->m; i++)
                acc[i] += qr[i] * jc[r];
        }
        for (uint32_t i = 0; i < s->m; i++)
            u[(size_t)i * k + o] = zero ? 0.0f : (float)acc[i];
    }
}

int svd_truncated(const float *w, uint32_t rows, uint32_t cols, uint32_t k, const struct svd_config *c,
                  struct threadpool *pool, float *u, float *s, float *vt, char *err, size_t errlen)
{
    uint32_t most = rows < cols ? rows : cols;
    if (k < 1 || k > most)
        return err_set(err, errlen, "SVD: rank %u is not 1 to %u (a %u x %u matrix)", k, most, rows, cols);
    struct svd_work sw = {.w = w, .m = rows, .n = cols};
    sw.l = k + c->oversample < most ? k + c->oversample : most;
    rng_seed(&sw.rng, c->seed);
    sw.q = malloc((size_t)sw.l * rows * sizeof *sw.q);
    sw.z = malloc((size_t)sw.l * cols * sizeof *sw.z);
    double *j = malloc((size_t)sw.l * sw.l * sizeof *j), *norm = calloc(sw.l, sizeof *norm);
    double *acc = malloc((size_t)rows * sizeof *acc);
    uint32_t *idx = calloc(sw.l, sizeof *idx);
    if (!sw.q || !sw.z || !j || !norm || !idx || !acc) {
        free(sw.q), free(sw.z), free(j), free(norm), free(idx), free(acc);
        return err_set(err, errlen, "SVD: cannot allocate the subspace of a %u x %u matrix (%u columns)", rows, cols,
                       sw.l);
    }
    fill_gaussian(sw.z, (size_t)sw.l * cols, &sw.rng);
    threadpool_for(pool, rows, mul_w, &sw); /* Q = W Omega */
    orthonormalize(sw.q, sw.l, rows, &sw.rng);
    for (uint32_t it = 0; it < c->iterations; it++) {
        threadpool_for(pool, cols, mul_wt, &sw);
        orthonormalize(sw.z, sw.l, cols, &sw.rng);
        threadpool_for(pool, rows, mul_w, &sw);
        orthonormalize(sw.q, sw.l, rows, &sw.rng);
    }
    threadpool_for(pool, cols, mul_wt, &sw); /* C = W^T Q, l columns of length n */
    jacobi(sw.z, cols, j, sw.l);
    emit(&sw, j, norm, idx, k, u, s, vt, acc);
    free(sw.q), free(sw.z), free(j), free(norm), free(idx), free(acc);
    return 0;
}
