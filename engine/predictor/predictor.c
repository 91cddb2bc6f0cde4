/* Activation predictors: weights and the forward (predictor.h). */
#include "engine/predictor/predictor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* A: rank rows of d_model; B: d_ff rows of rank. */
static size_t a_bytes(enum fb_dtype t, uint32_t rank, uint32_t d_model)
{
    return align64((size_t)rank * wtype_row_bytes(t, d_model));
}

static size_t b_bytes(enum fb_dtype t, uint32_t rank, uint32_t d_ff)
{
    return align64((size_t)d_ff * wtype_row_bytes(t, rank));
}

static size_t layer_bytes(const struct predictor *p, uint32_t rank)
{
    return a_bytes(p->dtype, rank, p->d_model) + b_bytes(p->dtype, rank, p->d_ff) +
           align64((size_t)p->d_ff * sizeof(float));
}

bool predictor_wtype_ok(enum fb_dtype t)
{
    switch (t) {
    case DTYPE_F32:
    case DTYPE_F16:
        return true;
    case DTYPE_BF16:
        return false;
    case DTYPE_Q4_0: /* a predictor's low-rank factors are written here, */
    case DTYPE_Q4_1: /* in a float type (dtype_from_f32 has no block encoder) */
    case DTYPE_Q5_0:
    case DTYPE_Q5_1:
    case DTYPE_Q8_0:
    case DTYPE_Q2_K:
    case DTYPE_Q3_K:
    case DTYPE_Q4_K:
    case DTYPE_Q5_K:
    case DTYPE_Q6_K:
        return false;
    }
    return false;
}

const char *predictor_wtype_names(char *buf, size_t len, const char *sep, const char *last)
{
    int n = 0, k = 0;
    for (int t = 0; t < DTYPE_COUNT; t++)
        n += predictor_wtype_ok((enum fb_dtype)t);
    size_t at = 0;
    buf[0] = '\0';
    for (int t = 0; t < DTYPE_COUNT && at < len; t++)
        if (predictor_wtype_ok((enum fb_dtype)t)) {
            at += (size_t)snprintf(buf + at, len - at, "%s%s", k == 0 ? "" : k == n - 1 ? last : sep,
                                   wtype_name((enum fb_dtype)t));
            k++;
        }
    return buf;
}

int predictor_alloc(struct predictor *p, uint32_t n_layers, uint32_t d_model, uint32_t d_ff, const uint32_t *ranks,
                    enum fb_dtype dtype, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    *p = (struct predictor){.n_layers = n_layers, .d_model = d_model, .d_ff = d_ff, .dtype = dtype,
                            .target = PREDICT_RELU};
    char names[64];
    if (!predictor_wtype_ok(dtype))
        return err_set(err, errlen, "predictor weights are %s, not %s",
                       predictor_wtype_names(names, sizeof names, ", ", " or "), wtype_name(dtype));
    uint32_t most = d_model < d_ff ? d_model : d_ff;
    for (uint32_t l = 0; l < n_layers; l++) {
        if (ranks[l] < 1 || ranks[l] > most)
            return err_set(err, errlen, "layer %u: rank %u is not 1 to %u (min of d_model %u and d_ff %u)", l,
                           ranks[l], most, d_model, d_ff);
        p->mem_bytes += layer_bytes(p, ranks[l]);
    }
    p->layers = calloc(n_layers, sizeof *p->layers);
    p->mem = p->mem_bytes ? aligned_alloc(64, p->mem_bytes) : NULL;
    if (!p->layers || (p->mem_bytes && !p->mem)) {
        predictor_free(p);
        return err_set(err, errlen, "cannot allocate the predictor's %zu bytes", p->mem_bytes);
    }
    memset(p->mem, 0, p->mem_bytes);
    uint8_t *at = p->mem;
    for (uint32_t l = 0; l < n_layers; l++) {
        struct predictor_layer *L = &p->layers[l];
        L->rank = ranks[l];
        L->a = at;
        at += a_bytes(dtype, L->rank, d_model);
        L->b = at;
        at += b_bytes(dtype, L->rank, d_ff);
        L->bias = (float *)at;
        at += align64((size_t)d_ff * sizeof(float));
        L->threshold = 0.5;
    }
    return 0;
}

void predictor_free(struct predictor *p)
{
    free(p->mem);
    free(p->layers);
    cJSON_Delete(p->training);
    memset(p, 0, sizeof *p);
}

void predictor_set_layer(struct predictor *p, uint32_t l, const float *a, const float *b, const float *bias)
{
    struct predictor_layer *L = &p->layers[l];
    dtype_from_f32(L->a, p->dtype, a, (size_t)L->rank * p->d_model);
    dtype_from_f32(L->b, p->dtype, b, (size_t)p->d_ff * L->rank);
    memcpy(L->bias, bias, p->d_ff * sizeof(float));
}

void predictor_get_layer(const struct predictor *p, uint32_t l, float *a, float *b, float *bias)
{
    const struct predictor_layer *L = &p->layers[l];
    dtype_to_f32(a, L->a, p->dtype, (size_t)L->rank * p->d_model);
    dtype_to_f32(b, L->b, p->dtype, (size_t)p->d_ff * L->rank);
    memcpy(bias, L->bias, p->d_ff * sizeof(float));
}

uint64_t predictor_bytes(const struct predictor *p)
{
    return p->mem_bytes;
}

uint64_t predictor_madds(const struct predictor *p)
{
    uint64_t n = 0;
    for (uint32_t l = 0; l < p->n_layers; l++)
        n += (uint64_t)p->layers[l].rank * (p->d_model + p->d_ff);
    return n;
}

uint32_t predictor_max_rank(const struct predictor *p)
{
    uint32_t r = 0;
    for (uint32_t l = 0; l < p->n_layers; l++)
        r = p->layers[l].rank > r ? p->layers[l].rank : r;
    return r;
}

void predictor_set_threshold(struct predictor *p, double t)
{
    for (uint32_t l = 0; l < p->n_layers; l++)
        p->layers[l].threshold = t;
    p->target_recall = 0;
}

bool predictor_threshold_uniform(const struct predictor *p, double *t)
{
    *t = p->n_layers ? p->layers[0].threshold : 0.5;
    for (uint32_t l = 1; l < p->n_layers; l++)
        if (p->layers[l].threshold != *t)
            return false;
    return true;
}

void predictor_threshold_text(const struct predictor *p, char *buf, size_t len)
{
    double t, lo = INFINITY, hi = -INFINITY;
    if (predictor_threshold_uniform(p, &t) && p->target_recall <= 0) {
        snprintf(buf, len, "%.3g", t);
        return;
    }
    for (uint32_t l = 0; l < p->n_layers; l++) {
        lo = fmin(lo, p->layers[l].threshold);
        hi = fmax(hi, p->layers[l].threshold);
    }
    if (p->target_recall > 0)
        snprintf(buf, len, "per layer %.3g to %.3g (recall %.3g on held-out rows)", lo, hi, p->target_recall);
    else
        snprintf(buf, len, "per layer %.3g to %.3g", lo, hi);
}

float predictor_logit_threshold(double t)
{
    if (t <= 0)
        return -INFINITY;
    if (t >= 1)
        return INFINITY;
    return (float)log(t / (1 - t));
}

double predictor_threshold_of_logit(float cut)
{
    return 1 / (1 + exp(-(double)cut));
}

uint32_t predictor_predict(const struct predictor *p, uint32_t l, struct cpu_kernels *k, const float *x, float *h, float *logits, uint32_t *out)
{
    const struct predictor_layer *L = &p->layers[l];
    ck_matvec(k, h, L->a, p->dtype, x, NULL, (int)L->rank, (int)p->d_model);
    ck_matvec(k, logits, L->b, p->dtype, h, L->bias, (int)p->d_ff, (int)L->rank);
    return predictor_choose(p, l, logits, out);
}

uint32_t predictor_choose(const struct predictor *p, uint32_t l, const float *logits, uint32_t *out)
{
    float cut = predictor_logit_threshold(p->layers[l].threshold);
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->d_ff; i++)
        if (logits[i] > cut)
            out[n++] = i;
    return n;
}

const char *predictor_target_name(enum predictor_target t)
{
    return t == PREDICT_GLU_ABS ? "glu_abs" : "relu";
}
