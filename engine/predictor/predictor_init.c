/* Predictor starting weights (predictor_init.h). */
#include "engine/predictor/predictor_init.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/rng.h"
#include "engine/compute/threadpool.h"
#include "engine/model/ffn_matrix.h"
#include "engine/predictor/svd.h"

int predictor_init_parse(const char *s, enum predictor_init *out)
{
    if (!strcmp(s, "svd"))
        *out = PREDICTOR_INIT_SVD;
    else if (!strcmp(s, "random"))
        *out = PREDICTOR_INIT_RANDOM;
    else
        return -1;
    return 0;
}

const char *predictor_init_name(enum predictor_init i)
{
    return i == PREDICTOR_INIT_RANDOM ? "random" : "svd";
}

/* A seed per layer, so that layers do not share a stream. */
static uint64_t layer_seed(uint64_t seed, uint32_t layer)
{
    uint64_t x = seed ^ (0x5bd1e9955bd1e995ull * (layer + 1));
    return rng_splitmix(&x);
}

static double gaussian(struct rng *r)
{
    double u1 = rng_unit(r), u2 = rng_unit(r);
    return sqrt(-2 * log(1 - u1)) * cos(6.283185307179586 * u2);
}

static void random_layer(uint32_t rank, uint32_t d, uint32_t f, uint64_t seed, float *a, float *b, float *bias)
{
    struct rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < (size_t)rank * d; i++)
        a[i] = (float)(gaussian(&r) / sqrt((double)d));
    for (size_t i = 0; i < (size_t)f * rank; i++)
        b[i] = (float)(gaussian(&r) / sqrt((double)rank));
    memset(bias, 0, f * sizeof *bias);
}

/* A = V^T, B = U S; bias: the up bias for ReLU, 0 for GLU. */
static int svd_layer(const struct model *m, uint32_t l, uint32_t rank, const struct svd_config *c,
                     struct threadpool *pool, float *w, float *s, float *a, float *b, float *bias, char *err,
                     size_t errlen)
{
    uint32_t d = m->shape.d_model, f = m->shape.d_ff;
    ffn_matrix_f32(m, l, m->arch.glu ? FFN_PART_GATE : FFN_PART_UP, w);
    if (svd_truncated(w, f, d, rank, c, pool, b, s, a, err, errlen) != 0)
        return -1;
    for (uint32_t i = 0; i < f; i++)
        for (uint32_t k = 0; k < rank; k++)
            b[(size_t)i * rank + k] *= s[k];
    const float *ub = m->layers[l].ffn_up_bias;
    for (uint32_t i = 0; i < f; i++)
        bias[i] = !m->arch.glu && ub ? ub[i] : 0.0f;
    return 0;
}

int predictor_init_weights(struct predictor *p, const struct model *m, enum predictor_init how, uint64_t seed,
                           uint32_t svd_iterations, int threads, char *err, size_t errlen)
{
    uint32_t d = p->d_model, f = p->d_ff, rmax = predictor_max_rank(p);
    if (how == PREDICTOR_INIT_SVD && m->shape.n_layers && !m->layers[0].ffn_bundles)
        return err_set(err, errlen, "the SVD initialisation needs the FFN in DRAM (%s stays on flash)", m->ffn_path);
    float *a = malloc((size_t)rmax * d * sizeof *a), *b = malloc((size_t)f * rmax * sizeof *b);
    float *bias = malloc(f * sizeof *bias), *w = malloc((size_t)f * d * sizeof *w), *s = malloc(rmax * sizeof *s);
    struct threadpool *pool = how == PREDICTOR_INIT_SVD && threads > 1 ? threadpool_create(threads) : NULL;
    int rc = a && b && bias && w && s ? 0 : err_set(err, errlen, "predictor initialisation: out of memory");
    for (uint32_t l = 0; rc == 0 && l < p->n_layers; l++) {
        uint32_t rank = p->layers[l].rank;
        struct svd_config c = SVD_CONFIG_DEFAULT;
        c.seed = layer_seed(seed, l);
        c.iterations = svd_iterations;
        if (how == PREDICTOR_INIT_RANDOM)
            random_layer(rank, d, f, c.seed, a, b, bias);
        else
            rc = svd_layer(m, l, rank, &c, pool, w, s, a, b, bias, err, errlen);
        if (rc == 0)
            predictor_set_layer(p, l, a, b, bias);
    }
    threadpool_destroy(pool);
    free(a), free(b), free(bias), free(w), free(s);
    return rc;
}
