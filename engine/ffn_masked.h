/* The FFN computed on the predictor's neurons only, all weights in DRAM:
 * per layer the predictor (predictor.h) picks the neurons from the
 * FFN-normed input, their bundles are gathered into a compact block and the
 * backend's ffn_rows computes on them, as a neuron cache would after a
 * perfect read. A false negative's contribution is lost, a false positive
 * costs compute but changes nothing (its activation is what dense computes
 * for it). So the model's output with the predictor's sparsity in place,
 * without flash: what perplexity and greedy agreement under a predictor
 * measure (predictor_eval.h).
 *
 * Created with engine_init_with(..., &ffn_masked, &config, ...); the config
 * (kept by pointer) names the predictor, which must match the model's
 * shape. Scratch (one layer's bundles, d_ff * bundle_stride bytes) is
 * allocated at create; forward allocates nothing. create returns 0 or -1
 * with the reason in err. */
#ifndef FLASHBED_ENGINE_FFN_MASKED_H
#define FLASHBED_ENGINE_FFN_MASKED_H

#include <stdint.h>

#include "engine/ffn.h"
#include "engine/predictor.h"

struct ffn_masked_config {
    const struct predictor *predictor;
    uint64_t *computed; /* optional [n_layers]: neurons computed per layer, summed over calls */
};

extern const struct ffn_ops ffn_masked;

/* The FFN of layer over the neurons ids[0..n) (ascending) only, down bias
 * included, into out[d_model]: their bundles gathered into rows
 * (d_ff * bundle_stride bytes, 64-byte aligned) and their up biases into
 * bias[d_ff]. What ffn_masked computes, for other choosers of neurons (the
 * oracle's sets in ffn_probe.h). Allocates nothing. */
void ffn_subset_forward(struct ffn *f, int layer, const uint32_t *ids, uint32_t n, uint8_t *rows, float *bias,
                        const float *x, float *out);

#endif
