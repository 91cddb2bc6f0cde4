/* Per-token FFN volumes for the cost model from replaying an activation
 * trace (sim/replay.h), instead of the paper's stated densities: what
 * `flashbed predict --trace` and the experiment runner use.
 *
 * The replay counts rows at the trace's bytes per weight; the cost model
 * prices them at its own dtype, so volumes are kept in neurons (rows) and the
 * read bytes are rescaled. Which rows are computed on follows the policy: the
 * predictor and the sliding window compute over the whole preallocated matrix
 * they hold (the paper's method), the capacity caches (lru, lfu, hot,
 * belady) only over the rows the token needs. */
#ifndef FLASHBED_SIM_TRACE_VOLUMES_H
#define FLASHBED_SIM_TRACE_VOLUMES_H

#include <stdbool.h>
#include <stddef.h>

#include "common/model_shape.h"
#include "sim/cost_model.h"
#include "sim/replay.h"
#include "traces/trace.h"

struct trace_volume_spec {
    struct policy_spec policy; /* any replay policy: predictor, window:K, lru, lfu, hot, belady */
    struct layout_spec layout; /* any replay layout: split, bundled, friends, coalesce:G */
    bool use_predicted;       /* replay the predicted sets, else the active ones */
    double ffn_budget_bytes;  /* FFN cache at the cost model's dtype (capacity policies) */
    double dtype_bytes;       /* the cost model's bytes per weight (cost_weight_bytes) */
};

/* Replays tr and fills v (neurons loaded, rows inserted/deleted, rows
 * computed on, reads and read bytes per token; replayed set; source names
 * the trace), for cost_predict under the same policy and layout
 * (the replay's read count and bytes carry coalescing and friends). naive
 * and hybrid are refused: they need no trace. 0, or -1 with err. */
int trace_volumes(const struct trace *tr, const char *trace_path, const struct trace_volume_spec *spec,
                  struct token_volumes *v, char *err, size_t errlen);

/* The same volumes from a replay already run (r: its policy, layout, sets
 * and counts), priced at dtype_bytes per weight (the replay's bytes are at
 * the trace's type, trace_type). What trace_volumes does after its replay; for a
 * caller that keeps the replay (flashbed replay --hw). */
void trace_volumes_of_replay(const struct replay_result *r, const char *trace_path, double dtype_bytes,
                             enum fb_dtype trace_type, struct token_volumes *v);

#endif
