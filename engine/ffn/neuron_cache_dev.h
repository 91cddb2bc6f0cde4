/* A layer's neuron cache on a device whose memory is not the host's (sim,
 * opencl, cuda): the rows and their compact up biases in device buffers,
 * mirroring struct neuron_cache (neuron_cache.h), which keeps every
 * decision and the bookkeeping (pointer, row_of, num_used) on the host, so
 * that a device run decides exactly what a cpu run and replay decide.
 *
 *   rows    capacity * row_stride bytes, BUF_DEVICE: row r holds what the
 *           host cache's row r holds once the step's copies have run
 *   bias    capacity floats (models with an up bias), moved with the rows
 *   moves   the step's deletions (the paper's swap-with-last, Fig. 6) as
 *           struct row_move {dst, src}, written by the host into pinned
 *           memory and applied as one batched move_rows on the rows and
 *           one on the biases (the same list, 4-byte rows)
 *
 * Rows read from flash reach the mirror through the pinned staging ring
 * (flash_ring.h: each row placed with ncd_rows/ncd_bias of its row); the
 * host cache then keeps only its bookkeeping (neuron_cache_init without
 * host rows), so the cache's memory is the device's, not the host's.
 *
 * Queue discipline (backend.h): an upload reads its source when it runs,
 * so a step begins (ncd_begin) by waiting for the event the previous step
 * of the same layer ended with (ncd_end); only then may the host rewrite
 * the moves list that step uploaded from. Every call
 * returns 0, or -1 with the backend's error (ops->error). One host thread;
 * a zeroed struct is "no mirror" (a layer without rows): every call is a
 * no-op on it. */
#ifndef FLASHBED_ENGINE_NEURON_CACHE_DEV_H
#define FLASHBED_ENGINE_NEURON_CACHE_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/compute/backend.h"
#include "engine/ffn/neuron_cache.h"

struct neuron_cache_dev {
    const struct backend_ops *ops;
    struct backend *be;            /* NULL: no mirror */
    uint32_t capacity;
    uint64_t row_stride;
    struct dev_buf *rows, *bias;   /* bias NULL without an up bias */
    struct dev_buf *moves_pinned, *moves_dev; /* capacity moves each */
    struct row_move *moves;        /* the pinned list's host address */
    uint32_t n_moves, n_applied;   /* recorded this step; of them, enqueued */
    uint64_t done;                 /* the event the last step ended with */
    bool pending;                  /* done is to be waited for */
    uint64_t waits;                /* ncd_begin's waits, reset by the caller */
};

/* Allocates the mirror of a cache of capacity rows of row_stride bytes
 * (with_bias: and its biases). 0, or -1 with err; ncd_free is safe after. */
int ncd_init(struct neuron_cache_dev *d, const struct backend_ops *ops, struct backend *be, uint32_t capacity,
             uint64_t row_stride, bool with_bias, char *err, size_t errlen);
void ncd_free(struct neuron_cache_dev *d);

/* Waits for the previous step's copies unless an event at or after its end
 * was waited for already (covered: events are numbered in order,
 * backend.h); the moves list starts empty. */
int ncd_begin(struct neuron_cache_dev *d, uint64_t covered);
/* The backend synced: nothing of the previous step is pending. */
void ncd_synced(struct neuron_cache_dev *d);
/* Records that row src moves to row dst (a deletion of the host cache). */
int ncd_record_move(struct neuron_cache_dev *d, uint32_t dst, uint32_t src);
/* Uploads the moves recorded since the last call and enqueues them on the
 * rows and biases; *h2d grows by the bytes uploaded. */
int ncd_apply_moves(struct neuron_cache_dev *d, uint64_t *h2d);
/* Records the event the next ncd_begin waits for. */
int ncd_end(struct neuron_cache_dev *d);

/* Row first of the rows and of the biases (bias: none without one). */
struct dev_ref ncd_rows(const struct neuron_cache_dev *d, uint32_t first);
struct dev_ref ncd_bias(const struct neuron_cache_dev *d, uint32_t first);

#endif
