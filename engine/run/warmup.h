/* A warm-up profile for policies that rank neurons by how often they are
 * needed (hot, PowerInfer-style pinning) when the neurons come from the
 * oracle, which knows only the present token: the warm-up tokens run
 * through the model with the flash FFN reading each token's needed rows
 * (policy predictor: nothing kept, no budget), the needed sets (the
 * oracle's active sets, or what the run's predictor or gate chooses) are
 * recorded into a trace in memory (traces/trace.h: trace_builder), which
 * the run's policy ranks. No file is written. The warm-up is not the
 * measured run: its reads are not counted. 0, or -1 with err.
 * Single-threaded caller; the engine inside uses `threads` compute
 * threads. */
#ifndef FLASHBED_ENGINE_WARMUP_H
#define FLASHBED_ENGINE_WARMUP_H

#include <stddef.h>

#include "common/settings.h"
#include "engine/compute/backend.h"
#include "engine/ffn/ffn_flash.h"
#include "engine/model/model.h"
#include "traces/trace.h"

struct warmup_input {
    const struct fb_settings *settings; /* the engine's backend tuning */
    const struct model *m;
    const struct backend_ops *be;
    int threads;
    const struct ffn_flash_config *io; /* the run's I/O settings, source and threshold (engine, threads, direct) */
    const int *tokens;                 /* the warm-up text's tokens, BOS first */
    int n_tokens;
};

int warmup_profile(const struct warmup_input *in, struct trace *out, char *err, size_t errlen);

#endif
