/* Synthetic traces calibrated to what the paper reports for the shape's
 * architecture (traces/synth_profile.h: OPT-6.7B's Table 6 and App. C.1,
 * and what it gives for Falcon, Persimmon, Phi-2 and Llama 2 with FATReLU)
 * and PowerInfer's power-law popularity.
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
 * (the predictor's false negatives). Densities follow the profile by
 * relative layer depth, so smaller shapes of an architecture get its
 * profile over their layers; shapes the paper has no statistics for get
 * OPT-6.7B's.
 *
 * Channel sets (issue 33, input sparsity): with a channel density D, each
 * (token, layer) also keeps round(D * d_model) input channels, drawn by the
 * same model over the d_model channels (a power-law popularity per layer,
 * refills from the last tokens' sets with the calibrated recur and
 * recur_decay): TEAL keeps the channels of largest |x_j|, and the residual
 * stream's outlier channels recur from token to token. The paper gives no
 * statistic of them, so only the density is a target (trace info's
 * "kept input channels"). Such a trace has no predicted sets (input
 * sparsity runs no predictor). An active density, when given, replaces the
 * profile's per-layer curve with one level (TEAL's per-layer cut keeps a
 * share of every layer).
 *
 * A twin of a recorded trace (trace synth --like, issue 48's "how far do
 * synthetic traces mislead?"): the recorded trace's active density per
 * layer, its token count, sequences and prompt share, the rest of the
 * model as above; a density alone carries none of the recorded trace's
 * reuse or co-activation, which is what replaying the two side by side
 * measures. */
#ifndef FLASHBED_TRACES_TRACE_SYNTH_H
#define FLASHBED_TRACES_TRACE_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/model_shape.h"
#include "common/wtype.h"
#include "common/progress.h"
#include "traces/synth_profile.h"
#include "traces/trace_stats.h" /* TRACE_SAGG_MAX */

#define SYNTH_RECENT 16 /* earlier tokens whose sets refills may draw from */

struct synth_params {
    const struct model_shape *shape;
    uint64_t tokens;           /* in all */
    uint64_t prompts;          /* sequences; each starts with a prompt part */
    double prompt_share;       /* share of each sequence that is prompt (128 of 384 in §4.1) */
    uint64_t seed;
    enum fb_dtype dtype;       /* the weights' type the header records (f16) */
    double persist;            /* chance a predicted neuron stays for the next token */
    double zipf;               /* power-law exponent of neuron popularity */
    double recur;              /* share of refills drawn from earlier tokens' sets */
    double recur_decay;        /* chance such a draw reaches one token further back */
    const struct synth_profile *profile; /* the statistics, picked from the shape */
    bool profile_fallback;     /* the paper has none for this shape: OPT-6.7B's */
    struct synth_targets targets; /* the profile's, first/middle/last from its curve */
    const struct progress_report *progress; /* NULL: none reported */
    double channel_density;    /* kept input channels per token and layer over d_model; 0: no channel sets */
    double active_density;     /* every layer's active density; 0: the profile's curve */
    const double *layer_density; /* [n_layers] each layer's own (a twin's); NULL: active_density or the curve */
    const char *like;          /* the recorded trace a twin copies (the header names it); NULL: none */
    bool active_only;          /* write the active sets alone (a twin of a trace without predicted sets) */
    bool fitted;               /* zipf, recur and recur_decay fitted to the recorded trace (synth_fit_reuse) */
};

/* Defaults: the shape's profile (traces/synth_profile.h), its targets and
 * the generator knobs calibrated to them. */
void synth_params_default(struct synth_params *p, const struct model_shape *shape);

/* Active density of layer l of n: p's profile by relative depth, under p's targets. */
double synth_layer_density(const struct synth_params *p, uint32_t l, uint32_t n_layers);

/* What the trace header says the statistics are: the profile's source for
 * the paper's own model, else which model's profile, applied by relative
 * layer depth. Writes at most len bytes into buf. */
void synth_statistics_text(const struct synth_params *p, char *buf, size_t len);

/* Makes p a twin of the recorded trace at path (p set up by
 * synth_params_default for the trace's shape): tokens, prompts, prompt
 * share and *density (malloc'd [n_layers], the trace's mean active density
 * per layer, which p->layer_density then points at: free it after
 * synth_write); with predicted sets their ratio to the active ones and
 * their recall, else active sets alone. 0, or -1 with err: an unreadable trace, one of another
 * shape, one without tokens. */
struct synth_reuse;
int synth_params_like(struct synth_params *p, const char *path, double **density, struct synth_reuse *reuse,
                      char *err, size_t errlen);

/* What a twin's reuse is fitted to: a recorded trace's s_agg(k) of the
 * active sets (k = 1..k_max) and its hottest 10%'s share
 * (traces/trace_stats.h). synth_params_like fills it (reuse not NULL). */
struct synth_reuse {
    double sagg[TRACE_SAGG_MAX];
    uint32_t k_max;
    double hot10;
};

/* The values synth_fit_reuse tries for each knob (data, so that a finer
 * search is a longer row). */
#define SYNTH_FIT_ZIPF {0.0, 0.15, 0.3, 0.5, 0.8, 1.2}
#define SYNTH_FIT_RECUR {0.0, 0.25, 0.5, 0.75, 0.9, 0.97}
#define SYNTH_FIT_DECAY {0.3, 0.52, 0.75, 0.9}
#define SYNTH_FIT_PASSES 2

/* Sets p's zipf, recur and recur_decay to the values whose twin (built in
 * memory with p's seed) is nearest the recorded reuse: the root mean
 * square over s_agg(k), k = 2..min(8, k_max), and the hottest 10%'s share,
 * of twin minus recorded. A coordinate search: each knob in turn over its
 * values, the others held, SYNTH_FIT_PASSES times (about 30 twins). *rms
 * gets the best twin's, *rms_before the one of p's knobs as they came.
 * Progress through p->progress. 0, or -1 with err. */
int synth_fit_reuse(struct synth_params *p, const struct synth_reuse *target, double *rms, double *rms_before,
                    char *err, size_t errlen);

/* Writes the trace to path (atomically). 0, or -1 with err. */
int synth_write(const struct synth_params *p, const char *path, char *err, size_t errlen);

/* The same trace built in memory (trace_free it). 0, or -1 with err. */
struct trace;
int synth_build(const struct synth_params *p, struct trace *out, char *err, size_t errlen);

#endif
