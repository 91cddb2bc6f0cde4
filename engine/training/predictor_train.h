/* Training activation predictors (the paper's §3.1 and App. B) from
 * collected samples (predictor_samples.h), layer by layer, all in C.
 *
 * Loss: balanced binary cross-entropy, the paper's "balanced loss over
 * negative and positive samples of each layer": per layer a positive (a
 * neuron that fired) is weighted w = negatives / positives over the
 * training rows, a negative 1, so both classes weigh the same in all:
 *   loss = mean over rows and neurons of  w·y·softplus(-z) + (1-y)·softplus(z)
 * Without it the rare positives (3% of OPT's neurons) are cheapest to
 * ignore; with it, sigmoid > 0.5 is the classifier that minimises the sum
 * of the false-negative and false-positive *rates*, which over-predicts
 * (the paper's ~3x the true density at ~95% recall) rather than missing.
 *
 * Optimiser: Adam (beta1 0.9, beta2 0.999, eps 1e-8, bias-corrected) on
 * mini-batches of rows, shuffled per epoch with each layer's own stream of
 * the seed; the step size follows a cosine from lr at the first mini-batch
 * to 0 after the last epoch's (a constant rate leaves the weights jittering
 * around the boundary they approach: on a planted problem the decay takes
 * recall at the planted density from 0.96 to > 0.99 for the same epochs). Epochs run over all layers, then every layer is validated on
 * the held-out rows (the last `holdout` share of the samples, which the
 * training never sees). Kept per layer: the epoch with the lowest
 * validation loss, epoch 0 (the starting weights) included, so training
 * never returns something worse than its start by that measure; the
 * loss is the criterion because it is what is optimised and does not
 * depend on the threshold.
 *
 * With a target recall R the operating point is stated the paper's way
 * (recall at a predicted density) rather than by a threshold: after each
 * epoch every layer's threshold is set to the highest whose recall on the
 * validation rows is at least R (the ceil(R * positives)-th largest logit
 * of a neuron that fired, just below it), the reported numbers are at that
 * threshold, and the kept epoch is the one with the lowest predicted
 * density there, epoch 0 included (the loss keeps improving while the
 * density at a fixed recall, what the engine pays for, may not). p then
 * gets the kept epochs' thresholds. They are fitted on the validation rows,
 * so the recall there is R by construction: measure it on other text
 * (predictor eval --skip).
 *
 * Threads: the engine's thread team (threadpool.h). Each step's products
 * are split over their outputs (rows of the batch, neurons, rank
 * dimensions), each output summed by one thread in a fixed order, and
 * sums over rows done in row order: the weights come out bit-identical for
 * a seed, whatever the thread count.
 *
 * Interruption (common/interrupt.h) stops at the next mini-batch; the
 * epoch in progress is dropped and the best epochs so far are kept.
 *
 * Library code: nothing is printed; progress goes through the callbacks,
 * called on the caller's thread. predictor_train returns 0 (result
 * filled, p holds the kept weights), or -1 with the reason in err (p
 * unchanged). */
#ifndef FLASHBED_ENGINE_PREDICTOR_TRAIN_H
#define FLASHBED_ENGINE_PREDICTOR_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/predictor/predictor.h"
#include "engine/training/predictor_samples.h"

/* One layer's predictor on the validation rows, at the predictor's threshold. */
struct predictor_layer_eval {
    double loss;                /* the balanced loss (as trained) */
    double recall;              /* TP / (TP + FN); 1 when no neuron fired */
    double predicted_density;   /* (TP + FP) / (rows * d_ff) */
    double true_density;        /* (TP + FN) / (rows * d_ff) */
    double false_positive_rate; /* FP / negatives; 0 when there are none */
    double threshold;           /* the probability threshold these are at */
};

struct predictor_epoch_report {
    uint32_t epoch;                          /* 0: the starting weights */
    uint32_t n_layers;
    const double *train_loss;                /* [n_layers] mean over the epoch's rows; NaN at epoch 0 */
    const struct predictor_layer_eval *val;  /* [n_layers] */
    const bool *improved;                    /* [n_layers] this epoch is now the layer's best */
    double seconds;                          /* the epoch's training and validation */
};

struct predictor_train_config {
    uint32_t epochs; /* 0: validate the starting weights only */
    uint32_t batch;  /* rows per mini-batch, >= 1 */
    double lr;
    uint64_t seed;
    int threads;
    double holdout;  /* share of the rows, the last ones, held out; at least one row each side */
    double target_recall; /* 0: p's thresholds as they are; (0, 1]: calibrated per layer to it */
    /* optional callbacks */
    void (*on_epoch)(void *ctx, const struct predictor_epoch_report *r);
    void (*on_step)(void *ctx, uint64_t done, uint64_t total); /* mini-batches over the whole run */
    void *ctx;
};

struct predictor_train_result {
    uint32_t n_layers;
    size_t train_rows, val_rows;
    uint32_t epochs_run; /* epochs completed and validated */
    bool interrupted;
    double seconds;
    double *pos_weight;                 /* [n_layers] negatives / positives (1 when either is 0) */
    uint32_t *best_epoch;               /* [n_layers] */
    struct predictor_layer_eval *best;  /* [n_layers] validation at the kept epoch */
};

/* Trains p (its starting weights already set, predictor_init.h) on s;
 * p's shape must be s's. With c->target_recall, p's thresholds too. */
int predictor_train(struct predictor *p, const struct predictor_samples *s, const struct predictor_train_config *c,
                    struct predictor_train_result *r, char *err, size_t errlen);
void predictor_train_result_free(struct predictor_train_result *r);

/* Rows held out of n for a holdout share: ceil(n * holdout), at least 1,
 * at most n - 1 (0 when n < 2). */
size_t predictor_holdout_rows(size_t n, double holdout);

#endif
