/* The FFN's activation functions, shared by the backends and the oracle
 * that decides which neurons are active. */
#ifndef FLASHBED_ENGINE_ACTIVATION_H
#define FLASHBED_ENGINE_ACTIVATION_H

#include <math.h>
#include <stdbool.h>

#include "engine/model/model.h"

/* threshold: FATReLU's (arch.fatrelu_threshold); the others ignore it. */
static inline float activation_apply_t(float v, enum activation act, float threshold)
{
    switch (act) {
    case ACT_RELU:
        return v > 0.0f ? v : 0.0f;
    case ACT_SILU:
        return v / (1.0f + expf(-v));
    case ACT_GELU:
        return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case ACT_GELU_TANH:
        return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    case ACT_SQUARED_RELU:
        return v > 0.0f ? v * v : 0.0f;
    case ACT_FATRELU:
        return v > threshold ? v : 0.0f;
    }
    return v;
}

static inline float activation_apply(float v, enum activation act)
{
    return activation_apply_t(v, act, 0.0f);
}

/* Whether act is exactly 0 for most inputs (the ReLU family): then a
 * neuron is active when its activation is non-zero, with no threshold. */
static inline bool activation_sparse(enum activation act)
{
    return act == ACT_RELU || act == ACT_SQUARED_RELU || act == ACT_FATRELU;
}

/* Neuron i's value before the down projection, from z = up_i·x (+ b_i)
 * and, for a GLU, g = gate_i·x: act(g)·z (act(g)·act(z) with act_on_up,
 * dReLU), else act(z). */
static inline float ffn_neuron_value(const struct arch *a, float z, float g)
{
    float up = a->glu && !a->act_on_up ? z : activation_apply_t(z, a->act, a->fatrelu_threshold);
    return a->glu ? activation_apply_t(g, a->act, a->fatrelu_threshold) * up : up;
}

/* The one rule for "active", shared by the oracle, the probe and the
 * reports. The ReLU family is sparse at exactly zero: active when the
 * activation's output is not zero (a GLU's gate, act(g); a plain FFN's
 * act(z); dReLU's product act(g)·act(z), zero when either is), and
 * threshold is not used. The others (SiLU, GELU) are zero almost nowhere:
 * active when |value| > threshold, on the scale of the neuron's value. */
static inline bool ffn_neuron_active(const struct arch *a, float z, float g, float threshold)
{
    if (activation_sparse(a->act) && a->glu && a->act_on_up)
        return activation_apply_t(g, a->act, a->fatrelu_threshold) != 0.0f &&
               activation_apply_t(z, a->act, a->fatrelu_threshold) != 0.0f;
    if (activation_sparse(a->act))
        return activation_apply_t(a->glu ? g : z, a->act, a->fatrelu_threshold) != 0.0f;
    return fabsf(ffn_neuron_value(a, z, g)) > threshold;
}

#endif
