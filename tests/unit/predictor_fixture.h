/* Activation predictors for tests, built in memory from a model's own
 * weights (training is not the point of these tests):
 *
 *   exact  rank d_model, A = the identity, B = the up rows, bias = the up
 *          bias: the logit is up·x + b, computed by the same matvec as the
 *          oracle's, so at threshold 0.5 (logit > 0) it predicts exactly
 *          the neurons of a ReLU FFN whose activation is not zero
 *   every  threshold 0: every neuron (density 1)
 *   weak   rank 1, random A and B, bias 0, threshold 0.5: about half the
 *          neurons, unrelated to the true ones
 *   slice:R  rank R: A picks x's first R coordinates, B the up rows' first
 *          R columns scaled by sqrt(d_model / R), bias the up bias: a
 *          logit of the true one's scale (about the true density) that
 *          only partly agrees with it: a stand-in of a given size, for
 *          timing the predictor beside the flash reads
 *
 * Stored in f16 for an f16 model (as the cost model prices it), else f32.
 * The model must hold its FFN in DRAM (model_open). 0, or -1 with err. */
#ifndef FLASHBED_TESTS_PREDICTOR_FIXTURE_H
#define FLASHBED_TESTS_PREDICTOR_FIXTURE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/rng.h"
#include "engine/model/model.h"
#include "engine/predictor/predictor.h"

static inline void fixture_exact_layer(const struct model *m, uint32_t l, float *a, float *b, float *bias)
{
    uint32_t d = m->shape.d_model, n = m->shape.d_ff;
    memset(a, 0, (size_t)d * d * sizeof *a);
    for (uint32_t i = 0; i < d; i++)
        a[(size_t)i * d + i] = 1.0f;
    const uint8_t *bundles = m->layers[l].ffn_bundles;
    for (uint32_t i = 0; i < n; i++) /* the up row opens each bundle */
        dtype_to_f32(b + (size_t)i * d, bundles + (size_t)i * m->bundle_stride, m->dtype, d);
    for (uint32_t i = 0; i < n; i++)
        bias[i] = m->layers[l].ffn_up_bias ? m->layers[l].ffn_up_bias[i] : 0.0f;
}

static inline void fixture_weak_layer(const struct model *m, struct rng *r, float *a, float *b, float *bias)
{
    for (uint32_t i = 0; i < m->shape.d_model; i++)
        a[i] = 2 * (float)rng_unit(r) - 1;
    for (uint32_t i = 0; i < m->shape.d_ff; i++) {
        b[i] = 2 * (float)rng_unit(r) - 1;
        bias[i] = 0;
    }
}

static inline void fixture_slice_layer(const struct model *m, uint32_t l, uint32_t r, float *a, float *b, float *bias)
{
    uint32_t d = m->shape.d_model, n = m->shape.d_ff;
    float *row = malloc(d * sizeof *row), scale = sqrtf((float)d / (float)r);
    memset(a, 0, (size_t)r * d * sizeof *a);
    for (uint32_t k = 0; k < r; k++)
        a[(size_t)k * d + k] = 1.0f;
    const uint8_t *bundles = m->layers[l].ffn_bundles;
    for (uint32_t i = 0; row && i < n; i++) {
        dtype_to_f32(row, bundles + (size_t)i * m->bundle_stride, m->dtype, d);
        for (uint32_t k = 0; k < r; k++)
            b[(size_t)i * r + k] = scale * row[k];
        bias[i] = m->layers[l].ffn_up_bias ? m->layers[l].ffn_up_bias[i] : 0.0f;
    }
    free(row);
}

/* kind: "exact", "every", "weak" or "slice:R". */
static inline int fixture_predictor(const struct model *m, const char *kind, uint64_t seed, struct predictor *p,
                                    char *err, size_t errlen)
{
    uint32_t L = m->shape.n_layers, d = m->shape.d_model, n = m->shape.d_ff;
    bool exact = !strcmp(kind, "exact");
    uint32_t slice = !strncmp(kind, "slice:", 6) ? (uint32_t)strtoul(kind + 6, NULL, 10) : 0;
    if (!exact && !slice && strcmp(kind, "every") && strcmp(kind, "weak"))
        return err_set(err, errlen, "unknown predictor kind '%s' (exact, every, weak, slice:R)", kind);
    if (slice > d)
        return err_set(err, errlen, "slice:%u passes d_model %u", slice, d);
    if (!m->ffn)
        return err_set(err, errlen, "the model's FFN is not in DRAM");
    uint32_t *ranks = malloc(L * sizeof *ranks);
    float *a = malloc((size_t)d * d * sizeof *a), *b = malloc((size_t)n * d * sizeof *b), *bias = malloc(n * sizeof *bias);
    int rc = ranks && a && b && bias ? 0 : err_set(err, errlen, "out of memory");
    for (uint32_t l = 0; rc == 0 && l < L; l++)
        ranks[l] = exact ? d : slice ? slice : 1;
    if (rc == 0)
        rc = predictor_alloc(p, L, d, n, ranks, m->dtype == DTYPE_F16 ? DTYPE_F16 : DTYPE_F32, err, errlen);
    struct rng r;
    rng_seed(&r, seed);
    for (uint32_t l = 0; rc == 0 && l < L; l++) {
        if (exact)
            fixture_exact_layer(m, l, a, b, bias);
        else if (slice)
            fixture_slice_layer(m, l, slice, a, b, bias);
        else
            fixture_weak_layer(m, &r, a, b, bias);
        predictor_set_layer(p, l, a, b, bias);
    }
    if (rc == 0)
        predictor_set_threshold(p, !strcmp(kind, "every") ? 0.0 : 0.5);
    free(ranks);
    free(a);
    free(b);
    free(bias);
    return rc;
}

#endif
