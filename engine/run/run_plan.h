/* Planning a flash run (flashbed run): the policy and layout a mode stands
 * for, and how a DRAM budget is shared between the weights that stay in
 * DRAM, the KV cache, the staging areas and the FFN caches. Sizes follow
 * cache/'s one rule (cache_capacity_rows), so `flashbed replay` given the
 * plan's ffn_cache_bytes decides exactly as the run does. When a trace
 * drives the neurons, the plan replays the run's decisions once (no I/O)
 * to size each layer's storage and the staging area exactly.
 *
 * window:auto is the largest window the budget holds (the paper's Fig. 7
 * follows the budget): sim/window_auto.h's rule (window_auto_resolve,
 * shared with predict) given the rows each layer's cache gets once
 * everything else the budget holds is taken, staging included. The plan
 * holds the policy it chose (window:K) for the engine and for replay.
 * A deployable run's predictor stays in DRAM beside the resident weights
 * and the KV cache: the budget holds those three first.
 *
 * On a backend whose memory is not the host's (sim, opencl, cuda: the
 * input's device), the model's non-FFN weights, the KV cache, the neuron
 * caches (rows, up biases, the device's moves lists) and the device
 * staging area live in device memory, and the host keeps beside them a
 * pinned staging ring (RUN_PINNED_RING_SLOTS slots of staging_rows rows,
 * where rows read from flash land before their upload), the bounce buffer,
 * naive's scratch, the predictor and the pinned x and moves lists. Without
 * a device budget nothing changes: the plan is the DRAM budget's on every
 * backend (the same caches and decisions as cpu and replay), and only
 * records what lands where. With one, the same rule sizes the caches to
 * what the device budget leaves after the weights, the KV cache and the
 * device staging area (a cache row costing its stride, its up bias and its
 * 8-byte device move entry), and a DRAM budget given too must hold the
 * host's part (pinned memory counts against DRAM).
 * 0, or -1 with a message (the numbers that do not fit) in err. */
#ifndef FLASHBED_ENGINE_RUN_PLAN_H
#define FLASHBED_ENGINE_RUN_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/layout_spec.h"
#include "cache/policy_spec.h"
#include "engine/ffn/ffn_flash.h"
#include "engine/ffn/flash_ring.h"
#include "engine/model/model.h"
#include "sim/window_auto.h"
#include "traces/trace.h"

/* naive, hybrid, predictor, window, all: the paper's ablation as a policy
 * and a layout (cache/mode.h's table, with window K, 0 for auto, and
 * coalescing gap G where the mode takes them). 0, or -1 for an unknown
 * mode. */
int run_mode_preset(const char *mode, uint32_t window, uint32_t coalesce, struct policy_spec *policy,
                    struct layout_spec *layout);

/* The pinned staging ring's slots on a device (see above): a slot is
 * rewritten only after its upload's event completed, so two let one
 * batch's reads land while the other's upload runs. */
#define RUN_PINNED_RING_SLOTS FLASH_RING_SLOTS /* engine/ffn/flash_ring.h: the ring the flash FFN stages rows in */

/* The pinned ring's bytes for staging_rows rows of row_stride bytes per
 * slot: what the plan counts against DRAM on a device. */
uint64_t run_plan_ring_bytes(uint32_t staging_rows, uint64_t row_stride);

/* The K of "window:K", "auto" included, is 1..RUN_MAX_WINDOW. */
#define RUN_MAX_WINDOW WINDOW_MAX_K

/* Checks a policy as the run takes it: a window the engine holds
 * (window:auto included). 0, or -1 with err naming it. */
int run_plan_check(const struct policy_spec *policy, char *err, size_t errlen);

struct run_plan_input {
    const struct model *m;
    struct policy_spec policy;  /* window:auto: K chosen by the plan */
    struct layout_spec layout;
    uint64_t budget;            /* bytes the engine may hold; 0: none */
    uint64_t kv_bytes;
    const struct trace *trace;  /* NULL: the oracle chooses the neurons */
    const struct trace *profile; /* the oracle: a warm-up's active sets, for hot (engine/run/warmup.h) */
    bool use_predicted;
    uint64_t tokens;            /* tokens the run computes (the trace is replayed cyclically) */
    bool stream_dram;           /* naive: dram.bin is streamed through a scratch buffer */
    uint64_t predictor_bytes;   /* what chooses the neurons holds in DRAM (a predictor's weights, the
                                 * gate's rows: ffn_flash_predictor_bytes); the budget holds it first */
    bool device;                /* the backend's memory is not the host's (backend_info.host_visible false) */
    uint64_t device_budget;     /* device bytes the engine may hold (device only); 0: none, the DRAM
                                 * budget sizes the caches */
};

struct run_plan_out {
    struct policy_spec policy;  /* the policy run: the input's, window:auto resolved to window:K */
    uint32_t window_k;          /* window:K's K (0: not a window) */
    const char *window_from;    /* window:auto: what chose K (static text); NULL otherwise */
    uint64_t capacity_rows;     /* the policy's rows per layer (0: none) */
    uint64_t ffn_cache_bytes;   /* capacity_rows * layers * a bundle's bytes: replay's --dram-budget */
    uint32_t *layer_rows;       /* [n_layers] storage per layer (malloc'd; free it) */
    uint32_t staging_rows, bounce_rows;
    /* the transposed layout (run_plan_transposed): capacity_rows, staging_rows and layer_rows are the
     * channel stream's, these the down stream's; cache_budget what cache_transposed_capacity split */
    uint64_t down_capacity_rows, cache_budget;
    uint32_t down_staging_rows, down_slots;
    uint64_t scratch_bytes;     /* naive's dram.bin scratch */
    uint64_t held_bytes;        /* caches + staging + bounce + scratch */
    /* on a device (the input's device; all 0 otherwise): */
    bool device_sized;          /* the caches were sized to the device budget */
    uint64_t device_bytes;      /* device memory held: weights, KV cache, caches (rows, up biases, moves
                                 * lists) and the device staging area */
    uint64_t device_fixed_bytes; /* of it, the non-FFN weights and the KV cache */
    uint64_t device_row_bytes;  /* a cache row on the device: stride, up bias, device move entry */
    uint64_t device_stage_bytes; /* of it, the device staging area (rows and their up biases) */
    uint64_t pinned_bytes;      /* pinned host memory: the ring, x and the moves lists */
    uint64_t host_bytes;        /* DRAM held beside the device: pinned, bounce, scratch, predictor */
};

int run_plan_make(const struct run_plan_input *in, struct run_plan_out *out, char *err, size_t errlen);

/* The plan of input sparsity on flash (the transposed layout, engine/ffn/
 * ffn_transposed.h): what the budget holds first (dram.bin, the KV cache,
 * both streams' staging areas), then what is left split between the two
 * caches by cache_transposed_capacity (cache/transposed.h), the one rule
 * replay and the cost model apply too. window:auto is refused (give K);
 * without a budget the policies' unbudgeted rows. */
int run_plan_transposed(const struct run_plan_input *in, struct run_plan_out *out, char *err, size_t errlen);

/* The plan into the flash FFN's configuration: the policy run (window:auto
 * resolved), the rows per layer, staging and bounce rows, and hot's
 * warm-up profile (NULL: none). cfg keeps a pointer into plan (layer_rows). */
void run_plan_apply(const struct run_plan_out *plan, const struct trace *profile, struct ffn_flash_config *cfg);

/* A dense run within a budget (0: none): the whole model and the KV cache
 * in DRAM. 0, or -1 with err saying both sizes. */
int run_plan_dense_check(const struct model *m, uint64_t kv_bytes, uint64_t budget, char *err, size_t errlen);

/* A dense run on a device within a device budget (0: none): the whole
 * model and the KV cache on it. 0, or -1 with err saying both sizes. */
int run_plan_dense_device_check(const struct model *m, uint64_t kv_bytes, uint64_t device_budget, char *err,
                                size_t errlen);

#endif
