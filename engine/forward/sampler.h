/* Choosing the next token from logits: greedy (temperature 0), sampling
 * at a temperature, or nucleus (top-p) sampling. Seeded, reproducible. */
#ifndef FLASHBED_ENGINE_SAMPLER_H
#define FLASHBED_ENGINE_SAMPLER_H

#include <stdint.h>

#include "common/rng.h"

struct prob_index {
    float prob;
    int index;
};

struct sampler {
    int vocab;
    float temperature; /* 0: greedy */
    float top_p;       /* in (0, 1): nucleus; otherwise the full distribution */
    struct rng rng;
    struct prob_index *buf; /* (vocab), preallocated */
};

int sampler_init(struct sampler *s, int vocab, float temperature, float top_p, uint64_t seed);
void sampler_free(struct sampler *s);
/* sampler_sample's answer when a logit is NaN or infinite (a model whose
 * weights or activations overflowed): no token can be chosen. */
#define SAMPLER_NOT_FINITE (-1)

/* The next token, or SAMPLER_NOT_FINITE; logits are overwritten (scaled,
 * softmaxed). */
int sampler_sample(struct sampler *s, float *logits);

int argmax(const float *v, int n);
/* In place: v = softmax(v). */
void softmax(float *v, int n);

#endif
