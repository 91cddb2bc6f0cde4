/* The FFN's activation functions, shared by the backends and the oracle
 * that decides which neurons are active. */
#ifndef FLASHBED_ENGINE_ACTIVATION_H
#define FLASHBED_ENGINE_ACTIVATION_H

#include <math.h>

#include "engine/model.h"

static inline float activation_apply(float v, enum activation act)
{
    switch (act) {
    case ACT_RELU:
        return v > 0.0f ? v : 0.0f;
    case ACT_SILU:
        return v / (1.0f + expf(-v));
    case ACT_GELU: /* the tanh approximation */
        return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
    return v;
}

#endif
