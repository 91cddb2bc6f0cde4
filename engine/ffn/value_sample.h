/* A bounded sample of the values a threshold cuts (|act(gate·x)·(up·x)| of
 * a SiLU or GELU FFN under the oracle), kept as the run computes them, so
 * that a run whose threshold leaves every neuron active can suggest one
 * that does not (issue 35: a SwiGLU model has no exact zeros; at
 * --threshold 0 its trace holds every neuron).
 *
 * Each call adds at most VALUE_SAMPLE_PER_CALL values of one layer, every
 * stride-th neuron, until the sample is full: the first tokens of a run,
 * every layer alike (stories260K: 152 tokens; a 7B model's 11008 neurons:
 * 16 tokens). The cut for share S is the k-th smallest value, k =
 * max(1, ceil(S·n)), so that at least a share S of the sampled values falls
 * at or below it.
 *
 * Returns: init 0, or -1 (out of memory); the rest cannot fail. One
 * thread: the one computing the layer. */
#ifndef FLASHBED_ENGINE_VALUE_SAMPLE_H
#define FLASHBED_ENGINE_VALUE_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#define VALUE_SAMPLE_CAP (1u << 17)    /* 512 KiB of floats */
#define VALUE_SAMPLE_PER_CALL 256u

struct value_sample {
    float *v;
    size_t n, cap;
};

int value_sample_init(struct value_sample *s, size_t cap);
void value_sample_free(struct value_sample *s);

/* The stride a layer of n neurons is sampled at: n / VALUE_SAMPLE_PER_CALL
 * rounded up (at least 1). */
size_t value_sample_stride(size_t n);
/* |v|, while there is room. */
void value_sample_push(struct value_sample *s, float v);

/* The cut at share (0 < share <= 1) of the values sampled, sorting them
 * (later adds still append); -1 when there are none. */
float value_sample_cut(struct value_sample *s, double share);

#endif
