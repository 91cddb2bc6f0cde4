/* Planning a flash run (flashbed run): the policy and layout a mode stands
 * for, and how a DRAM budget is shared between the weights that stay in
 * DRAM, the KV cache, the staging areas and the FFN caches. Sizes follow
 * cache/'s one rule (cache_capacity_rows), so `flashbed replay` given the
 * plan's ffn_cache_bytes decides exactly as the run does. When a trace
 * drives the neurons, the plan replays the run's decisions once (no I/O)
 * to size each layer's storage and the staging area exactly.
 * 0, or -1 with a message (the numbers that do not fit) in err. */
#ifndef FLASHBED_ENGINE_RUN_PLAN_H
#define FLASHBED_ENGINE_RUN_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/model.h"
#include "traces/trace.h"

/* naive, hybrid, predictor, window, all: the paper's ablation as a policy
 * and a layout (window K and coalescing gap G for the last two). 0, or -1
 * for an unknown mode. */
int run_mode_preset(const char *mode, uint32_t window, uint32_t coalesce, char *policy, size_t plen, char *layout,
                    size_t llen);

struct run_plan_input {
    const struct model *m;
    const char *policy, *layout;
    uint64_t budget;            /* bytes the engine may hold; 0: none */
    uint64_t kv_bytes;
    const struct trace *trace;  /* NULL: the oracle chooses the neurons */
    bool use_predicted;
    uint64_t tokens;            /* tokens the run computes (the trace is replayed cyclically) */
    bool stream_dram;           /* naive: dram.bin is streamed through a scratch buffer */
};

struct run_plan_out {
    uint64_t capacity_rows;     /* the policy's rows per layer (0: none) */
    uint64_t ffn_cache_bytes;   /* capacity_rows * layers * a bundle's bytes: replay's --dram-budget */
    uint32_t *layer_rows;       /* [n_layers] storage per layer (malloc'd; free it) */
    uint32_t staging_rows, bounce_rows;
    uint64_t scratch_bytes;     /* naive's dram.bin scratch */
    uint64_t held_bytes;        /* caches + staging + bounce + scratch */
};

int run_plan_make(const struct run_plan_input *in, struct run_plan_out *out, char *err, size_t errlen);

#endif
