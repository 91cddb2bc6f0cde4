/* flashbed predict's library half: a list of cache/ policies (values,
 * parsed at the command line from "lru,belady,window:5":
 * cache_policy_parse_list) priced under one configuration, one
 * cost_predict per policy, each exactly as if it were priced alone.
 *
 * A policy's per-token volumes come from the paper's densities
 * (configs/paper/densities.json: its own figures for the predictor and its
 * window, the s_agg curve through its App. C.1 figures for other windows)
 * or, given a trace, from replaying the trace under that policy and the
 * layout (sim/trace_volumes.h). naive and hybrid need no volumes (and no
 * trace); lru, lfu, hot, belady and the layouts friends and coalesce:G
 * need a trace. Checked through cost_check_policy/_layout.
 *
 * Every policy but naive and hybrid also runs an activation predictor
 * (something must choose the neurons): its weights are held in DRAM (the
 * FFN cache gets the budget less them too) and computed every token. Its
 * size is a rank-r predictor on every layer priced from the shape
 * (cost_predictor_params), or, unless a rank is given, the paper's share
 * of the model for the shapes it states one for
 * (configs/paper/densities.json: predictor_model_fraction); none for a run
 * whose neurons an oracle or a trace chose.
 *
 * window:auto is resolved to window:K as `flashbed run --window auto`
 * resolves it (sim/window_auto.h: window_auto_resolve), from the rows of one layer's
 * FFN cache: the budget less the non-FFN weights and the predictor, at the
 * cost model's dtype, over the layers (cache_capacity_rows). run's rows are
 * fewer (it also holds the KV cache, staging and bounce rows, and pads its
 * bundles), so near a peak run may choose a smaller K than predict.
 *
 * The transposed layout (input sparsity) runs no predictor; its volumes
 * come from replaying a trace with channel sets, or, without a trace, from
 * the channel and down densities given (predictor only: each token reads
 * its kept rows, keeps none; naive and hybrid as ever).
 *
 * Everything is checked before anything is priced. No printing: 0, or -1
 * with a message in err that names the offending policy. */
#ifndef FLASHBED_SIM_PREDICT_LIST_H
#define FLASHBED_SIM_PREDICT_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/model_shape.h"
#include "common/settings.h"
#include "sim/cost_model.h"
#include "sim/hw_profile.h"
#include "sim/replay.h"
#include "sim/window_auto.h"
#include "traces/trace.h"

struct predict_setup {
    const struct fb_settings *settings; /* where the paper's densities are (its configs folder) */
    const struct model_shape *shape;
    struct hw_profile *hw;       /* with its derived rates resolved (cost_resolve_profile) */
    const char *dtype;           /* f32, f16, bf16 */
    struct layout_spec layout;   /* one cache/ layout for every policy */
    double dram_share;           /* DRAM for the model, as a share of its bytes at dtype (<= 1) */
    unsigned io_threads;
    double context_tokens;       /* mean KV-cache length over the decode */
    const struct trace *trace;   /* NULL: the paper's densities; else of this shape */
    const char *trace_path;      /* names the trace in volume sources and messages */
    bool use_predicted;          /* replay the trace's predicted sets, else the active ones */
    int predictor_rank;          /* > 0: that rank; PREDICT_RANK_AUTO: the paper's share of the model when
                                  * it gives one for the shape, else PREDICT_DEFAULT_RANK; PREDICT_RANK_NONE */
    const char *io_engine;       /* the engine's reads: psync or io_uring (NULL: psync) */
    uint64_t tokens;             /* window:auto: the run's tokens K is chosen over (0: the trace's length;
                                  * without a trace, WINDOW_MAX_K) */
    double channel_density;      /* layout transposed without a trace: kept input channels over d_model */
    double down_density;         /* and kept rows of down over d_ff (sim/cost_model.h) */
    bool verify;                 /* run --verify on: the checked reads priced (cost_model.h) */
};

#define PREDICT_RANK_AUTO 0
#define PREDICT_RANK_NONE (-1)
#define PREDICT_DEFAULT_RANK 128 /* the default; capped at min(d_model, d_ff) */

struct policy_prediction {
    struct cost_config config;   /* config.policy: what was priced (window:auto resolved to window:K);
                                  * config.vol: its volumes */
    struct cost_prediction prediction;
    struct policy_spec asked;    /* the list's element (window:auto unresolved) */
    struct window_auto_choice window; /* window:auto: the K chosen and why (k 0: not asked) */
    uint64_t window_rows;        /* window:auto: the layer cache's rows K was chosen for */
    uint64_t window_tokens;      /* window:auto: the tokens it was chosen over */
};

/* Checks each of the n policies (cost_check_policy: one priced without a
 * trace unless have_trace), in order. 0, or -1 with err naming the first
 * that is not. */
int predict_list_check(const struct policy_spec *policies, size_t n, bool have_trace, char *err, size_t errlen);

/* Prices the n policies, in their order, into *out (n of them; the caller
 * frees *out). 0, or -1 with err (nothing allocated). */
int predict_list(const struct predict_setup *s, const struct policy_spec *policies, size_t n,
                 struct policy_prediction **out, char *err, size_t errlen);

/* Prices one replay of s->trace already run (flashbed replay --hw): r's
 * policy and layout, its volumes (trace_volumes_of_replay) and the
 * predictor its policy runs, as predict --trace prices the same replay.
 * s->layout, s->dram_share and s->use_predicted are not read: r says them.
 * naive and hybrid are the cost model's sequential baselines (naive reads
 * the whole model; hybrid what is not resident: the non-FFN weights and
 * r's preloaded rows). The caller has checked configs/paper/densities.json
 * (paper_densities_check: replay_pricing_open does, once). 0, or -1 with
 * err naming the policy. */
int predict_replayed(const struct predict_setup *s, const struct replay_result *r, struct policy_prediction *out,
                     char *err, size_t errlen);

#endif
