/* Statistics of a loaded trace: density per layer, predictor quality, and
 * the aggregated-usage curve s_agg(k) of the paper's Fig. 4a. */
#ifndef FLASHBED_TRACES_TRACE_STATS_H
#define FLASHBED_TRACES_TRACE_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/settings.h"
#include "traces/trace.h"

#define TRACE_SAGG_MAX 17 /* s_agg(k) for k = 1..16, plus k = 17 for the k = 16 increment */

struct trace_stats {
    uint32_t n_layers;
    uint64_t n_tokens, n_sequences, n_prompt_tokens, n_generated_tokens;
    uint64_t active_events, pred_events;
    double *density_active;     /* [n_layers]: mean |active| / d_ff */
    double *density_pred;       /* [n_layers]; NULL without predicted sets */
    double mean_density_active, mean_density_pred;
    uint64_t chan_events;       /* input channels kept, over every (token, layer) */
    double *density_channels;   /* [n_layers]: mean |kept channels| / d_model; NULL without channel sets */
    double mean_density_channels;
    /* s_agg[k-1]: fraction of a layer's neurons used by k consecutive tokens of
     * one sequence, averaged over all such windows and over layers; 0 where no
     * sequence is k tokens long. */
    double sagg_active[TRACE_SAGG_MAX], sagg_pred[TRACE_SAGG_MAX];
    /* the largest k with a window: the longest sequence, at most
     * TRACE_SAGG_MAX; s_agg(k) beyond it is no measurement */
    uint32_t sagg_k_max;
    double recall;              /* |active & predicted| / |active| */
    double pred_over_active;    /* |predicted| / |active| */
    double hot10_share;         /* share of activations going to a layer's 10% most active neurons */
    double hot10_uniform;       /* the same share had each token's sets been drawn uniformly (same sizes):
                                 * chance's part of hot10_share with these counts, not 10% on a short trace */
};

int trace_stats_compute(const struct trace *tr, struct trace_stats *s);

/* The layer the calibration's "middle layer" is: OPT-6.7B's 16th of 32
 * (Table 6) at the same relative depth. */
static inline uint32_t trace_middle_layer(uint32_t n_layers)
{
    return (uint32_t)(15.0 / 31.0 * (n_layers - 1) + 0.5);
}

/* What hot10_share says against hot10_uniform, in words: "concentrated"
 * (1.5x chance's share or more: a power law's signature), "mildly
 * concentrated" (1.1x to 1.5x) or "no more than chance" (below 1.1x). */
const char *trace_stats_hot10_verdict(const struct trace_stats *s);
void trace_stats_free(struct trace_stats *s);

/* Writes dir/sagg.csv (k,sagg_active,sagg_predicted; k = 1..16, only up to
 * s->sagg_k_max) and, when plot, the
 * paper's Fig. 4a as dir/fig4a.png and .svg (plots/fig4a_sagg.gp, in set's
 * plots folder; set is read only when plot), each claimed in folder, the
 * command's result folder (common/out_manifest.h; NULL: none).
 * 0, or -1 with the reason in err. */
struct out_manifest;
int trace_stats_write_sagg(struct out_manifest *folder, const char *dir, const struct trace_stats *s,
                           const struct trace *tr, bool plot, const struct fb_settings *set, char *err, size_t errlen);

/* Per-token usage new to a window of k earlier tokens: s_agg(k+1) - s_agg(k).
 * Meaningful for k < sagg_k_max only. */
static inline double trace_stats_new_per_token(const double *sagg, int k)
{
    return k <= 0 ? sagg[0] : sagg[k] - sagg[k - 1];
}

#endif
