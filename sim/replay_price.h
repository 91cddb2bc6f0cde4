/* Modelled milliseconds per token for replayed rows (flashbed replay --hw):
 * each replay_result is priced by the cost model exactly as predict --trace
 * prices the same replay (predict_replayed, sim/predict_list.h); this
 * module only gathers what that needs from the trace and a profile.
 *
 * The shape: the trace's header gives layers, d_model, d_ff, the FFN kind
 * and bytes per weight. The rest of the model (attention, vocabulary) comes
 * from the shape its source JSON names in configs/models/ when that shape
 * has the header's dimensions (synthetic traces name theirs); else from the
 * header alone: attention as 4 x d_model^2 per layer (one KV head per
 * query head), no vocabulary (embeddings and logits not priced), no
 * biases; shape_source says which.
 *
 * The dtype: the trace's width when the profile has a compute rate for it,
 * else the profile's first dtype with a rate, the replay's bytes rescaled
 * to it (as predict --dtype prices a trace of another width); dtype_note
 * says so. The predictor is priced as predict's default (auto: the
 * paper's share of the model for its shapes, else rank 128), the mean
 * context is REPLAY_PRICE_CONTEXT tokens (predict's default) and the
 * reader threads are the profile's. No printing: 0, or -1 with err. */
#ifndef FLASHBED_SIM_REPLAY_PRICE_H
#define FLASHBED_SIM_REPLAY_PRICE_H

#include <stddef.h>

#include "common/model_shape.h"
#include "sim/hw_profile.h"
#include "sim/predict_list.h"
#include "sim/replay.h"
#include "traces/trace.h"

#define REPLAY_PRICE_CONTEXT 256.0

struct replay_pricing {
    struct model_shape shape;
    struct hw_profile *hw;        /* heap, resolved (cost_resolve_profile) */
    char dtype[8];
    char shape_source[240];       /* where the shape beyond the header comes from */
    char dtype_note[240];         /* "" when priced at the trace's own width */
    struct predict_setup setup;   /* what predict_replayed reads (points into this object: not to be copied) */
};

/* Loads the profile hw (a name in set's configs folder, hw/, or a .json
 * path) and picks the shape and the dtype for tr. set is kept by pointer
 * (the paper's densities are read when pricing). hw_flags: hw_profile.h's
 * load flags (HW_LOAD_ALLOW_EMULATED). 0, or -1 with err (the profile
 * unreadable, without any compute rate, or emulated and not allowed). */
int replay_pricing_open(struct replay_pricing *p, const struct fb_settings *set, const struct trace *tr,
                        const char *trace_path, const char *hw, unsigned hw_flags, char *err, size_t errlen);

/* Prices r (a replay of the trace given to replay_pricing_open). */
int replay_pricing_price(const struct replay_pricing *p, const struct replay_result *r, struct policy_prediction *out,
                         char *err, size_t errlen);

void replay_pricing_close(struct replay_pricing *p);

#endif
