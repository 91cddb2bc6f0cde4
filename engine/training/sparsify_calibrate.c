/* Choosing the sparsity thresholds on a calibration text (sparsify_calibrate.h). */
#include "engine/training/sparsify_calibrate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/compute/activation.h"
#include "engine/model/ffn_matrix.h"

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static float cut_sorted(const float *v, size_t n, double share)
{
    size_t k = (size_t)floor(share * (double)n + 1e-9);
    if (k == 0 || n == 0)
        return -1.0f;
    return v[(k > n ? n : k) - 1];
}

float sparsify_cut(float *v, size_t n, double share)
{
    if (cut_sorted(v, n, share) < 0)
        return -1.0f;
    qsort(v, n, sizeof *v, cmp_float);
    return cut_sorted(v, n, share);
}

size_t sparsify_pool_count(size_t n)
{
    return n < SPARSIFY_POOL_PER_LAYER ? n : SPARSIFY_POOL_PER_LAYER;
}

void sparsify_pool_add(const float *sorted, size_t n, float *pool)
{
    size_t q = sparsify_pool_count(n);
    for (size_t i = 0; i < q; i++) /* the largest value of the i-th of q equal runs */
        pool[i] = sorted[(size_t)(((unsigned long long)(i + 1) * n) / q) - 1];
}

/* A row of w[d] dotted with x[d], in double. */
static double dot_d(const float *w, const float *x, uint32_t d)
{
    double s = 0;
    for (uint32_t j = 0; j < d; j++)
        s += (double)w[j] * x[j];
    return s;
}

/* One layer's up or gate rows, widened to f32. */
static float *layer_rows(const struct model *m, uint32_t layer, enum ffn_part part, char *err, size_t errlen)
{
    float *w = malloc((size_t)m->shape.d_ff * m->shape.d_model * sizeof *w);
    if (!w)
        err_set(err, errlen, "out of memory for layer %u's rows", layer);
    else
        ffn_matrix_f32(m, layer, part, w);
    return w;
}

int sparsify_gate_values(const struct model *m, const struct predictor_samples *s, uint32_t layer, float *out,
                         char *err, size_t errlen)
{
    const struct arch *a = &m->arch;
    uint32_t d = m->shape.d_model, f = m->shape.d_ff;
    float *gate = layer_rows(m, layer, FFN_PART_GATE, err, errlen);
    if (!gate)
        return -1;
    for (size_t r = 0; r < s->n_rows; r++) {
        const float *x = samples_x(s, layer, r);
        for (uint32_t i = 0; i < f; i++)
            out[r * f + i] = fabsf(activation_apply_t((float)dot_d(gate + (size_t)i * d, x, d), a->act,
                                                      a->fatrelu_threshold));
    }
    free(gate);
    return 0;
}

void sparsify_input_values(const struct predictor_samples *s, uint32_t layer, float *out)
{
    for (size_t r = 0; r < s->n_rows; r++) {
        const float *x = samples_x(s, layer, r);
        for (uint32_t j = 0; j < s->d_model; j++)
            out[r * s->d_model + j] = fabsf(x[j]);
    }
}

/* |h| of one row over x' (the kept channels). */
static void inter_row(const struct model *m, uint32_t layer, const float *up, const float *gate, const float *xs,
                      float *out)
{
    const struct arch *a = &m->arch;
    const float *bias = m->layers[layer].ffn_up_bias;
    uint32_t d = m->shape.d_model;
    for (uint32_t i = 0; i < m->shape.d_ff; i++) {
        float z = (float)(dot_d(up + (size_t)i * d, xs, d) + (bias ? bias[i] : 0));
        float h = a->glu ? activation_apply_t((float)dot_d(gate + (size_t)i * d, xs, d), a->act,
                                              a->fatrelu_threshold) * z
                         : activation_apply_t(z, a->act, a->fatrelu_threshold);
        out[i] = fabsf(h);
    }
}

int sparsify_inter_values(const struct model *m, const struct predictor_samples *s, uint32_t layer,
                          float input_cut, float *out, char *err, size_t errlen)
{
    uint32_t d = m->shape.d_model;
    float *up = layer_rows(m, layer, FFN_PART_UP, err, errlen);
    float *gate = up && m->arch.glu ? layer_rows(m, layer, FFN_PART_GATE, err, errlen) : NULL;
    float *xs = malloc(d * sizeof *xs);
    int rc = up && (gate || !m->arch.glu) ? 0 : -1;
    if (rc == 0 && !xs)
        rc = err_set(err, errlen, "out of memory for layer %u's input", layer);
    for (size_t r = 0; rc == 0 && r < s->n_rows; r++) {
        const float *x = samples_x(s, layer, r);
        for (uint32_t j = 0; j < d; j++)
            xs[j] = fabsf(x[j]) > input_cut ? x[j] : 0.0f;
        inter_row(m, layer, up, gate, xs, out + r * m->shape.d_ff);
    }
    free(up);
    free(gate);
    free(xs);
    return rc;
}

/* Layer l's thresholds into t, with v holding rows x max(d_model, d_ff)
 * values; its gate values' order statistics into pool (the global cut's). */
static int layer_thresholds(const struct model *m, const struct predictor_samples *s, uint32_t l, double share,
                            struct sparsify_thresholds *t, float *v, float *pool, char *err, size_t errlen)
{
    size_t rows = s->n_rows, n = rows * m->shape.d_ff;
    if (t->gate) {
        if (sparsify_gate_values(m, s, l, v, err, errlen) != 0)
            return -1;
        qsort(v, n, sizeof *v, cmp_float);
        t->gate[l] = cut_sorted(v, n, share);
        sparsify_pool_add(v, n, pool + l * sparsify_pool_count(n));
    }
    if (t->input) {
        sparsify_input_values(s, l, v);
        t->input[l] = sparsify_cut(v, rows * m->shape.d_model, share);
        if (sparsify_inter_values(m, s, l, t->input[l], v, err, errlen) != 0)
            return -1;
        t->inter[l] = sparsify_cut(v, rows * m->shape.d_ff, share);
    }
    return 0;
}

int sparsify_from_samples(const struct model *m, const struct predictor_samples *s, double sparsity,
                          enum sparsify_kind kind, struct sparsify_thresholds *out, char *err, size_t errlen)
{
    const struct model_shape *sh = &m->shape;
    memset(out, 0, sizeof *out);
    if (!(sparsity >= 0 && sparsity < 1))
        return err_set(err, errlen, "sparsity %g is not in [0, 1)", sparsity);
    if ((kind & SPARSIFY_GATE) && !m->arch.glu)
        return err_set(err, errlen, "%s's FFN (%s) has no gate projection: the gate thresholds need a GLU FFN",
                       sh->name, sh->ffn_activation);
    if (!m->ffn)
        return err_set(err, errlen, "calibration reads the FFN from DRAM: the model left it on flash");
    if (s->n_rows == 0)
        return err_set(err, errlen, "no samples to calibrate on");
    size_t width = sh->d_ff > sh->d_model ? sh->d_ff : sh->d_model;
    size_t pooled = sh->n_layers * sparsify_pool_count(s->n_rows * sh->d_ff);
    float *v = malloc(s->n_rows * width * sizeof *v), *pool = malloc((pooled ? pooled : 1) * sizeof *pool);
    int rc = v && pool ? sparsify_alloc(out, sh->n_layers, kind, err, errlen)
                       : err_set(err, errlen, "out of memory for %zu rows of %zu values", s->n_rows, width);
    out->sparsity = sparsity;
    for (uint32_t l = 0; rc == 0 && l < sh->n_layers; l++)
        rc = layer_thresholds(m, s, l, sparsity, out, v, pool, err, errlen);
    if (rc == 0 && out->gate)
        out->gate_global = sparsify_cut(pool, pooled, sparsity);
    free(v);
    free(pool);
    if (rc != 0)
        sparsify_free(out);
    return rc;
}

int sparsify_calibrate(const struct model *m, const int *tokens, size_t n, double sparsity, enum sparsify_kind kind,
                       const struct predictor_collect_config *c, struct sparsify_thresholds *out, char *err,
                       size_t errlen)
{
    const struct model_shape *sh = &m->shape;
    struct predictor_samples s;
    memset(out, 0, sizeof *out);
    if (predictor_samples_alloc(&s, sh->n_layers, sh->d_model, sh->d_ff, n, err, errlen) != 0)
        return -1;
    int rc = predictor_samples_collect(&s, m, tokens, n, c, err, errlen);
    if (rc == 0)
        rc = sparsify_from_samples(m, &s, sparsity, kind, out, err, errlen);
    predictor_samples_free(&s);
    return rc;
}
