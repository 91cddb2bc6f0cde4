/* Synthetic traces calibrated to what the paper reports for OPT-6.7B
 * (PAPER.md Table 6, App. C.1) and PowerInfer's power-law popularity.
 *
 * Model, per layer: neuron popularity follows a power law (weight of the
 * r-th most popular neuron ~ (r+1)^-zipf, ranks shuffled per layer). The
 * predicted set of a token keeps each neuron of the previous token's set
 * with probability persist and is refilled to its size by drawing neurons by
 * popularity: persistence gives the window its hits, popularity makes
 * neurons come back, and part of each refill is drawn from the sets of the
 * last tokens, recent ones most (short-term reuse), so s_agg(k) bends as in
 * Fig. 4a. The active set is
 * drawn from the predicted set (recall) plus a few neurons outside it
 * (the predictor's false negatives). Densities follow the paper's profile
 * by relative layer depth, so other shapes get OPT-6.7B's profile scaled. */
#ifndef FLASHBED_TRACES_TRACE_SYNTH_H
#define FLASHBED_TRACES_TRACE_SYNTH_H

#include <stdint.h>

#include "common/model_shape.h"

#define SYNTH_RECENT 16 /* earlier tokens whose sets refills may draw from */

/* What the paper reports; what the generator aims for. */
struct synth_targets {
    double density_first, density_middle, density_last, density_mean; /* Table 6 */
    double pred_over_active;   /* predicted sets ~3x the active ones (§3.1) */
    double recall;             /* ~95% of active neurons predicted */
    double pred_density;       /* predictor alone ~10% of the FFN per token (App. C.1) */
    double window5_pred;       /* a window of 5 tokens holds ~24% of the FFN */
    double new_per_token_pred; /* ~2.4% of the FFN new per token with that window */
};

struct synth_params {
    const struct model_shape *shape;
    uint64_t tokens;           /* in all */
    uint64_t prompts;          /* sequences; each starts with a prompt part */
    double prompt_share;       /* share of each sequence that is prompt (128 of 384 in §4.1) */
    uint64_t seed;
    uint32_t bytes_per_weight;
    double persist;            /* chance a predicted neuron stays for the next token */
    double zipf;               /* power-law exponent of neuron popularity */
    double recur;              /* share of refills drawn from earlier tokens' sets */
    double recur_decay;        /* chance such a draw reaches one token further back */
    struct synth_targets targets;
};

/* Defaults: the paper's targets and the generator knobs calibrated to them. */
void synth_params_default(struct synth_params *p, const struct model_shape *shape);

/* Active density of layer l of n (the paper's profile by relative depth). */
double synth_layer_density(const struct synth_targets *t, uint32_t l, uint32_t n_layers);

/* Writes the trace to path (atomically). 0, or -1 with err. */
int synth_write(const struct synth_params *p, const char *path, char *err, size_t errlen);

#endif
