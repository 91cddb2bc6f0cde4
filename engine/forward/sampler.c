#include "engine/forward/sampler.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

int sampler_init(struct sampler *s, int vocab, float temperature, float top_p, uint64_t seed)
{
    s->vocab = vocab;
    s->temperature = temperature;
    s->top_p = top_p;
    rng_seed(&s->rng, seed);
    s->buf = malloc((size_t)vocab * sizeof *s->buf);
    return s->buf ? 0 : -1;
}

void sampler_free(struct sampler *s)
{
    free(s->buf);
    s->buf = NULL;
}

int argmax(const float *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

void softmax(float *v, int n)
{
    float max = v[argmax(v, n)], sum = 0.0f;
    for (int i = 0; i < n; i++) {
        v[i] = expf(v[i] - max);
        sum += v[i];
    }
    for (int i = 0; i < n; i++)
        v[i] /= sum;
}

static int by_prob_desc(const void *a, const void *b)
{
    float pa = ((const struct prob_index *)a)->prob, pb = ((const struct prob_index *)b)->prob;
    return pa > pb ? -1 : pa < pb ? 1 : 0;
}

static int sample_top_p(struct sampler *s, const float *p, float r)
{
    int n = s->vocab, kept = 0;
    if (n == 1)
        return 0;
    /* tokens below (1 - p) / (n - 1) can never be in the nucleus: skip sorting them */
    float cutoff = (1.0f - s->top_p) / (float)(n - 1);
    for (int i = 0; i < n; i++)
        if (p[i] >= cutoff)
            s->buf[kept++] = (struct prob_index){p[i], i};
    /* with top_p below 1/n a flat distribution keeps none: the most
     * probable token is the nucleus then */
    if (kept == 0)
        return argmax(p, n);
    qsort(s->buf, (size_t)kept, sizeof *s->buf, by_prob_desc);
    float cum = 0.0f;
    int last = kept - 1;
    for (int i = 0; i < kept; i++) {
        cum += s->buf[i].prob;
        if (cum > s->top_p) {
            last = i;
            break;
        }
    }
    float target = r * cum, cdf = 0.0f;
    for (int i = 0; i <= last; i++) {
        cdf += s->buf[i].prob;
        if (target < cdf)
            return s->buf[i].index;
    }
    return s->buf[last].index;
}

static bool all_finite(const float *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return false;
    return true;
}

int sampler_sample(struct sampler *s, float *logits)
{
    /* argmax over NaNs answers token 0 and softmax a NaN distribution:
     * neither is a choice */
    if (!all_finite(logits, s->vocab))
        return SAMPLER_NOT_FINITE;
    if (s->temperature <= 0.0f)
        return argmax(logits, s->vocab);
    for (int i = 0; i < s->vocab; i++)
        logits[i] /= s->temperature;
    /* a temperature so small that a logit overflows is greedy decoding:
     * dividing kept the order, and infinities still compare */
    if (!all_finite(logits, s->vocab))
        return argmax(logits, s->vocab);
    softmax(logits, s->vocab);
    float r = (float)rng_unit(&s->rng);
    if (s->top_p > 0.0f && s->top_p < 1.0f)
        return sample_top_p(s, logits, r);
    float cdf = 0.0f;
    for (int i = 0; i < s->vocab; i++) {
        cdf += logits[i];
        if (r < cdf)
            return i;
    }
    return s->vocab - 1;
}
