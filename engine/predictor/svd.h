/* A truncated singular value decomposition, W ~ U_k diag(S_k) V_k^T, for
 * initialising activation predictors from a layer's up (or gate)
 * projection (the paper's §3.1 low-rank predictor; predictor_init.h).
 *
 * Method (Halko, Martinsson & Tropp 2011): randomized subspace iteration
 * in double. Q = orth(W Omega) for a Gaussian Omega of k + oversample
 * columns, then `iterations` rounds of Q = orth(W orth(W^T Q)), each orth a
 * modified Gram-Schmidt done twice ("twice is enough"); the small problem
 * C = W^T Q is then diagonalised exactly by one-sided Jacobi rotations
 * (Hestenes), whose column norms are the singular values. When
 * k + oversample reaches min(rows, cols) the subspace is all of W's and the
 * result is W's exact SVD (to double rounding). Otherwise the error in the
 * j-th value shrinks as (s_{l+1} / s_j)^(2 iterations + 1).
 *
 * Deterministic: a given seed gives the same bits whatever the thread count
 * (every output element is summed by one thread in a fixed order).
 * Singular directions of a zero singular value are returned as zeros.
 * Returns 0, or -1 with the reason in err (a bad k, out of memory). */
#ifndef FLASHBED_ENGINE_SVD_H
#define FLASHBED_ENGINE_SVD_H

#include <stddef.h>
#include <stdint.h>

struct threadpool;

struct svd_config {
    uint32_t oversample; /* extra directions sampled beyond k (10 is the usual) */
    uint32_t iterations; /* subspace (power) iterations */
    uint64_t seed;       /* the Gaussian test matrix */
};

#define SVD_CONFIG_DEFAULT {.oversample = 10, .iterations = 6, .seed = 1}

/* w: rows x cols, row-major f32. Out: u rows x k (row-major), s[k]
 * descending, vt k x cols (row-major): the top k right singular vectors.
 * 1 <= k <= min(rows, cols). pool: threads for the products (NULL: this
 * thread only). */
int svd_truncated(const float *w, uint32_t rows, uint32_t cols, uint32_t k, const struct svd_config *c,
                  struct threadpool *pool, float *u, float *s, float *vt, char *err, size_t errlen);

#endif
