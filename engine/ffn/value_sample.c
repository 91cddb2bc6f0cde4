/* A bounded sample of thresholded values (value_sample.h). */
#include "engine/ffn/value_sample.h"

#include <math.h>
#include <stdlib.h>

int value_sample_init(struct value_sample *s, size_t cap)
{
    s->n = 0;
    s->v = malloc(cap * sizeof *s->v);
    s->cap = s->v ? cap : 0;
    return s->v ? 0 : -1;
}

void value_sample_free(struct value_sample *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

size_t value_sample_stride(size_t n)
{
    size_t stride = (n + VALUE_SAMPLE_PER_CALL - 1) / VALUE_SAMPLE_PER_CALL;
    return stride ? stride : 1;
}

void value_sample_push(struct value_sample *s, float v)
{
    if (s->n < s->cap)
        s->v[s->n++] = fabsf(v);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

float value_sample_cut(struct value_sample *s, double share)
{
    if (s->n == 0)
        return -1;
    qsort(s->v, s->n, sizeof *s->v, cmp_float);
    size_t k = (size_t)ceil(share * (double)s->n - 1e-9);
    if (k < 1)
        k = 1;
    if (k > s->n)
        k = s->n;
    return s->v[k - 1];
}
