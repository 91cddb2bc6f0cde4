/* window:auto, the one rule both `flashbed run` (engine/run/run_plan.c) and
 * `flashbed predict` (sim/predict_list.c) use to choose a sliding window's
 * K from a layer cache's rows: the paper's Fig. 7, where the window grows
 * with the DRAM share. window_auto_resolve is the one place a policy value
 * asking for window:auto (cache/policy_spec.h: arg_auto) becomes window:K.
 *
 * Between tokens window:K keeps the rows of the last K-1 tokens (the
 * current token's misses arrive as the oldest token's rows leave), so:
 * - with a trace, K is the largest whose K-1 token peak in any layer over
 *   the run's tokens (the trace replayed cyclically, traces/trace_window.h)
 *   fits the cache: the window then never shrinks, and K+1 would;
 * - without one (the oracle), the largest whose s_agg(K-1) share of d_ff
 *   (the curve the cost model uses, sim/paper_tables.h) fits.
 * K is at most the run's tokens (a longer window holds nothing more) and
 * WINDOW_MAX_K.
 *
 * What the rule is given differs between the callers: run gives the rows
 * its budget leaves once the resident weights, the KV cache, the predictor
 * and the staging and bounce rows are held, in padded bundles; predict the
 * rows its cost model's FFN cache gets (the budget less the non-FFN weights
 * and the predictor, in unpadded rows at --dtype; no KV cache, no staging).
 * So for one budget predict's cache is a little larger and its K may be
 * larger; for the same rows both choose the same K.
 *
 * Pure arithmetic on a loaded trace; thread-compatible. 0, or -1 with err
 * (out of memory). */
#ifndef FLASHBED_SIM_WINDOW_AUTO_H
#define FLASHBED_SIM_WINDOW_AUTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/policy_spec.h"
#include "traces/trace.h"

/* The window is 1 to this many tokens (window:K, auto included). */
#define WINDOW_MAX_K 4096

struct window_auto_input {
    const struct trace *trace; /* NULL: the s_agg curve */
    bool use_predicted;
    uint64_t tokens;           /* the run's tokens (the trace replayed cyclically) */
    uint32_t d_ff;
    uint64_t capacity_rows;    /* one layer cache's rows */
};

struct window_auto_choice {
    uint32_t k;
    const char *from; /* what chose K (static text) */
};

int window_auto_choose(const struct window_auto_input *in, struct window_auto_choice *out, char *err,
                       size_t errlen);

/* The policy asked for with its K chosen: window:auto becomes window:K by
 * window_auto_choose (why: K and what chose it); any other policy is
 * itself (why->k 0). 0, or -1 with err. */
int window_auto_resolve(const struct policy_spec *asked, const struct window_auto_input *in,
                        struct policy_spec *out, struct window_auto_choice *why, char *err, size_t errlen);

#endif
