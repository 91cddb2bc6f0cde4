/* Starting weights for activation predictors, before training (or as the
 * predictor itself: `--init svd --epochs 0` is a training-free one).
 *
 * svd: a truncated SVD (svd.h) of the matrix whose rows decide each
 * neuron, W ~ U_r S_r V_r^T, gives A = V_r^T (r x d_model), B = U_r S_r
 * (d_ff x r), so B·(A·x) is the best rank-r approximation of W·x:
 *   - FFNs without a gate: W is the up projection and the bias the up
 *     bias, so the logits approximate the pre-activation up·x + b and
 *     sigmoid > 0.5 approximates "ReLU output > 0" (squared ReLU's too);
 *     at full rank (r = min(d_model, d_ff)) it is exact. For GELU FFNs and
 *     FATReLU's threshold it is only a start: "z > 0" is not their rule.
 *   - GLU FFNs: W is the gate projection and the bias 0, so the logits
 *     approximate the gate's pre-activation and sigmoid > 0.5 says "the
 *     gate is open" (gate·x > 0), the rank-r version of App. C.5's
 *     gate-as-predictor. It knows nothing of the up factor or of
 *     act_threshold: on SwiGLU it marks about the half of the neurons whose
 *     gate is positive, a superset of the large |act(gate)·up| ones but
 *     not all of them (silu is nonzero below 0); training moves from there.
 * random: A ~ N(0, 1/d_model), B ~ N(0, 1/r), bias 0.
 *
 * Deterministic for a seed (each layer draws from its own stream), whatever
 * the thread count. The model's FFN must be in DRAM. Returns 0, or -1 with
 * the reason in err. */
#ifndef FLASHBED_ENGINE_PREDICTOR_INIT_H
#define FLASHBED_ENGINE_PREDICTOR_INIT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/model/model.h"
#include "engine/predictor/predictor.h"

enum predictor_init { PREDICTOR_INIT_SVD, PREDICTOR_INIT_RANDOM };

/* "svd" or "random"; 0 or -1. */
int predictor_init_parse(const char *s, enum predictor_init *out);
const char *predictor_init_name(enum predictor_init i);

/* The SVD's subspace iterations (svd.h) when none are asked for: enough
 * for the top directions of a weight matrix to double precision's use. A
 * start for training needs fewer: each one costs two products with W. */
#define PREDICTOR_SVD_ITERATIONS 6

/* Fills every layer of p (allocated for m's shape, target set) from m's
 * weights; threads for the SVD's products, svd_iterations its subspace
 * iterations. random reads nothing of m (which may then be NULL). */
int predictor_init_weights(struct predictor *p, const struct model *m, enum predictor_init how, uint64_t seed,
                           uint32_t svd_iterations, int threads, char *err, size_t errlen);

#endif
