/* The cost model's data-movement terms on a device whose memory is not the
 * host's (sim, opencl, cuda): per token, what crosses between host and
 * device and what the queue is given, counted as struct backend_counts
 * counts them (engine/compute/backend.h: an upload, download or row move
 * is a copy, never a launch; a sync is a sync() or an event wait), for
 * the forward pass of engine/forward/forward.c with the flash FFN of
 * engine/ffn/ffn_flash.c on the device (ffn_flash_dev.h, neuron_cache_dev.h).
 *
 * dev_terms_token mirrors what those files enqueue, so that sim's counts
 * over a token equal its result exactly (tests/unit/test_device_terms.c):
 *   up      rows inserted x (row stride + 4 with an up bias): appended to
 *           the cache or staged once, both uploaded from the pinned ring
 *           (engine/ffn/flash_ring.h) in runs, each a rows upload and a biases
 *           upload; + 8 bytes a row move (the moves lists)
 *   down    the logits (vocab floats), and x (d_model floats) per layer
 *           when a host-side selector reads it (host_reads_x), the
 *           predictor's logits (d_ff floats) per layer when it runs on
 *           the device (device_predictor)
 *   moved   row moves x (row stride + 4 with an up bias)
 *   launch  embed (+ the learned position's embed and add), per layer the
 *           norms, q/k/v/o matvecs, head norms, rope, attention and the
 *           residual adds, the device predictor's two matvecs, and the
 *           FFN's groups: the first call of a layer
 *           writes out (one launch, even with no rows), every later group
 *           of rows one ffn_rows and one add; the down bias one add; the
 *           final norm and the head's matvec
 *   sync    the head's sync, a wait for x (or the predictor's logits) per
 *           layer that downloads them, and the waits the engine counts: for
 *           the device per batch of flash reads (what makes the exposed I/O
 *           measurable), for a ring slot or a cached layer's previous step
 *           not covered by a later wait (events are numbered in order)
 * The groups, runs, batches and waits are the run's (the engine counts
 * them: engine/ffn/ffn_flash.h) or, priced ahead, the cost model's
 * estimate.
 * Pure functions; no errors; thread-safe. */
#ifndef FLASHBED_SIM_DEVICE_TERMS_H
#define FLASHBED_SIM_DEVICE_TERMS_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/hw_profile.h"

/* The model and the run as the device sees them. */
struct dev_shape {
    uint32_t n_layers, d_model, vocab, n_heads, n_kv_heads;
    uint64_t row_stride;    /* a neuron's bundle on flash (up | gate | down) */
    bool up_bias, down_bias; /* the FFN's */
    bool pos_embedding;     /* learned positions: a second embed and an add */
    bool rope, qk_norm, parallel_block;
    bool host_reads_x;      /* a host-side selector (oracle, gate, check, record) reads x */
    bool device_predictor;  /* the predictor chooses, on the device: per layer its logits come down */
    uint32_t d_ff;          /* the predictor's logits */
};

/* One token's volumes. */
struct dev_volumes {
    uint64_t rows_inserted, row_moves;
    uint64_t staged_groups;  /* uploads of rows used once, each computed as a group */
    uint64_t append_groups;  /* layers whose appended rows were uploaded and computed */
    uint64_t move_batches;   /* batched row moves */
    uint64_t upload_runs;    /* the ring's uploads of consecutive rows (each with its biases') */
    uint64_t ring_waits;     /* waits before reusing a ring slot */
    uint64_t read_waits;     /* waits for the device while reads were in flight */
    uint64_t step_waits;     /* waits for a cached layer's previous step */
};

struct dev_terms {
    uint64_t bytes_up, bytes_down, bytes_moved;
    uint64_t copies, launches, syncs;
    uint64_t uploads, downloads; /* of the copies (the rest are row moves) */
};

void dev_terms_token(const struct dev_shape *s, const struct dev_volumes *v, struct dev_terms *out);

/* The terms' time on a profile's device (hw_profile.h: struct hw_device):
 * uploads from pinned memory at their mean size (the engine's ring is
 * pinned; pinned false: its ordinary-memory fallback), downloads into
 * pinned memory likewise, a
 * launch_s per launch, sync_s for the head's sync and event_s (sync_s when
 * absent) for every other wait. Row moves run on the device: priced with
 * its compute, not here. */
struct dev_time {
    double h2d_ms, d2h_ms, launch_ms, sync_ms;
};
void dev_terms_time(const struct hw_profile *hw, const struct dev_terms *t, bool pinned, struct dev_time *out);

#endif
