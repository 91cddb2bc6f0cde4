#include "engine/forward/sampler.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

#if defined(__SSE2__)
/* The largest of v[0, n), all finite, four lanes at a time; false where
 * one is not finite. Any order finds the same largest value. */
static bool finite_max(const float *v, int n, float *max)
{
    const __m128 magnitude = _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF)), big = _mm_set1_ps(FLT_MAX);
    __m128 m0 = _mm_set1_ps(-FLT_MAX), m1 = m0, ok = _mm_cmpeq_ps(m0, m0);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128 a = _mm_loadu_ps(v + i), b = _mm_loadu_ps(v + i + 4);
        ok = _mm_and_ps(ok, _mm_and_ps(_mm_cmple_ps(_mm_and_ps(a, magnitude), big),
                                       _mm_cmple_ps(_mm_and_ps(b, magnitude), big)));
        m0 = _mm_max_ps(m0, a);
        m1 = _mm_max_ps(m1, b);
    }
    if (_mm_movemask_ps(ok) != 0xF)
        return false;
    float lanes[4], m = -FLT_MAX;
    _mm_storeu_ps(lanes, _mm_max_ps(m0, m1));
    for (int k = 0; k < 4; k++)
        m = lanes[k] > m ? lanes[k] : m;
    for (; i < n; i++) {
        if (!isfinite(v[i]))
            return false;
        m = v[i] > m ? v[i] : m;
    }
    *max = m;
    return true;
}

/* The first i with v[i] == m (there is one) */
static int first_equal(const float *v, int n, float m)
{
    const __m128 vm = _mm_set1_ps(m);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        int hit = _mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(v + i), vm));
        if (hit)
            return i + __builtin_ctz((unsigned)hit);
    }
    for (; i < n && v[i] != m; i++)
        ;
    return i;
}

/* Greedy decoding's choice: argmax (the first of the largest), or
 * SAMPLER_NOT_FINITE; two passes over the logits, not argmax's compare
 * and branch per logit after all_finite's (Gemma 3's 262144 logits took
 * a twentieth of its step so). */
static int greedy(const float *v, int n)
{
    float m;
    return finite_max(v, n, &m) ? first_equal(v, n, m) : SAMPLER_NOT_FINITE;
}
#else
static int greedy(const float *v, int n)
{
    return all_finite(v, n) ? argmax(v, n) : SAMPLER_NOT_FINITE;
}
#endif

int sampler_sample(struct sampler *s, float *logits)
{
    /* argmax over NaNs answers token 0 and softmax a NaN distribution:
     * neither is a choice */
    if (s->temperature <= 0.0f)
        return greedy(logits, s->vocab);
    if (!all_finite(logits, s->vocab))
        return SAMPLER_NOT_FINITE;
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
