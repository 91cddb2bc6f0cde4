/* Calibrating training-free FFN sparsity (issue 33; CATS, Lee et al. 2024,
 * and TEAL, Liu et al. 2024): the dense model is run over a calibration
 * text (the FFN input x after each layer's norm kept per token, as
 * predictor_samples.h collects it) and per layer the thresholds of
 * engine/ffn/sparsify_file.h are chosen so that a share S of the values
 * falls at or below them:
 *
 *   gate    over |act(gate_i·x)|, every token and neuron of the layer
 *   input   over |x_j|, every token and channel; then, over
 *           |h_i| = |act(gate_i·x')·(up_i·x' + b_i)| (|act(up_i·x' + b_i)|
 *           without a gate), x' keeping the channels above the input cut
 *
 * and, for the gate, one global cut for every layer: a share S of all
 * layers' |act(gate·x)| pooled falls at or below it. Pooling every value
 * of a large model is too much memory (7B: 32 layers x 11008 neurons x the
 * tokens), so each layer contributes Q = min(its count, 65536) evenly
 * spaced order statistics of its sorted values (the largest of each of Q
 * equal runs); every layer has the same count, so each weighs the same.
 * With the pooled cut c taken as below, a layer whose samples at or below
 * c number a has between a/Q and (a+1)/Q of its values at or below c, so
 * the true pooled share is within 1/Q of S (above S - 1/(L·Q), below
 * S + 1/Q): 1.5e-5 at Q = 65536.
 *
 * The cut of n values for share S is the k-th smallest, k = floor(S·n)
 * (S·n taken 1e-9 up, so that 0.7·1000 is 700): exactly k values fall at
 * or below it when none ties with it; k = 0 gives -1 (nothing dropped).
 * Values are computed in double from the model's weights widened to f32.
 *
 * Returns 0, -1 with the reason in err, and the collector's 1 when
 * interrupted. Runs the engine with its thread team; the rest on the
 * caller's thread. */
#ifndef FLASHBED_ENGINE_SPARSIFY_CALIBRATE_H
#define FLASHBED_ENGINE_SPARSIFY_CALIBRATE_H

#include <stddef.h>

#include "engine/ffn/sparsify_file.h"
#include "engine/training/predictor_samples.h"

/* The cut of v[0..n) for share (sorts v; not when the cut is -1). */
float sparsify_cut(float *v, size_t n, double share);

/* The global gate cut's pool: Q = sparsify_pool_count(n) order statistics
 * of a layer's n sorted values into pool[0..Q), the largest of each of Q
 * equal runs (the last is the maximum). */
#define SPARSIFY_POOL_PER_LAYER 65536
size_t sparsify_pool_count(size_t n);
void sparsify_pool_add(const float *sorted, size_t n, float *pool);

/* Layer l's values over the samples' rows, into out: |act(gate·x)|
 * [rows][d_ff] (GLU only), |x| [rows][d_model], and |h| [rows][d_ff] from
 * the channels with |x_j| > input_cut. The model's FFN in DRAM. The first
 * and the last allocate the layer's rows widened to f32 (0, or -1 with err). */
int sparsify_gate_values(const struct model *m, const struct predictor_samples *s, uint32_t layer, float *out,
                         char *err, size_t errlen);
void sparsify_input_values(const struct predictor_samples *s, uint32_t layer, float *out);
int sparsify_inter_values(const struct model *m, const struct predictor_samples *s, uint32_t layer,
                          float input_cut, float *out, char *err, size_t errlen);

/* The thresholds for share `sparsity` from collected samples into out
 * (allocated here for kind; sparsify_free). The model's FFN in DRAM; the
 * gate kinds need a GLU. */
int sparsify_from_samples(const struct model *m, const struct predictor_samples *s, double sparsity,
                          enum sparsify_kind kind, struct sparsify_thresholds *out, char *err, size_t errlen);

/* The whole calibration: samples of tokens[0..n) through the dense model
 * (c: its settings, threads, context, progress), then the thresholds. */
int sparsify_calibrate(const struct model *m, const int *tokens, size_t n, double sparsity, enum sparsify_kind kind,
                       const struct predictor_collect_config *c, struct sparsify_thresholds *out, char *err,
                       size_t errlen);

#endif
