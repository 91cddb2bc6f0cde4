/* An FFN that observes: it computes exactly what the dense FFN computes
 * (ffn_dense) and, on every call, each neuron's activation h from the
 * layer's up (and gate) rows and whether the neuron is "active" in the
 * predictor's sense (predictor.h, the rule of activation.h):
 *
 *   the ReLU family (PREDICT_RELU): act(up·x + b) != 0, a GLU's act(gate·x) != 0
 *   SiLU, GELU (PREDICT_GLU_ABS):   |h| > act_threshold, h = act(gate·x)·(up·x + b)
 *                                   for a GLU, act(up·x + b) otherwise
 *
 * and hands (layer, pos, the FFN-normed input x, h, active) to a callback.
 * (The FFN over the active neurons only, the oracle's sparsity in place, is
 * ffn_select.h with the oracle as its source.)
 * This is where predictor training gets its samples (the paper's App. B:
 * the FFN input after the layer's norm, and which neurons fire) and where
 * evaluation compares a predictor with the truth on dense's trajectory.
 *
 * It holds every layer's up (and gate) rows contiguous in the model's
 * dtype (d_ff x d_model each: the up projection's bytes again, twice for
 * GLU) so that the backend's matvec computes them; the model's FFN must be
 * in DRAM.
 * observe may be NULL. Created with engine_init_with(..., &ffn_probe, &config, ...);
 * the config is kept by pointer. create returns 0 or -1 with the reason in
 * err; forward allocates nothing and calls observe on the engine's thread. */
#ifndef FLASHBED_ENGINE_FFN_PROBE_H
#define FLASHBED_ENGINE_FFN_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/ffn/ffn.h"
#include "engine/predictor/predictor.h"

struct ffn_probe_config {
    enum predictor_target target;
    float act_threshold; /* PREDICT_GLU_ABS */
    /* h[d_ff] the activations, active[d_ff] 1 or 0; x[d_model] the FFN input */
    void (*observe)(void *ctx, int layer, int pos, const float *x, const float *h, const uint8_t *active);
    void *ctx;
};

extern const struct ffn_ops ffn_probe;

/* What "active" means for the model's FFN: PREDICT_RELU for the ReLU
 * family (activation_sparse), PREDICT_GLU_ABS for the others. 0 and *t
 * set (every activation has one now; -1 with the reason in err is kept
 * for one that would not). */
int predictor_target_of(const struct arch *a, enum predictor_target *t, char *err, size_t errlen);

#endif
