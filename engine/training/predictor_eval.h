/* Evaluating an activation predictor on a model (the paper's App. B and
 * Fig. 9a), all weights in DRAM:
 *
 *   1. dense pass over the text (ffn_probe.h): per layer and token the
 *      true active set against the predictor's set on the same FFN input:
 *      true and predicted density, recall, false-negative and
 *      false-positive rates; and dense's negative log-likelihood.
 *   2. predictor pass over the text (ffn_select.h: the FFN computed on
 *      the predicted neurons only): its negative log-likelihood, and how
 *      often its top token equals dense's (teacher-forced: both read the
 *      text).
 *   3. oracle pass over the text (ffn_probe.h, sparse: the FFN on the truly
 *      active neurons only): what the definition of "active" costs by
 *      itself (with a GLU act_threshold, neurons below it are dropped even
 *      by a perfect predictor), so the predictor's own share of the
 *      perplexity shows.
 *   4. greedy generation from a fixed set of prompts
 *      (predictor_eval_prompts), n tokens each ignoring end-of-sequence,
 *      dense and with the predictor: the share of the predictor's tokens
 *      before its first difference from dense (greedy_agreement), and the
 *      share equal position by position (greedy_match).
 *
 * The text is fed in BOS-led windows of the context, every token after
 * BOS scored (text_feed.h's BOS_LED: `flashbed perplexity`'s own rule
 * wherever the vocabulary adds BOS). Costs are reported beside:
 * the predictor's bytes against the model's weight bytes (dram.bin + the
 * FFN's bundles unpadded) and its multiply-adds per token against the
 * model's matrix-vector multiply-adds per token (attention over the cache
 * left out).
 *
 * Library code: nothing printed; progress through the callback, on the
 * caller's thread. Returns 0 (result filled; interrupted set when Ctrl-C
 * cut it short, the figures then cover what ran), or -1 with the reason in
 * err (an engine that cannot start on the backend, a forward pass that
 * failed there). */
#ifndef FLASHBED_ENGINE_PREDICTOR_EVAL_H
#define FLASHBED_ENGINE_PREDICTOR_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/settings.h"
#include "engine/compute/backend.h"
#include "engine/model/model.h"
#include "engine/predictor/predictor.h"

/* The fixed greedy prompts, NULL-terminated. */
extern const char *const predictor_eval_prompts[];

struct predictor_eval_config {
    const struct fb_settings *settings; /* the engine's backend tuning */
    const struct backend_ops *backend;  /* where every pass computes (NULL: cpu) */
    int threads;
    int context;         /* window length with BOS; 0: the model's */
    int gen_tokens;      /* greedy tokens per prompt (0: no greedy comparison) */
    /* optional: stage ("dense", "predictor", "greedy"), done of total */
    void (*progress)(void *ctx, const char *stage, uint64_t done, uint64_t total);
    void *ctx;
};

struct predictor_eval_layer {
    uint64_t tp, fp, fn, tn; /* over tokens x d_ff */
    double true_density, predicted_density;
    double recall;              /* TP / (TP + FN); 1 when none fired */
    double false_negative_rate; /* FN / (TP + FN) = 1 - recall */
    double false_positive_rate; /* FP / (FP + TN) */
    double active_mass, missed_mass; /* sums of |h| over the active neurons, over the false negatives */
    double missed_mass_share;        /* missed_mass / active_mass: what the misses weigh, not how many */
};

struct predictor_eval_result {
    uint32_t n_layers;
    struct predictor_eval_layer *layers;
    size_t tokens; /* scored */
    double nll_dense, nll_predictor, nll_oracle; /* mean, nats */
    double perplexity_dense, perplexity_predictor, perplexity_oracle;
    double top1_agreement;  /* text positions where both models' top token is the same */
    size_t n_prompts, greedy_tokens;
    int *greedy_dense, *greedy_predictor; /* [n_prompts][gen_tokens] ids (-1: not generated) */
    double greedy_agreement, greedy_match;
    double mean_true_density, mean_predicted_density, mean_recall; /* over layers */
    uint64_t predictor_bytes, model_bytes, predictor_madds, model_madds;
    bool interrupted;
};

int predictor_eval_run(const struct model *m, const struct predictor *p, const int *tokens, size_t n,
                       const struct predictor_eval_config *c, struct predictor_eval_result *r, char *err,
                       size_t errlen);
void predictor_eval_result_free(struct predictor_eval_result *r);

/* The model's matrix-vector multiply-adds per token and weight bytes. */
uint64_t model_madds_per_token(const struct model *m);
uint64_t model_weight_bytes(const struct model *m);

#endif
