/* Per-architecture activation statistics for trace synthesis, as data: one
 * entry per model the paper reports on (Alizadeh et al., "LLM in a flash";
 * ../shared/PAPER.md). Each entry says how dense each layer's FFN is by
 * relative depth, what the layers average, how large the predicted sets
 * are, the window usage where the paper gives it, and where every number
 * comes from (`source`, written into each trace header).
 *
 * The paper measures a per-layer profile for OPT-6.7B only (Table 6). For
 * Persimmon and Phi-2 it describes the shape (Fig. 9b/9c, App. C.3/C.4), for
 * Llama 2 with FATReLU it says which layers are densest (App. C.5), and for
 * Falcon it gives the overall sparsity and window usage (§3.1, App. C.2).
 * Where it only describes a shape, the entry's curve follows that
 * description and its `source` says which numbers are choices. */
#ifndef FLASHBED_TRACES_SYNTH_PROFILE_H
#define FLASHBED_TRACES_SYNTH_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/model_shape.h"

#define SYNTH_MAX_KNOTS 10
/* Targets are shares and ratios above 0: 0 marks one the paper does not
 * give for a model (so an entry leaves it out by not naming it). */
#define SYNTH_NOT_GIVEN 0.0

/* What the paper reports; what the generator aims for. Targets the paper
 * does not give for a model are SYNTH_NOT_GIVEN. */
struct synth_targets {
    double density_first, density_middle, density_last, density_mean; /* Table 6 */
    double pred_over_active;   /* predicted sets ~3x the active ones (§3.1) */
    double recall;             /* ~95% of active neurons predicted */
    double pred_density;       /* predictor alone ~10% of the FFN per token (App. C.1) */
    double window5_pred;       /* a window of 5 tokens holds ~24% of the FFN */
    double new_per_token_pred; /* ~2.4% of the FFN new per token with that window */
    double window2_active;     /* a window of 2 tokens holds (active sets; Llama 2, App. C.5) */
};

enum synth_curve {
    /* OPT-6.7B's Table 6: linear from the first to the middle layer, then a
     * power curve up to the last, bent so that the layers average the mean */
    SYNTH_CURVE_TABLE6,
    /* piecewise linear through (relative depth, level) knots, flat beyond
     * the end knots, scaled so that the layers average the mean */
    SYNTH_CURVE_KNOTS,
};

struct synth_knot {
    double depth, level;
};

struct synth_profile {
    const char *name;       /* the paper's model: "opt-6.7b" */
    const char *arch;       /* picked for shapes of this arch (model_shape.arch) */
    const char *activation; /* ... and this FFN activation; NULL: any */
    const char *label;      /* "OPT-6.7B" */
    const char *cite;       /* short: "paper Table 6, App. C.1" */
    const char *source;     /* every number and where it comes from (trace header) */
    uint32_t ref_layers;    /* the paper model's layers: the mean holds over these */
    enum synth_curve curve;
    struct synth_knot knots[SYNTH_MAX_KNOTS]; /* SYNTH_CURVE_KNOTS: relative levels */
    uint32_t n_knots;
    struct synth_targets targets; /* first/middle/last follow from the curve for KNOTS */
};

/* The table, and its length. */
const struct synth_profile *synth_profiles(uint32_t *n);

/* The profile for a shape: the entry matching its arch (and activation);
 * OPT-6.7B's for shapes the paper has no statistics for (*fallback set). */
const struct synth_profile *synth_profile_for(const struct model_shape *s, bool *fallback);

/* By name ("phi-2"); NULL when unknown. */
const struct synth_profile *synth_profile_named(const char *name);

/* Active density at relative depth 0..1 (layer l of n: l / (n - 1)) under
 * targets t: the profile's own, or others with another mean. */
double synth_profile_density(const struct synth_profile *p, const struct synth_targets *t, double depth);

/* The profile's targets with first/middle/last filled from its curve. */
void synth_profile_targets(const struct synth_profile *p, struct synth_targets *t);

#endif
